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
// (c) The mixed workload

const OPS: [&str; 7] = [
    "kg_read full",
    "kg_read ids",
    "kg_search",
    "kg_put_node",
    "kg_put_edge",
    "kg_sync",
    "all",
];

struct ClientResult {
    latencies: Vec<Vec<Duration>>,
    errors: Vec<String>,
    /// Node reads that brought an archived node back (each one a durable write).
    promotions: usize,
}

fn mixed_client(
    port: u16,
    project: &str,
    me: usize,
    ids: &[(String, String)],
    read_only: bool,
    stop: &AtomicBool,
    done: &AtomicU64,
) -> ClientResult {
    let mut conn = Conn::connect(port, true).expect("connect");
    conn.initialize();
    let sid = session_of(&conn.ok("kg_read", &json!({"cwd": project})));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((me as u64 + 1) * 0x1000_0001));
    let mut result = ClientResult {
        latencies: vec![Vec::new(); OPS.len() - 1],
        errors: Vec::new(),
        promotions: 0,
    };
    while !stop.load(Ordering::Relaxed) {
        let dice = match rng.below(100) {
            // Read-only: full reads and searches only (node reads may promote).
            d if read_only => [d % 20, 35 + d % 25][d % 2],
            d => d,
        };
        let level = if rng.below(2) == 0 { "user" } else { "project" };
        let (op, args) = match dice {
            // 20% full reads
            0..=19 => (0, json!({"session_id": sid})),
            // 15% node reads (a few archived ones get promoted: a write-through)
            20..=34 => {
                let pick: Vec<&str> = (0..3)
                    .map(|_| ids[rng.below(ids.len())].1.as_str())
                    .collect();
                (1, json!({"session_id": sid, "ids": pick}))
            }
            // 25% searches
            35..=59 => {
                let q = format!(
                    "{} {}",
                    WORDS[rng.below(WORDS.len())],
                    WORDS[rng.below(WORDS.len())]
                );
                (2, json!({"session_id": sid, "query": q}))
            }
            // 20% writes: 30 ids per client, created then updated
            60..=79 => {
                let id = format!("load-c{me}-{}", rng.below(30));
                let g = gist(&mut rng, &format!("load {me}"));
                (
                    3,
                    json!({"session_id": sid, "level": level, "id": id, "gist": g}),
                )
            }
            // 10% edges between this client's nodes
            80..=89 => {
                let from = format!("load-c{me}-{}", rng.below(30));
                let to = format!("load-c{me}-{}", rng.below(30));
                (
                    4,
                    json!({"session_id": sid, "level": level, "from": from, "to": to,
                           "rel": RELS[rng.below(RELS.len())]}),
                )
            }
            // 10% syncs
            _ => (5, json!({"session_id": sid})),
        };
        let t = Instant::now();
        let outcome = conn.tool(
            [
                "kg_read",
                "kg_read",
                "kg_search",
                "kg_put_node",
                "kg_put_edge",
                "kg_sync",
            ][op],
            &args,
        );
        let took = t.elapsed();
        match outcome {
            Ok((text, false)) if !text.starts_with("Error") && !text.starts_with("Internal") => {
                if op == 1 {
                    result.promotions += text.matches("promoted from archive").count();
                }
                result.latencies[op].push(took);
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok((text, _)) => result.errors.push(format!(
                "{}: {}",
                OPS[op],
                text.chars().take(200).collect::<String>()
            )),
            Err(e) => result.errors.push(e),
        }
    }
    result
}

