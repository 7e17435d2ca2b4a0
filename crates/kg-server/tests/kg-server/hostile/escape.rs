//! Input that tries to reach outside: paths, ids and task ids aimed past the home or
//! storage, foreign hosts and origins, oversized WebSocket messages.

use super::*;

#[test]
fn paths_ids_and_task_ids_never_escape_home_or_storage() {
    let f = Fixture::new();
    let home = f.home.clone();
    let outside = tempfile::Builder::new()
        .prefix("kg-outside-")
        .tempdir()
        .expect("outside");
    std::os::unix::fs::symlink(outside.path(), home.join("link-out")).expect("symlink");
    std::os::unix::fs::symlink("/etc", home.join("etc-link")).expect("symlink");
    std::fs::create_dir_all(home.join("-rf")).expect("dash dir");
    let skip = [f.storage.as_path(), Path::new("/nonexistent")];
    let home_before = files_under(&home, &skip);
    let h = home.to_string_lossy();
    let escapes = [
        "/etc".to_string(),
        "/".to_string(),
        format!("{h}/.."),
        format!("{h}/../.."),
        format!("{h}/proj/../../.."),
        format!("{h}/link-out"),
        format!("{h}/link-out/sub"),
        format!("{h}/etc-link"),
        format!("{h}-evil/x"),
        "~/proj".to_string(),
        "proj".to_string(),
        "../../etc".to_string(),
    ];
    for cwd in &escapes {
        // A relative path is refused as such: the server cannot know what it is
        // relative to.
        let relative = !cwd.starts_with('/');
        let refusal = if relative {
            "Project path must be absolute"
        } else {
            "Project path must be within home directory"
        };
        let (text, err) = f.call("kg_read", json!({"cwd": cwd}));
        assert!(err, "{cwd}: {}", wire::clip(&text));
        assert!(text.contains(refusal), "{cwd}: {}", wire::clip(&text));
        let q = kg_client::encode(cwd);
        for (method, path) in [
            ("POST", format!("/api/sessions/register?project_path={q}")),
            ("GET", format!("/api/graph/read?project_path={q}")),
            ("GET", format!("/api/nodes/project/anchor?project_path={q}")),
        ] {
            let (status, v) = f.json(method, &path, None);
            assert_eq!(status, 400, "{method} {path}: {v}");
        }
        // A session starting outside home gets the user graph and the reason there is
        // no project memory; nothing is made for the folder.
        let (status, v) = f.json(
            "GET",
            &format!("/api/session_bootstrap?project_path={q}"),
            None,
        );
        if relative {
            assert_eq!(status, 400, "{cwd}: {v}");
        } else {
            assert_eq!(status, 200, "{cwd}: {v}");
            assert!(
                v["context"]
                    .as_str()
                    .is_some_and(|c| c.contains("No project memory in this session")),
                "{cwd}: {v}"
            );
        }
        let (status, v) = f.json(
            "POST",
            "/api/nodes",
            Some(json!({"level": "project", "id": "x", "gist": "g", "project_path": cwd})),
        );
        assert_eq!(status, 400, "{cwd}: {v}");
        let (status, v) = f.json(
            "POST",
            "/api/tool_event",
            Some(json!({"session_id": "c", "cwd": cwd, "tool_name": "Read",
                        "tool_input": {"file_path": "/etc/passwd"}})),
        );
        assert_eq!((status, v), (200, json!({})), "{cwd}");
    }
    // A folder name that cannot be a storage slug: the session reads the user level,
    // and project writes are refused.
    let text = f.ok("kg_read", json!({"cwd": format!("{h}/-rf")}));
    let dash = wire::session_of(&text).expect("session");
    let (text, err) = f.call(
        "kg_put_node",
        json!({"session_id": dash, "level": "project", "id": "x", "gist": "g"}),
    );
    assert!(err && text.contains("Invalid slug: '-rf'"), "{text}");
    // Odd but confined names, a NUL byte and an overlong path: errors or folders
    // inside the storage root, never anything else.
    for cwd in [
        format!("{h}/a\u{0}b"),
        format!("{h}/{}", "n".repeat(5_000)),
        format!("{h}/..."),
        format!("{h}/tab\tname"),
    ] {
        let (text, _) = f.call("kg_read", json!({"cwd": cwd}));
        assert!(!text.is_empty());
    }
    // Edge refs may name paths: they are stored as text, never opened.
    f.ok(
        "kg_put_edge",
        json!({"session_id": f.sid, "level": "user", "from": "anchor", "to": "/etc/passwd", "rel": "touches"}),
    );
    f.ok(
        "kg_put_edge",
        json!({"session_id": f.sid, "level": "user", "from": "anchor", "to": "src/../../../../etc/shadow", "rel": "touches"}),
    );
    f.ok(
        "kg_put_edge",
        json!({"session_id": f.sid, "level": "user", "from": "anchor", "to": "~/.ssh/id_rsa", "rel": "touches"}),
    );
    // Task ids are keys inside the graph file, never paths: any text of bounded
    // length is fine.
    let long = "t".repeat(kg_core::MAX_TASK_ID_CHARS);
    let (text, err) = f.call(
        "kg_progress",
        json!({"session_id": f.sid, "task_id": format!("{long}t"), "state": {"v": 1}}),
    );
    assert!(
        err && text.starts_with("Error: Task id is 129 characters"),
        "{text}"
    );
    for task in [
        "../../../../tmp/escape",
        "a/b",
        "..",
        ".",
        "\u{0}",
        "con",
        long.as_str(),
    ] {
        let text = f.ok(
            "kg_progress",
            json!({"session_id": f.sid, "task_id": task, "state": {"v": 1}}),
        );
        assert!(text.starts_with("Progress saved"), "{}", wire::clip(&text));
        let (status, v) = f.json(
            "POST",
            "/api/progress",
            Some(json!({"task_id": task, "state": {"v": 2}})),
        );
        assert_eq!(status, 200, "{v}");
        let text = f.ok("kg_progress", json!({"session_id": f.sid, "task_id": task}));
        assert!(text.contains("\"v\": 2"), "{}", wire::clip(&text));
    }
    for path in [
        "/api/progress/..%2F..%2Fetc%2Fpasswd",
        "/api/progress/%2E%2E",
    ] {
        let (status, v) = f.json("GET", path, None);
        assert!(status == 200 || status == 404, "{path}: {status} {v}");
    }
    // Nothing was created outside the storage root: home holds what it held, and the
    // storage root holds only graph folders and its own files.
    assert!(
        files_under(outside.path(), &[]).is_empty(),
        "wrote outside home"
    );
    let home_after = files_under(&home, &skip);
    let new: Vec<_> = home_after
        .iter()
        .filter(|p| {
            !home_before.contains(p) && !p.starts_with("server.log") && !p.starts_with(".state")
        })
        .collect();
    assert!(
        new.is_empty(),
        "files created in home outside storage: {new:?}"
    );
    for path in files_under(&f.storage, &[]) {
        let text = path.to_string_lossy();
        let allowed = [
            "user.json",
            "user.prev",
            "sessions.json",
            ".kg-memory.lock",
            ".kg-memory.token",
            "project-paths.json",
            "recall.jsonl",
        ]
        .contains(&text.as_ref())
            || (text.starts_with("projects/")
                && path.components().count() == 3
                && ["graph.json", "graph.prev", "tool_events.json"]
                    .iter()
                    .any(|n| text.ends_with(n)));
        assert!(allowed, "unexpected file in storage: {text:?}");
    }
    assert!(f.server_alive());
    let (status, _) = f.json("GET", "/health", None);
    assert_eq!(status, 200);
}

