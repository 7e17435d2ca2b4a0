//! Crash safety of write-through: a child process writes and reports each
//! acknowledged write on a pipe; it is killed with SIGKILL at random moments. After
//! every kill the graph file must parse and hold every acknowledged write.

use kg_core::{Level, Target};
use kg_test_support::{T, TempHome, open_store};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "KG_CRASH_CHILD_STORAGE";
const KILLS: usize = 200;

/// The writer: run by `killed_writers_never_lose_acknowledged_writes` in a child copy
/// of this test binary, writing until it is killed.
fn write_until_killed(storage: &str) -> ! {
    let home = std::env::var("KG_CRASH_CHILD_HOME").expect("home");
    let round: u64 = std::env::var("KG_CRASH_CHILD_ROUND")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let store = kg_core::Store::open(kg_core::StoreConfig::new(storage, &home), T).expect("open");
    let user = Target {
        level: Level::User,
        session: None,
        project_path: None,
    };
    let mut out = std::io::stdout();
    let mut k: u64 = 0;
    loop {
        // A bounded id space: new nodes at first, then rewrites, so "the last
        // acknowledged value" matters and the graph stays a realistic size.
        let id = format!("n{}", (round * 41 + k) % 400);
        let gist = format!("round {round} write {k}");
        use std::io::Write;
        let _ = writeln!(out, "try {id} {gist}");
        let _ = out.flush();
        store
            .put_node(user, &id, &gist, None, None, T + k as f64)
            .expect("write-through");
        let _ = writeln!(out, "ack {id} {gist}");
        let _ = out.flush();
        if k % 5 == 4 {
            store
                .put_edge(user, &id, "src/lib.rs", "touches", None, T + k as f64)
                .expect("edge");
        }
        k += 1;
    }
}

/// Runs itself as the writer in a child process (the same test, selected with
/// `--exact`, with the storage in `KG_CRASH_CHILD_STORAGE`) and kills it with SIGKILL
/// at random moments; every writer must end by that kill, not by itself.
#[test]
fn killed_writers_never_lose_acknowledged_writes() {
    if let Ok(storage) = std::env::var(CHILD_ENV) {
        write_until_killed(&storage);
    }
    let home = TempHome::new();
    let exe = std::env::current_exe().expect("test binary");
    let mut acked: HashMap<String, String> = HashMap::new();
    let mut in_flight: Option<(String, String)> = None;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut total_acks = 0usize;
    for round in 0..KILLS {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash::killed_writers_never_lose_acknowledged_writes",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, home.storage())
            .env("KG_CRASH_CHILD_HOME", &home.path)
            .env("KG_CRASH_CHILD_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("pipe");
        // xorshift: a reproducible spread of kill moments (after 0–40 acknowledged
        // writes, then a short random delay so the kill lands inside a write).
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let kill_after = (seed % 41) as usize;
        let delay = Duration::from_micros((seed >> 8) % 3000);
        let mut round_acks = 0;
        let mut killed = false;
        let started = Instant::now();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let mut parts = line.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("try"), Some(id), Some(gist)) => in_flight = Some((id.into(), gist.into())),
                (Some("ack"), Some(id), Some(gist)) => {
                    acked.insert(id.into(), gist.into());
                    total_acks += 1;
                    round_acks += 1;
                    in_flight = None;
                }
                _ => {}
            }
            if !killed && (round_acks >= kill_after || started.elapsed() > Duration::from_secs(20))
            {
                std::thread::sleep(delay);
                child.kill().expect("SIGKILL");
                killed = true;
            }
        }
        let mut why = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            let _ = stderr.read_to_string(&mut why);
        }
        let status = child.wait().expect("reap the writer");
        assert!(
            killed && status.signal() == Some(libc::SIGKILL),
            "round {round}: the writer ended by itself ({status}), not by the kill:\n{why}"
        );
        let graph = home.storage().join("user.json");
        if !graph.exists() {
            assert!(
                acked.is_empty(),
                "round {round}: acknowledged writes but no file"
            );
            continue;
        }
        // The file parses and holds every acknowledged value (or the one write that was
        // in flight when the kill landed).
        let text = std::fs::read_to_string(&graph).expect("graph file");
        let file = kg_core::persist::parse_graph(text.as_bytes())
            .unwrap_or_else(|e| panic!("round {round}: graph file does not parse: {e}"));
        for (id, gist) in &acked {
            let node = file
                .graph
                .nodes
                .get(id)
                .unwrap_or_else(|| panic!("round {round}: acknowledged node {id} lost"));
            let ok = node.gist() == gist
                || in_flight
                    .as_ref()
                    .is_some_and(|(i, g)| i == id && node.gist() == g);
            assert!(
                ok,
                "round {round}: {id} holds {:?}, acknowledged {gist:?}",
                node.gist()
            );
        }
        if let Some((id, gist)) = in_flight.take()
            && file.graph.nodes.get(&id).is_some_and(|n| n.gist() == gist)
        {
            acked.insert(id, gist); // it landed; later rounds must keep it
        }
        let prev = home.storage().join("user.prev");
        if prev.exists() {
            let bytes = std::fs::read(&prev).expect("prev");
            assert!(
                kg_core::persist::parse_graph(&bytes).is_ok(),
                "round {round}: .prev is not valid"
            );
        }
    }
    assert!(
        total_acks > KILLS,
        "the children made progress ({total_acks} acknowledged writes)"
    );
    // The store opens cleanly afterwards with everything in it.
    let store = open_store(&home, T);
    let count = store.with_graph(store.user_slot(), |g| g.nodes.len());
    assert!(count >= acked.len());
}
