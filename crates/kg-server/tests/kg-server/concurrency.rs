//! Concurrency: agents' MCP writes, graph-view edits over REST (with the view's
//! `reload=true` refreshes), WebSocket subscribers and the maintenance tick
//! (`KG_SAVE_INTERVAL=1`), all at once — 21 clients against one server.
//!
//! - No lost update: after a graceful shutdown, the last acknowledged write of every
//!   node is what the files hold.
//! - No deadlock: every request has a timeout and every client a deadline; a hang
//!   fails the test and names the client.
//! - No torn read: writers keep invariants that only whole mutations preserve, and
//!   readers check them in every `kg_read` (full and batched), node read and REST
//!   snapshot they get:
//!   * `pair-a`/`pair-b` are rewritten in turn (`pair N`): a snapshot shows
//!     b ≤ a ≤ b + 1;
//!   * `tmp-N` is put, linked `tmp-N --feeds--> hub`, then deleted (node and edge in
//!     one mutation): a shown edge implies its node is shown;
//!   * `hub` is rewritten with gist, notes and touches carrying the same number: a node
//!     read shows all three equal.
//! - WebSocket subscribers stay connected and receive, per node, exactly the sequence
//!   of acknowledged puts and deletes they should (other writers' changes at the user
//!   level, and those of the project they follow).

use crate::server::temp_home;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::wire::{self, Rng};
use kg_test_support::ws::{self, Socket};

const TIMEOUT: Duration = Duration::from_secs(30);
/// A client still running after this long is hung.
const DEADLINE: Duration = Duration::from_secs(150);

/// A client's work.
type Job = Box<dyn FnOnce(&Shared) -> Result<(), String> + Send>;

/// One acknowledged node mutation, for the disk and WebSocket checks.
#[derive(Debug, Clone)]
struct Ack {
    level: &'static str,
    /// The project root of a project-level write.
    project: Option<String>,
    id: String,
    /// `None`: deleted.
    gist: Option<String>,
    source: Option<String>,
}

#[derive(Default)]
struct Shared {
    acks: Mutex<Vec<Ack>>,
    /// Writers still running; readers stop when it reaches zero.
    writers: AtomicUsize,
    failures: Mutex<Vec<String>>,
    checks: AtomicUsize,
}

impl Shared {
    fn fail(&self, who: &str, message: String) {
        self.failures
            .lock()
            .expect("failures")
            .push(format!("{who}: {message}"));
    }
    fn ack(&self, ack: Ack) {
        self.acks.lock().expect("acks").push(ack);
    }
    fn check(&self) {
        self.checks.fetch_add(1, Ordering::Relaxed);
    }
}

fn call(port: u16, tool: &str, args: &Value) -> Result<(String, bool), String> {
    wire::mcp_call(port, tool, args, TIMEOUT)
}

fn ok_call(port: u16, tool: &str, args: &Value) -> Result<String, String> {
    match call(port, tool, args)? {
        (text, false) => Ok(text),
        (text, true) => Err(format!("{tool} {args}: {text}")),
    }
}

fn open_session(port: u16, cwd: &str) -> Result<String, String> {
    let text = ok_call(port, "kg_read", &json!({"cwd": cwd}))?;
    wire::session_of(&text).ok_or_else(|| format!("no session id in {}", wire::clip(&text)))
}

