//! Pages of other sites (issue 17, items 2 and 9). Browsers send no `Origin` on
//! `<img>` loads or `no-cors` GETs, but they do send `Sec-Fetch-Site`: every route
//! refuses `cross-site` and `same-site` with 403, and still answers the page's own
//! origin (`same-origin`), what the user started (`none`), and clients that send no
//! such header (hooks, MCP clients, curl). The page at `/ui` may not be framed and runs
//! only the server's own scripts and styles.
//!
//! All three fail on the code before the fix (checked with a build of that commit):
//! a cross-site `GET /health` was answered 200, a cross-site WebSocket handshake was
//! accepted, and `/ui` carried no CSP or X-Frame-Options.

use crate::server::Server;
use crate::wire;
use kg_test_support::http::header;
use kg_test_support::ws;
use serde_json::json;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// One request per route, each able to read or change the memory if let through.
fn routes(project: &str, sid: &str) -> Vec<(&'static str, String, String)> {
    let encoded = kg_client::encode(project);
    let put = json!({"level": "user", "id": "archived-fact", "gist": "overwritten"});
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "kg_put_node", "arguments": {"session_id": sid, "level": "user",
        "id": "archived-fact", "gist": "overwritten"}}});
    let step = json!({"level": "user", "actions": [{"kind": "promote", "id": "archived-fact"}]});
    vec![
        ("GET", "/health".into(), String::new()),
        ("GET", "/api/health".into(), String::new()),
        ("POST", "/".into(), call.to_string()),
        ("GET", "/api/nodes/user/archived-fact".into(), String::new()),
        ("POST", "/api/nodes".into(), put.to_string()),
        ("GET", "/api/sessions/abcd1234/stats".into(), String::new()),
        (
            "GET",
            format!("/api/graph/read?project_path={encoded}"),
            String::new(),
        ),
        (
            "GET",
            format!("/api/session_bootstrap?project_path={encoded}"),
            String::new(),
        ),
        ("GET", "/api/view/graphs".into(), String::new()),
        ("POST", "/api/view/step".into(), step.to_string()),
        (
            "POST",
            "/api/view/undo".into(),
            json!({"level": "user"}).to_string(),
        ),
        (
            "DELETE",
            "/api/edges/user/a/b/relates".into(),
            String::new(),
        ),
        ("GET", "/ws".into(), String::new()),
        ("GET", "/ui".into(), String::new()),
        ("GET", "/ui/".into(), String::new()),
        ("GET", "/ui/index.html".into(), String::new()),
        ("GET", "/ui/assets/missing.js".into(), String::new()),
        ("GET", "/nope".into(), String::new()),
    ]
}

