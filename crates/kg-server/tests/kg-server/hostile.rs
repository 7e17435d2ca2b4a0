//! Hostile and malformed input over the wire. Each test throws one family of bad
//! input at a running server, checks the answer, and then checks that the server is
//! still healthy (health, MCP full read) and that the stored graphs did not change.

use crate::server::{ServerProcess, serve, temp_home};
use crate::wire;
use kg_test_support::http::{MCP_HEADERS, request_head};
use kg_test_support::ws;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A server with a little memory in it, and the means to prove nothing changed.
struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    storage: PathBuf,
    project: String,
    server: ServerProcess,
    sid: String,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_env(&[])
    }

    fn with_env(env: &[(&str, &str)]) -> Fixture {
        let (dir, home) = temp_home();
        let project = home.join("proj");
        std::fs::create_dir_all(&project).expect("project");
        let storage = home.join("storage");
        let server = serve(&home, &storage, env);
        let mut f = Fixture {
            _dir: dir,
            home,
            storage,
            project: project.to_string_lossy().into_owned(),
            server,
            sid: String::new(),
        };
        let text = f.ok("kg_read", json!({"cwd": f.project}));
        f.sid = wire::session_of(&text).expect("session");
        f.ok(
            "kg_put_node",
            json!({"session_id": f.sid, "level": "user", "id": "anchor", "gist": "a stored user fact"}),
        );
        f.ok(
            "kg_put_node",
            json!({"session_id": f.sid, "level": "project", "id": "p-anchor", "gist": "a stored project fact"}),
        );
        f.ok(
            "kg_put_edge",
            json!({"session_id": f.sid, "level": "project", "from": "p-anchor", "to": "src/main.rs", "rel": "touches"}),
        );
        f.ok(
            "kg_progress",
            json!({"session_id": f.sid, "task_id": "scout", "state": {"step": 1}}),
        );
        f
    }

    fn port(&self) -> u16 {
        self.server.port
    }

    fn call(&self, tool: &str, args: Value) -> (String, bool) {
        wire::mcp_call(self.port(), tool, &args, TIMEOUT)
            .unwrap_or_else(|e| panic!("{tool}: {e}\n{}", self.server.log_tail()))
    }

    fn ok(&self, tool: &str, args: Value) -> String {
        let (text, err) = self.call(tool, args);
        assert!(!err, "{tool}: {text}");
        text
    }

    fn rpc(&self, body: &[u8]) -> (u16, String) {
        wire::rpc(self.port(), body, TIMEOUT).expect("rpc answer")
    }

    fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String) {
        let (status, _, body) = wire::request(self.port(), method, path, headers, body, TIMEOUT)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    fn json(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        wire::json_request(self.port(), method, path, body.as_ref(), TIMEOUT).expect("answer")
    }

    /// The graph files (and backups) byte for byte.
    fn graph_files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.storage.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    stack.push(path);
                } else if name == "user.json" || name == "graph.json" || name.ends_with(".prev") {
                    out.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
                }
            }
        }
        out
    }

    /// Healthy, answering MCP, and the graphs are as they were.
    fn still_healthy_and_unchanged(&self, before: &BTreeMap<PathBuf, Vec<u8>>) {
        let (status, health) = self.json("GET", "/health", None);
        assert_eq!(status, 200, "{health}");
        assert_eq!(health["status"], "ok");
        let text = self.ok("kg_read", json!({"session_id": self.sid}));
        assert!(text.contains("  anchor: a stored user fact"), "{text}");
        assert!(text.contains("  p-anchor: a stored project fact"), "{text}");
        let progress = self.ok(
            "kg_progress",
            json!({"session_id": self.sid, "task_id": "scout"}),
        );
        assert!(progress.contains("\"step\": 1"), "{progress}");
        let after = self.graph_files();
        assert_eq!(
            before.keys().collect::<Vec<_>>(),
            after.keys().collect::<Vec<_>>(),
            "graph files appeared or vanished"
        );
        for (path, bytes) in before {
            assert!(after[path] == *bytes, "{} changed", path.display());
        }
        assert!(
            self.server_alive(),
            "the server process died:\n{}",
            self.server.log_tail()
        );
    }

    /// The size of the server's log so far.
    fn log_len(&self) -> u64 {
        let log = self.server.log.as_ref().expect("the server logs to a file");
        std::fs::metadata(log).map_or(0, |m| m.len())
    }

    fn server_alive(&self) -> bool {
        // SAFETY: signal 0 only checks that our child exists.
        unsafe { libc::kill(self.server.child.id() as i32, 0) == 0 }
    }
}