/// An agent: its own nodes at both levels, edges to files, deletes, and reads of its
/// own writes.
fn agent(port: u16, me: usize, project: &str, ops: usize, shared: &Shared) -> Result<(), String> {
    let sid = open_session(port, project)?;
    let mut rng = Rng::new(0xa6e7 + me as u64);
    let mut mine: HashMap<String, Option<String>> = HashMap::new();
    for k in 0..ops {
        let n = rng.next() % 10;
        let id = format!("agent{me}-{n}");
        let level: &'static str = if n & 1 == 0 { "user" } else { "project" };
        let project_of = (level == "project").then(|| project.to_string());
        match rng.next() % 10 {
            0..=4 => {
                let gist = format!("agent {me} write {k}");
                let text = ok_call(
                    port,
                    "kg_put_node",
                    &json!({"session_id": sid, "level": level, "id": id, "gist": gist}),
                )?;
                if !text.starts_with("Node '") {
                    return Err(text);
                }
                shared.ack(Ack {
                    level,
                    project: project_of,
                    id: id.clone(),
                    gist: Some(gist.clone()),
                    source: Some(sid.clone()),
                });
                mine.insert(id, Some(gist));
            }
            5 => {
                if mine.get(&id).cloned().flatten().is_none() {
                    continue;
                }
                let text = ok_call(
                    port,
                    "kg_put_edge",
                    &json!({"session_id": sid, "level": level, "from": id, "to": format!("src/m{me}.rs"), "rel": "touches"}),
                )?;
                if !text.starts_with("Edge ") {
                    return Err(text);
                }
            }
            6 => {
                if mine.get(&id).cloned().flatten().is_none() {
                    continue;
                }
                let text = ok_call(
                    port,
                    "kg_delete_node",
                    &json!({"session_id": sid, "id": id}),
                )?;
                if !text.ends_with(&format!("from {level} graph")) {
                    return Err(format!("delete of {level}/{id}: {text}"));
                }
                shared.ack(Ack {
                    level,
                    project: project_of,
                    id: id.clone(),
                    gist: None,
                    source: Some(sid.clone()),
                });
                mine.insert(id, None);
            }
            7..=8 => {
                let text = ok_call(
                    port,
                    "kg_read",
                    &json!({"session_id": sid, "ids": [id], "level": level}),
                )?;
                let ok = match mine.get(&id).cloned().flatten() {
                    Some(gist) => text.contains(&format!("gist: {gist}\n")),
                    None => text.contains(&format!("▸ {id}: NOT FOUND")),
                };
                if !ok {
                    return Err(format!(
                        "read of {level}/{id} does not show the last write {:?}: {}",
                        mine.get(&id),
                        wire::clip(&text)
                    ));
                }
                shared.check();
            }
            _ => {
                ok_call(
                    port,
                    "kg_search",
                    &json!({"session_id": sid, "query": format!("agent {me}")}),
                )?;
                ok_call(port, "kg_sync", &json!({"session_id": sid}))?;
            }
        }
    }
    Ok(())
}

/// Rewrites `pair-a` then `pair-b` (`pair N`) at one level, in order.
fn pair_writer(
    port: u16,
    level: &'static str,
    project: &str,
    rounds: usize,
    shared: &Shared,
) -> Result<(), String> {
    let sid = open_session(port, project)?;
    let project_of = (level == "project").then(|| project.to_string());
    for n in 1..=rounds {
        for id in ["pair-a", "pair-b"] {
            let gist = format!("pair {n}");
            ok_call(
                port,
                "kg_put_node",
                &json!({"session_id": sid, "level": level, "id": id, "gist": gist}),
            )?;
            shared.ack(Ack {
                level,
                project: project_of.clone(),
                id: id.into(),
                gist: Some(gist),
                source: Some(sid.clone()),
            });
        }
    }
    Ok(())
}

