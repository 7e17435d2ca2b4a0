//! `kg-memory serve` in a child process, on a free port, with a temporary home and
//! storage root; started, waited for until `/health` answers, stopped.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// How to start `kg-memory serve` (`bin`, the binary: `env!("CARGO_BIN_EXE_kg-memory")`
/// in kg-server's tests and benches) on a free port.
///
/// `HOME` and `KG_STORAGE_ROOT` are set, saving runs hourly, autocommit is off, and
/// nothing is inherited that would point the server elsewhere (port, host, clock
/// file, grace periods, state folder). Its output goes nowhere unless
/// [`log`](Serve::log) names a file.
#[derive(Debug)]
pub struct Serve {
    cmd: Command,
    port: u16,
    log: Option<PathBuf>,
}

impl Serve {
    pub fn new(bin: impl AsRef<OsStr>, home: &Path, storage: &Path) -> Serve {
        let port = free_port();
        let mut cmd = Command::new(bin);
        cmd.args(["serve", "--port", &port.to_string()])
            .env("HOME", home)
            .env("KG_STORAGE_ROOT", storage)
            .env("KG_SAVE_INTERVAL", "3600")
            .env("KG_AUTOCOMMIT_INTERVAL", "0")
            .env_remove("KG_HTTP_PORT")
            .env_remove("KG_HTTP_HOST")
            .env_remove("KG_CLOCK_FILE")
            .env_remove("KG_GRACE_PERIOD_DAYS")
            .env_remove("KG_ORPHAN_GRACE_DAYS")
            .env_remove("XDG_STATE_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Serve {
            cmd,
            port,
            log: None,
        }
    }

    /// Set one environment variable (over the defaults).
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Serve {
        self.cmd.env(key, value);
        self
    }

    /// Set environment variables (over the defaults).
    pub fn envs(mut self, vars: &[(&str, &str)]) -> Serve {
        for (k, v) in vars {
            self.cmd.env(k, v);
        }
        self
    }

    /// Append the server's log (its stderr) to `path`.
    pub fn log(mut self, path: &Path) -> Serve {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("server log");
        self.cmd.stderr(file);
        self.log = Some(path.to_path_buf());
        self
    }

    /// The command, for what the builder does not offer (resource limits).
    pub fn command(&mut self) -> &mut Command {
        &mut self.cmd
    }

    /// Start the server without waiting for it.
    pub fn spawn(mut self) -> ServerProcess {
        let spawned = Instant::now();
        let child = self.cmd.spawn().expect("start kg-memory serve");
        ServerProcess {
            child,
            port: self.port,
            log: self.log,
            spawned,
        }
    }

    /// Start the server and wait (30 s at most) until `/health` answers 200.
    pub fn start(self) -> ServerProcess {
        let mut server = self.spawn();
        server.wait_healthy(Duration::from_secs(30), Duration::from_millis(10));
        server
    }
}

/// A running `kg-memory serve`, killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    pub child: Child,
    pub port: u16,
    /// Where its log goes, if anywhere.
    pub log: Option<PathBuf>,
    spawned: Instant,
}

impl ServerProcess {
    /// Poll `/health` every `poll` (each on a fresh connection) until it answers 200;
    /// returns the time since the spawn. Panics, with the log's tail, when the server
    /// exits first or is not healthy within `limit`.
    pub fn wait_healthy(&mut self, limit: Duration, poll: Duration) -> Duration {
        let timeout = Duration::from_secs(5);
        loop {
            if let Ok((200, _, _)) =
                crate::http::request(self.port, "GET", "/health", &[], b"", timeout)
            {
                return self.spawned.elapsed();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "kg-memory serve exited early ({status}):\n{}",
                    self.log_tail()
                );
            }
            assert!(
                self.spawned.elapsed() < limit,
                "kg-memory serve did not become healthy within {limit:?}:\n{}",
                self.log_tail()
            );
            std::thread::sleep(poll);
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send `signal` to the server.
    pub fn signal(&self, signal: i32) {
        // SAFETY: signalling our own child by its pid.
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait (graceful: requests drain, everything is flushed); killed
    /// after 30 s.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            if start.elapsed() > Duration::from_secs(30) {
                eprintln!("graceful stop timed out:\n{}", self.log_tail());
                self.kill();
                return self.child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The last 30 lines of the server's log.
    pub fn log_tail(&self) -> String {
        let Some(log) = &self.log else {
            return "(the server's log goes nowhere)".to_string();
        };
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}