fn rpc_error_code(body: &str) -> Option<i64> {
    serde_json::from_str::<Value>(body).ok()?["error"]["code"].as_i64()
}

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

/// Files under `root` (relative), skipping `skip` folders.
fn files_under(root: &Path, skip: &[&Path]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if skip.iter().any(|s| dir.starts_with(s)) {
            continue;
        }
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
            }
        }
    }
    out.sort();
    out
}

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

#[test]
fn session_floods_stay_bounded() {
    let f = Fixture::new();
    let before = f.graph_files();
    let cap = kg_core::MAX_SESSIONS;
    let started = Instant::now();
    // Registrations past the cap, then ids the server has never seen (refused).
    let mut last = String::new();
    for k in 0..cap + 200 {
        if k % 10 == 0 {
            // The agent's own session stays in use throughout.
            f.ok("kg_sync", json!({"session_id": f.sid}));
        }
        let (status, v) = f.json("POST", "/api/sessions/register", None);
        assert_eq!(status, 200, "{v}");
        last = v["session_id"].as_str().expect("sid").to_string();
    }
    // Made-up ids — well-formed, malformed, and a megabyte long — are refused with a
    // way out and create nothing. On the code before, each one created a record:
    // 1,000 one-megabyte ids made sessions.json 950 MiB.
    let huge = "f".repeat(1_000_000);
    for k in 0..300 {
        let sid = match k % 3 {
            0 => format!("{k:08x}"),
            1 => format!("unknown-{k}"),
            _ => huge.clone(),
        };
        let (text, is_error) = f.call("kg_sync", json!({"session_id": sid}));
        assert!(is_error, "{}", wire::clip(&text));
        assert!(
            text.starts_with("Error: ") && text.contains("kg_read(cwd="),
            "{}",
            wire::clip(&text)
        );
        assert!(
            text.len() < 600,
            "the id is not echoed whole: {} bytes",
            text.len()
        );
    }
    let (status, stats) = f.json("GET", "/api/sessions/0badf00d/stats", None);
    assert_eq!(status, 404, "{stats}");
    let (_, health) = f.json("GET", "/health", None);
    let active = health["active_sessions"].as_u64().expect("count") as usize;
    assert!(active <= cap, "{active} sessions in memory, cap {cap}");
    // The least recently active went; the active agent and the newest stayed.
    let text = f.ok("kg_read", json!({"session_id": f.sid}));
    assert!(
        text.contains(&format!("Session: {}", f.sid)),
        "{}",
        wire::clip(&text)
    );
    let (status, stats) = f.json("GET", &format!("/api/sessions/{last}/stats"), None);
    assert_eq!(status, 200);
    assert!(stats["duration_seconds"].as_f64().is_some());
    let file: Value = serde_json::from_slice(
        &std::fs::read(f.storage.join("sessions.json")).expect("sessions.json"),
    )
    .expect("parses");
    let on_disk = file.as_object().expect("object").len();
    assert!(on_disk <= cap, "{on_disk} sessions on disk, cap {cap}");
    assert!(
        file.get("0badf00d").is_none(),
        "a stats read created a session"
    );
    let size = std::fs::metadata(f.storage.join("sessions.json")).map_or(0, |m| m.len());
    assert!(size < 2 << 20, "sessions.json is {size} bytes");
    assert!(file[&f.sid].is_object(), "the active session was evicted");
    eprintln!(
        "hostile: {} registrations and 300 made-up ids in {:.1?}: {active} in memory, {on_disk} on disk",
        cap + 200,
        started.elapsed()
    );
    f.still_healthy_and_unchanged(&before);
}

