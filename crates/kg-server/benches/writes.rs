//! Memory under sustained writes: the release `kg-memory serve`'s resident set (RSS)
//! after the first 100 writes and after 3,000, with a live subscriber on `/ws` (as
//! the tray app and an open graph view are), on a fresh storage root each round.
//!
//! Two workloads, each over REST `POST /api/nodes` on one keep-alive connection:
//! - **one heavy node**: a node with 50 notes of 2,000 characters (the most a node
//!   may carry) written again and again; its graph file stays ~100 KB. Every write is
//!   a change the server remembers for `kg_sync` and the graph view.
//! - **many nodes**: 3,000 distinct nodes with a 200-character gist and three notes,
//!   as a busy agent writes them; maintenance keeps the level within its budget, the
//!   file grows with the archive.
//!
//! The target (issue 38): RSS after 3,000 writes within 1.5× of RSS after 100.
//! Each round prints both RSS values and their ratio; the summary gives the median
//! ratio over the rounds. `KG_BENCH_BEFORE=<path to another kg-memory>` runs that
//! binary too, round by round alternating with this tree's, so both are measured in
//! the same window.
//!
//! Run: `cargo bench -p kg-server --bench writes`. Knobs: `KG_BENCH_WRITES` (3000),
//! `KG_BENCH_ROUNDS` (3), `KG_BENCH_BEFORE`, `KG_BENCH_DIR` (where the temporary
//! homes go; default `target/`).

use kg_test_support::http::KeepAlive;
use kg_test_support::serve::{Serve, ServerProcess};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn bin() -> &'static std::path::Path {
    kg_test_support::kg_memory_bin()
}
/// Writes after which the first RSS sample is taken.
const EARLY: usize = 100;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// VmRSS of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Workload {
    HeavyNode,
    ManyNodes,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::HeavyNode => "one heavy node",
            Workload::ManyNodes => "many nodes",
        }
    }

    /// The body of write `i`.
    fn body(self, i: usize) -> serde_json::Value {
        match self {
            Workload::HeavyNode => {
                let notes: Vec<String> = (0..50)
                    .map(|n| format!("note {n} of write {i}: ").repeat(120)[..2_000].to_string())
                    .collect();
                json!({"level": "user", "id": "heavy", "gist": format!("a heavy node, write {i}"), "notes": notes})
            }
            Workload::ManyNodes => {
                let gist = format!("insight {i:05} about the retry ledger and its backoff ")
                    .repeat(4)[..200]
                    .to_string();
                let notes: Vec<String> = (0..3)
                    .map(|n| format!("why {n} for {i}: ").repeat(30)[..300].to_string())
                    .collect();
                json!({"level": "user", "id": format!("node-{i:05}"), "gist": gist, "notes": notes})
            }
        }
    }
}

/// One round: a fresh server, a live subscriber, `writes` writes; RSS after
/// [`EARLY`] writes and after all of them (KiB), and the WebSocket messages received.
fn round(bin: &str, workload: Workload, writes: usize) -> (u64, u64, u64) {
    let base = std::env::var_os("KG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    std::fs::create_dir_all(&base).expect("bench dir");
    let home = tempfile::Builder::new()
        .prefix("kg-bench-writes-")
        .tempdir_in(&base)
        .expect("temp home");
    let storage = home.path().join("storage");
    let server: ServerProcess = Serve::new(bin, home.path(), &storage)
        .env("KG_SAVE_INTERVAL", "30")
        .start();
    let port = server.port;
    let pid = server.pid();

    // A live subscriber for every graph, as the tray app keeps one.
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let listener = {
        let (stop, received) = (stop.clone(), received.clone());
        std::thread::spawn(move || {
            let rt = kg_test_support::ws::runtime();
            rt.block_on(async move {
                let mut ws =
                    kg_test_support::ws::connect(port, "?scope=all", &[], Duration::from_secs(5))
                        .await
                        .expect("ws connect");
                while !stop.load(Ordering::Relaxed) {
                    if kg_test_support::ws::next_json(&mut ws, Duration::from_millis(200))
                        .await
                        .is_ok()
                    {
                        received.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        })
    };

    let mut conn = KeepAlive::connect(port, Duration::from_secs(30)).expect("connect");
    let headers = [("Content-Type", "application/json")];
    let mut early = 0;
    for i in 0..writes {
        let body = workload.body(i).to_string();
        let (status, _, answer) = conn
            .exchange("POST", "/api/nodes", &headers, Some(body.as_bytes()))
            .expect("write");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        if i + 1 == EARLY {
            std::thread::sleep(Duration::from_millis(300));
            early = rss_kib(pid);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let late = rss_kib(pid);
    stop.store(true, Ordering::Relaxed);
    let _ = listener.join();
    drop(server);
    (early, late, received.load(Ordering::Relaxed))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs it with no such
    // flag: then only check that it builds.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let writes = knob("KG_BENCH_WRITES", 3_000).max(EARLY + 1);
    let rounds = knob("KG_BENCH_ROUNDS", 3).max(1);
    let mut binaries = Vec::new();
    if let Ok(before) = std::env::var("KG_BENCH_BEFORE") {
        binaries.push(("before", before));
    }
    binaries.push(("this tree", bin().display().to_string()));
    println!(
        "RSS under sustained writes: {writes} writes per round, {rounds} round(s), load average {} at the start",
        loadavg()
    );
    for workload in [Workload::HeavyNode, Workload::ManyNodes] {
        let mut results: Vec<(&str, Vec<(u64, u64)>)> =
            binaries.iter().map(|(n, _)| (*n, Vec::new())).collect();
        for r in 0..rounds {
            for (b, (name, bin)) in binaries.iter().enumerate() {
                let started = Instant::now();
                let (early, late, messages) = round(bin, workload, writes);
                println!(
                    "  {} · {name} · round {}: RSS {:.1} MiB after {EARLY} writes, {:.1} MiB after {writes} ({:.2}×); {messages} live messages; {:.1} s; load {}",
                    workload.name(),
                    r + 1,
                    early as f64 / 1024.0,
                    late as f64 / 1024.0,
                    late as f64 / early as f64,
                    started.elapsed().as_secs_f64(),
                    loadavg()
                );
                results[b].1.push((early, late));
            }
        }
        println!("{}: median over the rounds", workload.name());
        println!("| binary | RSS after {EARLY} | RSS after {writes} | ratio | target ≤ 1.5× |");
        println!("|---|---|---|---|---|");
        for (name, samples) in &results {
            let early = median(samples.iter().map(|s| s.0 as f64 / 1024.0).collect());
            let late = median(samples.iter().map(|s| s.1 as f64 / 1024.0).collect());
            let ratio = median(samples.iter().map(|s| s.1 as f64 / s.0 as f64).collect());
            println!(
                "| {name} | {early:.1} MiB | {late:.1} MiB | {ratio:.2}× | {} |",
                if ratio <= 1.5 { "met" } else { "missed" }
            );
        }
    }
    println!("load average at the end: {}", loadavg());
}