fn send(
    port: u16,
    method: &str,
    path: &str,
    body: &str,
    fetch_site: Option<&str>,
) -> (u16, String, String) {
    let mut headers = vec![
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
    ];
    if path == "/ws" {
        // A full WebSocket upgrade request, as a browser sends it.
        headers.extend([
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ]);
    }
    if let Some(site) = fetch_site {
        headers.push(("Sec-Fetch-Site", site));
    }
    let (status, head, body) =
        wire::request(port, method, path, &headers, body.as_bytes(), TIMEOUT)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

/// A user-level node that is archived on disk, and a session to name in MCP calls.
fn seeded() -> (Server, String, String) {
    let mut server = Server::fresh();
    let project = server.home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let project = project.to_string_lossy().into_owned();
    let (text, _) = server.call("kg_read", &json!({"cwd": project}));
    let sid = wire::session_of(&text).expect("session");
    let (text, err) = server.call(
        "kg_put_node",
        &json!({"session_id": sid, "level": "user", "id": "archived-fact", "gist": "kept in the archive"}),
    );
    assert!(!err, "{text}");
    let (status, answer) = server.json(
        "POST",
        "/api/view/step",
        Some(&json!({"level": "user", "actions": [{"kind": "archive", "id": "archived-fact"}]})),
    );
    assert_eq!(status, 200, "{answer}");
    (server, project, sid)
}

#[test]
fn every_route_refuses_other_sites_and_answers_everyone_else() {
    let (server, project, sid) = seeded();
    let before = crate::faults::tree(&server.storage);
    for site in [
        "cross-site",
        "same-site",
        "Cross-Site",
        "cross-site, same-origin",
    ] {
        for (method, path, body) in routes(&project, &sid) {
            let (status, _, answer) = send(server.port, method, &path, &body, Some(site));
            assert_eq!(
                status, 403,
                "Sec-Fetch-Site {site}: {method} {path}: {answer}"
            );
            assert!(answer.contains("another site's page"), "{answer}");
        }
    }
    // Refused means untouched: nothing promoted, overwritten, registered or created.
    let after = crate::faults::tree(&server.storage);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "files appeared or vanished"
    );
    for (path, bytes) in &before {
        assert!(after[path] == *bytes, "{} changed", path.display());
    }
    let user: serde_json::Value =
        serde_json::from_slice(&after[std::path::Path::new("user.json")]).expect("user.json");
    assert_eq!(user["nodes"]["archived-fact"]["_archived"], true, "{user}");

    // The same requests without the header, from the page itself, or started by the
    // user are answered as usual (whatever the route answers, never the 403).
    for (method, path, body) in routes(&project, &sid) {
        let (plain, _, answer) = send(server.port, method, &path, &body, None);
        assert_ne!(plain, 403, "{method} {path}: {answer}");
        for site in ["same-origin", "none", "Same-Origin"] {
            let (status, _, answer) = send(server.port, method, &path, &body, Some(site));
            assert_eq!(
                status, plain,
                "Sec-Fetch-Site {site}: {method} {path}: {answer}"
            );
        }
    }
}

#[test]
fn websocket_handshakes_from_other_sites_are_refused() {
    let server = Server::fresh();
    let runtime = ws::runtime();
    let connect = |site: Option<&str>| {
        let headers: Vec<(&str, &str)> = site.map(|s| ("Sec-Fetch-Site", s)).into_iter().collect();
        runtime
            .block_on(ws::connect(server.port, "", &headers, TIMEOUT))
            .map(drop)
    };
    for site in ["cross-site", "same-site"] {
        let err = connect(Some(site)).expect_err(site);
        assert!(err.contains("403"), "{site}: {err}");
    }
    for site in [Some("same-origin"), Some("none"), None] {
        connect(site).unwrap_or_else(|e| panic!("{site:?}: {e}"));
    }
}

#[test]
fn the_page_cannot_be_framed_and_runs_only_its_own_code() {
    let server = Server::fresh();
    let port = server.port;
    for path in ["/ui", "/ui/", "/ui/index.html", "/ui/assets/missing.js"] {
        let (_, head, _) = send(port, "GET", path, "", None);
        let csp = header(&head, "content-security-policy")
            .unwrap_or_else(|| panic!("{path}: no Content-Security-Policy in\n{head}"));
        let directives: Vec<&str> = csp.split(';').map(str::trim).collect();
        for wanted in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        ] {
            assert!(
                directives.contains(&wanted),
                "{path}: {wanted} missing: {csp}"
            );
        }
        // Connections go to the server itself and its WebSocket, nowhere else.
        assert!(
            directives.contains(&format!("connect-src 'self' ws://127.0.0.1:{port}").as_str()),
            "{path}: {csp}"
        );
        assert!(!csp.contains("unsafe-"), "{path}: {csp}");
        assert_eq!(header(&head, "x-frame-options"), Some("DENY"), "{path}");
        assert_eq!(header(&head, "x-content-type-options"), Some("nosniff"));
    }
    // The policy names the host the page was asked for, and never echoes a strange one
    // into the header (the guard refuses it first anyway).
    let (_, head, _) = wire::request(port, "GET", "/ui", &[("Host", "localhost:9")], b"", TIMEOUT)
        .expect("answer");
    let csp = header(&head, "content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("connect-src 'self' ws://localhost:9;"),
        "{csp}"
    );
}