#[test]
fn tool_event_targets_stay_capped() {
    let f = Fixture::new();
    let before = f.graph_files();
    let cap = kg_core::MAX_EVENT_KEYS;
    let event = |tool: &str, input: Value| {
        let (status, v) = f.json(
            "POST",
            "/api/tool_event",
            Some(
                json!({"session_id": "claude-1", "cwd": f.project, "hook_event_name": "PostToolUse",
                        "tool_name": tool, "tool_input": input}),
            ),
        );
        assert_eq!(status, 200, "{v}");
    };
    for k in 0..cap + 100 {
        event("Read", json!({"file_path": format!("src/file{k}.rs")}));
    }
    // Overlong targets are not counted at all.
    let huge = format!("https://example.com/{}", "q".repeat(200_000));
    for _ in 0..3 {
        event("WebFetch", json!({"url": huge}));
        event("WebSearch", json!({"query": huge}));
    }
    let path = f.storage.join("projects/proj/tool_events.json");
    let file: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("counter file")).expect("parses");
    let events = file["events"].as_object().expect("events");
    assert_eq!(events.len(), cap, "the counter file keeps {cap} keys");
    assert!(
        events.contains_key(&format!("read:src/file{}.rs", cap + 99)),
        "newest kept"
    );
    assert!(!events.contains_key("read:src/file0.rs"), "oldest evicted");
    let size = std::fs::metadata(&path).expect("size").len();
    assert!(size < 200_000, "counter file is {size} bytes");
    f.still_healthy_and_unchanged(&before);
}

/// Regression: the resume path read any transcript path whole — `/dev/zero` grew
/// until memory ran out, and a FIFO blocked the request (and the shutdown) forever.
#[test]
fn transcript_paths_cannot_hang_or_exhaust_the_server() {
    let mut f = Fixture::new();
    let before = f.graph_files();
    let fifo = f.home.join("transcript.fifo");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: a valid path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let q = kg_client::encode(&f.project);
    for (k, transcript) in [
        "/dev/zero".to_string(),
        "/dev/urandom".to_string(),
        fifo.to_string_lossy().into_owned(),
        f.home.to_string_lossy().into_owned(),
        "/proc/self/mem".to_string(),
        "/nonexistent/transcript.jsonl".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let path = format!(
            "/api/session_bootstrap?project_path={q}&source=resume&claude_session_id=cc-{k}&transcript_path={}",
            kg_client::encode(&transcript)
        );
        let started = Instant::now();
        let answer = wire::json_request(f.port(), "GET", &path, None, Duration::from_secs(10));
        let (status, v) = answer.unwrap_or_else(|e| panic!("{transcript}: {e}"));
        assert_eq!(status, 200, "{transcript}: {v}");
        assert_eq!(v["reused"], false, "{transcript}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{transcript} took {:?}",
            started.elapsed()
        );
    }
    // A large transcript still resumes from its last marker (only its end is read).
    let big = f.home.join("big.jsonl");
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::File::create(&big).expect("transcript");
        file.seek(SeekFrom::Start(300 << 20)).expect("sparse");
        writeln!(file, "\n{{\"text\":\"Session: {}\"}}", f.sid).expect("marker");
    }
    let path = format!(
        "/api/session_bootstrap?project_path={q}&source=resume&claude_session_id=cc-y&transcript_path={}",
        kg_client::encode(&big.to_string_lossy())
    );
    let (status, v) = f.json("GET", &path, None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["reused"].clone(), v["session_id"].clone()),
        (json!(true), json!(f.sid))
    );
    // And the server still stops gracefully (nothing is stuck on a FIFO).
    f.still_healthy_and_unchanged(&before);
    let started = Instant::now();
    assert!(f.server.stop().success());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shutdown took {:?}",
        started.elapsed()
    );
}

