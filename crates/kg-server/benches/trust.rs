//! The trust issue's floods against the real `kg-memory serve` (release build), each
//! compared with the same server idle: `/health` and full `kg_read` latency (median
//! of sequential round trips on fresh loopback connections) and the server's RSS.
//!
//! Phases, in order, on one server:
//! 1. idle: a seeded memory (user and project graphs), nothing else going on;
//! 2. 3,000 distinct made-up project paths read (`GET /api/graph/read`), then 3,000
//!    real project folders read the same way;
//! 3. 1,000 `kg_sync` calls with a one-megabyte session id;
//! 4. 3,000 WebSockets and 1,100 idle TCP connections open at once (measured right
//!    after they are open: the idle ones are closed by the server's idle timeout).
//!
//! Run: `cargo bench -p kg-server --bench trust`. Knobs (environment):
//! `KG_BENCH_PROJECTS` (3000), `KG_BENCH_SIDS` (1000), `KG_BENCH_WS` (3000),
//! `KG_BENCH_IDLE` (1100), `KG_BENCH_SAMPLES` (200), `KG_BENCH_DIR` (where the
//! temporary home goes; default `target/`), `KG_BENCH_BIN` (the `kg-memory` binary
//! to measure; default this tree's).

use kg_client as client;
use kg_test_support::serve::{Serve, ServerProcess};
use kg_test_support::{http, ws};
use serde_json::{Value, json};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// The server under test: this tree's, or another build's (`KG_BENCH_BIN`), so the
/// code before a change can be measured in the same run.
fn server_binary() -> String {
    std::env::var("KG_BENCH_BIN")
        .unwrap_or_else(|_| kg_test_support::kg_memory_bin().display().to_string())
}
const TIMEOUT: Duration = Duration::from_secs(60);

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn spawn(home: &Path) -> ServerProcess {
    let mut server = Serve::new(server_binary(), home, &home.join("storage"))
        .env("KG_LOG_LEVEL", "WARNING")
        .env("XDG_STATE_HOME", home.join(".state"))
        .log(&home.join("server.log"))
        .spawn();
    server.wait_healthy(TIMEOUT, Duration::from_millis(20));
    server
}

fn base(server: &ServerProcess) -> String {
    format!("http://127.0.0.1:{}", server.port)
}

fn get(server: &ServerProcess, path: &str) -> Result<String, client::ClientError> {
    ws::runtime().block_on(client::get(&format!("{}{path}", base(server)), TIMEOUT))
}

