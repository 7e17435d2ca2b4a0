//! Load generator for the real `kg-memory serve` (release build), over plain HTTP/1.1
//! on loopback with keep-alive connections (std `TcpStream`, one connection per
//! client, reused for every request).
//!
//! It seeds a full-budget graph at both levels through MCP, then prints:
//! (a) full `kg_read` round trips, (b) `kg_put_node` round trips (write-through with
//! fsync on the real disk under `target/`), (c) requests per second with 16
//! concurrent clients on a mixed workload, (d) server RSS idle and under load,
//! (e) time from spawn to a healthy `/health`, on an empty and on the seeded
//! storage root; and (f) how reads and writes scale with a project graph that
//! stores many more nodes than it renders (most of them orphaned).
//!
//! Run: `cargo bench -p kg-server --bench load`. Knobs (environment):
//! `KG_BENCH_READS` (default 1000), `KG_BENCH_PUTS` (300), `KG_BENCH_CLIENTS` (16),
//! `KG_BENCH_SECS` (10), `KG_BENCH_STARTS` (25), `KG_BENCH_BIG_NODES` (2000;
//! the size of the big project graph of phase (f)), `KG_BENCH_DIR` (where the
//! temporary home goes; default `target/`), `KG_BENCH_KEEP` (keep that home),
//! `KG_BENCH_BIN` (another `kg-memory` to measure instead of this tree's).
//!
//! (g) **The transport ceiling** (issue 38): the same full `kg_read` request, sent
//! by one load generator (16 keep-alive connections on one thread, each sending
//! the next request as soon as the answer is in), to the server and to a bare axum
//! handler in this process that answers every request with the very bytes the
//! server answered; requests per second of each, rounds alternating, and the ratio.
//! Each round also measures rmcp alone (its streamable-HTTP service configured as
//! ours, one tool answering the same text with no store behind it): the share of
//! the ceiling the MCP transport leaves a full read.
//! `KG_BENCH_ONLY=ceiling` runs the seeding and (g) alone; `KG_BENCH_BEFORE=<path to
//! another kg-memory>` measures that binary too, in the same rounds;
//! `KG_BENCH_CEILING_SECS` (5) and `KG_BENCH_CEILING_ROUNDS` (3) size it.

use kg_test_support::http::{self, KeepAlive};
use kg_test_support::serve::{Serve, ServerProcess};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod ceiling;
mod mixed;

use mixed::*;

/// Per-level budget of rendered characters (core.md §6).
const LEVEL_MAX: usize = 17_500;
/// Nodes seeded per level before the top-up to the budget.
const SEED_NODES: usize = 300;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------
// The server process

/// Spawn `kg-memory serve` (saving every 30 s), its log appended to `log` if given;
/// not waited for.
fn spawn(home: &Path, storage: &Path, env: &[(&str, &str)], log: Option<&Path>) -> ServerProcess {
    spawn_bin(&bin(), home, storage, env, log)
}

/// The `kg-memory` measured: this tree's, or `KG_BENCH_BIN`.
fn bin() -> String {
    std::env::var("KG_BENCH_BIN")
        .unwrap_or_else(|_| kg_test_support::kg_memory_bin().display().to_string())
}

fn spawn_bin(
    bin: &str,
    home: &Path,
    storage: &Path,
    env: &[(&str, &str)],
    log: Option<&Path>,
) -> ServerProcess {
    let mut serve = Serve::new(bin, home, storage)
        .env("KG_SAVE_INTERVAL", "30")
        .envs(env);
    if let Some(path) = log {
        serve = serve.log(path);
    }
    serve.spawn()
}

/// Poll `/health` (fresh connection each try, every 200 µs) until it answers 200;
/// returns the time since the spawn.
fn wait_healthy(server: &mut ServerProcess) -> Duration {
    server.wait_healthy(Duration::from_secs(30), Duration::from_micros(200))
}

