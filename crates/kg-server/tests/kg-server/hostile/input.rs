//! Malformed and mistyped input: broken JSON-RPC, wrong argument types, huge, deeply
//! nested, non-UTF-8 and control-character bodies.

use super::*;

#[test]
fn malformed_json_rpc_gets_protocol_errors() {
    let f = Fixture::new();
    let before = f.graph_files();
    // Not JSON at all, or not one JSON-RPC message: 400 with the protocol's code.
    for (body, code) in [
        (&b""[..], -32700),
        (b"{not json", -32700),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"",
            -32700,
        ),
        (b"null", -32600),
        (b"123", -32600),
        (b"\"tools/list\"", -32600),
        (b"[]", -32600),
        (
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]",
            -32600,
        ),
        (b"{\"id\":1,\"method\":\"tools/list\"}", -32600),
        (
            b"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"tools/list\"}",
            -32600,
        ),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", -32600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1}", -32600),
    ] {
        let (status, answer) = f.rpc(body);
        assert_eq!(status, 400, "{:?}: {answer}", String::from_utf8_lossy(body));
        assert_eq!(
            rpc_error_code(&answer),
            Some(code),
            "{:?}: {answer}",
            String::from_utf8_lossy(body)
        );
    }
    // Well-formed but wrong: an error answer, never a server error.
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": 5}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "kg_read", "arguments": "cwd"}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "kg_read", "arguments": [1, 2]}}),
        json!({"jsonrpc": "2.0", "id": {"nested": [1]}, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 7}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}),
    ] {
        let (status, answer) = f.rpc(body.to_string().as_bytes());
        assert!((200..500).contains(&status), "{body}: {status} {answer}");
        if status == 200 && !answer.is_empty() {
            let v: Value = serde_json::from_str(&answer).expect("a JSON answer");
            assert!(
                v.get("error").is_some()
                    || v["result"]["isError"] == true
                    || body["method"] == "tools/list",
                "{body} was accepted as if valid: {answer}"
            );
        }
    }
    // Transport rules: JSON content only, JSON answers accepted, no DELETE.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let (status, _) = f.http(
        "POST",
        "/",
        &[
            ("Content-Type", "text/plain"),
            ("Accept", "application/json, text/event-stream"),
        ],
        call.as_bytes(),
    );
    assert_eq!(status, 415);
    let (status, _) = f.http(
        "POST",
        "/",
        &[("Content-Type", "application/json")],
        call.as_bytes(),
    );
    assert_eq!(status, 406);
    let (status, _) = f.http("DELETE", "/", &MCP_HEADERS, b"");
    assert_eq!(status, 405);
    f.still_healthy_and_unchanged(&before);
}

#[test]
fn wrong_argument_types_and_unknown_tools_are_tool_errors() {
    let f = Fixture::new();
    let before = f.graph_files();
    let sid = f.sid.clone();
    for (tool, args, expected) in [
        (
            "kg_put_node",
            json!({"session_id": sid, "level": "user", "id": 5, "gist": "g"}),
            "Input validation error: 5 is not of type 'string'",
        ),
        (
            "kg_put_node",
            json!({"session_id": sid, "level": "team", "id": "x", "gist": "g"}),
            "Input validation error: 'team' is not one of ['user', 'project']",
        ),
        (
            "kg_put_node",
            json!({"session_id": sid, "level": "user", "id": "anchor", "gist": null}),
            "Input validation error: None is not of type 'string'",
        ),
        (
            "kg_put_node",
            json!({"session_id": sid, "level": "user", "id": "anchor", "gist": "g", "notes": "n"}),
            "Input validation error: 'n' is not of type 'array'",
        ),
        (
            "kg_put_node",
            json!({"session_id": sid, "level": "user", "id": "anchor", "gist": "g", "touches": [{"a": 1}]}),
            "Input validation error: {'a': 1} is not of type 'string'",
        ),
        (
            "kg_put_node",
            json!({"session_id": sid, "level": "user", "gist": "g"}),
            "Input validation error: 'id' is a required property",
        ),
        (
            "kg_read",
            json!({"session_id": sid, "ids": "anchor"}),
            "Input validation error: 'anchor' is not of type 'array'",
        ),
        (
            "kg_read",
            json!({"session_id": sid, "ids": [[["deep"]]]}),
            "Input validation error: [['deep']] is not of type 'string'",
        ),
        (
            "kg_progress",
            json!({"session_id": sid, "task_id": "scout", "state": [1, 2]}),
            "Input validation error: [1, 2] is not of type 'object'",
        ),
        (
            "kg_useful",
            json!({"session_id": sid, "ids": {"anchor": true}}),
            "Input validation error: {'anchor': True} is not of type 'array'",
        ),
        (
            "kg_sync",
            json!({"session_id": 1.5e300}),
            "Input validation error: 1.5e+300 is not of type 'string'",
        ),
        (
            "kg_put_edge",
            json!({"session_id": sid, "level": "user", "from": "anchor", "to": "<script>", "rel": "r"}),
            "Error: Invalid edge ref '<script>'",
        ),
        (
            "kg_put_node",
            json!({"session_id": sid, "level": "user", "id": "../../etc/passwd", "gist": "g"}),
            "Error: Invalid node id '../../etc/passwd'",
        ),
        (
            "kg_put_edge",
            json!({"session_id": sid, "level": "user", "from": "anchor", "to": "x", "rel": "../r"}),
            "Error: Invalid rel '../r'",
        ),
    ] {
        let (text, err) = f.call(tool, args.clone());
        assert!(err, "{tool} {args}: {text}");
        assert!(text.starts_with(expected), "{tool} {args}: {text}");
    }
    for name in ["kg_nope", "", "kg_read ", &"x".repeat(10_000)] {
        let (text, err) = f.call(name, json!({}));
        assert!(err, "{name}: {text}");
        assert!(
            text.starts_with("Internal error: Unknown tool: "),
            "{}: {}",
            wire::clip(name),
            wire::clip(&text)
        );
    }
    f.still_healthy_and_unchanged(&before);
}

