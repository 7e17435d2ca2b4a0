//! Assembling the server: shared state, the router with its guards, and the run loop
//! with graceful shutdown.

use crate::clock::Clock;
use crate::config::Settings;
use crate::root_lock::RootLock;
use crate::{mcp, rest, tasks, ws};
use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use kg_core::{Change, Store};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Largest request body accepted, on every route.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// How long a stopping server waits for open connections to finish.
pub const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
/// The server's version, reported by `/health` and MCP `serverInfo`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What every handler shares.
pub struct AppState {
    pub store: Arc<Store>,
    pub settings: Settings,
    pub clock: Clock,
    /// Every change of the store, as it happens (fed by the store's change log).
    pub changes: broadcast::Sender<Arc<Change>>,
    pub ws: ws::Registry,
    /// Cancelled when the server shuts down.
    pub shutdown: CancellationToken,
    /// One git sync of the storage root at a time, whoever asks for it.
    pub sync_gate: tokio::sync::Mutex<()>,
    /// Where git says the files of stale touches went (kept per repository HEAD).
    pub renames: crate::renames::RenameFinder,
    /// This server's claim on the storage root, let go when the state is dropped.
    _root_lock: Option<RootLock>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Lock the storage root, open the store and wire its change log to the broadcast
    /// channel. Fails with [`RootHeld`](crate::root_lock::RootHeld) when another server
    /// holds the root; `settings.port` is recorded as this server's, so bind first.
    pub fn open(settings: Settings, shutdown: CancellationToken) -> anyhow::Result<Arc<AppState>> {
        // Before the store reads anything: a second server must not even heal or
        // quarantine the files the holder is writing.
        let root_lock = RootLock::acquire(&settings.storage_root, &settings.host, settings.port)?;
        // The secret by which this server proves to the owner's clients that it holds
        // the root (see root_lock::serves_another_root).
        if let Err(e) = crate::root_lock::root_token(&settings.storage_root) {
            log::warn!(
                "cannot create {} ({e}); clients will not take this server for the one holding {}",
                settings
                    .storage_root
                    .join(crate::root_lock::TOKEN_FILE)
                    .display(),
                settings.storage_root.display()
            );
        }
        let clock = Clock::of(&settings);
        let store = Store::open(settings.store_config(), clock.now()).map_err(|e| {
            anyhow::anyhow!(
                "cannot open the storage root {}: {e}",
                settings.storage_root.display()
            )
        })?;
        let store = Arc::new(store);
        let (changes, _) = broadcast::channel(4096);
        let sender = changes.clone();
        store.subscribe(Arc::new(move |change: &Change| {
            // No receiver is fine: nobody is listening right now.
            let _ = sender.send(Arc::new(change.clone()));
        }));
        Ok(Arc::new(AppState {
            store,
            settings,
            clock,
            changes,
            ws: ws::Registry::default(),
            shutdown,
            sync_gate: tokio::sync::Mutex::new(()),
            renames: crate::renames::RenameFinder::default(),
            _root_lock: root_lock,
        }))
    }

    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Stale touches of a graph whose project lies at `root` (none for the user
    /// graph), each with the path git says its file went to, when it knows one.
    pub fn stale_offers(
        &self,
        stale: Vec<kg_core::StaleTouch>,
        root: Option<&std::path::Path>,
    ) -> Vec<(kg_core::StaleTouch, Option<String>)> {
        let renames = |root: &std::path::Path| self.renames.renames(root);
        kg_core::with_renames(stale, root, self.store.home(), &renames)
    }

    /// Run store work off the async runtime (it may fsync).
    pub async fn blocking<R: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&AppState, f64) -> R + Send + 'static,
    ) -> R {
        let state = self.clone();
        let now = self.now();
        match tokio::task::spawn_blocking(move || work(&state, now)).await {
            Ok(r) => r,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// Is this `Host` header (port stripped) one of ours?
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let name = strip_port(&host);
        if name.is_empty() {
            return false;
        }
        let bind = self.settings.host.to_ascii_lowercase();
        is_loopback_name(name) || name == bind || name.trim_matches(['[', ']']) == bind
    }

    /// Is this `Origin` a page of ours: the page this server itself serves (its
    /// origin names the very host and port the request is addressed to — also
    /// through a dev proxy that forwards `Host`), or the tray app's webview? A page on
    /// another port of a local host is another origin: it could otherwise subscribe
    /// to `/ws`, whose handshake carries no `Sec-Fetch-Site`.
    pub fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        if [
            "tauri://localhost",
            "http://tauri.localhost",
            "https://tauri.localhost",
        ]
        .contains(&origin.as_str())
            || self
                .settings
                .extra_origins
                .iter()
                .any(|o| o.eq_ignore_ascii_case(&origin))
        {
            return true;
        }
        let Some(authority) = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
        else {
            return false;
        };
        authority == host.trim().to_ascii_lowercase() && self.host_allowed(authority)
    }
}