/// Stamps from the future (a wrong clock, a hand edit): reads, search, debt and
/// maintenance keep working, compaction still brings an over-budget level under
/// its budget, and debt does not stay silenced until 2099.
#[test]
fn timestamps_from_the_future_do_not_break_maintenance() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    std::fs::create_dir_all(&storage).expect("storage");
    let now = 1_795_176_000.0_f64; // 2026-11-20
    let y2099 = 4_070_908_800.0_f64;
    let mut nodes = serde_json::Map::new();
    let mut versions = serde_json::Map::new();
    for k in 0..300 {
        let id = format!("future-{k:03}");
        nodes.insert(
            id.clone(),
            json!({"id": id, "gist": format!("{k:03} {}", "a gist long enough to fill the level quickly ".repeat(2)),
                   "_created_ts": y2099, "_last_read_ts": y2099 + k as f64, "_useful_ts": [y2099]}),
        );
        versions.insert(
            format!("node:{id}"),
            json!({"v": 1, "ts": y2099, "session": null}),
        );
    }
    nodes.insert(
        "orphan-2099".into(),
        json!({"id": "orphan-2099", "gist": "orphaned in the future", "_created_ts": y2099,
               "_archived": true, "_orphaned_ts": y2099}),
    );
    let graph = json!({"nodes": nodes, "edges": {}, "_meta": {"versions": versions,
        "progress": {"maintain": {"last_ts": y2099}}}});
    std::fs::write(
        storage.join("user.json"),
        serde_json::to_vec_pretty(&graph).expect("json"),
    )
    .expect("graph");
    std::fs::write(
        storage.join("sessions.json"),
        json!({"cafe0001": {"start_ts": y2099, "project_path": null, "last_activity": y2099, "op_count": 1}})
            .to_string(),
    )
    .expect("sessions");
    let clock = home.join("clock");
    std::fs::write(&clock, now.to_string()).expect("clock");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let clock_env = clock.to_string_lossy().into_owned();
    let mut server = serve(
        &home,
        &storage,
        &[
            ("KG_SAVE_INTERVAL", "1"),
            ("KG_CLOCK_FILE", clock_env.as_str()),
        ],
    );
    let port = server.port;
    let call = |tool: &str, args: Value| {
        let (text, err) = wire::mcp_call(port, tool, &args, TIMEOUT).expect("answer");
        assert!(!err, "{tool}: {text}");
        text
    };
    let text = call("kg_read", json!({"cwd": project.to_string_lossy()}));
    let sid = wire::session_of(&text).expect("session");
    call(
        "kg_search",
        json!({"session_id": sid, "query": "gist future"}),
    );
    call("kg_read", json!({"session_id": sid, "ids": ["future-007"]}));
    let (status, debt) =
        wire::json_request(port, "GET", "/api/maintenance_debt", None, TIMEOUT).expect("debt");
    assert_eq!(status, 200, "{debt}");
    // A maintenance stamp from 2099 is no stamp: the graph reads as never maintained.
    let user = debt["graphs"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["graph"] == "user"))
        .cloned()
        .unwrap_or_else(|| panic!("{debt}"));
    assert_eq!(user["debt"]["never_maintained"], true, "{user}");
    // The tick compacts the over-budget level although every node claims to be new.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = call("kg_read", json!({"session_id": sid}));
        let head = text.lines().next().unwrap_or_default().to_string();
        let archived = head
            .split(", ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        if archived > 0 {
            let (_, view) =
                wire::json_request(port, "GET", "/api/view/level?level=user", None, TIMEOUT)
                    .expect("view");
            let chars = view["budget"]["chars"].as_u64().unwrap_or(u64::MAX);
            assert!(
                chars <= 17_500,
                "user level still {chars} chars after compaction"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the over-budget level was never compacted: {head}\n{}",
            server.log_tail()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(server.stop().success());
    let saved = kg_core::parse_graph(&std::fs::read(storage.join("user.json")).expect("file"))
        .expect("the graph still parses");
    assert!(
        saved.graph.nodes.contains_key("orphan-2099"),
        "the orphan's grace is not cut short"
    );
}

/// Item 1 of the trust issue: `levels=user,user` locked the user graph twice on one
/// thread, and the request (and every later one touching the user graph) never
/// answered; `levels=project,user` reversed the lock order against tool calls. On the
/// code before, the first request below timed out. Here every request answers while
/// tool calls lock user then project from other threads, and the server then stops
/// on SIGTERM.
#[test]
fn duplicated_and_reversed_level_lists_cannot_hang_the_server() {
    let mut f = Fixture::new();
    let project = kg_client::encode(&f.project);
    let searches = [
        "/api/view/search?q=stored&levels=user,user".to_string(),
        format!("/api/view/search?q=stored&levels=project,user&project_path={project}"),
        format!(
            "/api/view/search?q=stored&levels=project,user,project,user&project_path={project}"
        ),
    ];
    std::thread::scope(|scope| {
        for worker in 0..4 {
            let f = &f;
            let searches = &searches;
            scope.spawn(move || {
                for round in 0..25 {
                    if worker % 2 == 0 {
                        let path = &searches[round % searches.len()];
                        let (status, body) = f.json("GET", path, None);
                        assert_eq!(status, 200, "{path}: {body}");
                        assert!(body["total"].as_u64().is_some_and(|n| n >= 1), "{body}");
                    } else {
                        f.ok("kg_search", json!({"query": "stored fact", "session_id": f.sid}));
                        f.ok("kg_put_node", json!({"session_id": f.sid, "level": "project", "id": format!("w{worker}-{round}"), "gist": "stored while searching"}));
                    }
                }
            });
        }
    });
    let status = f.server.stop();
    assert!(status.success(), "graceful stop: {status}");
}

/// Item 3: any path inside home loaded a project graph and kept it forever (3,000
/// requests: RSS 189 MB → 1.08 GB), and each request logged its path whole. Here
/// made-up projects answer "no such project" and load nothing, real ones stay within
/// the cap of loaded graphs, and log lines stay short.
#[test]
fn made_up_and_many_projects_keep_memory_and_logs_bounded() {
    let f = Fixture::new();
    let log_before = f.log_len();
    let long_tail = "x".repeat(3_000);
    for k in 0..150 {
        let ghost = kg_client::encode(&format!("{}/ghost-{k}/{long_tail}", f.home.display()));
        for path in [
            format!("/api/graph/read?project_path={ghost}"),
            format!("/api/view/level?level=project&project_path={ghost}"),
            format!("/api/nodes/project/p-anchor?project_path={ghost}"),
        ] {
            let (status, body) = f.json("GET", &path, None);
            assert_eq!(status, 404, "{}", wire::clip(&body.to_string()));
            let detail = body["detail"].as_str().unwrap_or("");
            assert!(
                detail.starts_with("No such project: "),
                "{}",
                wire::clip(detail)
            );
        }
    }
    let (_, health) = f.json("GET", "/health", None);
    assert_eq!(
        health["loaded_graphs"], 2,
        "made-up projects loaded: {health}"
    );
    let logged = f.log_len() - log_before;
    assert!(
        logged < 150 * 3 * 400,
        "{logged} bytes of log for 450 requests"
    );
    // Real projects: memory follows the working set, not the history.
    let cap = kg_core::MAX_LOADED_PROJECTS as u64;
    for k in 0..cap + 10 {
        let dir = f.home.join(format!("real-{k}"));
        std::fs::create_dir_all(&dir).expect("project folder");
        let path = kg_client::encode(&dir.to_string_lossy());
        let (status, body) = f.json("GET", &format!("/api/graph/read?project_path={path}"), None);
        assert_eq!(status, 200, "{body}");
    }
    let (_, health) = f.json("GET", "/health", None);
    let loaded = health["loaded_graphs"].as_u64().expect("count");
    assert!(
        loaded <= cap + 1,
        "{loaded} graphs loaded, cap {cap} projects"
    );
    // The fixture's project was unloaded, and comes back whole.
    let (_, graphs) = f.json("GET", "/api/view/graphs", None);
    let row = graphs["graphs"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["project_path"] == json!(f.project)))
        .cloned()
        .unwrap_or_default();
    assert_eq!(row["loaded"], false, "{row}");
    let text = f.ok("kg_read", json!({"session_id": f.sid}));
    assert!(text.contains("p-anchor"), "{}", wire::clip(&text));
}

