//! `kg-memory import` of a big MCP-memory `memory.jsonl` (2,000 entities and 1,500
//! relations by default) into an empty user graph, timed from the command's start to
//! its exit, two ways:
//! - **through a running server** (as with the tray app running): the release
//!   `kg-memory serve` holds the storage root, and the import goes through it;
//! - **no server**: the import opens the storage root itself.
//!
//! The target (issue 38): 2,000 entities in ≤ 2 s. Each round starts from a fresh
//! storage root; the summary gives the median over the rounds.
//! `KG_BENCH_BEFORE=<path to another kg-memory>` runs that binary too (the server and
//! the import), round by round alternating with this tree's.
//!
//! Run: `cargo bench -p kg-server --bench import`. Knobs: `KG_BENCH_ENTITIES`
//! (2000), `KG_BENCH_RELATIONS` (1500), `KG_BENCH_ROUNDS` (3), `KG_BENCH_BEFORE`,
//! `KG_BENCH_DIR` (where the temporary homes go; default `target/`).

use kg_test_support::serve::{Serve, free_port};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static std::path::Path {
    kg_test_support::kg_memory_bin()
}

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A memory server file: entities with one to three observations, relations
/// between them (each pair once).
fn memory_jsonl(entities: usize, relations: usize) -> String {
    let topics = [
        "billing", "auth", "deploy", "search", "ledger", "retries", "cache",
    ];
    let mut out = String::new();
    for i in 0..entities {
        let topic = topics[i % topics.len()];
        let observations: Vec<String> = (0..1 + i % 3)
            .map(|o| {
                format!(
                    "Observation {o} about {topic} component {i}: it retries with backoff and logs each failure to the ledger"
                )
            })
            .collect();
        out.push_str(
            &json!({"type": "entity", "name": format!("{topic} component {i}"), "entityType": "component", "observations": observations})
                .to_string(),
        );
        out.push('\n');
    }
    let name = |i: usize| format!("{} component {i}", topics[i % topics.len()]);
    for r in 0..relations {
        let from = r % entities;
        let to = (r * 7 + 1 + r / entities) % entities;
        let to = if to == from { (to + 1) % entities } else { to };
        out.push_str(
            &json!({"type": "relation", "from": name(from), "to": name(to), "relationType": "depends_on"})
                .to_string(),
        );
        out.push('\n');
    }
    out
}

/// Run `bin import --yes <file>` for `home`'s storage root; its wall time.
fn import(bin: &str, home: &Path, storage: &Path, file: &Path) -> Duration {
    let started = Instant::now();
    let out = Command::new(bin)
        .args(["import", "--yes"])
        .arg(file)
        .env("HOME", home)
        .env("KG_STORAGE_ROOT", storage)
        .env("KG_HTTP_PORT", free_port().to_string())
        .env("KG_AUTOCOMMIT_INTERVAL", "0")
        .env_remove("KG_HTTP_HOST")
        .env_remove("KG_CLOCK_FILE")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("run kg-memory import");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "import failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    took
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let entities = knob("KG_BENCH_ENTITIES", 2_000);
    let relations = knob("KG_BENCH_RELATIONS", 1_500);
    let rounds = knob("KG_BENCH_ROUNDS", 3).max(1);
    let base = std::env::var_os("KG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    std::fs::create_dir_all(&base).expect("bench dir");
    let mut binaries = Vec::new();
    if let Ok(before) = std::env::var("KG_BENCH_BEFORE") {
        binaries.push(("before", before));
    }
    binaries.push(("this tree", bin().display().to_string()));
    let text = memory_jsonl(entities, relations);
    println!(
        "kg-memory import of {entities} entities and {relations} relations ({} KB), {rounds} round(s), load average {} at the start",
        text.len() / 1024,
        loadavg()
    );
    // (binary, with a server?) → seconds per round
    let mut times: Vec<((&str, bool), Vec<f64>)> = Vec::new();
    for &(name, _) in &binaries {
        for served in [true, false] {
            times.push(((name, served), Vec::new()));
        }
    }
    for r in 0..rounds {
        for (name, bin) in &binaries {
            for served in [true, false] {
                let home = tempfile::Builder::new()
                    .prefix("kg-bench-import-")
                    .tempdir_in(&base)
                    .expect("temp home");
                let storage = home.path().join("storage");
                let file = home.path().join("memory.jsonl");
                std::fs::write(&file, &text).expect("write the file");
                let server = served.then(|| Serve::new(bin, home.path(), &storage).start());
                let took = import(bin, home.path(), &storage, &file);
                drop(server);
                let route = if served {
                    "through the server"
                } else {
                    "no server"
                };
                println!(
                    "  round {} · {name} · {route}: {:.2} s; load {}",
                    r + 1,
                    took.as_secs_f64(),
                    loadavg()
                );
                if let Some((_, v)) = times.iter_mut().find(|(k, _)| *k == (*name, served)) {
                    v.push(took.as_secs_f64());
                }
            }
        }
    }
    println!("| binary | route | median | runs | target ≤ 2 s |");
    println!("|---|---|---|---|---|");
    for ((name, served), v) in &times {
        let m = median(v.clone());
        let runs: Vec<String> = v.iter().map(|s| format!("{s:.2}")).collect();
        println!(
            "| {name} | {} | {m:.2} s | {} | {} |",
            if *served {
                "through the server"
            } else {
                "no server"
            },
            runs.join(", "),
            if m <= 2.0 { "met" } else { "missed" }
        );
    }
    println!("load average at the end: {}", loadavg());
}
