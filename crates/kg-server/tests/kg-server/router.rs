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

#[tokio::test]
async fn health_answers_on_both_paths() {
    let app = App::new();
    for path in ["/health", "/api/health"] {
        let request = Request::get(path)
            .header(header::HOST, HOST)
            .body(Body::empty())
            .expect("request");
        let (status, content_type, body) = app.send(request).await;
        assert_eq!(
            (status, content_type.as_str()),
            (StatusCode::OK, "application/json")
        );
        assert_eq!(
            body,
            format!(
                r#"{{"status":"ok","version":"{}","transport":"streamable-http","active_sessions":0,"loaded_graphs":1}}"#,
                kg_server::VERSION
            )
        );
    }
}

#[tokio::test]
async fn nodes_and_edges_round_trip_through_rest() {
    let app = App::new();
    let (status, body) = app.call("POST", "/api/sessions/register", None).await;
    assert_eq!(status, 200, "{body}");
    assert!(parse(&body)["session_id"].is_string(), "{body}");

    let put = r#"{"level": "user", "id": "cache-ttl", "gist": "TTL is 5 min", "notes": ["n"]}"#;
    let (status, body) = app.call("POST", "/api/nodes", Some(put)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["node"]["gist"], "TTL is 5 min");
    let edge = r#"{"level": "user", "from": "cache-ttl", "to": "src/cache.rs", "rel": "in"}"#;
    let (status, body) = app.call("POST", "/api/edges", Some(edge)).await;
    assert_eq!(
        (status, parse(&body)),
        (
            200,
            json!({"edge": {"from": "cache-ttl", "to": "src/cache.rs", "rel": "in"}, "level": "user"})
        )
    );

    let (status, body) = app.call("GET", "/api/nodes/user/cache-ttl", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["edges"].as_array().map(Vec::len), Some(1));

    let path = "/api/edges/user/cache-ttl/src%2Fcache.rs/in";
    let (status, body) = app.call("DELETE", path, None).await;
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"deleted":true,"level":"user"}"#)
    );
    let (status, body) = app.call("DELETE", "/api/nodes/user/cache-ttl", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"deleted":"cache-ttl","level":"user","edges_deleted":0}"#
        )
    );
    let (status, body) = app.call("DELETE", "/api/nodes/user/cache-ttl", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            404,
            r#"{"detail":"Node 'cache-ttl' not found in user graph"}"#
        )
    );

    // `state: null` is a state like any other; only a missing one is refused.
    let (status, body) = app
        .call(
            "POST",
            "/api/progress",
            Some(r#"{"task_id": "t", "state": null}"#),
        )
        .await;
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"task_id":"t","stored":true}"#)
    );
}

#[tokio::test]
async fn unknown_paths_and_methods() {
    let app = App::new();
    // Under /api a JSON detail, elsewhere plain text.
    let request = Request::get("/api/nope")
        .header(header::HOST, HOST)
        .body(Body::empty())
        .expect("request");
    assert_eq!(
        app.send(request).await,
        (
            StatusCode::NOT_FOUND,
            "application/json".into(),
            r#"{"detail":"Not Found"}"#.into()
        )
    );
    let request = Request::get("/nope")
        .header(header::HOST, HOST)
        .body(Body::empty())
        .expect("request");
    assert_eq!(
        app.send(request).await,
        (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8".into(),
            "Not Found".into()
        )
    );
    // A known path with the wrong method: the router's own 405, naming what is allowed.
    let request = Request::get("/api/nodes")
        .header(header::HOST, HOST)
        .body(Body::empty())
        .expect("request");
    let response = app.router.clone().oneshot(request).await.expect("answer");
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        response
            .headers()
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok()),
        Some("POST")
    );
    let (status, body) = app.call("PUT", "/api/nodes/user/x", None).await;
    assert_eq!((status, body.as_str()), (405, ""));
}