/// Graceful stop (SIGTERM flushes everything); returns how long it took.
fn stop(mut server: ServerProcess) -> Duration {
    let start = Instant::now();
    server.signal(libc::SIGTERM);
    let status = server.child.wait().expect("wait for server");
    assert!(status.success(), "graceful shutdown failed: {status}");
    start.elapsed()
}

/// (VmRSS, VmHWM) of a process, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The machine's 1/5/15-minute load averages (other work on it skews the numbers).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// CPU time the whole machine spent busy so far (all cores, `/proc/stat`).
fn machine_busy() -> Duration {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal
    let busy: u64 = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum();
    Duration::from_millis(busy * 10)
}

/// CPU that processes other than this bench and `server_pid` used since `since`
/// (machine busy, server CPU, own CPU): the noise of a shared machine.
struct Foreign {
    busy: Duration,
    server: Duration,
    own: Duration,
    pid: String,
    wall: Instant,
}

impl Foreign {
    fn start(server_pid: u32) -> Foreign {
        let pid = server_pid.to_string();
        Foreign {
            busy: machine_busy(),
            server: cpu_time(&pid),
            own: cpu_time("self"),
            pid,
            wall: Instant::now(),
        }
    }

    fn report(&self) -> String {
        let busy = machine_busy().saturating_sub(self.busy);
        let ours = cpu_time(&self.pid).saturating_sub(self.server)
            + cpu_time("self").saturating_sub(self.own);
        format!(
            "other processes used {:.1} of {:.1} core-seconds",
            busy.saturating_sub(ours).as_secs_f64(),
            self.wall.elapsed().as_secs_f64()
                * std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
        )
    }
}

/// User + system CPU time of a process so far (`/proc/<pid>/stat`, 100 Hz ticks).
fn cpu_time(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or("")
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // After the command name: state is field 0, utime field 11, stime field 12.
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

// ---------------------------------------------------------------------------------
// One client's HTTP/1.1 connection (kg-test-support's), reopened when the server
// closed it

struct Conn {
    port: u16,
    keep_alive: bool,
    conn: Option<KeepAlive>,
    /// Requests sent on the current connection.
    uses: u64,
}

impl Conn {
    fn connect(port: u16, keep_alive: bool) -> std::io::Result<Conn> {
        let mut c = Conn {
            port,
            keep_alive,
            conn: None,
            uses: 0,
        };
        c.open()?;
        Ok(c)
    }

    fn open(&mut self) -> std::io::Result<()> {
        self.conn = Some(KeepAlive::connect(self.port, Duration::from_secs(60))?);
        self.uses = 0;
        Ok(())
    }

    /// One exchange; returns (status, body).
    fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> std::io::Result<(u16, String)> {
        if self.conn.is_none() {
            self.open()?;
        }
        let reused = self.uses > 0;
        match self.exchange(method, path, body) {
            Ok(r) => Ok(r),
            // The server closed an idle keep-alive connection before reading the
            // request: nothing was processed, so sending again is safe.
            Err(e) if reused && e.kind() == std::io::ErrorKind::UnexpectedEof => {
                self.open()?;
                self.exchange(method, path, body)
            }
            Err(e) => {
                self.conn = None;
                Err(e)
            }
        }
    }

    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> std::io::Result<(u16, String)> {
        let eof = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed");
        let conn = self.conn.as_mut().ok_or_else(eof)?;
        let connection = if self.keep_alive {
            "keep-alive"
        } else {
            "close"
        };
        let mut headers = vec![("Connection", connection)];
        if body.is_some() {
            headers.extend(http::MCP_HEADERS);
        }
        self.uses += 1;
        let (status, _, raw) = conn.exchange(method, path, &headers, body.map(str::as_bytes))?;
        if conn.closed() || !self.keep_alive {
            self.conn = None;
        }
        Ok((status, String::from_utf8_lossy(&raw).into_owned()))
    }

    /// The Claude-Code-style MCP handshake (initialize, then the notification).
    fn initialize(&mut self) {
        let init = http::mcp_initialize("kg-load");
        let (status, body) = self
            .request("POST", "/", Some(&init.to_string()))
            .expect("initialize");
        assert_eq!(status, 200, "initialize: {body}");
        let note = http::mcp_initialized();
        let (status, _) = self
            .request("POST", "/", Some(&note.to_string()))
            .expect("initialized");
        assert_eq!(status, 202);
    }

    /// One `tools/call`; Err on transport or protocol failure, Ok((text, isError)).
    fn tool(&mut self, name: &str, args: &Value) -> Result<(String, bool), String> {
        let body = http::tools_call(name, args).to_string();
        let (status, body) = self
            .request("POST", "/", Some(&body))
            .map_err(|e| format!("{name}: {e}"))?;
        if status != 200 {
            return Err(format!("{name}: HTTP {status}: {body}"));
        }
        http::tool_result(&body).map_err(|e| format!("{name}: {e}"))
    }

    /// A tool call that must succeed.
    fn ok(&mut self, name: &str, args: &Value) -> String {
        let (text, is_error) = self.tool(name, args).expect("tool call");
        assert!(
            !is_error && !text.starts_with("Error") && !text.starts_with("Internal error"),
            "{name}: {text}"
        );
        text
    }
}

fn session_of(text: &str) -> String {
    http::session_of(text).expect("Session footer")
}

// ---------------------------------------------------------------------------------
// Seed data

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "cache",
    "index",
    "parser",
    "tokio",
    "axum",
    "fsync",
    "compaction",
    "budget",
    "render",
    "session",
    "graph",
    "search",
    "score",
    "archive",
    "refill",
    "orphan",
    "snapshot",
    "ledger",
    "webview",
    "tray",
    "hook",
    "prompt",
    "recall",
    "schema",
    "migration",
    "latency",
    "deadlock",
    "retry",
    "timeout",
    "socket",
    "loopback",
    "release",
    "clippy",
    "fixture",
    "golden",
    "unicode",
    "watcher",
    "rename",
    "atomic",
    "journal",
];
const RELS: &[&str] = &[
    "requires",
    "part-of",
    "relates-to",
    "supersedes",
    "explains",
];

