//! Git sync inside running servers (issue 23): each storage root served by its own
//! real `kg-memory serve`, agents' writes over REST while the servers sync through a
//! bare repository on this machine, and the faults a sync must survive.

use crate::server::{logged, temp_home};
use crate::sync::{bare_remote, bare_repo, clone_folder, git_in, kg_memory_on};
use kg_core::{GraphFile, parse_graph};
use kg_test_support::http::json_request;
use kg_test_support::serve::ServerProcess;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

mod converge;
mod scenarios;

pub(crate) use scenarios::put;

const TIMEOUT: Duration = Duration::from_secs(60);

/// One machine: its home (git's global config is there, none of the user's), its
/// storage root, and the server holding that root.
pub(crate) struct Machine {
    pub(crate) name: String,
    pub(crate) home: PathBuf,
    pub(crate) root: PathBuf,
    /// Where the shared project folder lies (`KG_PROJECT_ROOTS`).
    pub(crate) work: PathBuf,
    pub(crate) server: Option<ServerProcess>,
}

impl Machine {
    pub(crate) fn new(base: &Path, name: &str) -> Machine {
        let home = base.join(name);
        fs::create_dir_all(&home).expect("home");
        Machine {
            name: name.to_string(),
            root: home.join("storage"),
            home,
            work: base.join("work"),
            server: None,
        }
    }

    pub(crate) fn command(&self, args: &[&str]) -> Output {
        kg_memory_on(&self.home, &self.root)
            .args(args)
            .output()
            .expect("run kg-memory")
    }

    /// `kg-memory sync <args>`: whether it succeeded, and what it printed.
    pub(crate) fn cli_sync(&self, args: &[&str]) -> (bool, String) {
        let mut full = vec!["sync"];
        full.extend_from_slice(args);
        let out = self.command(&full);
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), said)
    }

    pub(crate) fn start(&mut self) {
        self.start_with(&[]);
    }

    /// [`Machine::start`] with more of the server's environment.
    pub(crate) fn start_with(&mut self, env: &[(&str, &str)]) {
        fs::create_dir_all(&self.work).expect("work folder");
        let server = logged(&self.home, &self.root)
            .envs(env)
            .env("KG_PROJECT_ROOTS", &self.work)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .start();
        self.server = Some(server);
    }

    pub(crate) fn port(&self) -> u16 {
        self.server.as_ref().expect("server running").port
    }

    pub(crate) fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        json_request(self.port(), method, path, body, TIMEOUT)
            .unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }

    /// Ask the server to sync now: its answer.
    pub(crate) fn sync(&self) -> (u16, Value) {
        self.call("POST", "/api/sync/now", Some(&json!({})))
    }

    pub(crate) fn sync_ok(&self) -> Value {
        let (status, answer) = self.sync();
        assert_eq!(status, 200, "{} could not sync: {answer}", self.name);
        answer
    }

    pub(crate) fn graph(&self, relative: &str) -> GraphFile {
        let bytes = fs::read(self.root.join(relative)).expect("graph file");
        parse_graph(&bytes).expect("graph parses")
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        git_in(&self.root, args)
    }
}

/// `names.len()` machines set up on one remote (the first one's memory seeds it),
/// each with its server running.
pub(crate) fn machines(base: &Path, names: &[&str]) -> (Vec<Machine>, PathBuf) {
    let remote = bare_remote(base);
    let url = remote.to_string_lossy().into_owned();
    let mut all = Vec::new();
    for name in names {
        let mut m = Machine::new(base, name);
        let (ok, said) = m.cli_sync(&["setup", &url]);
        assert!(ok, "setup on {name}: {said}");
        m.start();
        all.push(m);
    }
    (all, remote)
}

/// Sync every machine in turn until all hold the same commit (at most three rounds;
/// two always suffice when nobody writes).
pub(crate) fn settle(machines: &[Machine]) {
    for _round in 0..3 {
        for m in machines {
            m.sync_ok();
        }
        let heads: Vec<String> = machines
            .iter()
            .map(|m| m.git(&["rev-parse", "HEAD"]))
            .collect();
        if heads.windows(2).all(|w| w[0] == w[1]) {
            return;
        }
    }
    panic!("the machines did not settle on one commit");
}

/// A small deterministic random source (xorshift), so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}