#[test]
fn ten_megabyte_bodies_are_refused_with_413() {
    let f = Fixture::new();
    let before = f.graph_files();
    let big = "x".repeat(10 << 20);
    let mcp =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "kg_put_node",
        "arguments": {"session_id": f.sid, "level": "user", "id": "anchor", "gist": big}}})
        .to_string();
    let (status, answer) = f.rpc(mcp.as_bytes());
    assert_eq!(status, 413, "{}", wire::clip(&answer));
    assert_eq!(rpc_error_code(&answer), Some(-32600), "{answer}");
    for path in ["/api/nodes", "/api/edges", "/api/progress"] {
        let body = json!({"level": "user", "id": "anchor", "gist": big, "task_id": "scout",
            "state": {"big": big}, "from": "anchor", "to": "x", "rel": "r"})
        .to_string();
        let (status, answer) = f.http(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        assert_eq!(status, 413, "{path}: {}", wire::clip(&answer));
        assert!(answer.contains("1 MiB limit"), "{path}: {answer}");
    }
    // Without a Content-Length (chunked), the limit holds while streaming.
    {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", f.port())).expect("connect");
        s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        let headers = [
            ("Host", "127.0.0.1"),
            ("Connection", "close"),
            ("Content-Type", "application/json"),
            ("Transfer-Encoding", "chunked"),
        ];
        let head = request_head(f.port(), "POST", "/api/nodes", &headers, None);
        let _ = s.write_all(head.as_bytes());
        let chunk = format!("{:x}\r\n{}\r\n", 1 << 16, "y".repeat(1 << 16));
        for _ in 0..(10 << 4) {
            if s.write_all(chunk.as_bytes()).is_err() {
                break;
            }
        }
        let _ = s.write_all(b"0\r\n\r\n");
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw);
        assert!(text.starts_with("HTTP/1.1 413"), "{}", wire::clip(&text));
    }
    // The hooks never fail a session: an oversized hook payload is silence.
    for path in ["/api/prompt_context", "/api/tool_event"] {
        let body = json!({"prompt": big, "cwd": f.project}).to_string();
        let (status, answer) = f.http(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        assert!(
            (status == 200 && answer == "{}") || status == 413,
            "{path}: {status} {}",
            wire::clip(&answer)
        );
    }
    f.still_healthy_and_unchanged(&before);
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn deeply_nested_json_cannot_overflow_or_poison_the_store() {
    let f = Fixture::new();
    let before = f.graph_files();
    // 100,000 nested arrays: serde_json's recursion limit (128) answers a parse error.
    let deep = nested(100_000);
    let (status, answer) = f.rpc(deep.as_bytes());
    assert_eq!(status, 400);
    assert_eq!(rpc_error_code(&answer), Some(-32700), "{answer}");
    assert!(answer.contains("recursion limit"), "{answer}");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"kg_progress","arguments":{{"session_id":"{}","task_id":"scout","state":{{"x":{deep}}}}}}}}}"#,
        f.sid
    );
    let (status, answer) = f.rpc(body.as_bytes());
    assert_eq!(
        (status, rpc_error_code(&answer)),
        (400, Some(-32700)),
        "{answer}"
    );
    for path in ["/api/nodes", "/api/progress"] {
        let body = format!(r#"{{"task_id":"scout","state":{{"x":{deep}}}}}"#);
        let (status, answer) = f.http(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        assert_eq!(status, 400, "{path}: {answer}");
        assert!(answer.contains("recursion limit"), "{path}: {answer}");
    }
    let (status, answer) = f.http(
        "POST",
        "/api/tool_event",
        &[("Content-Type", "application/json")],
        deep.as_bytes(),
    );
    assert_eq!((status, answer.as_str()), (200, "{}"));
    // Depth the parser accepts but the graph file could not hold (it adds three
    // levels): refused, or the next start would find the user graph unreadable.
    for depth in [70, 120, 124] {
        let state = format!(r#"{{"task_id":"deep","state":{{"x":{}}}}}"#, nested(depth));
        let (status, answer) = f.http(
            "POST",
            "/api/progress",
            &[("Content-Type", "application/json")],
            state.as_bytes(),
        );
        assert_eq!(status, 400, "depth {depth}: {answer}");
        assert!(answer.contains("nested deeper than"), "{answer}");
        let (text, err) = f.call(
            "kg_progress",
            json!({"session_id": f.sid, "task_id": "deep",
                   "state": {"x": serde_json::from_str::<Value>(&nested(depth.min(110))).expect("json")}}),
        );
        assert!(err && text.contains("nested deeper than"), "{text}");
    }
    // Error messages that print a nested value do not overflow either.
    let (text, err) = f.call(
        "kg_read",
        json!({"session_id": f.sid, "ids": serde_json::from_str::<Value>(&nested(120)).expect("json")}),
    );
    assert!(
        err && text.starts_with("Input validation error:"),
        "{}",
        wire::clip(&text)
    );
    f.still_healthy_and_unchanged(&before);
}

/// Regression: a progress state nested just under the parser's limit was stored, and
/// the user graph then failed to load at the next start (quarantined, memory empty).
/// Whatever the server accepts must load again.
#[test]
fn a_stored_progress_state_always_loads_again() {
    let mut f = Fixture::new();
    let state = serde_json::from_str::<Value>(&nested(60)).expect("json");
    f.ok(
        "kg_progress",
        json!({"session_id": f.sid, "task_id": "nested", "state": {"x": state}}),
    );
    let mut accepted = vec!["nested".to_string()];
    for depth in [62, 100, 120, 124, 125] {
        let task = format!("rest-{depth}");
        let body = format!(
            r#"{{"task_id":"{task}","state":{{"x":{}}}}}"#,
            nested(depth)
        );
        let (status, answer) = f.http(
            "POST",
            "/api/progress",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        assert!(status == 200 || status == 400, "{depth}: {status} {answer}");
        if status == 200 {
            accepted.push(task);
        }
    }
    assert!(f.server.stop().success());
    f.server = serve(&f.home, &f.storage, &[]);
    let text = f.ok("kg_read", json!({"session_id": f.sid}));
    assert!(
        text.contains("  anchor: a stored user fact"),
        "{}",
        f.server.log_tail()
    );
    for task in &accepted {
        let progress = f.ok("kg_progress", json!({"session_id": f.sid, "task_id": task}));
        assert!(
            progress.starts_with(&format!("Progress for '{task}':")),
            "{}",
            wire::clip(&progress)
        );
    }
    let quarantined = std::fs::read_dir(&f.storage)
        .expect("ls")
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains(".corrupt-"));
    assert!(!quarantined, "{}", f.server.log_tail());
}

#[test]
fn invalid_utf8_is_refused_everywhere() {
    let f = Fixture::new();
    let before = f.graph_files();
    let bad = b"{\"level\":\"user\",\"id\":\"anchor\",\"gist\":\"\xff\xfe\xc0\"}";
    let (status, answer) = f.http(
        "POST",
        "/api/nodes",
        &[("Content-Type", "application/json")],
        bad,
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("Malformed JSON body"), "{answer}");
    let mcp = [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"kg_put_node\",\"arguments\":{\"session_id\":\"x\",\"level\":\"user\",\"id\":\"anchor\",\"gist\":\""[..],
        b"\xed\xa0\x80", // a lone surrogate, encoded
        b"\"}}}",
    ]
    .concat();
    let (status, answer) = f.rpc(&mcp);
    assert_eq!(
        (status, rpc_error_code(&answer)),
        (400, Some(-32700)),
        "{answer}"
    );
    // Escaped lone surrogates are not text either.
    let escaped = br#"{"level":"user","id":"anchor","gist":"\ud800"}"#;
    let (status, answer) = f.http(
        "POST",
        "/api/nodes",
        &[("Content-Type", "application/json")],
        escaped,
    );
    assert_eq!(status, 400, "{answer}");
    // Paths and queries that decode to invalid UTF-8.
    for path in [
        "/api/nodes/user/%FF%FE",
        "/api/nodes/project/anchor?project_path=%FF",
        "/api/graph/read?project_path=%C0%AF",
        "/api/progress/%FF",
        "/api/sessions/%FF/stats",
    ] {
        let (status, answer) = f.http("GET", path, &[], b"");
        assert!((400..500).contains(&status), "{path}: {status} {answer}");
    }
    let (status, _) = f.http("GET", "/health", &[("Host", "loc\u{00e9}lhost")], b"");
    assert_eq!(status, 421);
    f.still_healthy_and_unchanged(&before);
}

/// The rendered level between `ACTIVE:` and `HEALTH:` of a full read.
fn active_block<'t>(text: &'t str, header: &str) -> &'t str {
    let level = &text[text.find(header).expect("level header")..];
    let start = level.find("ACTIVE:\n").expect("ACTIVE");
    let end = level.find("HEALTH:").expect("HEALTH");
    &level[start..end]
}