/// A one-line gist of about 100 characters.
fn gist(rng: &mut Rng, tag: &str) -> String {
    let mut g = format!("{tag}:");
    while g.chars().count() < 96 {
        g.push(' ');
        g.push_str(WORDS[rng.below(WORDS.len())]);
    }
    g
}

fn node_id(level: &str, i: usize, rng: &mut Rng) -> String {
    format!(
        "{}-{}-{}-{i}",
        &level[..1],
        WORDS[rng.below(WORDS.len())],
        WORDS[rng.below(WORDS.len())]
    )
}

/// One level of a full read: rendered body chars as core.md §7.3 counts them, the
/// header's active and archived counts, and the HEALTH line.
struct LevelSize {
    name: String,
    chars: usize,
    active: usize,
    archived: usize,
    health: String,
}

fn level_sizes(read: &str) -> Vec<LevelSize> {
    let mut out = Vec::new();
    let mut lines = read.lines();
    while let Some(line) = lines.next() {
        let Some(head) = line.strip_prefix("=== ") else {
            continue;
        };
        let name = head.split(" GRAPH").next().unwrap_or("?").to_string();
        let nums: Vec<usize> = head
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|t| t.parse().ok())
            .collect();
        let mut chars = 0;
        let mut health = String::new();
        for body in lines.by_ref() {
            if let Some(h) = body.strip_prefix("HEALTH: ") {
                health = h.to_string();
                break;
            }
            chars += body.chars().count() + 1;
        }
        out.push(LevelSize {
            name,
            chars,
            active: nums.first().copied().unwrap_or(0),
            archived: nums.get(1).copied().unwrap_or(0),
            health,
        });
    }
    out
}

