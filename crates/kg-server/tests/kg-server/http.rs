//! REST, guards, malformed input and WebSocket behaviour against the real server.

use crate::server::Server;
use futures_util::SinkExt;
use kg_test_support::ws;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

fn project(server: &Server, name: &str) -> String {
    let dir = server.home.join(name);
    std::fs::create_dir_all(&dir).expect("project dir");
    dir.to_string_lossy().into_owned()
}

#[test]
fn rest_crud_for_nodes_edges_and_progress() {
    let server = Server::fresh();
    let (status, reg) = server.json("POST", "/api/sessions/register", None);
    assert_eq!(status, 200);
    let sid = reg["session_id"].as_str().expect("sid").to_string();
    let proj = project(&server, "app");
    let (status, put) = server.json(
        "POST",
        "/api/nodes",
        Some(&json!({"level": "project", "id": "cache-ttl", "gist": "TTL is 5 min", "session_id": sid, "project_path": proj})),
    );
    assert_eq!(status, 200, "{put}");
    assert_eq!(put["level"], "project");
    assert_eq!(put["node"]["gist"], "TTL is 5 min");
    let (status, _) = server.json(
        "POST",
        "/api/nodes",
        Some(
            &json!({"level": "project", "id": "cache", "gist": "edge cache", "project_path": proj}),
        ),
    );
    assert_eq!(status, 200);
    let (status, edge) = server.json(
        "POST",
        "/api/edges",
        Some(&json!({"level": "project", "from": "cache-ttl", "to": "cache", "rel": "part-of", "project_path": proj, "notes": ["n"]})),
    );
    assert_eq!(status, 200, "{edge}");
    assert_eq!(
        edge["edge"],
        json!({"from": "cache-ttl", "to": "cache", "rel": "part-of", "notes": ["n"]})
    );
    let q = format!("?project_path={}", kg_client::encode(&proj));
    let (status, graph) = server.json("GET", &format!("/api/graph/read{q}"), None);
    assert_eq!(status, 200);
    assert_eq!(graph["project"]["nodes"].as_array().map(Vec::len), Some(2));
    assert_eq!(graph["project"]["edges"].as_array().map(Vec::len), Some(1));
    let (status, read) = server.json("GET", &format!("/api/nodes/project/cache-ttl{q}"), None);
    assert_eq!(status, 200);
    assert_eq!(read["was_archived"], false);
    assert_eq!(read["edges"].as_array().map(Vec::len), Some(1));
    let path = format!("/api/edges/project/cache-ttl/cache/part-of{q}");
    assert_eq!(
        server.json("DELETE", &path, None),
        (200, json!({"deleted": true, "level": "project"}))
    );
    assert_eq!(
        server.json("DELETE", &path, None),
        (200, json!({"deleted": false, "level": "project"}))
    );
    let node = format!("/api/nodes/project/cache{q}");
    let (status, deleted) = server.json("DELETE", &node, None);
    assert_eq!((status, deleted["deleted"].clone()), (200, json!("cache")));
    let (status, missing) = server.json("DELETE", &node, None);
    assert_eq!(status, 404);
    assert_eq!(missing["detail"], "Node 'cache' not found in project graph");
    let (status, stored) = server.json(
        "POST",
        "/api/progress",
        Some(&json!({"task_id": "t1", "state": {"step": 2}})),
    );
    assert_eq!(
        (status, stored),
        (200, json!({"task_id": "t1", "stored": true}))
    );
    assert_eq!(
        server.json("GET", "/api/progress/t1", None),
        (200, json!({"step": 2}))
    );
    assert_eq!(
        server.json("GET", "/api/progress/none", None),
        (200, json!({}))
    );
    let (status, stats) = server.json("GET", &format!("/api/sessions/{sid}/stats"), None);
    assert_eq!(status, 200);
    assert!(stats["graphs"]["user"].is_object(), "{stats}");
}