#[tokio::test]
async fn bad_bodies_get_todays_error_shapes() {
    let app = App::new();
    let problem = |field: &str, msg: &str| {
        format!(r#"{{"loc":["body","{field}"],"msg":"{msg}","type":"value_error"}}"#)
    };
    // Every field problem at once, in the order the fields are read.
    let (status, body) = app
        .call(
            "POST",
            "/api/nodes",
            Some(
                r#"{"level": null, "id": 5, "notes": "n", "touches": ["a", 1], "session_id": []}"#,
            ),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body,
        format!(
            r#"{{"detail":[{},{},{},{},{},{}]}}"#,
            problem("level", "Field required"),
            problem("id", "Input should be a valid string"),
            problem("gist", "Field required"),
            problem("notes", "Input should be a list of strings"),
            problem("touches", "Input should be a list of strings"),
            problem("session_id", "Input should be a valid string"),
        )
    );
    let (status, body) = app
        .call(
            "POST",
            "/api/edges",
            Some(r#"{"from": "a", "notes": [true]}"#),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body,
        format!(
            r#"{{"detail":[{},{},{},{}]}}"#,
            problem("level", "Field required"),
            problem("to", "Field required"),
            problem("rel", "Field required"),
            problem("notes", "Input should be a list of strings"),
        )
    );
    let (status, body) = app
        .call("POST", "/api/progress", Some(r#"{"level": 1}"#))
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body,
        format!(
            r#"{{"detail":[{},{},{}]}}"#,
            problem("task_id", "Field required"),
            problem("level", "Input should be a valid string"),
            problem("state", "Field required"),
        )
    );
    let (status, body) = app.call("POST", "/api/nodes", Some("[1]")).await;
    assert_eq!(
        (status, body),
        (
            422,
            format!(
                r#"{{"detail":[{}]}}"#,
                problem("", "the body must be a JSON object")
            )
        )
    );
    let (status, body) = app.call("POST", "/api/nodes", Some(r#"{"id": "x""#)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            r#"{"detail":"Malformed JSON body: EOF while parsing an object at line 1 column 10"}"#
        )
    );
    // Checked after the fields: the identifier first, then the level.
    let (status, body) = app
        .call(
            "POST",
            "/api/nodes",
            Some(r#"{"level": "team", "id": "a b", "gist": "g"}"#),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        parse(&body)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Invalid node id")),
        "{body}"
    );
    let (status, body) = app
        .call(
            "POST",
            "/api/nodes",
            Some(r#"{"level": "team", "id": "ab", "gist": "g"}"#),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        parse(&body)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Invalid level 'team'")),
        "{body}"
    );

    let request = Request::post("/api/nodes")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("{}"))
        .expect("request");
    assert_eq!(
        app.send(request).await,
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "application/json".into(),
            r#"{"detail":"Send the body as JSON with Content-Type: application/json"}"#.into()
        )
    );
    let huge = format!(r#"{{"gist": "{}"}}"#, "x".repeat(2 << 20));
    let (status, body) = app.call("POST", "/api/nodes", Some(&huge)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            413,
            r#"{"detail":"Request body is larger than the 1 MiB limit"}"#
        )
    );
    // A hook never breaks a session: an unusable body is answered with silence.
    for path in ["/api/prompt_context", "/api/tool_event"] {
        let (status, body) = app.call("POST", path, Some("[")).await;
        assert_eq!((status, body.as_str()), (200, "{}"), "{path}");
    }
}

#[tokio::test]
async fn query_and_path_errors() {
    let app = App::new();
    let (status, body) = app.call("GET", "/api/session_bootstrap", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            422,
            r#"{"detail":[{"loc":["query","project_path"],"msg":"Field required","type":"value_error"}]}"#
        )
    );
    let (status, body) = app
        .call("GET", "/api/session_state?project_path=", None)
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = app.call("GET", "/api/nodes/team/x", None).await;
    assert_eq!(status, 400);
    assert!(
        parse(&body)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Invalid level 'team'")),
        "{body}"
    );
    let (status, body) = app.call("GET", "/api/sessions/0123abcd/stats", None).await;
    assert_eq!(status, 404, "{body}");
    assert!(
        parse(&body)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Unknown session: 0123abcd.")),
        "{body}"
    );
    let outside = app
        .call("GET", "/api/graph/read?project_path=/etc", None)
        .await;
    assert_eq!(outside.0, 400, "{}", outside.1);
    let missing = format!(
        "/api/graph/read?project_path={}",
        kg_client::encode(&app.home.join("nowhere").to_string_lossy())
    );
    let (status, body) = app.call("GET", &missing, None).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn view_routes_answer_their_own_errors() {
    let app = App::new();
    let (status, body) = app.call("POST", "/api/view/step", Some("{}")).await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("missing field `level`"), "{body}");
    let (status, body) = app
        .call(
            "POST",
            "/api/view/step",
            Some(r#"{"level": "user", "actions": [{"kind": "gone", "id": "x"}]}"#),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("unknown variant `gone`"), "{body}");
    let (status, body) = app
        .call(
            "POST",
            "/api/view/step",
            Some(r#"{"level": "user", "actions": [{"kind": "promote", "id": "x"}]}"#),
        )
        .await;
    assert_eq!(
        (status, body.as_str()),
        (404, r#"{"detail":"Node 'x' not found in user graph"}"#)
    );
    let (status, body) = app.call("GET", "/api/view/level?level=project", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            r#"{"detail":"project_path is required for the project level"}"#
        )
    );
    let (status, body) = app
        .call("GET", "/api/view/search?q=x&levels=user,team", None)
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = app.call("GET", "/api/view/graphs", None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["graphs"][0]["graph"], "user");

    // A move that works: put a node in a project, archive it by hand, promote it back.
    let project = app.project("app");
    let put = json!({"level": "project", "id": "n1", "gist": "g", "project_path": project});
    let (status, body) = app.call("POST", "/api/nodes", Some(&put.to_string())).await;
    assert_eq!(status, 200, "{body}");
    for (kind, list) in [("archive", "archived"), ("promote", "promoted")] {
        let step = json!({"level": "project", "project_path": project,
                          "actions": [{"kind": kind, "id": "n1"}]});
        let (status, body) = app
            .call("POST", "/api/view/step", Some(&step.to_string()))
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(parse(&body)[list], json!(["n1"]), "{kind}");
    }
}

#[tokio::test]
async fn the_guard_refuses_strangers_before_any_route() {
    let app = App::new();
    let get = |host: Option<&str>, extra: &[(&str, &str)]| {
        let mut request = Request::get("/api/health");
        if let Some(host) = host {
            request = request.header(header::HOST, host);
        }
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        request.body(Body::empty()).expect("request")
    };
    let text = "text/plain; charset=utf-8".to_string();
    let misdirected = (
        StatusCode::MISDIRECTED_REQUEST,
        text.clone(),
        "Misdirected Request: Host must be local".to_string(),
    );
    assert_eq!(app.send(get(Some("evil.example"), &[])).await, misdirected);
    assert_eq!(app.send(get(None, &[])).await, misdirected);
    assert_eq!(
        app.send(get(Some("localhost:80@evil.example"), &[])).await,
        misdirected
    );
    let cross_site = (
        StatusCode::FORBIDDEN,
        text.clone(),
        "Forbidden: KG Memory does not answer requests made by another site's page; open the graph view by typing its address".to_string(),
    );
    for site in ["cross-site", "same-site", "someday"] {
        assert_eq!(
            app.send(get(Some(HOST), &[("sec-fetch-site", site)])).await,
            cross_site,
            "{site}"
        );
    }
    let foreign_origin = (
        StatusCode::FORBIDDEN,
        text,
        "Forbidden: requests from this page's origin are not accepted; KG Memory only talks to its own pages".to_string(),
    );
    for origin in ["http://evil.example", "http://127.0.0.1:9999", "null"] {
        assert_eq!(
            app.send(get(Some(HOST), &[("origin", origin)])).await,
            foreign_origin,
            "{origin}"
        );
    }
    // The page's own origin, the user's own navigation and the tray's webview pass.
    for extra in [
        [
            ("origin", "http://127.0.0.1:8765"),
            ("sec-fetch-site", "same-origin"),
        ],
        [("origin", "tauri://localhost"), ("sec-fetch-site", "none")],
    ] {
        let (status, _, body) = app.send(get(Some(HOST), &extra)).await;
        assert_eq!(status, StatusCode::OK, "{extra:?}: {body}");
    }
    let (status, _, _) = app.send(get(Some("localhost"), &[])).await;
    assert_eq!(status, StatusCode::OK);
    // A refused mutation never reaches the store.
    let request = Request::post("/api/nodes")
        .header(header::HOST, HOST)
        .header("sec-fetch-site", "cross-site")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"level": "user", "id": "x", "gist": "g"}"#))
        .expect("request");
    assert_eq!(app.send(request).await.0, StatusCode::FORBIDDEN);
    let (status, _) = app.call("GET", "/api/nodes/user/x", None).await;
    assert_eq!(status, 404);
}

/// One JSON-RPC message POSTed to the MCP endpoint, as Claude Code sends it.
async fn rpc(app: &App, message: &Value) -> (StatusCode, Value) {
    let request = Request::post("/")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(message.to_string()))
        .expect("request");
    let (status, content_type, body) = app.send(request).await;
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}: {body}"
    );
    (status, parse(&body))
}

#[tokio::test]
async fn mcp_is_served_at_the_root() {
    let app = App::new();
    let (status, init) = rpc(
        &app,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "router-test", "version": "0"},
        }}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{init}");
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(
        init["result"]["serverInfo"]["name"], "knowledge-graph-mcp",
        "{init}"
    );
    assert_eq!(init["result"]["serverInfo"]["version"], kg_server::VERSION);
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );

    // Stateless: no session header, no initialize needed before a request.
    let (status, list) = rpc(
        &app,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        [
            "kg_read",
            "kg_search",
            "kg_put_node",
            "kg_rename_node",
            "kg_put_edge",
            "kg_delete_node",
            "kg_delete_edge",
            "kg_useful",
            "kg_sync",
            "kg_progress",
            "kg_fix_touch"
        ]
    );
    assert_eq!(
        list["result"]["tools"][2]["inputSchema"]["required"],
        json!(["session_id", "level", "id", "gist"])
    );

    // A call reaches the tool's validation.
    let (status, call) = rpc(
        &app,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "kg_put_node", "arguments": {"session_id": "a", "level": "user", "id": "x"},
        }}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{call}");
    assert_eq!(call["result"]["isError"], true);
    assert_eq!(
        call["result"]["content"][0]["text"],
        "Input validation error: 'gist' is a required property"
    );

    // Malformed JSON-RPC is screened before rmcp.
    let request = Request::post("/")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from("{"))
        .expect("request");
    let (status, _, body) = app.send(request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(parse(&body)["error"]["code"], -32700, "{body}");
    let (status, answer) = rpc(
        &app,
        &json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(
        (status, answer),
        (
            StatusCode::BAD_REQUEST,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request: \"jsonrpc\" must be \"2.0\""}})
        )
    );
    // The guard stands in front of MCP too.
    let request = Request::post("/")
        .header(header::HOST, "evil.example")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
        ))
        .expect("request");
    assert_eq!(app.send(request).await.0, StatusCode::MISDIRECTED_REQUEST);
}