fn print_levels(prefix: &str, read: &str) {
    for l in level_sizes(read) {
        println!(
            "{prefix}{:<8} {:>6} rendered chars, {} active, {} archived (HEALTH: {})",
            l.name, l.chars, l.active, l.archived, l.health
        );
    }
}

/// Seed both levels to a full budget through MCP; returns every node id written.
fn seed(conn: &mut Conn, sid: &str) -> Vec<(String, String)> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut ids = Vec::new();
    for level in ["user", "project"] {
        let mut mine: Vec<String> = Vec::new();
        for i in 0..SEED_NODES {
            let id = node_id(level, i, &mut rng);
            let g = gist(&mut rng, &format!("seed {level} {i}"));
            conn.ok(
                "kg_put_node",
                &json!({"session_id": sid, "level": level, "id": id, "gist": g,
                        "notes": [format!("note one for {id}"), "second note with more depth about the decision"],
                        "touches": ["crates/kg-server/src/mcp.rs:42"]}),
            );
            // One edge to an earlier node, a second for every third node, and a
            // file-path edge now and then.
            let picks = if i == 0 {
                0
            } else if i % 3 == 0 {
                2
            } else {
                1
            };
            for _ in 0..picks {
                let to = mine[rng.below(mine.len())].clone();
                conn.ok(
                    "kg_put_edge",
                    &json!({"session_id": sid, "level": level, "from": id, "to": to,
                            "rel": RELS[rng.below(RELS.len())]}),
                );
            }
            if i % 10 == 0 {
                conn.ok(
                    "kg_put_edge",
                    &json!({"session_id": sid, "level": level, "from": id,
                            "to": format!("crates/kg-core/src/file{i}.rs"), "rel": "touches"}),
                );
            }
            mine.push(id.clone());
            ids.push((level.to_string(), id));
        }
        // Top up with edge-less nodes until the level sits just under its budget.
        let mut extra = 0;
        loop {
            let read = conn.ok("kg_read", &json!({"session_id": sid}));
            let size = level_sizes(&read)
                .into_iter()
                .find(|l| l.name.eq_ignore_ascii_case(level))
                .map_or(0, |l| l.chars);
            if size + 130 > LEVEL_MAX || extra >= 200 {
                break;
            }
            let id = node_id(level, SEED_NODES + extra, &mut rng);
            let g = gist(&mut rng, &format!("top-up {level} {extra}"));
            conn.ok(
                "kg_put_node",
                &json!({"session_id": sid, "level": level, "id": id, "gist": g}),
            );
            ids.push((level.to_string(), id));
            extra += 1;
        }
    }
    ids
}

// ---------------------------------------------------------------------------------
// Statistics

