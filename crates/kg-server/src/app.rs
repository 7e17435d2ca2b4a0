//! Assembling the server: the router with its guards, and the run loop with graceful
//! shutdown. What the handlers share is in `state`.

use crate::config::Settings;
use crate::state::{AppState, MAX_BODY_BYTES, VERSION};
use crate::{mcp, rest, tasks, ws};
use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// How long a stopping server waits for open connections to finish.
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// May a request carrying this `Sec-Fetch-Site` through? Browsers send it on every
/// request, also on `<img>` loads and `no-cors` fetches that carry no `Origin`, so it is
/// what keeps another site's page from making the server act. Only the page's own
/// origin (`same-origin`) and what the user started (`none`: typed address, bookmark)
/// pass; `cross-site`, `same-site` (another port of a local host is another site's
/// page) and any value a browser might add later are refused. Clients that are not
/// browsers send no such header.
fn fetch_site_allowed(value: &axum::http::HeaderValue) -> bool {
    let value = value.as_bytes().trim_ascii();
    value.eq_ignore_ascii_case(b"same-origin") || value.eq_ignore_ascii_case(b"none")
}

/// Anti DNS-rebinding: every request must name a local host; pages of other origins
/// and sites may not talk to the server at all.
async fn guard(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let headers: &HeaderMap = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    if !host.as_deref().is_some_and(|h| state.host_allowed(h)) {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "Misdirected Request: Host must be local",
        )
            .into_response();
    }
    if !headers
        .get_all("sec-fetch-site")
        .iter()
        .all(fetch_site_allowed)
    {
        return (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "Forbidden: KG Memory does not answer requests made by another site's page; open the graph view by typing its address",
        )
            .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = host.as_deref().unwrap_or("");
        let ok = origin.to_str().is_ok_and(|o| state.origin_allowed(o, host));
        if !ok {
            return (
                StatusCode::FORBIDDEN,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "Forbidden: requests from this page's origin are not accepted; KG Memory only talks to its own pages",
            )
                .into_response();
        }
    }
    next.run(request).await
}

async fn not_found(request: Request<Body>) -> Response {
    if request.uri().path().starts_with("/api/") {
        rest::ApiError::new(StatusCode::NOT_FOUND, "Not Found").into_response()
    } else {
        (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "Not Found",
        )
            .into_response()
    }
}

/// The whole HTTP surface.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .merge(rest::router())
        .merge(ws::router())
        .merge(crate::view::router())
        .merge(crate::steps::router())
        .merge(crate::import::router())
        .merge(crate::activity::router())
        .merge(crate::sync_routes::router())
        .route_service(
            "/",
            tower::ServiceBuilder::new()
                .layer(middleware::from_fn(mcp::screen))
                .service(mcp::service(state.clone())),
        )
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Why the server could not listen, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "port {port} on {host} is already in use: {holder}. Use that server, stop it, or choose another port with --port N (or KG_HTTP_PORT=N)."
    )]
    PortTaken {
        host: String,
        port: u16,
        /// Who holds it, in words.
        holder: String,
    },
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("server error: {0}")]
    Serve(std::io::Error),
}

/// Bind the listening socket, explaining a port that is already taken.
pub async fn bind(settings: &Settings) -> Result<TcpListener, ServeError> {
    let addr = format!("{}:{}", settings.host, settings.port);
    match TcpListener::bind(&addr).await {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            let holder = match kg_client::probe_health(&settings.base_url()).await {
                Some(version) => {
                    format!("another KG Memory server (version {version}) is already running there")
                }
                None => {
                    "another program is using it (it does not answer like KG Memory)".to_string()
                }
            };
            Err(ServeError::PortTaken {
                host: settings.host.clone(),
                port: settings.port,
                holder,
            })
        }
        Err(source) => Err(ServeError::Listen { addr, source }),
    }
}

/// Serve until `state.shutdown` is cancelled; then drain, stop background work and
/// flush everything to disk.
pub async fn serve(state: Arc<AppState>, listener: TcpListener) -> Result<(), ServeError> {
    let local: SocketAddr = listener.local_addr().map_err(ServeError::Serve)?;
    log::info!(
        "KG Memory {VERSION} serving on http://{local} (storage {})",
        state.settings.storage_root.display()
    );
    let pid_file = state.settings.pid_file();
    let wrote_pid = std::fs::create_dir_all(state.settings.state_dir())
        .and_then(|()| std::fs::write(&pid_file, std::process::id().to_string()))
        .map_err(|e| log::warn!("cannot write {}: {e}", pid_file.display()))
        .is_ok();
    let background = tasks::spawn(state.clone());
    let shutdown = state.shutdown.clone();
    let server = crate::listener::serve(
        listener,
        router(state.clone()),
        crate::listener::Limits::for_this_process(),
        async move { shutdown.cancelled().await },
    );
    // Requests in flight get time to finish; a client that never lets go does not get
    // to keep the server (and its unsaved state) from stopping.
    let limit = state.shutdown.clone();
    let result = tokio::select! {
        r = server => r,
        () = async move {
            limit.cancelled().await;
            tokio::time::sleep(DRAIN_LIMIT).await;
        } => {
            log::warn!("connections still open {DRAIN_LIMIT:?} after the stop request; stopping anyway");
            Ok(())
        }
    };
    state.shutdown.cancel();
    background.finish(&state).await;
    if wrote_pid {
        let _ = std::fs::remove_file(&pid_file);
    }
    result.map_err(ServeError::Serve)
}
