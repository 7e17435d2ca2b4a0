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

mod bounds;
mod escape;
mod input;

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