fn pct(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn summary(samples: &mut [Duration]) -> String {
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / samples.len().max(1) as u32;
    format!(
        "n={:<5} p50={} p90={} p99={} max={} mean={} ms",
        samples.len(),
        ms(pct(samples, 0.5)),
        ms(pct(samples, 0.9)),
        ms(pct(samples, 0.99)),
        ms(pct(samples, 1.0)),
        ms(mean)
    )
}

fn time<R>(f: impl FnOnce() -> R) -> (Duration, R) {
    let t = Instant::now();
    let r = f();
    (t.elapsed(), r)
}

/// Run `f` `n` times back to back; print the round-trip percentiles and the server's
/// CPU time per call.
fn seq(label: &str, pid: u32, n: usize, mut f: impl FnMut(usize)) {
    let cpu0 = cpu_time(&pid.to_string());
    let mut samples: Vec<Duration> = (0..n).map(|k| time(|| f(k)).0).collect();
    let cpu = cpu_time(&pid.to_string()).saturating_sub(cpu0);
    println!(
        "{label:<36}{}  server CPU {:.3} ms/call",
        summary(&mut samples),
        cpu.as_secs_f64() * 1e3 / n.max(1) as f64
    );
}

// ---------------------------------------------------------------------------------

fn main() {
    // `cargo bench` passes `--bench`; a plain `cargo test --benches` run passes
    // nothing and only wants to know that this builds.
    if !std::env::args().any(|a| a == "--bench") {
        println!("load bench: run with `cargo bench -p kg-server --bench load`");
        return;
    }
    let reads = knob("KG_BENCH_READS", 1000);
    let puts = knob("KG_BENCH_PUTS", 300);
    let clients = knob("KG_BENCH_CLIENTS", 16);
    let secs = knob("KG_BENCH_SECS", 10);
    let starts = knob("KG_BENCH_STARTS", 25);
    let nodes_big = knob("KG_BENCH_BIG_NODES", 2000);

    // Real disk: under target/, not tmpfs, and not under a `/tmp/` path.
    let target = std::env::var_os("KG_BENCH_DIR").map_or_else(
        || {
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .expect("target dir")
                .to_path_buf()
        },
        PathBuf::from,
    );
    let dir = tempfile::Builder::new()
        .prefix("kg-bench-")
        .tempdir_in(&target)
        .expect("bench home");
    let home: PathBuf = std::fs::canonicalize(dir.path()).expect("canonical home");
    let storage = home.join("storage");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project folder");
    let project_s = project.to_string_lossy().into_owned();
    let fs_type = Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(&home)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("kg-memory load bench");
    println!("binary   {}", bin());
    println!("storage  {} ({fs_type})", storage.display());
    println!(
        "machine  {} cores, {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/cpuinfo")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("model name\t: "))
            .unwrap_or("?")
    );
    println!("HTTP     HTTP/1.1 keep-alive, one std TcpStream per client (TCP_NODELAY)");
    println!("loadavg  {} at start", loadavg());
    println!();

    // --- Seeding: grace 0 so every write compacts, a 1 s tick.
    let seed_env = [("KG_SAVE_INTERVAL", "1"), ("KG_GRACE_PERIOD_DAYS", "0")];
    let mut server = spawn(&home, &storage, &seed_env, Some(&home.join("seed.log")));
    wait_healthy(&mut server);
    let mut conn = Conn::connect(server.port, true).expect("connect");
    conn.initialize();
    let sid = session_of(&conn.ok("kg_read", &json!({"cwd": project_s})));
    let (took, ids) = time(|| seed(&mut conn, &sid));
    std::thread::sleep(Duration::from_millis(2_500)); // let a tick or two run
    let read = conn.ok("kg_read", &json!({"session_id": sid}));
    println!(
        "seeded   {} node ids in {:.1} s through MCP (grace 0, tick 1 s)",
        ids.len(),
        took.as_secs_f64()
    );
    print_levels("         ", &read);
    println!("         full kg_read text: {} chars", read.chars().count());
    drop(conn);
    let stop_seed = stop(server);
    println!(
        "         graceful stop after seeding: {:.1} ms",
        stop_seed.as_secs_f64() * 1e3
    );
    let graph_bytes: u64 = ["user.json", "projects/proj/graph.json"]
        .iter()
        .filter_map(|p| std::fs::metadata(storage.join(p)).ok())
        .map(|m| m.len())
        .sum();
    println!("         graph files on disk: {} KiB", graph_bytes / 1024);
    println!();

    if std::env::var("KG_BENCH_ONLY").is_ok_and(|v| v == "ceiling") {
        ceiling::phase(&home, &storage, &project_s);
        println!("loadavg  {} at end", loadavg());
        if std::env::var_os("KG_BENCH_KEEP").is_some() {
            println!("kept {}", dir.keep().display());
        }
        return;
    }

    // --- Measurement server on the seeded root. Grace 0 keeps compaction live
    // (a mature graph whose nodes are past grace); the tick is the default 30 s.
    let run_env = [("KG_GRACE_PERIOD_DAYS", "0")];
    let mut server = spawn(&home, &storage, &run_env, Some(&home.join("run.log")));
    let healthy = wait_healthy(&mut server);
    let pid = server.pid();
    let (rss_start, _) = rss_kib(pid);
    let mut conn = Conn::connect(server.port, true).expect("connect");
    conn.initialize();
    let first = conn.ok("kg_read", &json!({"cwd": project_s}));
    let sid = session_of(&first);
    std::thread::sleep(Duration::from_millis(500));
    let (rss_idle, _) = rss_kib(pid);
    println!(
        "(d) RSS  just started (pid {pid}, healthy after {} ms): {} KiB; idle after loading the seeded graphs: {} KiB",
        ms(healthy),
        rss_start,
        rss_idle
    );

    // (a) Reads. Each line: client-side round trip, and the server's CPU per call.
    let noise = Foreign::start(pid);
    let full = json!({"session_id": sid});
    for _ in 0..50 {
        conn.ok("kg_read", &full);
    }
    seq("(a) kg_read full, keep-alive", pid, reads, |_| {
        conn.ok("kg_read", &full);
    });
    let port = server.port;
    seq("    kg_read full, new connection", pid, reads / 4, |_| {
        let mut c = Conn::connect(port, false).expect("connect");
        c.ok("kg_read", &full);
    });
    seq("    GET /health, keep-alive", pid, reads, |_| {
        conn.request("GET", "/health", None).expect("health");
    });
    let one = ids[ids.len() / 2].1.clone();
    seq("    kg_read one id, keep-alive", pid, reads, |_| {
        conn.ok("kg_read", &json!({"session_id": sid, "ids": [one]}));
    });
    seq("    kg_search 2 terms, keep-alive", pid, reads, |k| {
        let q = format!(
            "{} {}",
            WORDS[k % WORDS.len()],
            WORDS[(k * 7 + 3) % WORDS.len()]
        );
        conn.ok("kg_search", &json!({"session_id": sid, "query": q}));
    });

    seq("    kg_read cwd (new session)", pid, reads / 10, |_| {
        conn.ok("kg_read", &json!({"cwd": project_s}));
    });
    let sessions_kib =
        std::fs::metadata(storage.join("sessions.json")).map_or(0, |m| m.len() / 1024);
    println!(
        "    (sessions.json is now {sessions_kib} KiB, rewritten with fsync on every registration)"
    );

    // (b) Writes: updates of existing active nodes, then new nodes (each new one
    // pushes the level over budget and runs a real archive pass), then edges.
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let active_project: Vec<String> = ids
        .iter()
        .filter(|(l, _)| l == "project")
        .map(|(_, id)| id.clone())
        .filter(|id| first.contains(&format!("\n  {id}: ")))
        .collect();
    println!(
        "    ({} active project nodes take turns in the updates)",
        active_project.len()
    );
    seq("(b) kg_put_node update, keep-alive", pid, puts, |k| {
        let id = &active_project[k % active_project.len()];
        let g = gist(&mut rng, &format!("update {k}"));
        conn.ok(
            "kg_put_node",
            &json!({"session_id": sid, "level": "project", "id": id, "gist": g}),
        );
    });
    seq("    kg_put_node create, keep-alive", pid, puts, |k| {
        let g = gist(&mut rng, &format!("new {k}"));
        conn.ok(
            "kg_put_node",
            &json!({"session_id": sid, "level": "project", "id": format!("bench-new-{k}"), "gist": g}),
        );
    });
    seq("    kg_put_edge, keep-alive", pid, puts, |k| {
        let from = &active_project[k % active_project.len()];
        let to = &active_project[(k * 7 + 1) % active_project.len()];
        conn.ok(
            "kg_put_edge",
            &json!({"session_id": sid, "level": "project", "from": from, "to": to, "rel": "bench"}),
        );
    });
    let after = conn.ok("kg_read", &json!({"session_id": sid}));
    print_levels("    after writes: ", &after);
    println!("    during (a) and (b): {}", noise.report());
    let (rss_after_seq, _) = rss_kib(pid);
    drop(conn);

    // (c) Mixed load, then a read-only load for comparison.
    let ids = Arc::new(ids);
    let (peak_sampled, hwm) = mixed_phase(&server, &project_s, &ids, clients, secs, false);
    println!(
        "(d) RSS  after sequential phase {rss_after_seq} KiB; under load: peak sampled {peak_sampled} KiB, VmHWM {hwm} KiB"
    );
    let after = {
        let mut c = Conn::connect(server.port, true).expect("connect");
        c.ok("kg_read", &json!({"session_id": sid}))
    };
    print_levels("    after load: ", &after);
    {
        let mut c = Conn::connect(server.port, true).expect("connect");
        seq("    kg_read full, sequential again", pid, reads / 2, |_| {
            c.ok("kg_read", &json!({"session_id": sid}));
        });
        seq("    kg_search, sequential again", pid, reads / 2, |k| {
            let q = format!(
                "{} {}",
                WORDS[k % WORDS.len()],
                WORDS[(k * 7 + 3) % WORDS.len()]
            );
            c.ok("kg_search", &json!({"session_id": sid, "query": q}));
        });
    }
    mixed_phase(&server, &project_s, &ids, clients, secs.div_ceil(2), true);
    big_graph(&server, &home, nodes_big);
    let stop_loaded = stop(server);
    ceiling::phase(&home, &storage, &project_s);
    println!(
        "    graceful stop after load: {:.1} ms",
        stop_loaded.as_secs_f64() * 1e3
    );

    // (e) Spawn → healthy.
    let kib = |p: &str| std::fs::metadata(storage.join(p)).map_or(0, |m| m.len() / 1024);
    println!(
        "(e) the seeded root now holds user.json {} KiB, sessions.json {} KiB, projects/proj {} KiB, projects/big {} KiB",
        kib("user.json"),
        kib("sessions.json"),
        kib("projects/proj/graph.json"),
        kib("projects/big/graph.json")
    );
    let noise = Foreign::start(0);
    let mut empty = Vec::new();
    let mut empty_stop = Vec::new();
    for k in 0..starts {
        let root = home.join(format!("empty-{k}"));
        let mut s = spawn(&home, &root, &[], None);
        empty.push(wait_healthy(&mut s));
        empty_stop.push(stop(s));
    }
    let mut seeded = Vec::new();
    let mut seeded_stop = Vec::new();
    let mut seeded_first_read = Vec::new();
    for _ in 0..starts {
        let mut s = spawn(&home, &storage, &[], None);
        seeded.push(wait_healthy(&mut s));
        let mut c = Conn::connect(s.port, true).expect("connect");
        seeded_first_read.push(time(|| c.ok("kg_read", &json!({"cwd": project_s}))).0);
        drop(c);
        seeded_stop.push(stop(s));
    }
    println!(
        "    spawn→healthy, empty root       {}",
        summary(&mut empty)
    );
    println!(
        "    spawn→healthy, seeded root      {}",
        summary(&mut seeded)
    );
    println!(
        "    first kg_read(cwd) after start  {}",
        summary(&mut seeded_first_read)
    );
    println!(
        "    graceful stop, empty root       {}",
        summary(&mut empty_stop)
    );
    println!(
        "    graceful stop, seeded root      {}",
        summary(&mut seeded_stop)
    );

    let warnings = std::fs::read_to_string(home.join("run.log")).unwrap_or_default();
    let notable: Vec<&str> = warnings
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .take(5)
        .collect();
    if !notable.is_empty() {
        println!("server warnings during the run:");
        for l in notable {
            println!("    {l}");
        }
    }
    println!("    during (e): {} (server CPU included)", noise.report());
    println!("loadavg  {} at end", loadavg());
    if std::env::var_os("KG_BENCH_KEEP").is_some() {
        println!("kept {}", dir.keep().display());
    }
}
