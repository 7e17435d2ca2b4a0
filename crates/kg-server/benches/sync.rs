//! Git sync round trip (issue 23): two real `kg-memory serve` (release build), each on
//! its own storage root, synced through a bare repository on this machine. One round:
//! the laptop writes a node and syncs (commit, fetch, push); the desktop syncs
//! (fetch, merge into its running store, commit); the node is then served by the
//! desktop. Medians over the rounds, for a small memory and for a 2,000-node one.
//!
//! Run: `cargo bench -p kg-server --bench sync`. Knobs (environment):
//! `KG_BENCH_ROUNDS` (30), `KG_BENCH_DIR` (where the temporary homes go; default
//! `target/`).

use kg_core::{Level, serialize_graph};
use kg_test_support::graphs::graph;
use kg_test_support::http::json_request;
use kg_test_support::serve::{Serve, ServerProcess};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(120);
fn bin() -> &'static std::path::Path {
    kg_test_support::kg_memory_bin()
}

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A machine's home with its storage root set up on `remote`, its server started.
fn machine(base: &Path, name: &str, remote: &Path, seed: Option<usize>) -> ServerProcess {
    let home = base.join(name);
    let root = home.join("storage");
    std::fs::create_dir_all(&root).expect("root");
    if let Some(nodes) = seed {
        let text = serialize_graph(&graph(nodes, 7), Level::User, None);
        std::fs::write(root.join("user.json"), text).expect("seed");
    }
    run(Command::new(bin())
        .args(["sync", "setup"])
        .arg(remote)
        .env("HOME", &home)
        .env("KG_STORAGE_ROOT", &root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("XDG_CONFIG_HOME", home.join(".config")));
    Serve::new(bin(), &home, &root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".state"))
        .start()
}

fn sync(server: &ServerProcess) -> Duration {
    let started = Instant::now();
    let (status, answer) = json_request(
        server.port,
        "POST",
        "/api/sync/now",
        Some(&json!({})),
        TIMEOUT,
    )
    .expect("sync");
    assert_eq!(status, 200, "{answer}");
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

fn measure(label: &str, seed: Option<usize>, rounds: usize) {
    let parent: PathBuf = std::env::var_os("KG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    std::fs::create_dir_all(&parent).expect("bench dir");
    let dir = tempfile::Builder::new()
        .prefix("kg-bench-sync-")
        .tempdir_in(&parent)
        .expect("temp dir");
    let remote = dir.path().join("remote.git");
    std::fs::create_dir_all(&remote).expect("remote");
    run(Command::new("git")
        .args(["init", "--quiet", "--bare", "--initial-branch=main"])
        .current_dir(&remote));
    let laptop = machine(dir.path(), "laptop", &remote, seed);
    let desktop = machine(dir.path(), "desktop", &remote, None);
    // The desktop starts with the laptop's memory.
    sync(&desktop);
    let (mut send, mut receive, mut trip) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let id = format!("bench-round-{round}");
        let started = Instant::now();
        let body =
            json!({"level": "user", "id": id, "gist": format!("Round {round} of the sync bench")});
        let (status, answer) =
            json_request(laptop.port, "POST", "/api/nodes", Some(&body), TIMEOUT).expect("put");
        assert_eq!(status, 200, "{answer}");
        send.push(sync(&laptop));
        receive.push(sync(&desktop));
        let (status, _) = json_request(
            desktop.port,
            "GET",
            &format!("/api/nodes/user/{id}"),
            None,
            TIMEOUT,
        )
        .expect("read");
        assert_eq!(status, 200, "the desktop does not serve {id}");
        trip.push(started.elapsed());
    }
    println!(
        "{label}: sync that sends {:.1} ms, sync that receives {:.1} ms, write → served on the other machine {:.1} ms (medians of {rounds})",
        median(send),
        median(receive),
        median(trip)
    );
}

fn main() {
    let rounds = knob("KG_BENCH_ROUNDS", 30);
    measure("empty memory", None, rounds);
    measure("2,000-node user graph", Some(2_000), rounds);
}