/// `localhost:8765` → `localhost`; `[::1]:8765` → `[::1]`; `::1` stays. Anything but
/// `:<digits>` after the name leaves the text whole, so it matches no local name
/// (`localhost:80@evil.example` is not localhost).
fn strip_port(host: &str) -> &str {
    let port = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end)
                if host[end + 1..]
                    .strip_prefix(':')
                    .map_or(host.len() == end + 1, port) =>
            {
                &host[..=end]
            }
            _ => host,
        };
    }
    match host.split_once(':') {
        Some((name, rest)) if !rest.contains(':') => {
            if port(rest) {
                name
            } else {
                host
            }
        }
        _ => host,
    }
}

fn is_loopback_name(name: &str) -> bool {
    matches!(name, "localhost" | "127.0.0.1" | "::1" | "[::1]")
}

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
        .merge(crate::import::route::router())
        .merge(crate::activity::router())
        .merge(crate::sync::served::router())
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

/// Bind the listening socket, explaining a port that is already taken.
pub async fn bind(settings: &Settings) -> anyhow::Result<TcpListener> {
    let addr = format!("{}:{}", settings.host, settings.port);
    match TcpListener::bind(&addr).await {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            let holder = match probe_health(&settings.base_url()).await {
                Some(version) => {
                    format!("another KG Memory server (version {version}) is already running there")
                }
                None => {
                    "another program is using it (it does not answer like KG Memory)".to_string()
                }
            };
            anyhow::bail!(
                "port {} on {} is already in use: {holder}. Use that server, stop it, or choose another port with --port N (or KG_HTTP_PORT=N).",
                settings.port,
                settings.host
            )
        }
        Err(e) => Err(anyhow::anyhow!("cannot listen on {addr}: {e}")),
    }
}

/// Ask `/health` at `base` whether a KG Memory server answers; returns its version.
pub async fn probe_health(base: &str) -> Option<String> {
    let url = format!("{base}/health");
    let body = crate::client::get(&url, std::time::Duration::from_secs(2))
        .await
        .ok()?;
    let value: serde_json::Value = serde_json::from_str(&body).ok()?;
    (value["transport"] == "streamable-http")
        .then(|| value["version"].as_str().unwrap_or("?").to_string())
}

/// Serve until `state.shutdown` is cancelled; then drain, stop background work and
/// flush everything to disk.
pub async fn serve(state: Arc<AppState>, listener: TcpListener) -> anyhow::Result<()> {
    let local: SocketAddr = listener.local_addr()?;
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
    result.map_err(|e| anyhow::anyhow!("server error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_stripped_only_when_they_are_ports() {
        assert_eq!(strip_port("localhost:8765"), "localhost");
        assert_eq!(strip_port("localhost"), "localhost");
        assert_eq!(strip_port("[::1]:8765"), "[::1]");
        assert_eq!(strip_port("[::1]"), "[::1]");
        assert_eq!(strip_port("::1"), "::1");
        for odd in [
            "localhost:80@evil.example",
            "localhost:x",
            "[::1]evil",
            "[::1]:1@e",
        ] {
            assert!(!is_loopback_name(strip_port(odd)), "{odd}");
        }
    }
}
