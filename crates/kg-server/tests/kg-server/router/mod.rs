//! The axum router the server builds, driven in-process with `oneshot`: routing, error
//! shapes, the cross-site guard and MCP, without a socket or a child process.

use crate::server::temp_home;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use kg_server::{AppState, Settings};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

mod mcp;
mod rest;
mod view;

/// The Host every request names unless a test says otherwise.
const HOST: &str = "127.0.0.1:8765";

/// A router over a fresh storage root; the temporary home lives as long as it.
struct App {
    router: Router,
    home: PathBuf,
    _dir: tempfile::TempDir,
}

impl App {
    fn new() -> App {
        let (dir, home) = temp_home();
        // A frozen clock keeps answers the same from run to run.
        let clock = home.join(".kg-clock");
        std::fs::write(&clock, "1795176000").expect("clock file");
        let settings = Settings {
            host: "127.0.0.1".into(),
            port: 8765,
            storage_root: home.join(".knowledge-graph"),
            home: home.clone(),
            save_interval: Duration::from_secs(3600),
            autocommit_interval: None,
            ws_ping_interval: Duration::from_secs(30),
            grace_days: 5.0,
            orphan_grace_days: 365.0,
            clock_file: Some(clock),
            extra_origins: Vec::new(),
            policy: kg_core::Policy::Ours,
            project_roots: Vec::new(),
            merge_driver: None,
            budgets: kg_core::Budgets::default(),
        };
        let state = AppState::open(settings, CancellationToken::new()).expect("open the app");
        App {
            router: kg_server::app::router(state),
            home,
            _dir: dir,
        }
    }

    /// Send one request; answers status, content type and body text.
    async fn send(&self, request: Request<Body>) -> (StatusCode, String, String) {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router never fails");
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let body = String::from_utf8(bytes.to_vec()).expect("utf-8 body");
        (status, content_type, body)
    }

    /// A local request with an optional JSON body.
    async fn call(&self, method: &str, uri: &str, body: Option<&str>) -> (u16, String) {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::HOST, HOST);
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let request = request
            .body(Body::from(body.unwrap_or("").to_string()))
            .expect("request");
        let (status, _, body) = self.send(request).await;
        (status.as_u16(), body)
    }

    /// A project folder under the temporary home.
    fn project(&self, name: &str) -> String {
        let dir = self.home.join(name);
        std::fs::create_dir_all(&dir).expect("project dir");
        dir.to_string_lossy().into_owned()
    }
}

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}