/// `tmp-N` put, linked to `hub`, deleted; `hub` rewritten with matching gist, notes
/// and touches. All at the user level.
fn churn_writer(port: u16, project: &str, rounds: usize, shared: &Shared) -> Result<(), String> {
    let sid = open_session(port, project)?;
    let ack = |id: &str, gist: Option<String>| {
        shared.ack(Ack {
            level: "user",
            project: None,
            id: id.into(),
            gist,
            source: Some(sid.clone()),
        });
    };
    for n in 1..=rounds {
        let hub = format!("hub {n}");
        let rewrite = json!({"session_id": sid, "level": "user", "id": "hub", "gist": hub,
                             "notes": [format!("hub note {n}")], "touches": [format!("hub/{n}")]});
        // Leaving the last round's note out is refused once (the stale-write guard
        // asks whether the removal is meant); sent again, it is.
        let (text, refused) = call(port, "kg_put_node", &rewrite)?;
        if refused {
            if !text.starts_with("NOT WRITTEN") {
                return Err(format!("hub {n}: {text}"));
            }
            ok_call(port, "kg_put_node", &rewrite)?;
        }
        ack("hub", Some(hub));
        let id = format!("tmp-{n}");
        let gist = format!("temporary {n}");
        ok_call(
            port,
            "kg_put_node",
            &json!({"session_id": sid, "level": "user", "id": id, "gist": gist}),
        )?;
        ack(&id, Some(gist));
        ok_call(
            port,
            "kg_put_edge",
            &json!({"session_id": sid, "level": "user", "from": id, "to": "hub", "rel": "feeds"}),
        )?;
        let text = ok_call(
            port,
            "kg_delete_node",
            &json!({"session_id": sid, "id": id}),
        )?;
        if !text.starts_with(&format!("Deleted node '{id}' and 1 connected edges")) {
            return Err(format!("delete of {id}: {text}"));
        }
        ack(&id, None);
    }
    Ok(())
}

/// The number in `pair N` / `hub N` style text.
fn number_after(text: &str, prefix: &str) -> Option<u64> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The invariants of a rendered level (the text between its header and `HEALTH:`).
fn check_rendered_level(section: &str) -> Result<(), String> {
    let line_of = |id: &str| {
        section
            .lines()
            .find(|l| l.starts_with(&format!("  {id}: ")))
            .map(str::to_string)
    };
    if let (Some(a), Some(b)) = (line_of("pair-a"), line_of("pair-b")) {
        let (a, b) = (
            number_after(&a, "pair ").unwrap_or(0),
            number_after(&b, "pair ").unwrap_or(0),
        );
        if !(b <= a && a <= b + 1) {
            return Err(format!("torn pair: pair-a at {a}, pair-b at {b}"));
        }
    }
    for line in section.lines() {
        if let Some(from) = line.strip_prefix("    ← feeds ← ")
            && line_of(from).is_none()
        {
            return Err(format!(
                "edge {from} --feeds--> hub shown without node {from}"
            ));
        }
    }
    Ok(())
}

/// A level's section of a full read.
fn level_section<'t>(text: &'t str, header: &str) -> Option<&'t str> {
    let start = text.find(header)?;
    let rest = &text[start..];
    let end = rest.find("\nHEALTH:").unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Checks the invariants in every kind of read, until the writers are done.
fn reader(port: u16, me: usize, project: &str, shared: &Shared) -> Result<(), String> {
    let sid = open_session(port, project)?;
    let mut k = 0usize;
    while shared.writers.load(Ordering::SeqCst) > 0 {
        k += 1;
        match k % 3 {
            0 => {
                let text = ok_call(port, "kg_read", &json!({"session_id": sid}))?;
                for header in ["=== USER GRAPH", "=== PROJECT GRAPH"] {
                    let section = level_section(&text, header)
                        .ok_or_else(|| format!("no {header} in {}", wire::clip(&text)))?;
                    check_rendered_level(section)?;
                }
            }
            1 => {
                for level in ["user", "project"] {
                    let text = ok_call(
                        port,
                        "kg_read",
                        &json!({"session_id": sid, "ids": ["pair-a", "pair-b"], "level": level}),
                    )?;
                    let a = text
                        .split("▸ pair-b")
                        .next()
                        .and_then(|t| number_after(t, "gist: pair "));
                    let b = text
                        .split("▸ pair-b")
                        .nth(1)
                        .and_then(|t| number_after(t, "gist: pair "));
                    // Each id is read on its own (a batch is not one snapshot), so
                    // only this order holds: pair-a, read first, is never ahead of
                    // the pair-b read after it by more than the one write between.
                    if let (Some(a), Some(b)) = (a, b)
                        && a > b + 1
                    {
                        return Err(format!(
                            "reader {me}: batched read of {level} pair shows a at {a}, b at {b}"
                        ));
                    }
                }
            }
            _ => {
                let text = ok_call(
                    port,
                    "kg_read",
                    &json!({"session_id": sid, "ids": ["hub"], "level": "user"}),
                )?;
                if !text.contains("NOT FOUND") {
                    let g = number_after(&text, "gist: hub ");
                    let n = number_after(&text, "- hub note ");
                    let t = number_after(&text, "touches: hub/");
                    if !(g == n && n == t) {
                        return Err(format!(
                            "torn node read of hub: gist {g:?}, notes {n:?}, touches {t:?}"
                        ));
                    }
                }
            }
        }
        shared.check();
    }
    Ok(())
}