/// Item 5: project B = `~/b/proj` is given `proj-<FNV-1a of B>` when `~/a/proj` holds
/// `proj`; D = `~/proj-<that hash>` is filed under that very name. On the code before,
/// B read D's nodes and B's acknowledged write was gone from disk after D's next save.
#[test]
fn namesake_projects_never_share_a_graph_file() {
    let (_dir, home) = crate::server::temp_home();
    let storage = home.join("storage");
    let b = home.join("b/proj");
    let hash = b
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
            (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
        });
    let d = home.join(format!("proj-{:08x}", hash as u32));
    let a = home.join("a/proj");
    for dir in [&a, &b, &d] {
        std::fs::create_dir_all(dir).expect("project folder");
    }
    let write = |port: u16, dir: &Path, id: &str| {
        let (text, err) =
            wire::mcp_call(port, "kg_read", &json!({"cwd": dir}), TIMEOUT).expect("read");
        assert!(!err, "{text}");
        let sid = wire::session_of(&text).expect("session");
        let args = json!({"session_id": sid, "level": "project", "id": id, "gist": format!("written to {id}")});
        let (text, err) = wire::mcp_call(port, "kg_put_node", &args, TIMEOUT).expect("put");
        assert!(!err, "{text}");
    };
    let full_read = |port: u16, dir: &Path| {
        wire::mcp_call(port, "kg_read", &json!({"cwd": dir}), TIMEOUT)
            .expect("read")
            .0
    };
    let mut server = serve(&home, &storage, &[]);
    write(server.port, &d, "node-of-d");
    write(server.port, &a, "node-of-a");
    write(server.port, &b, "node-of-b");
    write(server.port, &d, "node-of-d-again");
    let text = full_read(server.port, &b);
    assert!(
        text.contains("node-of-b") && !text.contains("node-of-d"),
        "{}",
        wire::clip(&text)
    );
    server.stop();
    // The files say so too, and a restarted server finds each graph again.
    let projects = storage.join("projects");
    let on_disk: Vec<String> = files_under(&projects, &[])
        .into_iter()
        .filter(|p| p.ends_with("graph.json"))
        .filter_map(|p| std::fs::read_to_string(projects.join(p)).ok())
        .collect();
    assert_eq!(
        on_disk.iter().filter(|t| t.contains("node-of-b")).count(),
        1
    );
    assert!(
        !on_disk
            .iter()
            .any(|t| t.contains("node-of-b") && t.contains("node-of-d"))
    );
    let server = serve(&home, &storage, &[]);
    for (dir, mine, theirs) in [
        (&b, "node-of-b", "node-of-d"),
        (&d, "node-of-d-again", "node-of-b"),
    ] {
        let text = full_read(server.port, dir);
        assert!(
            text.contains(mine) && !text.contains(theirs),
            "{}",
            wire::clip(&text)
        );
    }
}