#[tokio::test]
async fn the_neighbourhood_view_answers_from_the_store() {
    let app = App::new();
    // a → b ← c → d, a → src/x.rs, b → a node of the other level; c archived by hand.
    for id in ["a", "b", "c", "d", "far"] {
        let put = json!({"level": "user", "id": id, "gist": format!("gist of {id}")});
        let (status, body) = app.call("POST", "/api/nodes", Some(&put.to_string())).await;
        assert_eq!(status, 200, "{body}");
    }
    for (from, to) in [
        ("a", "b"),
        ("c", "b"),
        ("c", "d"),
        ("d", "far"),
        ("a", "src/x.rs"),
        ("b", "proj-note"),
    ] {
        let edge = json!({"level": "user", "from": from, "to": to, "rel": "r"});
        let (status, body) = app
            .call("POST", "/api/edges", Some(&edge.to_string()))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let archive = r#"{"level": "user", "actions": [{"kind": "archive", "id": "c"}]}"#;
    let (status, body) = app.call("POST", "/api/view/step", Some(archive)).await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=user&id=b&k=1", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        parse(&body),
        json!({
            "level": "user",
            "project_path": null,
            "id": "b",
            "k": 1,
            "nodes": [
                {"id": "b", "distance": 0, "tier": "active"},
                {"id": "a", "distance": 1, "tier": "active"},
                {"id": "c", "distance": 1, "tier": "archived"},
            ],
            "artifacts": [],
            "edges": [
                {"from": "a", "to": "b", "rel": "r"},
                {"from": "c", "to": "b", "rel": "r"},
            ],
            "outside_edges": 1,
        })
    );
    // k defaults to 1; k = 2 reaches d and the file a points at; k = 3 reaches `far`.
    let (_, one) = app.call("GET", "/api/view/neighbourhood?id=b", None).await;
    assert_eq!(parse(&one)["k"], 1);
    assert_eq!(parse(&one)["nodes"], parse(&body)["nodes"]);
    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=user&id=b&k=2", None)
        .await;
    assert_eq!(status, 200, "{body}");
    let body = parse(&body);
    let ids: Vec<&str> = body["nodes"]
        .as_array()
        .map(|n| n.iter().filter_map(|x| x["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, ["b", "a", "c", "d"]);
    assert_eq!(
        body["artifacts"],
        json!([{"path": "src/x.rs", "distance": 2}])
    );
    assert_eq!(body["edges"].as_array().map(Vec::len), Some(4));
    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=user&id=b&k=3", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parse(&body)["nodes"][4]["id"], "far");

    // k outside 1–3, or no number at all.
    for k in ["0", "4", "-1", "two", "1.5"] {
        let (status, body) = app
            .call(
                "GET",
                &format!("/api/view/neighbourhood?level=user&id=b&k={k}"),
                None,
            )
            .await;
        assert_eq!(
            (status, body),
            (
                400,
                format!(r#"{{"detail":"Invalid k '{k}': a neighbourhood reaches 1 to 3 hops"}}"#)
            ),
            "k={k}"
        );
    }
    // An unknown node, a missing id, an unknown level.
    let (status, body) = app
        .call(
            "GET",
            "/api/view/neighbourhood?level=user&id=nope&k=2",
            None,
        )
        .await;
    assert_eq!(
        (status, body.as_str()),
        (404, r#"{"detail":"Node 'nope' not found in user graph"}"#)
    );
    let (status, body) = app.call("GET", "/api/view/neighbourhood?k=2", None).await;
    assert_eq!(
        (status, body.as_str()),
        (
            422,
            r#"{"detail":[{"loc":["query","id"],"msg":"Field required","type":"value_error"}]}"#
        )
    );
    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=team&id=b", None)
        .await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn the_neighbourhood_view_stays_inside_the_projects() {
    let app = App::new();
    let project = app.project("app");
    for id in ["n1", "n2"] {
        let put = json!({"level": "project", "id": id, "gist": "g", "project_path": project});
        let (status, body) = app.call("POST", "/api/nodes", Some(&put.to_string())).await;
        assert_eq!(status, 200, "{body}");
    }
    let edge =
        json!({"level": "project", "from": "n1", "to": "n2", "rel": "r", "project_path": project});
    let (status, body) = app
        .call("POST", "/api/edges", Some(&edge.to_string()))
        .await;
    assert_eq!(status, 200, "{body}");
    let encoded = kg_client::encode(&project);
    let (status, body) = app
        .call(
            "GET",
            &format!("/api/view/neighbourhood?level=project&project_path={encoded}&id=n1&k=1"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let body = parse(&body);
    assert_eq!(body["project_path"], project.as_str());
    assert_eq!(
        body["nodes"],
        json!([
            {"id": "n1", "distance": 0, "tier": "active"},
            {"id": "n2", "distance": 1, "tier": "active"},
        ])
    );

    // The project level needs a project; paths that climb out of home are refused
    // before any graph is touched, and a project that does not exist is 404.
    let (status, body) = app
        .call("GET", "/api/view/neighbourhood?level=project&id=n1", None)
        .await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            r#"{"detail":"project_path is required for the project level"}"#
        )
    );
    let outside_home = "Project path must be within home directory: ";
    for (climb, status_wanted, detail_wanted) in [
        (format!("{project}/../../../etc"), 400, outside_home),
        ("/etc".to_string(), 400, outside_home),
        (
            "../../etc/passwd".to_string(),
            400,
            "Project path must be absolute: ",
        ),
        // Encoded dots are a folder name, not a climb: no such project.
        (
            format!("{project}/%2e%2e/%2e%2e/etc"),
            404,
            "No such project: ",
        ),
    ] {
        let uri = format!(
            "/api/view/neighbourhood?level=project&id=n1&project_path={}",
            kg_client::encode(&climb)
        );
        let (status, body) = app.call("GET", &uri, None).await;
        assert_eq!(status, status_wanted, "{climb}: {body}");
        assert!(
            parse(&body)["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with(detail_wanted)),
            "{climb}: {body}"
        );
    }
    // Nothing was created for the refused paths: the one project graph is `app`'s.
    let (_, graphs) = app.call("GET", "/api/view/graphs", None).await;
    let projects: Vec<Value> = parse(&graphs)["graphs"]
        .as_array()
        .map(|g| {
            g.iter()
                .skip(1)
                .map(|x| x["project_path"].clone())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(projects, [json!(project)]);
    let missing = kg_client::encode(&app.home.join("nowhere").to_string_lossy());
    let (status, body) = app
        .call(
            "GET",
            &format!("/api/view/neighbourhood?level=project&id=n1&project_path={missing}"),
            None,
        )
        .await;
    assert_eq!(status, 404, "{body}");
}