#[test]
fn bad_requests_get_clear_errors() {
    let server = Server::fresh();
    let post = |body: &str, ct: &str| {
        server
            .http("POST", "/api/nodes", Some(body), &[("Content-Type", ct)])
            .expect("http")
    };
    let (status, _, body) = post(
        r#"{"level": "user", "id": "<script>x</script>", "gist": "g"}"#,
        "application/json",
    );
    assert_eq!(status, 400);
    assert!(body.contains("Invalid node id"), "{body}");
    let (status, _, body) = post(
        r#"{"level": "user", "id": "ok", "gist": "g""#,
        "application/json",
    );
    assert_eq!(status, 400);
    assert!(body.contains("Malformed JSON body"), "{body}");
    let (status, _, body) = post(
        r#"{"level": "user", "id": 5, "gist": "g"}"#,
        "application/json",
    );
    assert_eq!(status, 422);
    assert!(
        body.contains("\"id\"") && body.contains("valid string"),
        "{body}"
    );
    let (status, _, _) = post(
        r#"{"level": "user", "id": "ok", "gist": "g"}"#,
        "text/plain",
    );
    assert_eq!(status, 415);
    let (status, _, body) = post(
        r#"{"level": "team", "id": "ok", "gist": "g"}"#,
        "application/json",
    );
    assert_eq!(status, 400);
    assert!(body.contains("Invalid level 'team'"), "{body}");
    let huge = format!(
        r#"{{"level": "user", "id": "big", "gist": "{}"}}"#,
        "x".repeat(2 << 20)
    );
    let (status, _, body) = post(&huge, "application/json");
    assert_eq!(status, 413);
    assert!(body.contains("1 MiB"), "{body}");
    let outside = json!({"level": "project", "id": "x", "gist": "g", "project_path": "/etc"});
    let (status, body) = server.json("POST", "/api/nodes", Some(&outside));
    assert_eq!(status, 400);
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Project path must be within home directory"))
    );
    let (status, _) = server.json("POST", "/api/sessions/register?project_path=/etc", None);
    assert_eq!(status, 400, "a path outside home is the caller's error");
    let (status, body) = server.json("GET", "/api/nope", None);
    assert_eq!((status, body), (404, json!({"detail": "Not Found"})));
    let (status, _, body) = server.http("GET", "/nope", None, &[]).expect("http");
    assert_eq!((status, body.as_str()), (404, "Not Found"));
    // Nothing of the above reached the disk.
    assert!(!server.storage.join("user.json").exists());
}

#[test]
fn malformed_json_rpc_is_answered_with_a_json_rpc_error() {
    let server = Server::fresh();
    let rpc = |body: &str| {
        server
            .http(
                "POST",
                "/",
                Some(body),
                &[
                    ("Content-Type", "application/json"),
                    ("Accept", "application/json, text/event-stream"),
                ],
            )
            .expect("http")
    };
    let (status, _, body) = rpc("{not json");
    assert_eq!(status, 400);
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["error"]["code"], -32700);
    let (status, _, body) = rpc(r#"{"hello": "world"}"#);
    assert_eq!(status, 400);
    assert!(
        body.contains("-32600") && body.contains("jsonrpc"),
        "{body}"
    );
    let (status, _, _) = rpc(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"p":"{}"}}}}"#,
        "y".repeat(2 << 20)
    ));
    assert_eq!(status, 413);
}

#[test]
fn foreign_hosts_and_origins_are_refused_everywhere() {
    let server = Server::fresh();
    for (method, path) in [
        ("GET", "/health"),
        ("GET", "/api/health"),
        ("POST", "/"),
        ("GET", "/ws"),
        ("GET", "/api/graph/read"),
        ("GET", "/nope"),
    ] {
        for host in ["evil.example", "evil.example:8765", ""] {
            let (status, _, body) = server
                .http(method, path, None, &[("Host", host)])
                .expect("http");
            assert_eq!(status, 421, "{method} {path} Host {host:?}");
            assert_eq!(body, "Misdirected Request: Host must be local");
        }
    }
    for host in ["localhost", "127.0.0.1:8765", "[::1]:1"] {
        let (status, _, _) = server
            .http("GET", "/health", None, &[("Host", host)])
            .expect("http");
        assert_eq!(status, 200, "{host}");
    }
    for origin in [
        "https://evil.com",
        "file://x",
        "null",
        "http://localhost.evil.com",
    ] {
        let (status, _, _) = server
            .http("GET", "/health", None, &[("Origin", origin)])
            .expect("http");
        assert_eq!(status, 403, "{origin}");
    }
    // Another port of a local host is another origin.
    for origin in ["http://localhost:8766", "http://127.0.0.1:5173"] {
        let (status, _, _) = server
            .http("GET", "/health", None, &[("Origin", origin)])
            .expect("http");
        assert_eq!(status, 403, "{origin}");
    }
    let own = format!("http://127.0.0.1:{}", server.port);
    for origin in [own.as_str(), "tauri://localhost"] {
        let (status, _, _) = server
            .http("GET", "/health", None, &[("Origin", origin)])
            .expect("http");
        assert_eq!(status, 200, "{origin}");
    }
}