/// The graph view: its own project nodes and edges over REST, node reads, and the
/// `reload=true` refresh, checking the snapshot invariants each time.
fn editor(port: u16, me: usize, project: &str, ops: usize, shared: &Shared) -> Result<(), String> {
    let q = format!("project_path={}", kg_client::encode(project));
    let req = |method: &str, path: &str, body: Option<&Value>| -> Result<Value, String> {
        match wire::json_request(port, method, path, body, TIMEOUT)? {
            (200, v) => Ok(v),
            (status, v) => Err(format!("{method} {path}: {status} {v}")),
        }
    };
    let mut rng = Rng::new(0xed17 + me as u64);
    let mut mine: HashMap<String, Option<String>> = HashMap::new();
    for k in 0..ops {
        let n = rng.next() % 8;
        let id = format!("view{me}-{n}");
        match rng.next() % 8 {
            0..=2 => {
                let gist = format!("view {me} edit {k}");
                req(
                    "POST",
                    "/api/nodes",
                    Some(
                        &json!({"level": "project", "id": id, "gist": gist, "project_path": project}),
                    ),
                )?;
                shared.ack(Ack {
                    level: "project",
                    project: Some(project.to_string()),
                    id: id.clone(),
                    gist: Some(gist.clone()),
                    source: None,
                });
                mine.insert(id, Some(gist));
            }
            3 => {
                let other = format!("view{me}-{}", rng.next() % 8);
                let both = mine.get(&id).cloned().flatten().is_some()
                    && mine.get(&other).cloned().flatten().is_some();
                if !both || other == id {
                    continue;
                }
                req(
                    "POST",
                    "/api/edges",
                    Some(
                        &json!({"level": "project", "from": id, "to": other, "rel": "relates-to", "project_path": project}),
                    ),
                )?;
            }
            4 => {
                if mine.get(&id).cloned().flatten().is_none() {
                    continue;
                }
                req("DELETE", &format!("/api/nodes/project/{id}?{q}"), None)?;
                shared.ack(Ack {
                    level: "project",
                    project: Some(project.to_string()),
                    id: id.clone(),
                    gist: None,
                    source: None,
                });
                mine.insert(id, None);
            }
            5 => {
                let path = format!("/api/nodes/project/{id}?{q}");
                let answer = wire::json_request(port, "GET", &path, None, TIMEOUT)?;
                let want = mine.get(&id).cloned().flatten();
                let ok = match (&answer, &want) {
                    ((200, v), Some(g)) => v["node"]["gist"] == g.as_str(),
                    ((404, _), None) => true,
                    _ => false,
                };
                if !ok {
                    return Err(format!("read of {id}: {answer:?}, wanted {want:?}"));
                }
                shared.check();
            }
            _ => {
                let reload = if k % 2 == 0 { "&reload=true" } else { "" };
                let v = req("GET", &format!("/api/graph/read?{q}{reload}"), None)?;
                for level in ["user", "project"] {
                    check_snapshot(&v[level]).map_err(|e| format!("{level}: {e}"))?;
                }
                shared.check();
            }
        }
    }
    Ok(())
}