/// Item 8: a 1,000,000-character gist was accepted, and every later `kg_read` and
/// `kg_search` was a megabyte. Here it is refused with the same one-line rule over
/// MCP and REST (the graph view's route), blank gists too, and a line break is
/// flattened so the indented render of `kg_read` holds.
#[test]
fn gists_notes_and_touches_are_bounded_on_every_route() {
    let f = Fixture::new();
    let before = f.graph_files();
    let huge = "g".repeat(1_000_000);
    let (text, err) = f.call(
        "kg_put_node",
        json!({"session_id": f.sid, "level": "user", "id": "huge", "gist": huge}),
    );
    assert!(err, "{}", wire::clip(&text));
    let rule = text
        .strip_prefix("Error: ")
        .expect("a domain error")
        .to_string();
    assert!(
        rule.starts_with("Gist is 1000000 characters; the limit is 1000."),
        "{rule}"
    );
    let (status, body) = f.json(
        "POST",
        "/api/nodes",
        Some(json!({"level": "user", "id": "huge", "gist": huge})),
    );
    assert_eq!(status, 400);
    assert_eq!(
        body["detail"].as_str(),
        Some(rule.as_str()),
        "one message for every route"
    );
    for blank in ["", "   ", "\n\t"] {
        let (text, err) = f.call(
            "kg_put_node",
            json!({"session_id": f.sid, "level": "user", "id": "blank", "gist": blank}),
        );
        assert!(err && text.starts_with("Error: Gist is empty"), "{text}");
    }
    let notes: Vec<String> = vec!["n".repeat(5_000)];
    let (text, err) = f.call(
        "kg_put_edge",
        json!({"session_id": f.sid, "level": "user", "from": "anchor", "to": "x", "rel": "uses", "notes": notes}),
    );
    assert!(err && text.contains("Note 1 is 5000 characters"), "{text}");
    let touches: Vec<String> = (0..60).map(|i| format!("src/{i}.rs")).collect();
    let (text, err) = f.call(
        "kg_put_node",
        json!({"session_id": f.sid, "level": "user", "id": "t", "gist": "ok", "touches": touches}),
    );
    assert!(err && text.contains("Too many touches: 60 given"), "{text}");
    let big_state = json!({"log": "p".repeat(100_000)});
    let (text, err) = f.call(
        "kg_progress",
        json!({"session_id": f.sid, "task_id": "scout", "state": big_state}),
    );
    assert!(
        err && text.contains("bytes as JSON; the limit is 65536"),
        "{text}"
    );
    f.still_healthy_and_unchanged(&before);
    f.ok(
        "kg_put_node",
        json!({"session_id": f.sid, "level": "user", "id": "two-lines", "gist": "first line\r\nsecond line"}),
    );
    let read = f.ok("kg_read", json!({"session_id": f.sid}));
    assert!(
        read.contains("two-lines: first line second line"),
        "{}",
        wire::clip(&read)
    );
}

/// Item 4, the WebSocket side: each `/ws` connection without a session registered one
/// and rewrote `sessions.json` (3,000 connections stalled the store for 14–23 s, and
/// past 1,000 they pushed agents' sessions out of the registry). Now a connection
/// gets an id of its own and the registry does not change.
#[test]
fn websocket_connections_register_no_sessions() {
    let f = Fixture::new();
    let (_, health) = f.json("GET", "/health", None);
    let sessions_before = health["active_sessions"].clone();
    let registry_before = std::fs::read(f.storage.join("sessions.json")).expect("sessions.json");
    let mut open = Vec::new();
    for _ in 0..300 {
        open.push(ws::upgrade_raw(f.port(), TIMEOUT));
    }
    let (_, health) = f.json("GET", "/health", None);
    assert_eq!(health["active_sessions"], sessions_before, "{health}");
    let registry_after = std::fs::read(f.storage.join("sessions.json")).expect("sessions.json");
    assert!(
        registry_after == registry_before,
        "sessions.json was rewritten"
    );
    f.ok("kg_sync", json!({"session_id": f.sid}));
}