async fn ws_connect(
    server: &Server,
    query: &str,
    origin: Option<&str>,
) -> Result<ws::Socket, String> {
    let headers: Vec<(&str, &str)> = origin.map(|o| ("Origin", o)).into_iter().collect();
    ws::connect(server.port, query, &headers, Duration::from_secs(30)).await
}

async fn next_json(socket: &mut ws::Socket) -> Value {
    ws::next_json(socket, Duration::from_secs(10))
        .await
        .expect("a message within 10 s")
}

#[tokio::test(flavor = "multi_thread")]
async fn websocket_pushes_other_sessions_changes_and_guards_origin() {
    let mut server = tokio::task::spawn_blocking(Server::fresh)
        .await
        .expect("server");
    assert!(
        ws_connect(&server, "", Some("http://evil.example"))
            .await
            .is_err(),
        "foreign origin refused"
    );
    assert!(
        ws_connect(&server, "", Some("http://localhost:8766"))
            .await
            .is_err(),
        "another local origin refused"
    );
    let own = format!("http://127.0.0.1:{}", server.port);
    let mut local = ws_connect(&server, "", Some(&own))
        .await
        .expect("the server's own page");
    assert_eq!(next_json(&mut local).await["type"], "connected");
    drop(local);

    let proj = project(&server, "svc");
    let mut viewer = ws_connect(&server, "", None).await.expect("connect");
    let hello = next_json(&mut viewer).await;
    assert_eq!(hello["type"], "connected");
    let encoded = kg_client::encode(&proj);
    let mut subscriber = ws_connect(&server, &format!("?project_path={encoded}"), None)
        .await
        .expect("connect");
    assert_eq!(next_json(&mut subscriber).await["type"], "connected");
    // ping → pong; binary frames are ignored, not fatal.
    viewer
        .send(Message::Binary(vec![1, 2, 3].into()))
        .await
        .expect("binary");
    viewer
        .send(Message::Text("ping".into()))
        .await
        .expect("ping");
    assert_eq!(next_json(&mut viewer).await, json!({"type": "pong"}));

    // An agent writes through MCP: both hear the user-level write.
    let proj2 = proj.clone();
    let (server2, sid) = tokio::task::spawn_blocking(move || {
        let (text, _) = server.call("kg_read", &json!({"cwd": proj2}));
        let sid = kg_test_support::http::session_of(&text).expect("session id");
        server.call(
            "kg_put_node",
            &json!({"session_id": sid, "level": "user", "id": "u1", "gist": "user fact"}),
        );
        server.call(
            "kg_put_node",
            &json!({"session_id": sid, "level": "project", "id": "p1", "gist": "project fact"}),
        );
        (server, sid)
    })
    .await
    .expect("writes");
    server = server2;
    let m = next_json(&mut viewer).await;
    assert_eq!(
        (m["type"].as_str(), m["node"]["id"].as_str()),
        (Some("node_updated"), Some("u1"))
    );
    assert_eq!(m["source_session"], sid);
    let m = next_json(&mut subscriber).await;
    assert_eq!(m["node"]["id"], "u1");
    // Only the project subscriber hears the project-level write.
    let m = next_json(&mut subscriber).await;
    assert_eq!(
        (
            m["type"].as_str(),
            m["node"]["id"].as_str(),
            m["level"].as_str()
        ),
        (Some("node_updated"), Some("p1"), Some("project"))
    );

    // The writer's own connection never hears its own writes.
    let mut own = ws_connect(&server, &format!("?session_id={sid}"), None)
        .await
        .expect("connect");
    assert_eq!(next_json(&mut own).await["session_id"], sid);
    let s = tokio::task::spawn_blocking(move || {
        server.call(
            "kg_put_node",
            &json!({"session_id": sid, "level": "user", "id": "u2", "gist": "again"}),
        );
        server
    })
    .await
    .expect("write");
    let m = next_json(&mut viewer).await;
    assert_eq!(m["node"]["id"], "u2");
    own.send(Message::Text("ping".into())).await.expect("ping");
    assert_eq!(
        next_json(&mut own).await,
        json!({"type": "pong"}),
        "no node_updated before the pong"
    );
    drop(s);
}