/// The invariants in a REST graph snapshot.
fn check_snapshot(graph: &Value) -> Result<(), String> {
    let nodes: HashMap<&str, &str> = graph["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| Some((n["id"].as_str()?, n["gist"].as_str().unwrap_or(""))))
        .collect();
    if let (Some(a), Some(b)) = (nodes.get("pair-a"), nodes.get("pair-b")) {
        let (a, b) = (
            number_after(a, "pair ").unwrap_or(0),
            number_after(b, "pair ").unwrap_or(0),
        );
        if !(b <= a && a <= b + 1) {
            return Err(format!("torn pair in a snapshot: a {a}, b {b}"));
        }
    }
    for edge in graph["edges"].as_array().into_iter().flatten() {
        if edge["rel"] == "feeds" {
            let from = edge["from"].as_str().unwrap_or("");
            if !nodes.contains_key(from) {
                return Err(format!("snapshot has edge {from}->hub without its node"));
            }
        }
    }
    Ok(())
}

/// A WebSocket subscriber: its session, the project it follows, what it received.
struct Subscriber {
    name: String,
    sid: String,
    follows: Option<String>,
    received: Vec<Value>,
}

/// Subscribe (following `project`, if any); returns the socket and the session id of
/// its hello.
async fn subscribe(port: u16, project: Option<&str>) -> Result<(Socket, String), String> {
    let query = project
        .map(|p| format!("?project_path={}", kg_client::encode(p)))
        .unwrap_or_default();
    let mut ws = ws::connect(port, &query, &[], TIMEOUT).await?;
    let hello = ws::next_json(&mut ws, TIMEOUT)
        .await
        .map_err(|e| format!("no hello: {e}"))?;
    let sid = hello["session_id"].as_str().ok_or("no session in hello")?;
    Ok((ws, sid.to_string()))
}

/// Receive until `stop`, then prove the connection is alive with a ping.
async fn listen(mut ws: Socket, stop: Arc<AtomicBool>) -> Result<Vec<Value>, String> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let mut got = Vec::new();
    loop {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        match tokio::time::timeout(Duration::from_millis(100), ws.next()).await {
            Err(_) => continue,
            Ok(None) => return Err("the server closed the subscription".into()),
            Ok(Some(Err(e))) => return Err(format!("subscription failed: {e}")),
            Ok(Some(Ok(Message::Text(t)))) => {
                got.push(serde_json::from_str(t.as_str()).map_err(|e| e.to_string())?);
            }
            Ok(Some(Ok(_))) => {}
        }
    }
    ws.send(Message::Text("ping".into()))
        .await
        .map_err(|e| format!("ping: {e}"))?;
    loop {
        let msg = tokio::time::timeout(TIMEOUT, ws.next())
            .await
            .map_err(|_| "no pong".to_string())?
            .ok_or("closed before pong")?
            .map_err(|e| e.to_string())?;
        if let Message::Text(t) = msg {
            let v: Value = serde_json::from_str(t.as_str()).map_err(|e| e.to_string())?;
            if v["type"] == "pong" {
                return Ok(got);
            }
            got.push(v);
        }
    }
}

/// Per (scope, node id), puts (the gist) and deletes (`None`) in order.
type Sequences = HashMap<(String, String), Vec<Option<String>>>;

