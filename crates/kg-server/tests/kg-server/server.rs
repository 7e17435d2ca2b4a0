//! The real `kg-memory serve` in a child process, on a free port, with a temporary
//! home and storage root: plain ([`serve`]), or with a file-driven clock and the
//! exchanges the tests make ([`Server`]).

#![allow(dead_code)]

use kg_test_support::http::{self, MCP_HEADERS};
use kg_test_support::serve::Serve;
pub use kg_test_support::serve::{ServerProcess, free_port};
use serde_json::Value;
use std::fs;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The binary under test (kg-cli's, built if need be).
pub fn bin() -> &'static Path {
    kg_test_support::kg_memory_bin()
}

/// A temporary home outside `/tmp` (tool-event logic treats `/tmp/` as noise).
pub fn temp_home() -> (tempfile::TempDir, PathBuf) {
    kg_test_support::temp_home("kg-server-test-")
}

/// `kg-memory serve` on `storage` under `home`, its log appended to
/// `<home>/server.log` and its state in `<home>/.state`.
pub fn logged(home: &Path, storage: &Path) -> Serve {
    Serve::new(bin(), home, storage)
        .env("XDG_STATE_HOME", home.join(".state"))
        .log(&home.join("server.log"))
}

/// [`logged`] with `env` on top, started and healthy.
pub fn serve(home: &Path, storage: &Path, env: &[(&str, &str)]) -> ServerProcess {
    logged(home, storage).envs(env).start()
}

/// A server on a home of the test's, its clock frozen by a file when asked, speaking
/// HTTP and MCP as the tests need.
pub struct Server {
    process: ServerProcess,
    pub home: PathBuf,
    pub storage: PathBuf,
    pub clock: PathBuf,
    _dir: Option<tempfile::TempDir>,
    mcp_ready: bool,
}

/// The process: `port`, `child`, `stop()`.
impl Deref for Server {
    type Target = ServerProcess;
    fn deref(&self) -> &ServerProcess {
        &self.process
    }
}

impl DerefMut for Server {
    fn deref_mut(&mut self) -> &mut ServerProcess {
        &mut self.process
    }
}

impl Server {
    /// Start a server on `storage` under `home`; `now` freezes its clock.
    pub fn start_in(
        home: &Path,
        storage: &Path,
        now: Option<f64>,
        extra_env: &[(&str, &str)],
    ) -> Server {
        let clock = home.join(".kg-clock");
        let mut serve = Serve::new(bin(), home, storage);
        if let Some(now) = now {
            fs::write(&clock, now.to_string()).expect("clock");
            serve = serve.env("KG_CLOCK_FILE", &clock);
        }
        Server {
            process: serve.envs(extra_env).start(),
            home: home.to_path_buf(),
            storage: storage.to_path_buf(),
            clock,
            _dir: None,
            mcp_ready: false,
        }
    }

    /// A server on a fresh, empty home.
    pub fn fresh() -> Server {
        Server::fresh_with_clock(None)
    }

    /// A server on a fresh, empty home whose clock stands at `now` until
    /// [`Server::set_now`] moves it.
    pub fn fresh_at(now: f64) -> Server {
        Server::fresh_with_clock(Some(now))
    }

    fn fresh_with_clock(now: Option<f64>) -> Server {
        let (dir, home) = temp_home();
        let mut s = Server::start_in(&home, &home.join("storage"), now, &[]);
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

    pub fn set_now(&self, now: f64) {
        let tmp = self.clock.with_extension("tmp");
        fs::write(&tmp, now.to_string()).expect("clock");
        fs::rename(&tmp, &self.clock).expect("clock");
    }

    /// One HTTP/1.1 exchange on its own connection; returns (status, content-type,
    /// body).
    pub fn http(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> std::io::Result<(u16, String, String)> {
        let body = body.unwrap_or_default().as_bytes();
        let timeout = Duration::from_secs(60);
        let (status, head, body) = http::request(self.port, method, path, headers, body, timeout)?;
        let content_type = http::header(&head, "content-type").unwrap_or_default();
        Ok((
            status,
            content_type.to_string(),
            String::from_utf8_lossy(&body).into_owned(),
        ))
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
            .http("POST", "/", Some(&message.to_string()), &MCP_HEADERS)
            .expect("rpc");
        (status, body)
    }

    /// Initialise once, then call a tool; returns (text, isError).
    pub fn call(&mut self, tool: &str, args: &Value) -> (String, bool) {
        if !self.mcp_ready {
            assert_eq!(self.rpc(&http::mcp_initialize("kg-test")).0, 200);
            let (status, _) = self.rpc(&http::mcp_initialized());
            assert_eq!(status, 202);
            self.mcp_ready = true;
        }
        let (status, body) = self.rpc(&http::tools_call(tool, args));
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

/// Percent-encode a query string.
pub fn query(params: &serde_json::Map<String, Value>) -> String {
    let parts: Vec<String> = params
        .iter()
        .map(|(k, v)| {
            let v = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            format!("{k}={}", kg_client::encode(&v))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}