#[test]
fn dns_rebinding_hosts_are_refused_on_every_route() {
    let f = Fixture::new();
    let before = f.graph_files();
    let put = json!({"level": "user", "id": "anchor", "gist": "rebound"}).to_string();
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "kg_put_node",
        "arguments": {"session_id": f.sid, "level": "user", "id": "anchor", "gist": "rebound"}}})
        .to_string();
    let hosts = [
        "evil.example",
        "evil.example:8765",
        "127.0.0.1.nip.io",
        "localhost.evil.example",
        "localhost.",
        "127.0.0.2",
        "0.0.0.0",
        "[::ffff:127.0.0.1]",
        "2130706433",
        "localhost:80@evil.example",
        "evil.example#localhost",
        " ",
        "",
    ];
    for host in hosts {
        for (method, path, body, ct) in [
            ("GET", "/health", "", ""),
            ("GET", "/api/graph/read", "", ""),
            ("POST", "/api/nodes", put.as_str(), "application/json"),
            ("POST", "/", call.as_str(), "application/json"),
            ("GET", "/ws", "", ""),
            ("GET", "/ui/", "", ""),
        ] {
            let mut headers = vec![
                ("Host", host),
                ("Accept", "application/json, text/event-stream"),
            ];
            if !ct.is_empty() {
                headers.push(("Content-Type", ct));
            }
            let (status, answer) = f.http(method, path, &headers, body.as_bytes());
            assert_eq!(status, 421, "Host {host:?} {method} {path}: {answer}");
        }
    }
    // Local names in any case and form pass.
    for host in [
        "LOCALHOST",
        "localhost:1",
        "127.0.0.1",
        "[::1]:8765",
        "Localhost:8765",
    ] {
        let (status, _) = f.http("GET", "/health", &[("Host", host)], b"");
        assert_eq!(status, 200, "{host}");
    }
    // An absolute-form target naming another host does not get around the guard.
    let (status, _) = f.http(
        "GET",
        "http://evil.example/health",
        &[("Host", "evil.example")],
        b"",
    );
    assert_eq!(status, 421);
    f.still_healthy_and_unchanged(&before);
}