/// Per node, the sequence of puts (gist) and deletes (`None`) a subscriber got.
fn received_sequences(sub: &Subscriber) -> Result<Sequences, String> {
    let mut seqs: Sequences = HashMap::new();
    for m in &sub.received {
        let scope = |m: &Value| -> String {
            match m["level"].as_str() {
                Some("project") => format!("project:{}", m["project_path"].as_str().unwrap_or("")),
                _ => "user".to_string(),
            }
        };
        match m["type"].as_str() {
            Some("node_updated") => {
                let id = m["node"]["id"].as_str().unwrap_or("").to_string();
                let gist = m["node"]["gist"].as_str().map(str::to_string);
                seqs.entry((scope(m), id)).or_default().push(gist);
            }
            Some("node_deleted") => {
                let id = m["node_id"].as_str().unwrap_or("").to_string();
                seqs.entry((scope(m), id)).or_default().push(None);
            }
            Some("resync") => return Err(format!("{} lagged: {m}", sub.name)),
            _ => {}
        }
    }
    Ok(seqs)
}

#[test]
fn twenty_one_clients_at_once_keep_every_invariant() {
    let scale = wire::env_usize("KG_CONCURRENCY_SCALE", 1).max(1);
    let (_dir, home) = temp_home();
    let alpha = home.join("alpha");
    let beta = home.join("beta");
    std::fs::create_dir_all(&alpha).expect("alpha");
    std::fs::create_dir_all(&beta).expect("beta");
    let (alpha, beta) = (
        alpha.to_string_lossy().into_owned(),
        beta.to_string_lossy().into_owned(),
    );
    let storage = home.join("storage");
    let mut server = crate::server::serve(&home, &storage, &[("KG_SAVE_INTERVAL", "1")]);
    let port = server.port;
    let started = Instant::now();

    // Subscribers first, so they hear everything the writers do.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let mut subscribers = Vec::new();
    let mut listeners = Vec::new();
    for (name, follows) in [
        ("ws-user", None),
        ("ws-alpha", Some(alpha.clone())),
        ("ws-beta", Some(beta.clone())),
        ("ws-alpha-2", Some(alpha.clone())),
    ] {
        let (ws, sid) = runtime
            .block_on(subscribe(port, follows.as_deref()))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        listeners.push(runtime.spawn(listen(ws, stop.clone())));
        subscribers.push(Subscriber {
            name: name.into(),
            sid,
            follows,
            received: Vec::new(),
        });
    }

    let shared = Arc::new(Shared::default());
    let mut clients: Vec<(String, std::thread::JoinHandle<Result<(), String>>)> = Vec::new();
    let mut spawn = |name: String, writer: bool, f: Job| {
        let shared = shared.clone();
        if writer {
            shared.writers.fetch_add(1, Ordering::SeqCst);
        }
        let handle = std::thread::spawn(move || {
            let result = f(&shared);
            if writer {
                shared.writers.fetch_sub(1, Ordering::SeqCst);
            }
            if let Err(e) = &result {
                shared.fail("client", e.clone());
            }
            result
        });
        clients.push((name, handle));
    };
    for me in 0..8 {
        let project = if me < 4 { alpha.clone() } else { beta.clone() };
        spawn(
            format!("agent {me}"),
            true,
            Box::new(move |s| agent(port, me, &project, 500 * scale, s)),
        );
    }
    let a = alpha.clone();
    spawn(
        "pair writer (user)".into(),
        true,
        Box::new(move |s| pair_writer(port, "user", &a, 300 * scale, s)),
    );
    let a = alpha.clone();
    spawn(
        "pair writer (alpha)".into(),
        true,
        Box::new(move |s| pair_writer(port, "project", &a, 300 * scale, s)),
    );
    let a = alpha.clone();
    spawn(
        "churn writer".into(),
        true,
        Box::new(move |s| churn_writer(port, &a, 200 * scale, s)),
    );
    for me in 0..4 {
        let project = if me % 2 == 0 {
            alpha.clone()
        } else {
            beta.clone()
        };
        spawn(
            format!("editor {me}"),
            true,
            Box::new(move |s| editor(port, me, &project, 400 * scale, s)),
        );
    }
    for me in 0..2 {
        let project = alpha.clone();
        spawn(
            format!("reader {me}"),
            false,
            Box::new(move |s| reader(port, me, &project, s)),
        );
    }

    // No deadlock: every client ends before its deadline.
    let deadline = Instant::now() + DEADLINE * scale as u32;
    for (name, handle) in clients {
        while !handle.is_finished() {
            if Instant::now() > deadline {
                shared.writers.store(0, Ordering::SeqCst);
                panic!(
                    "{name} hung (deadlock or lost request)\nserver log:\n{}",
                    server.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Err(e) = handle.join().expect("client thread") {
            panic!("{name}: {e}\nserver log:\n{}", server.log_tail());
        }
    }
    let failures = shared.failures.lock().expect("failures").clone();
    assert!(failures.is_empty(), "{failures:#?}");
    let acks = shared.acks.lock().expect("acks").clone();

    // What each subscriber should have received, per node, in order.
    let expected_for = |sub: &Subscriber| {
        let mut seqs: Sequences = HashMap::new();
        for a in &acks {
            if a.source.as_deref() == Some(sub.sid.as_str()) {
                continue;
            }
            let scope = match (&a.project, a.level) {
                (Some(p), "project") => {
                    if sub.follows.as_deref() != Some(p.as_str()) {
                        continue;
                    }
                    format!("project:{p}")
                }
                _ => "user".to_string(),
            };
            seqs.entry((scope, a.id.clone()))
                .or_default()
                .push(a.gist.clone());
        }
        seqs
    };
    // Let the last broadcasts arrive, then stop the subscribers.
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let mut delivered = 0;
    for (sub, listener) in subscribers.iter_mut().zip(listeners) {
        sub.received = runtime
            .block_on(listener)
            .expect("listener task")
            .unwrap_or_else(|e| panic!("{}: {e}", sub.name));
        let got = received_sequences(sub).unwrap_or_else(|e| panic!("{e}"));
        let want = expected_for(sub);
        for (key, seq) in &want {
            let have = got.get(key).cloned().unwrap_or_default();
            assert_eq!(
                &have, seq,
                "{} received for {key:?} not exactly the acknowledged sequence",
                sub.name
            );
            delivered += seq.len();
        }
        for key in got.keys() {
            assert!(
                want.contains_key(key),
                "{} received {key:?}, which it should not hear",
                sub.name
            );
        }
    }

    // No lost update: after a graceful stop the files hold every last acknowledged write.
    assert!(server.stop().success(), "graceful shutdown");
    let read = |path: std::path::PathBuf| -> kg_core::Graph {
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        kg_core::parse_graph(&bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .graph
    };
    let user = read(storage.join("user.json"));
    let graphs: HashMap<String, kg_core::Graph> = [(&alpha, "alpha"), (&beta, "beta")]
        .into_iter()
        .map(|(root, slug)| {
            (
                root.clone(),
                read(storage.join(format!("projects/{slug}/graph.json"))),
            )
        })
        .collect();
    let mut last: HashMap<(Option<String>, String), Option<String>> = HashMap::new();
    for a in &acks {
        let scope = if a.level == "project" {
            a.project.clone()
        } else {
            None
        };
        last.insert((scope, a.id.clone()), a.gist.clone());
    }
    for ((scope, id), want) in &last {
        let graph = match scope {
            Some(p) => &graphs[p],
            None => &user,
        };
        let got = graph.nodes.get(id).map(|n| n.gist().to_string());
        assert_eq!(&got, want, "{scope:?}/{id} on disk");
    }
    eprintln!(
        "concurrency: 21 clients (8 agents, 3 invariant writers, 4 editors, 2 readers, 4 subscribers) \
         in {:.1?}: {} acknowledged node writes, {} last values checked on disk, {} invariant/read checks, \
         {delivered} broadcasts matched",
        started.elapsed(),
        acks.len(),
        last.len(),
        shared.checks.load(Ordering::Relaxed),
    );
}