#[test]
fn control_characters_and_bidi_text_are_stored_and_charged_exactly() {
    let f = Fixture::new();
    let gists = [
        (
            "ctl",
            // (A line feed or carriage return is flattened to a space: see
            // `gists_notes_and_touches_are_bounded_on_every_route`.)
            "nul\u{0}bel\u{7}esc\u{1b}[31mred\u{1b}[0m del\u{7f} vt\u{b}tab\t.",
        ),
        (
            "rtl",
            "\u{202e}evil.exe\u{202c} \u{2067}שלום\u{2069} \u{200f}مرحبا\u{200e}",
        ),
        (
            "zw",
            "zero\u{200b}width\u{200d}joiner\u{feff} and e\u{301}\u{301}\u{301}",
        ),
        ("astral", "emoji 👩‍👩‍👧‍👦 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and \u{10ffff}"),
        ("lines", "one\u{2028}two\u{2029}three\u{85}four"),
    ];
    for (id, gist) in gists {
        f.ok(
            "kg_put_node",
            json!({"session_id": f.sid, "level": "project", "id": id, "gist": gist}),
        );
    }
    let (status, v) = f.json(
        "POST",
        "/api/nodes",
        Some(json!({"level": "project", "id": "rest-rtl", "gist": "\u{202e}txt.exe", "project_path": f.project})),
    );
    assert_eq!(status, 200, "{v}");
    // Stored and shown exactly as given.
    for (id, gist) in gists {
        let text = f.ok(
            "kg_read",
            json!({"session_id": f.sid, "ids": [id], "level": "project"}),
        );
        assert!(
            text.contains(&format!("  gist: {gist}\n")),
            "{id}: {text:?}"
        );
    }
    // Render equals charge: the full read prints exactly the characters the
    // compactor charges for the level (reported by the view), and each node line
    // costs exactly its characters.
    let text = f.ok("kg_read", json!({"session_id": f.sid}));
    let block = active_block(&text, "=== PROJECT GRAPH");
    let q = format!(
        "/api/view/level?level=project&project_path={}",
        kg_client::encode(&f.project)
    );
    let (status, view) = f.json("GET", &q, None);
    assert_eq!(status, 200, "{view}");
    assert_eq!(
        view["budget"]["chars"].as_u64(),
        Some(block.chars().count() as u64),
        "charged vs rendered: {block:?}"
    );
    let ours: Vec<&str> = gists
        .iter()
        .map(|(id, _)| *id)
        .chain(["rest-rtl"])
        .collect();
    for node in view["nodes"].as_array().expect("nodes") {
        let id = node["node"]["id"].as_str().expect("id");
        if !ours.contains(&id) {
            continue; // p-anchor's cost includes its edge citation
        }
        let gist = node["node"]["gist"].as_str().expect("gist");
        let line = format!("  {id}: {gist}\n");
        assert!(block.contains(&line), "{id} line not rendered as stored");
        assert_eq!(
            node["why"]["cost"].as_u64(),
            Some(line.chars().count() as u64),
            "{id}: cost differs from its rendered line"
        );
    }
    // The file holds them exactly, and reloads them exactly.
    let (status, _) = f.json(
        "GET",
        &format!(
            "/api/graph/read?reload=true&project_path={}",
            kg_client::encode(&f.project)
        ),
        None,
    );
    assert_eq!(status, 200);
    let graph = kg_core::parse_graph(
        &std::fs::read(f.storage.join("projects/proj/graph.json")).expect("file"),
    )
    .expect("parses");
    for (id, gist) in gists {
        assert_eq!(graph.graph.nodes[id].gist(), gist, "{id} on disk");
    }
    let again = f.ok("kg_read", json!({"session_id": f.sid}));
    assert_eq!(active_block(&again, "=== PROJECT GRAPH"), block);
}
