//! The real `kg-memory serve` in a child process, on a free port, with a temporary
//! home and storage root, and a file-driven clock.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A temporary home outside `/tmp` (tool-event logic treats `/tmp/` as noise).
pub fn temp_home() -> (tempfile::TempDir, PathBuf) {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::Builder::new()
            .prefix("kg-server-test-")
            .tempdir_in(shm)
    } else {
        tempfile::Builder::new().prefix("kg-server-test-").tempdir()
    }
    .expect("temporary home");
    let path = fs::canonicalize(dir.path()).expect("canonical");
    (dir, path)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

pub struct Server {
    pub child: Child,
    pub port: u16,
    pub home: PathBuf,
    pub storage: PathBuf,
    pub clock: PathBuf,
    _dir: Option<tempfile::TempDir>,
    mcp_ready: bool,
}

impl Server {
    /// Start a server on `storage` under `home`; `now` freezes its clock.
    pub fn start_in(
        home: &Path,
        storage: &Path,
        now: Option<f64>,
        extra_env: &[(&str, &str)],
    ) -> Server {
        let port = free_port();
        let clock = home.join(".kg-clock");
        if let Some(now) = now {
            fs::write(&clock, now.to_string()).expect("clock");
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kg-memory"));
        cmd.args(["serve", "--port", &port.to_string()])
            .env("HOME", home)
            .env("KG_STORAGE_ROOT", storage)
            .env("KG_SAVE_INTERVAL", "3600")
            .env("KG_AUTOCOMMIT_INTERVAL", "0")
            .env_remove("KG_HTTP_PORT")
            .env_remove("KG_HTTP_HOST")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if now.is_some() {
            cmd.env("KG_CLOCK_FILE", &clock);
        }
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start kg-memory serve");
        let mut server = Server {
            child,
            port,
            home: home.to_path_buf(),
            storage: storage.to_path_buf(),
            clock,
            _dir: None,
            mcp_ready: false,
        };
        server.wait_healthy();
        server
    }

    /// A server on a fresh, empty home.
    pub fn fresh() -> Server {
        let (dir, home) = temp_home();
        let mut s = Server::start_in(&home, &home.join("storage"), None, &[]);
        s._dir = Some(dir);
        s
    }

    /// A server this test did not start (a detached one), found by port; waits for it.
    pub fn attach(port: u16, home: &Path) -> Remote {
        let remote = Remote {
            port,
            home: home.to_path_buf(),
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return remote;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no server came up on port {port}");
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn wait_healthy(&mut self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Ok(a) = self.http("GET", "/health", None, &[])
                && a.0 == 200
            {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("kg-memory serve exited early: {status}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("kg-memory serve did not become healthy");
    }

    pub fn set_now(&self, now: f64) {
        let tmp = self.clock.with_extension("tmp");
        fs::write(&tmp, now.to_string()).expect("clock");
        fs::rename(&tmp, &self.clock).expect("clock");
    }

    /// One HTTP/1.1 exchange; returns (status, content-type, body).
    pub fn http(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> std::io::Result<(u16, String, String)> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: 127.0.0.1:{}\r\n", self.port));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(b) = body {
            head.push_str(&format!("Content-Length: {}\r\n", b.len()));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        if let Some(b) = body {
            stream.write_all(b.as_bytes())?;
        }
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let content_type = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-type")
                    .then(|| v.trim().to_string())
            })
            .unwrap_or_default();
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        let body = if chunked {
            dechunk(body)
        } else {
            body.to_string()
        };
        Ok((status, content_type, body))
    }

    pub fn json(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let text = body.map(|b| b.to_string());
        let headers: &[(&str, &str)] = if body.is_some() {
            &[("Content-Type", "application/json")]
        } else {
            &[]
        };
        let (status, _, body) = self
            .http(method, path, text.as_deref(), headers)
            .expect("http");
        (
            status,
            serde_json::from_str(&body).unwrap_or(Value::String(body)),
        )
    }

    /// POST one JSON-RPC message to `/` exactly as Claude Code does (no session header).
    pub fn rpc(&self, message: &Value) -> (u16, String) {
        let (status, _, body) = self
            .http(
                "POST",
                "/",
                Some(&message.to_string()),
                &[
                    ("Content-Type", "application/json"),
                    ("Accept", "application/json, text/event-stream"),
                ],
            )
            .expect("rpc");
        (status, body)
    }

    /// Initialise once, then call a tool; returns (text, isError).
    pub fn call(&mut self, tool: &str, args: &Value) -> (String, bool) {
        if !self.mcp_ready {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "kg-test", "version": "1"}}});
            assert_eq!(self.rpc(&init).0, 200);
            let (status, _) =
                self.rpc(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            assert_eq!(status, 202);
            self.mcp_ready = true;
        }
        let (status, body) = self.rpc(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
        assert_eq!(status, 200, "tools/call {tool}: {body}");
        let v: Value = serde_json::from_str(&body).expect("json-rpc answer");
        let result = &v["result"];
        (
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            result["isError"].as_bool().unwrap_or(false),
        )
    }

    /// Stop with SIGTERM and wait (a graceful shutdown flushes everything).
    pub fn stop(&mut self) -> std::process::ExitStatus {
        #[cfg(unix)]
        unsafe {
            // SAFETY: signalling our own child by its pid.
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            if start.elapsed() > Duration::from_secs(30) {
                let _ = self.child.kill();
                return self.child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A server running outside this test's control.
pub struct Remote {
    pub port: u16,
    pub home: PathBuf,
}

impl Remote {
    /// Stop it through its pid file and wait until the port is free.
    pub fn stop_remote(&self) {
        let pid_file = self
            .home
            .join(format!(".local/state/kg-memory/server-{}.pid", self.port));
        let start = Instant::now();
        let pid: i32 = loop {
            if let Some(pid) = fs::read_to_string(&pid_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                break pid;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no pid file at {}",
                pid_file.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        #[cfg(unix)]
        unsafe {
            // SAFETY: signalling a process by pid.
            libc::kill(pid, libc::SIGTERM);
        }
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "server on {} did not stop",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn dechunk(mut data: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = data.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        data = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Percent-encode a query string.
pub fn query(params: &serde_json::Map<String, Value>) -> String {
    let parts: Vec<String> = params
        .iter()
        .map(|(k, v)| {
            let v = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            format!("{k}={}", kg_server::client::encode(&v))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}