/// Run `clients` threads for `secs` seconds; print throughput, latencies, CPU and
/// RSS; return (peak sampled RSS, VmHWM) in KiB.
fn mixed_phase(
    server: &ServerProcess,
    project: &str,
    ids: &Arc<Vec<(String, String)>>,
    clients: usize,
    secs: usize,
    read_only: bool,
) -> (u64, u64) {
    let pid = server.pid();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let port = server.port;
    let (cpu_server0, cpu_self0) = (cpu_time(&pid.to_string()), cpu_time("self"));
    let noise = Foreign::start(pid);
    let started = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|me| {
            let (stop, done, ids) = (stop.clone(), done.clone(), ids.clone());
            let project = project.to_string();
            std::thread::spawn(move || {
                mixed_client(port, &project, me, &ids, read_only, &stop, &done)
            })
        })
        .collect();
    let mut peak_sampled = 0;
    let mut per_second = Vec::new();
    let mut rss_by_second = Vec::new();
    let mut last = 0;
    let mut next_second = started + Duration::from_secs(1);
    while started.elapsed() < Duration::from_secs(secs as u64) {
        std::thread::sleep(Duration::from_millis(50));
        let rss = rss_kib(pid).0;
        peak_sampled = peak_sampled.max(rss);
        if Instant::now() >= next_second {
            let now_done = done.load(Ordering::Relaxed);
            per_second.push(now_done - last);
            rss_by_second.push(rss / 1024);
            last = now_done;
            next_second += Duration::from_secs(1);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let results: Vec<ClientResult> = handles
        .into_iter()
        .map(|h| h.join().expect("client thread"))
        .collect();
    let elapsed = started.elapsed();
    let cpu_server = cpu_time(&pid.to_string()).saturating_sub(cpu_server0);
    let cpu_self = cpu_time("self").saturating_sub(cpu_self0);
    let (_, hwm) = rss_kib(pid);
    let mut by_op: Vec<Vec<Duration>> = vec![Vec::new(); OPS.len()];
    let mut errors = Vec::new();
    let mut promotions = 0;
    for r in results {
        for (op, l) in r.latencies.into_iter().enumerate() {
            by_op[OPS.len() - 1].extend(&l);
            by_op[op].extend(l);
        }
        errors.extend(r.errors);
        promotions += r.promotions;
    }
    let total = by_op[OPS.len() - 1].len();
    let mut sorted_seconds = per_second.clone();
    sorted_seconds.sort();
    println!(
        "{} {clients} clients, {}, {:.1} s: {total} ok calls = {:.0} req/s (per-second median {}, min {}, max {}), {} errors",
        if read_only { "   " } else { "(c)" },
        if read_only {
            "read-only mix (full reads + searches)"
        } else {
            "mixed"
        },
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        sorted_seconds
            .get(sorted_seconds.len() / 2)
            .copied()
            .unwrap_or(0),
        sorted_seconds.first().copied().unwrap_or(0),
        sorted_seconds.last().copied().unwrap_or(0),
        errors.len()
    );
    println!(
        "    CPU: server {:.1} s ({:.3} ms per call), load generator {:.1} s, of {:.1} core-seconds available; {promotions} promotions by node reads",
        cpu_server.as_secs_f64(),
        cpu_server.as_secs_f64() * 1e3 / total.max(1) as f64,
        cpu_self.as_secs_f64(),
        elapsed.as_secs_f64() * std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
    );
    for (name, l) in OPS.iter().zip(by_op.iter_mut()) {
        if !l.is_empty() {
            println!("    {name:<14} {}", summary(l));
        }
    }
    for e in errors.iter().take(5) {
        println!("    error: {e}");
    }
    println!("    {}", noise.report());
    println!("    RSS by second (MiB): {rss_by_second:?}");
    (peak_sampled, hwm)
}

/// (f) A second project whose graph stores `n` nodes (one edge each to an earlier
/// node) behind the same 17,500-char budget: most end up archived or orphaned, as in
/// a long-lived memory. Reads, searches and writes on it, sequentially.
fn big_graph(server: &ServerProcess, home: &Path, n: usize) {
    if n == 0 {
        return;
    }
    let pid = server.pid();
    let big = home.join("big");
    std::fs::create_dir_all(&big).expect("big project folder");
    let mut c = Conn::connect(server.port, true).expect("connect");
    c.initialize();
    let sid = session_of(&c.ok("kg_read", &json!({"cwd": big.to_string_lossy()})));
    let mut rng = Rng(0xA076_1D64_78BD_642F);
    let mut ids: Vec<String> = Vec::with_capacity(n);
    let mut puts = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let id = format!("big-{}-{i}", WORDS[rng.below(WORDS.len())]);
        let g = gist(&mut rng, &format!("big {i}"));
        puts.push(
            time(|| {
                c.ok(
                    "kg_put_node",
                    &json!({"session_id": sid, "level": "project", "id": id, "gist": g,
                            "notes": ["a note of moderate length about why this matters"]}),
                )
            })
            .0,
        );
        if !ids.is_empty() {
            let to = ids[rng.below(ids.len())].clone();
            c.ok(
                "kg_put_edge",
                &json!({"session_id": sid, "level": "project", "from": id, "to": to,
                        "rel": RELS[rng.below(RELS.len())]}),
            );
        }
        ids.push(id);
    }
    let read = c.ok("kg_read", &json!({"session_id": sid}));
    println!(
        "(f) big project graph: {n} nodes + {} edges written through MCP in {:.1} s",
        n - 1,
        started.elapsed().as_secs_f64()
    );
    let mut first: Vec<Duration> = puts.iter().take(200).copied().collect();
    let mut last: Vec<Duration> = puts.iter().rev().take(200).copied().collect();
    println!(
        "    kg_put_node, first 200          {}",
        summary(&mut first)
    );
    println!("    kg_put_node, last 200           {}", summary(&mut last));
    print_levels("    ", &read);
    let file = home.join("storage/projects/big/graph.json");
    let (stored, orphaned) = std::fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .map_or((0, 0), |g| {
            let nodes = g["nodes"].as_object().map_or(0, |m| m.len());
            let orphans = g["nodes"].as_object().map_or(0, |m| {
                m.values()
                    .filter(|v| v.get("_orphaned_ts").is_some_and(|t| !t.is_null()))
                    .count()
            });
            (nodes, orphans)
        });
    println!(
        "    stored: {stored} nodes ({orphaned} orphaned), graph file {} KiB",
        std::fs::metadata(&file).map_or(0, |m| m.len() / 1024)
    );
    let full = json!({"session_id": sid});
    for _ in 0..20 {
        c.ok("kg_read", &full);
    }
    let noise = Foreign::start(pid);
    seq("    kg_read full, keep-alive", pid, 300, |_| {
        c.ok("kg_read", &full);
    });
    seq("    kg_search 2 terms, keep-alive", pid, 300, |k| {
        let q = format!(
            "{} {}",
            WORDS[k % WORDS.len()],
            WORDS[(k * 7 + 3) % WORDS.len()]
        );
        c.ok("kg_search", &json!({"session_id": sid, "query": q}));
    });
    let active: Vec<&String> = ids
        .iter()
        .filter(|id| read.contains(&format!("\n  {id}: ")))
        .collect();
    seq("    kg_put_node update, keep-alive", pid, 100, |k| {
        let g = gist(&mut rng, &format!("big update {k}"));
        c.ok(
            "kg_put_node",
            &json!({"session_id": sid, "level": "project", "id": active[k % active.len()], "gist": g}),
        );
    });
    println!("    during (f): {}", noise.report());
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

// ---------------------------------------------------------------------------------
// (g) The transport ceiling

mod ceiling {
    use super::{Conn, knob, loadavg, session_of, spawn_bin, stop, wait_healthy};
    use axum::body::Bytes;
    use axum::http::header;
    use serde_json::json;
    use std::path::Path;
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Keep-alive connections of the load generator.
    const CONNECTIONS: usize = 16;

    /// The full-read request, as raw HTTP/1.1 bytes, for `port`.
    fn request(port: u16, sid: &str) -> Vec<u8> {
        let body =
            kg_test_support::http::tools_call("kg_read", &json!({"session_id": sid})).to_string();
        let mut head = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in kg_test_support::http::MCP_HEADERS {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        bytes
    }

    /// Where the head ends (after `\r\n\r\n`) and its `Content-Length`.
    fn parse_head(buf: &[u8]) -> Option<(usize, usize)> {
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
        let head = std::str::from_utf8(&buf[..end]).ok()?;
        let length = head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })?;
        Some((end, length))
    }

    /// Send `request` to `port` over [`CONNECTIONS`] keep-alive connections for
    /// `secs`; the answers that came back whole with a 200, and the bytes of one.
    fn hammer(port: u16, request: &[u8], secs: u64) -> (u64, usize) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("generator runtime");
        rt.block_on(async {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
            let mut tasks = Vec::new();
            for _ in 0..CONNECTIONS {
                let request = request.to_vec();
                tasks.push(tokio::spawn(async move {
                    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                        .await
                        .expect("connect");
                    stream.set_nodelay(true).expect("nodelay");
                    let mut buf = Vec::with_capacity(64 * 1024);
                    let (mut done, mut size) = (0u64, 0usize);
                    while tokio::time::Instant::now() < deadline {
                        stream.write_all(&request).await.expect("send");
                        buf.clear();
                        let (end, length) = loop {
                            if let Some(parsed) = parse_head(&buf) {
                                break parsed;
                            }
                            let mut chunk = [0u8; 16 * 1024];
                            let n = stream.read(&mut chunk).await.expect("read");
                            assert!(n > 0, "the server closed the connection");
                            buf.extend_from_slice(&chunk[..n]);
                        };
                        while buf.len() < end + length {
                            let mut chunk = [0u8; 64 * 1024];
                            let n = stream.read(&mut chunk).await.expect("read");
                            assert!(n > 0, "the server closed the connection");
                            buf.extend_from_slice(&chunk[..n]);
                        }
                        assert!(buf.starts_with(b"HTTP/1.1 200"), "not a 200");
                        done += 1;
                        size = end + length;
                    }
                    (done, size)
                }));
            }
            let mut total = (0, 0);
            for t in tasks {
                let (done, size) = t.await.expect("generator task");
                total = (total.0 + done, size);
            }
            total
        })
    }

    /// A bare axum server answering every POST with `answer` (as JSON), on the
    /// runtime kg-memory serve uses (multi-threaded, a worker per core).
    fn bare_server(answer: Vec<u8>) -> (u16, tokio::runtime::Runtime) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("bare runtime");
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let answer = Bytes::from(answer);
        let app = axum::Router::new().route(
            "/",
            axum::routing::post(move |_body: Bytes| {
                let answer = answer.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], answer) }
            }),
        );
        rt.spawn(async move {
            axum::serve(listener, app).await.expect("bare server");
        });
        (port, rt)
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }

    /// Phase (g) on the seeded root, for this tree's binary and `KG_BENCH_BEFORE`.
    pub fn phase(home: &Path, storage: &Path, project: &str) {
        let secs = knob("KG_BENCH_CEILING_SECS", 5) as u64;
        let rounds = knob("KG_BENCH_CEILING_ROUNDS", 3).max(1);
        let mut binaries = Vec::new();
        if let Ok(before) = std::env::var("KG_BENCH_BEFORE") {
            binaries.push(("before", before));
        }
        binaries.push(("this tree", super::bin()));
        println!(
            "(g) the transport ceiling: full kg_read, {CONNECTIONS} keep-alive connections, {secs} s per measurement, {rounds} round(s); loadavg {}",
            loadavg()
        );
        // (binary) → (ours req/s, bare req/s) per round
        let mut results: Vec<(&str, Vec<(f64, f64)>)> =
            binaries.iter().map(|(n, _)| (*n, Vec::new())).collect();
        for round in 0..rounds {
            for (b, (name, bin)) in binaries.iter().enumerate() {
                let env = [("KG_GRACE_PERIOD_DAYS", "0")];
                let mut server = spawn_bin(bin, home, storage, &env, None);
                wait_healthy(&mut server);
                let port = server.port;
                let sid = {
                    let mut c = Conn::connect(port, true).expect("connect");
                    c.initialize();
                    session_of(&c.ok("kg_read", &json!({"cwd": project})))
                };
                let request = request(port, &sid);
                // The answer the bare handler repeats: this server's own, byte for byte.
                let answer = {
                    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
                    std::io::Write::write_all(&mut c, &request).expect("send");
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 64 * 1024];
                    let (end, length) = loop {
                        if let Some(p) = parse_head(&buf) {
                            break p;
                        }
                        let n = std::io::Read::read(&mut c, &mut chunk).expect("read");
                        buf.extend_from_slice(&chunk[..n]);
                    };
                    while buf.len() < end + length {
                        let n = std::io::Read::read(&mut c, &mut chunk).expect("read");
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    buf[end..end + length].to_vec()
                };
                hammer(port, &request, 1); // warm up
                let started = Instant::now();
                let (ours, size) = hammer(port, &request, secs);
                let ours = ours as f64 / started.elapsed().as_secs_f64();
                stop(server);
                let (bare_port, rt) = bare_server(answer.clone());
                let bare_request = request_for(bare_port, &request, port);
                hammer(bare_port, &bare_request, 1);
                let started = Instant::now();
                let (bare, bare_size) = hammer(bare_port, &bare_request, secs);
                let bare = bare as f64 / started.elapsed().as_secs_f64();
                rt.shutdown_timeout(Duration::from_secs(1));
                println!(
                    "    round {} · {name}: ours {ours:.0} req/s ({size} bytes a response), bare axum {bare:.0} req/s ({bare_size} bytes): {:.1} % of the ceiling; loadavg {}",
                    round + 1,
                    100.0 * ours / bare,
                    loadavg()
                );
                results[b].1.push((ours, bare));
            }
        }
        println!("    | binary | full kg_read | bare axum, same answer | ratio | target ≥ 25 % |");
        println!("    |---|---|---|---|---|");
        for (name, v) in &results {
            let ours = median(v.iter().map(|r| r.0).collect());
            let bare = median(v.iter().map(|r| r.1).collect());
            let ratio = median(v.iter().map(|r| r.0 / r.1).collect());
            println!(
                "    | {name} | {ours:.0} req/s | {bare:.0} req/s | {:.1} % | {} |",
                100.0 * ratio,
                if ratio >= 0.25 { "met" } else { "missed" }
            );
        }
    }

    /// `request` (made for `from`) addressed to `port` instead.
    fn request_for(port: u16, request: &[u8], from: u16) -> Vec<u8> {
        let text = String::from_utf8_lossy(request).replace(
            &format!("Host: 127.0.0.1:{from}\r\n"),
            &format!("Host: 127.0.0.1:{port}\r\n"),
        );
        text.into_bytes()
    }
}