#[test]
fn foreign_websocket_origins_cannot_subscribe() {
    let f = Fixture::new();
    let before = f.graph_files();
    let runtime = ws::runtime();
    let connect = |origin: Option<&str>, host: Option<&str>| {
        let mut headers = Vec::new();
        headers.extend(origin.map(|o| ("Origin", o)));
        headers.extend(host.map(|h| ("Host", h)));
        runtime
            .block_on(ws::connect(f.port(), "", &headers, TIMEOUT))
            .map(drop)
    };
    for origin in [
        "http://evil.example",
        "https://evil.example:443",
        "null",
        "file://",
        "file:///home/user/page.html",
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example",
        "http://localhost@evil.example",
        "chrome-extension://abcdefghijklmnop",
        "ws://localhost",
        "http://[::ffff:7f00:1]",
        "",
    ] {
        let result = connect(Some(origin), None);
        let err = result.expect_err(&format!("origin {origin:?} was let in"));
        assert!(err.contains("403"), "{origin}: {err}");
    }
    for host in ["evil.example", "localhost.evil.example:80"] {
        let err = connect(None, Some(host)).expect_err("foreign host let in");
        assert!(err.contains("421"), "{host}: {err}");
    }
    // A page on another port of a local host is another origin (its handshake carries
    // no Sec-Fetch-Site): refused. The server's own page, and a dev proxy that
    // forwards the page's Host, subscribe.
    for origin in ["http://localhost:5173", "http://127.0.0.1:5173"] {
        let err = connect(Some(origin), None).expect_err("another local origin let in");
        assert!(err.contains("403"), "{origin}: {err}");
    }
    connect(Some(&format!("http://127.0.0.1:{}", f.port())), None).expect("the view subscribes");
    connect(Some("http://localhost:5173"), Some("localhost:5173")).expect("through a dev proxy");
    connect(None, None).expect("a non-browser client subscribes");
    f.still_healthy_and_unchanged(&before);
}

#[test]
fn oversized_websocket_messages_close_only_their_connection() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let f = Fixture::new();
    let before = f.graph_files();
    let runtime = ws::runtime();
    runtime.block_on(async {
        let connect = || ws::connect(f.port(), "", &[], TIMEOUT);
        let mut flooder = connect().await.expect("connect");
        let mut neighbour = connect().await.expect("connect");
        // Two megabytes of text: the server refuses to buffer it and hangs up. (The
        // send itself may already fail once the server has closed.)
        let _ = flooder
            .send(Message::Text("x".repeat(2 << 20).into()))
            .await;
        let closed = tokio::time::timeout(TIMEOUT, async {
            loop {
                match flooder.next().await {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                    Some(Ok(_)) => {} // the `connected` greeting
                }
            }
        })
        .await;
        assert!(
            closed.is_ok(),
            "the oversized message's connection stays open"
        );
        // The other connection is untouched.
        neighbour
            .send(Message::Text("ping".into()))
            .await
            .expect("ping");
        let pong = tokio::time::timeout(TIMEOUT, async {
            while let Some(Ok(message)) = neighbour.next().await {
                if message.to_text().is_ok_and(|t| t.contains("pong")) {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(pong, Ok(true), "the neighbour still answers");
    });
    f.still_healthy_and_unchanged(&before);
}
