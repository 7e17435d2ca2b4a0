//! (c) The mixed workload: concurrent clients on a mix of reads and writes, and
//! (f) the big project graph that stores many more nodes than it renders.

use super::*;

pub(super) const OPS: [&str; 7] = [
    "kg_read full",
    "kg_read ids",
    "kg_search",
    "kg_put_node",
    "kg_put_edge",
    "kg_sync",
    "all",
];

pub(super) struct ClientResult {
    latencies: Vec<Vec<Duration>>,
    errors: Vec<String>,
    /// Node reads that brought an archived node back (each one a durable write).
    promotions: usize,
}

pub(super) fn mixed_client(
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
pub(super) fn mixed_phase(
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
pub(super) fn big_graph(server: &ServerProcess, home: &Path, n: usize) {
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