/// One MCP tool call; returns the tool's text.
fn call(server: &ServerProcess, tool: &str, args: Value) -> String {
    let body = http::tools_call(tool, &args).to_string();
    let answer = ws::runtime()
        .block_on(client::request(
            "POST",
            &format!("{}/", base(server)),
            Some(&body),
            TIMEOUT,
        ))
        .expect("MCP answer");
    let payload = answer.body.trim();
    let payload = payload
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(payload);
    let value: Value = serde_json::from_str(payload.trim()).expect("JSON-RPC answer");
    value["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Median latency of `/health` and of a full `kg_read`, and the server's RSS.
struct Measure {
    health: Duration,
    read: Duration,
    /// Full reads that did not render the memory (the session was lost).
    failed_reads: usize,
    rss_mib: f64,
}

fn measure(server: &ServerProcess, sid: &str, samples: usize) -> Measure {
    let health = (0..samples)
        .map(|_| {
            let t = Instant::now();
            get(server, "/health").expect("health");
            t.elapsed()
        })
        .collect();
    let mut failed_reads = 0;
    let read = (0..samples / 2)
        .map(|_| {
            let t = Instant::now();
            let text = call(server, "kg_read", json!({"session_id": sid}));
            failed_reads += usize::from(!text.contains("=== USER GRAPH"));
            t.elapsed()
        })
        .collect();
    Measure {
        health: median(health),
        read: median(read),
        failed_reads,
        rss_mib: rss_kib(server.pid()) as f64 / 1024.0,
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn encode(text: &str) -> String {
    client::encode(text)
}

/// Room for thousands of sockets in this process.
fn raise_file_limit() {
    // SAFETY: reading and setting this process's own resource limit.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

fn row(label: &str, m: &Measure, idle: &Measure) {
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let lost = match m.failed_reads {
        0 => String::new(),
        n => format!(", {n} failed: session lost"),
    };
    println!(
        "| {label} | {:.2} ms (×{:.2}) | {:.2} ms (×{:.2}{lost}) | {:.1} MiB (×{:.2}) |",
        m.health.as_secs_f64() * 1e3,
        ratio(m.health, idle.health),
        m.read.as_secs_f64() * 1e3,
        ratio(m.read, idle.read),
        m.rss_mib,
        m.rss_mib / idle.rss_mib,
    );
}

fn main() {
    raise_file_limit();
    let projects = knob("KG_BENCH_PROJECTS", 3_000);
    let sids = knob("KG_BENCH_SIDS", 1_000);
    let sockets = knob("KG_BENCH_WS", 3_000);
    let idle_connections = knob("KG_BENCH_IDLE", 1_100);
    let samples = knob("KG_BENCH_SAMPLES", 200);
    let dir = std::env::var("KG_BENCH_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").to_string());
    std::fs::create_dir_all(&dir).expect("bench dir");
    let home = tempfile::Builder::new()
        .prefix("kg-trust-bench-")
        .tempdir_in(&dir)
        .expect("home");
    let home = home.path();
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let server = spawn(home);

    // A small, realistic memory at both levels.
    let text = call(&server, "kg_read", json!({"cwd": project}));
    let sid = http::session_of(&text).expect("session");
    for i in 0..40 {
        for level in ["user", "project"] {
            call(
                &server,
                "kg_put_node",
                json!({"session_id": sid, "level": level, "id": format!("{level}-fact-{i}"),
                    "gist": format!("Fact {i} of the {level} level: the ledger retries failed writes three times before paging")}),
            );
        }
    }
    let idle = measure(&server, &sid, samples);
    println!("| phase | /health median | kg_read median | RSS |");
    println!("|---|---|---|---|");
    row("idle", &idle, &idle);

    let t = Instant::now();
    for k in 0..projects {
        let ghost = home.join(format!("ghost-{k}"));
        let _ = get(
            &server,
            &format!(
                "/api/graph/read?project_path={}",
                encode(&ghost.to_string_lossy())
            ),
        );
    }
    let ghosts = t.elapsed();
    row(
        &format!(
            "after {projects} made-up project paths ({:.1} s)",
            ghosts.as_secs_f64()
        ),
        &measure(&server, &sid, samples),
        &idle,
    );
    let t = Instant::now();
    for k in 0..projects {
        let real = home.join(format!("real-{k}"));
        std::fs::create_dir_all(&real).expect("folder");
        get(
            &server,
            &format!(
                "/api/graph/read?project_path={}",
                encode(&real.to_string_lossy())
            ),
        )
        .expect("real project");
    }
    let reals = t.elapsed();
    row(
        &format!(
            "after {projects} real project folders ({:.1} s)",
            reals.as_secs_f64()
        ),
        &measure(&server, &sid, samples),
        &idle,
    );

    let huge = "f".repeat(1_000_000);
    let t = Instant::now();
    let refused = (0..sids)
        .filter(|_| call(&server, "kg_sync", json!({"session_id": huge})).starts_with("Error: "))
        .count();
    let floods = t.elapsed();
    let registry = std::fs::metadata(home.join("storage/sessions.json")).map_or(0, |m| m.len());
    row(
        &format!(
            "after {sids} one-megabyte session ids, {refused} refused ({:.1} s; sessions.json {registry} bytes)",
            floods.as_secs_f64()
        ),
        &measure(&server, &sid, samples),
        &idle,
    );

    let t = Instant::now();
    let open: Vec<TcpStream> = (0..sockets)
        .map(|_| ws::upgrade_raw(server.port, TIMEOUT))
        .collect();
    let opening = t.elapsed();
    let idle_sockets: Vec<TcpStream> = (0..idle_connections)
        .map(|_| TcpStream::connect(("127.0.0.1", server.port)).expect("idle connection"))
        .collect();
    let during = measure(&server, &sid, samples.min(100));
    row(
        &format!(
            "{sockets} WebSockets (opened in {:.1} s) + {idle_connections} idle connections open",
            opening.as_secs_f64()
        ),
        &during,
        &idle,
    );
    drop(idle_sockets);
    drop(open);
}
