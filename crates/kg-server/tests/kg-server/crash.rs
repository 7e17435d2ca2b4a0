//! Crash consistency of the whole server: `kg-memory serve` on a real disk, under a
//! mixed write load from several clients (MCP puts, edges, deletes and progress; REST
//! puts, edges, deletes and progress), killed with SIGKILL at random moments and
//! restarted, again and again.
//!
//! After every kill: every file parses; every acknowledged write is on disk with its
//! acknowledged value (a write in flight at the kill may or may not be there); each
//! `.prev` is a valid earlier state of its file; leftover temp files do not stop the
//! next start; every acknowledged session survives and can be continued; and the
//! restarted server shows exactly what the disk holds.
//!
//! Bounded here (`KG_CRASH_KILLS`, default 50); `scripts/reliability.sh` runs 500.
//! `KG_CRASH_SEED` replays a run.

use crate::server::serve;
use crate::wire::{self, Rng};
use kg_core::parse_graph;
use kg_core::{EdgeKey, Graph};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DEFAULT_KILLS: usize = 50;
/// Any single request taking longer than this is a hang, and fails the test.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// What a key of the model holds on disk.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Node {
        level: String,
        id: String,
    },
    Edge {
        level: String,
        key: (String, String, String),
    },
    Progress {
        level: String,
        task: String,
    },
}

/// The value of a key: `None` = absent (deleted, or never written).
type Val = Option<String>;

/// One operation's effect on the model.
#[derive(Debug, Clone)]
struct Effect {
    /// Keys and the value each holds once the operation is applied.
    set: Vec<(Key, Val)>,
}

/// What one client saw: acknowledged effects in order, and the one in flight when the
/// server died (it may or may not have landed).
#[derive(Debug, Default)]
struct ClientLog {
    acked: Vec<Effect>,
    in_flight: Option<Effect>,
    sessions: Vec<String>,
    ops: usize,
    /// A failure that is not explained by the kill (a wrong answer while alive).
    failure: Option<String>,
}

/// The model of the storage: what acknowledged writes left there.
#[derive(Debug, Default)]
struct Model {
    values: BTreeMap<Key, Val>,
}

impl Model {
    fn value(&self, key: &Key) -> Val {
        self.values.get(key).cloned().flatten()
    }

    fn apply(&mut self, effect: &Effect) {
        for (k, v) in &effect.set {
            self.values.insert(k.clone(), v.clone());
        }
    }

    fn present_nodes(&self, owner: &str) -> Vec<(String, String)> {
        self.values
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Key::Node { level, id }, Some(_)) if id.starts_with(owner) => {
                    Some((level.clone(), id.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn present_edges(&self, owner: &str) -> Vec<(String, (String, String, String))> {
        self.values
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Key::Edge { level, key }, Some(_)) if key.0.starts_with(owner) => {
                    Some((level.clone(), key.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Edges of the model touching a node (a node delete takes them along).
    fn edges_touching(&self, level: &str, id: &str) -> Vec<Key> {
        self.values
            .iter()
            .filter_map(|(k, v)| match (k, v) {
                (Key::Edge { level: l, key }, Some(_))
                    if l == level && (key.0 == id || key.1 == id) =>
                {
                    Some(k.clone())
                }
                _ => None,
            })
            .collect()
    }
}

/// The level of a client's node: fixed per id, so a delete (user graph first, then
/// project) always finds it where it was put.
fn level_of(index: u64) -> &'static str {
    if index & 1 == 0 { "user" } else { "project" }
}

fn node_key(level: &str, id: &str) -> Key {
    Key::Node {
        level: level.into(),
        id: id.into(),
    }
}

fn edge_key(level: &str, from: &str, to: &str, rel: &str) -> Key {
    Key::Edge {
        level: level.into(),
        key: (from.into(), to.into(), rel.into()),
    }
}

/// Shared by the clients of one round.
struct Round {
    port: u16,
    project: String,
    /// Set when the server is being killed: errors from then on are expected.
    dying: AtomicBool,
}

/// An MCP agent: its own node ids, user and project level, edges to files, deletes,
/// progress, and read-your-writes checks.
fn mcp_client(
    round: &Round,
    me: usize,
    sid: Option<String>,
    model: &Model,
    mut rng: Rng,
) -> ClientLog {
    let mut log = ClientLog::default();
    let port = round.port;
    let call = |tool: &str, args: &Value| wire::mcp_call(port, tool, args, REQUEST_TIMEOUT);
    // Continue the session of an earlier round when there is one; it must have
    // survived the kill (a fresh one is registered otherwise).
    let sid = match sid {
        Some(sid) => match call("kg_read", &json!({"session_id": sid})) {
            Ok((text, false)) if text.contains(&format!("\n\nSession: {sid}")) => sid,
            Ok((text, _)) => {
                log.failure = Some(format!(
                    "session {sid} did not survive the kill: {}",
                    wire::clip(&text)
                ));
                return log;
            }
            Err(_) => return log,
        },
        None => match call("kg_read", &json!({"cwd": round.project})) {
            Ok((text, false)) => match wire::session_of(&text) {
                Some(sid) => {
                    log.sessions.push(sid.clone());
                    sid
                }
                None => {
                    log.failure = Some(format!("no session in {}", wire::clip(&text)));
                    return log;
                }
            },
            Ok((text, true)) => {
                log.failure = Some(format!("kg_read(cwd) failed: {text}"));
                return log;
            }
            Err(_) => return log,
        },
    };
    if log.sessions.is_empty() {
        log.sessions.push(sid.clone());
    }
    let owner = format!("m{me}-");
    // The client's own view of its keys, updated as acknowledgements arrive.
    let mut mine: Model = Model::default();
    for (k, v) in &model.values {
        let owned = match k {
            Key::Node { id, .. } => id.starts_with(&owner),
            Key::Edge { key, .. } => key.0.starts_with(&owner),
            Key::Progress { task, .. } => task == &format!("task-m{me}"),
        };
        if owned {
            mine.values.insert(k.clone(), v.clone());
        }
    }
    loop {
        let r = rng.next();
        let n = rng.next() % 12;
        let id = format!("{owner}{n}");
        let level = level_of(n);
        let (tool, args, effect, check): (&str, Value, Effect, Option<String>) = match r % 20 {
            0..=8 => {
                let gist = format!("m{me} put {} of node {n}", log.ops);
                (
                    "kg_put_node",
                    // The same notes each time: replacing them would be refused
                    // once by the stale-write guard, which is not what this tests.
                    json!({"session_id": sid, "level": level, "id": id, "gist": gist,
                           "notes": [format!("a note of m{me}")]}),
                    Effect {
                        set: vec![(node_key(level, &id), Some(gist))],
                    },
                    Some("Node '".into()),
                )
            }
            9..=11 => {
                let present = mine.present_nodes(&owner);
                if present.is_empty() {
                    continue;
                }
                let (level, from) = &present[(rng.next() as usize) % present.len()];
                let to = format!("src/file{}.rs", rng.next() % 4);
                (
                    "kg_put_edge",
                    json!({"session_id": sid, "level": level, "from": from, "to": to, "rel": "touches"}),
                    Effect {
                        set: vec![(edge_key(level, from, &to, "touches"), Some(String::new()))],
                    },
                    Some("Edge ".into()),
                )
            }
            12 => {
                let present = mine.present_edges(&owner);
                if present.is_empty() {
                    continue;
                }
                let (level, (from, to, rel)) = &present[(rng.next() as usize) % present.len()];
                (
                    "kg_delete_edge",
                    json!({"session_id": sid, "from": from, "to": to, "rel": rel}),
                    Effect {
                        set: vec![(edge_key(level, from, to, rel), None)],
                    },
                    Some("Edge deleted".into()),
                )
            }
            13 => {
                if mine.value(&node_key(level, &id)).is_none() {
                    continue;
                }
                let mut set = vec![(node_key(level, &id), None)];
                set.extend(
                    mine.edges_touching(level, &id)
                        .into_iter()
                        .map(|k| (k, None)),
                );
                (
                    "kg_delete_node",
                    json!({"session_id": sid, "id": id}),
                    Effect { set },
                    Some("Deleted node".into()),
                )
            }
            14..=15 => {
                let state = json!({"step": log.ops, "client": me});
                let plevel = if r & 1 == 0 { "user" } else { "project" };
                (
                    "kg_progress",
                    json!({"session_id": sid, "task_id": format!("task-m{me}"), "state": state, "level": plevel}),
                    Effect {
                        set: vec![(
                            Key::Progress {
                                level: plevel.into(),
                                task: format!("task-m{me}"),
                            },
                            Some(state.to_string()),
                        )],
                    },
                    Some("Progress saved".into()),
                )
            }
            _ => {
                // Read your writes: the server shows what it acknowledged.
                let expected = mine.value(&node_key(level, &id));
                match call(
                    "kg_read",
                    &json!({"session_id": sid, "ids": [id], "level": level}),
                ) {
                    Ok((text, _)) => {
                        let ok = match &expected {
                            Some(gist) => text.contains(&format!("gist: {gist}\n")),
                            None => text.contains(": NOT FOUND"),
                        };
                        if !ok && !round.dying.load(Ordering::SeqCst) {
                            log.failure = Some(format!(
                                "read of {level}/{id} expected {expected:?}, got {}",
                                wire::clip(&text)
                            ));
                            return log;
                        }
                    }
                    Err(_) => return log,
                }
                log.ops += 1;
                continue;
            }
        };
        log.in_flight = Some(effect.clone());
        match call(tool, &args) {
            Ok((text, is_error)) => {
                let good = !is_error && check.as_deref().is_none_or(|c| text.starts_with(c));
                if !good {
                    if round.dying.load(Ordering::SeqCst) {
                        return log; // an answer cut short by the kill
                    }
                    log.failure = Some(format!("{tool} {args}: {text}"));
                    return log;
                }
                log.in_flight = None;
                mine.apply(&effect);
                log.acked.push(effect);
                log.ops += 1;
            }
            Err(_) => return log, // the server died: the write is in flight
        }
    }
}

/// The graph view's REST calls: project-level nodes and edges by `project_path`,
/// deletes, user-level progress, and a registered session each round.
fn rest_client(round: &Round, register: bool, model: &Model, mut rng: Rng) -> ClientLog {
    let mut log = ClientLog::default();
    let port = round.port;
    let q = format!("project_path={}", kg_client::encode(&round.project));
    let req = |method: &str, path: &str, body: Option<&Value>| {
        wire::json_request(port, method, path, body, REQUEST_TIMEOUT)
    };
    let registered = if register {
        req("POST", &format!("/api/sessions/register?{q}"), None)
    } else {
        Ok((200, json!({"session_id": null})))
    };
    match registered {
        Ok((200, v)) => match v["session_id"].as_str() {
            Some(sid) => log.sessions.push(sid.to_string()),
            None if !register => {}
            None => {
                log.failure = Some(format!("register answered {v}"));
                return log;
            }
        },
        Ok((status, v)) => {
            if !round.dying.load(Ordering::SeqCst) {
                log.failure = Some(format!("register answered {status} {v}"));
            }
            return log;
        }
        Err(_) => return log,
    }
    let mut mine = Model::default();
    for (k, v) in &model.values {
        let owned = match k {
            Key::Node { id, .. } => id.starts_with("r-"),
            Key::Edge { key, .. } => key.0.starts_with("r-"),
            Key::Progress { task, .. } => task == "task-rest",
        };
        if owned {
            mine.values.insert(k.clone(), v.clone());
        }
    }
    loop {
        let r = rng.next();
        let n = rng.next() % 10;
        let id = format!("r-{n}");
        let (method, path, body, effect) = match r % 10 {
            0..=4 => {
                let gist = format!("rest put {} of node {n}", log.ops);
                (
                    "POST",
                    "/api/nodes".to_string(),
                    Some(
                        json!({"level": "project", "id": id, "gist": gist, "project_path": round.project}),
                    ),
                    Effect {
                        set: vec![(node_key("project", &id), Some(gist))],
                    },
                )
            }
            5..=6 => {
                let present = mine.present_nodes("r-");
                if present.len() < 2 {
                    continue;
                }
                let from = &present[(rng.next() as usize) % present.len()].1;
                let to = &present[(rng.next() as usize) % present.len()].1;
                if from == to {
                    continue;
                }
                (
                    "POST",
                    "/api/edges".to_string(),
                    Some(
                        json!({"level": "project", "from": from, "to": to, "rel": "relates-to", "project_path": round.project}),
                    ),
                    Effect {
                        set: vec![(
                            edge_key("project", from, to, "relates-to"),
                            Some(String::new()),
                        )],
                    },
                )
            }
            7 => {
                if mine.value(&node_key("project", &id)).is_none() {
                    continue;
                }
                let mut set = vec![(node_key("project", &id), None)];
                set.extend(
                    mine.edges_touching("project", &id)
                        .into_iter()
                        .map(|k| (k, None)),
                );
                (
                    "DELETE",
                    format!("/api/nodes/project/{id}?{q}"),
                    None,
                    Effect { set },
                )
            }
            _ => {
                let state = json!({"rest_step": log.ops});
                (
                    "POST",
                    "/api/progress".to_string(),
                    Some(json!({"task_id": "task-rest", "state": state, "level": "user"})),
                    Effect {
                        set: vec![(
                            Key::Progress {
                                level: "user".into(),
                                task: "task-rest".into(),
                            },
                            Some(state.to_string()),
                        )],
                    },
                )
            }
        };
        log.in_flight = Some(effect.clone());
        match req(method, &path, body.as_ref()) {
            Ok((200, _)) => {
                log.in_flight = None;
                mine.apply(&effect);
                log.acked.push(effect);
                log.ops += 1;
            }
            Ok((status, v)) => {
                // While the server is dying an answer may be cut short (in flight).
                if !round.dying.load(Ordering::SeqCst) {
                    log.failure = Some(format!("{method} {path}: {status} {v}"));
                }
                return log;
            }
            Err(_) => return log,
        }
    }
}

/// What a graph file holds, as the model sees it.
fn observed(graph: &Graph, level: &str, key: &Key) -> Option<Val> {
    match key {
        Key::Node { level: l, id } if l == level => {
            Some(graph.nodes.get(id).map(|n| n.gist().to_string()))
        }
        Key::Edge { level: l, key } if l == level => Some(
            graph
                .edges
                .contains_key(&EdgeKey::new(&key.0, &key.1, &key.2))
                .then(String::new),
        ),
        Key::Progress { level: l, task } if l == level => {
            Some(graph.progress.get(task).map(Value::to_string))
        }
        _ => None,
    }
}

fn load_graph(path: &Path) -> Result<Graph, String> {
    match std::fs::read(path) {
        Ok(bytes) => parse_graph(&bytes)
            .map(|f| f.graph)
            .map_err(|e| format!("{} does not parse: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Graph::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// `.prev` is an earlier state of `current`: versions never go backwards, none
/// disappears, and a node at the same version has the same gist.
fn check_prev(prev: &Graph, current: &Graph, what: &str) -> Result<(), String> {
    for (key, pv) in &prev.versions {
        let Some(cv) = current.versions.get(key) else {
            return Err(format!(
                "{what}: version {key} is in .prev but not in the file"
            ));
        };
        if pv.v() > cv.v() {
            return Err(format!(
                "{what}: .prev has {key} at v{} but the file at v{}",
                pv.v(),
                cv.v()
            ));
        }
        if pv.v() == cv.v()
            && let Some(id) = key.strip_prefix("node:")
            && let (Some(a), Some(b)) = (prev.nodes.get(id), current.nodes.get(id))
            && a.gist() != b.gist()
        {
            return Err(format!(
                "{what}: node {id} at v{} differs between .prev and the file",
                pv.v()
            ));
        }
    }
    Ok(())
}

/// Every file of the storage root parses; returns the names of temp leftovers.
fn check_files(storage: &Path) -> Result<Vec<String>, String> {
    let mut leftovers = Vec::new();
    let mut stack = vec![storage.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if name.ends_with(".tmp") || name.ends_with(".prev-tmp") {
                leftovers.push(name);
            } else if name.contains(".corrupt-") {
                return Err(format!("a file was quarantined: {}", path.display()));
            } else if name == "graph.json" || name == "user.json" || name.ends_with(".prev") {
                parse_graph(&bytes)
                    .map_err(|e| format!("{} does not parse: {e}", path.display()))?;
            } else if name.ends_with(".json") {
                serde_json::from_slice::<Value>(&bytes)
                    .map_err(|e| format!("{} does not parse: {e}", path.display()))?;
            }
        }
    }
    Ok(leftovers)
}

/// A storage root on the real disk (never tmpfs), so fsync and rename are real.
pub(crate) fn disk_home(prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temporary home under the target folder");
    let path = std::fs::canonicalize(dir.path()).expect("canonical");
    if wire::is_tmpfs(&path) {
        eprintln!(
            "WARNING: {} is on tmpfs; fsync is not exercised by this run",
            path.display()
        );
    }
    (dir, path)
}

#[test]
fn sigkill_under_load_never_loses_an_acknowledged_write() {
    let kills = wire::env_usize("KG_CRASH_KILLS", DEFAULT_KILLS);
    let seed = wire::env_u64("KG_CRASH_SEED", 0x5eed_c4a5_0000_0001);
    let (_dir, home) = disk_home("kg-crash-");
    let storage = home.join("storage");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let project = project.to_string_lossy().into_owned();
    let mut rng = Rng::new(seed);
    let mut model = Model::default();
    let mut sessions: Vec<String> = Vec::new();
    let mut client_sessions: HashMap<usize, String> = HashMap::new();
    let (mut total_ops, mut checked, mut in_flight_landed) = (0, 0, 0);
    let mut leftovers_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut terms = 0;
    let started = Instant::now();
    const MCP_CLIENTS: usize = 3;
    for round_no in 0..kills {
        let context = format!("seed {seed:#x}, round {round_no}");
        let mut server = serve(&home, &storage, &[("KG_SAVE_INTERVAL", "1")]);
        let round = Arc::new(Round {
            port: server.port,
            project: project.clone(),
            dying: AtomicBool::new(false),
        });
        let shared_model = Arc::new(Mutex::new(std::mem::take(&mut model)));
        // One agent registers a fresh session each round; the others continue theirs.
        let fresh = round_no % MCP_CLIENTS;
        let mut handles = Vec::new();
        for me in 0..MCP_CLIENTS {
            let round = round.clone();
            let sid = if me == fresh {
                None
            } else {
                client_sessions.get(&me).cloned()
            };
            let snapshot = Model {
                values: shared_model.lock().expect("model").values.clone(),
            };
            let client_rng = Rng::new(rng.next());
            handles.push(std::thread::spawn(move || {
                mcp_client(&round, me, sid, &snapshot, client_rng)
            }));
        }
        {
            let round = round.clone();
            let snapshot = Model {
                values: shared_model.lock().expect("model").values.clone(),
            };
            let client_rng = Rng::new(rng.next());
            // Sparingly, so a long run stays under the session cap.
            let register = round_no % 4 == 0;
            handles.push(std::thread::spawn(move || {
                rest_client(&round, register, &snapshot, client_rng)
            }));
        }
        model = Arc::try_unwrap(shared_model)
            .expect("model")
            .into_inner()
            .expect("model");
        // The kill lands anywhere: right after the start, mid-load, in a tick, or while
        // a graceful shutdown is flushing (SIGTERM, then SIGKILL shortly after).
        // (Some rounds outlive the first maintenance tick, one second in.)
        let delay = match rng.next() % 10 {
            0 => Duration::from_millis(rng.next() % 20),
            1 => Duration::from_millis(1_000 + rng.next() % 400),
            _ => Duration::from_millis(20 + rng.next() % 600),
        };
        std::thread::sleep(delay);
        round.dying.store(true, Ordering::SeqCst);
        if rng.next() & 7 == 0 {
            server.signal(libc::SIGTERM);
            std::thread::sleep(Duration::from_micros(rng.next() % 20_000));
            terms += 1;
        }
        server.kill();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut logs = Vec::new();
        for h in handles {
            while !h.is_finished() {
                assert!(
                    Instant::now() < deadline,
                    "{context}: a client hung after the kill"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            logs.push(h.join().expect("client thread"));
        }
        for (i, log) in logs.iter().enumerate() {
            if let Some(f) = &log.failure {
                panic!(
                    "{context}: client {i}: {f}\nserver log:\n{}",
                    server.log_tail()
                );
            }
        }
        // Apply what was acknowledged; remember what was in flight.
        let mut in_flight: Vec<Effect> = Vec::new();
        for (i, log) in logs.into_iter().enumerate() {
            total_ops += log.ops;
            for e in &log.acked {
                model.apply(e);
            }
            in_flight.extend(log.in_flight);
            if i < MCP_CLIENTS
                && let Some(sid) = log.sessions.last()
            {
                client_sessions.insert(i, sid.clone());
            }
            sessions.extend(log.sessions);
        }
        // Every file parses; temp leftovers are only counted here.
        let leftovers = check_files(&storage)
            .unwrap_or_else(|e| panic!("{context}: {e}\n{}", server.log_tail()));
        for name in leftovers {
            // `.user.json.AbC12.tmp` → `.user.json.*.tmp`
            let kind = match name.rsplit_once('.') {
                Some((stem, "tmp")) => match stem.rsplit_once('.') {
                    Some((base, _)) => format!("{base}.*.tmp"),
                    None => name.clone(),
                },
                _ => name.clone(),
            };
            *leftovers_seen.entry(kind).or_default() += 1;
        }
        let user =
            load_graph(&storage.join("user.json")).unwrap_or_else(|e| panic!("{context}: {e}"));
        let proj_path = storage.join("projects/proj/graph.json");
        let proj = load_graph(&proj_path).unwrap_or_else(|e| panic!("{context}: {e}"));
        for (file, current) in [
            (storage.join("user.prev"), &user),
            (storage.join("projects/proj/graph.prev"), &proj),
        ] {
            if file.exists() {
                let prev = load_graph(&file).unwrap_or_else(|e| panic!("{context}: {e}"));
                check_prev(&prev, current, &file.display().to_string())
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
            }
        }
        // Acknowledged values are on disk; a write in flight may have landed.
        let on_disk = |key: &Key| -> Val {
            observed(&user, "user", key)
                .or_else(|| observed(&proj, "project", key))
                .flatten()
        };
        let mut possible: HashMap<Key, Vec<Val>> = HashMap::new();
        for e in &in_flight {
            for (k, v) in &e.set {
                possible.entry(k.clone()).or_default().push(v.clone());
            }
        }
        for (key, want) in &model.values {
            let got = on_disk(key);
            let landed = possible.get(key).is_some_and(|vals| vals.contains(&got));
            assert!(
                got == *want || landed,
                "{context}: {key:?} holds {got:?} on disk, acknowledged {want:?}\nserver log:\n{}",
                server.log_tail()
            );
            checked += 1;
        }
        for (key, vals) in &possible {
            let got = on_disk(key);
            assert!(
                got == model.value(key) || vals.contains(&got),
                "{context}: in-flight {key:?} holds {got:?}, neither {:?} nor {vals:?}",
                model.value(key)
            );
            if got != model.value(key) {
                in_flight_landed += 1;
            }
            // What landed is what later rounds must keep.
            model.values.insert(key.clone(), got);
        }
        // Every acknowledged session is in sessions.json with its project.
        let sessions_file: Value = serde_json::from_slice(
            &std::fs::read(storage.join("sessions.json")).unwrap_or_else(|_| b"{}".to_vec()),
        )
        .unwrap_or_else(|e| panic!("{context}: sessions.json: {e}"));
        for sid in &sessions {
            assert_eq!(
                sessions_file[sid]["project_path"].as_str(),
                Some(project.as_str()),
                "{context}: acknowledged session {sid} is not in sessions.json"
            );
        }
        drop(server);
    }
    // A last start: the server loads what the kills left and shows exactly the model.
    let mut server = serve(&home, &storage, &[]);
    let q = format!(
        "/api/graph/read?project_path={}",
        kg_client::encode(&project)
    );
    let (status, graph) =
        wire::json_request(server.port, "GET", &q, None, REQUEST_TIMEOUT).expect("graph read");
    assert_eq!(status, 200, "{graph}");
    for (key, want) in &model.values {
        if let Key::Node { level, id } = key {
            let got = graph[level]["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|n| n["id"] == id.as_str())
                .and_then(|n| n["gist"].as_str().map(str::to_string));
            assert_eq!(&got, want, "after the last restart, {level}/{id}");
        }
    }
    for sid in &sessions {
        let (text, err) = wire::mcp_call(
            server.port,
            "kg_sync",
            &json!({"session_id": sid}),
            REQUEST_TIMEOUT,
        )
        .expect("kg_sync");
        assert!(!err, "{text}");
    }
    // The start and the graph loads removed the temp files the kills left behind.
    let stray: Vec<_> = check_files(&storage)
        .expect("files")
        .into_iter()
        .filter(|n| {
            [".graph.json.", ".user.json.", ".sessions.json."]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .collect();
    assert!(stray.is_empty(), "temp files left after a start: {stray:?}");
    assert!(server.stop().success(), "graceful stop");
    eprintln!(
        "crash: {kills} SIGKILLs ({terms} during a graceful shutdown) survived in {:.1?}: \
         {total_ops} operations, {checked} acknowledged values checked, {} sessions, \
         {in_flight_landed} in-flight writes landed; temp leftovers seen after kills: {leftovers_seen:?}",
        started.elapsed(),
        sessions
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len()
    );
    assert!(
        total_ops > kills,
        "the clients made progress ({total_ops} operations)"
    );
}

/// Regression: registrations answered concurrently were saved as overlapping snapshots
/// of the registry, and an older snapshot could land last — a SIGKILL then lost
/// sessions whose registration had been acknowledged.
#[test]
fn concurrent_registrations_survive_a_sigkill() {
    let (_dir, home) = disk_home("kg-crash-sessions-");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let q = format!(
        "/api/sessions/register?project_path={}",
        kg_client::encode(&project.to_string_lossy())
    );
    // Each round starts empty and stays well under the session cap, so every
    // acknowledged registration must still be there (none is evicted).
    let most = kg_core::MAX_SESSIONS / 2;
    let mut total = 0;
    for round in 0..wire::env_usize("KG_CRASH_SESSION_ROUNDS", 6) {
        let storage = home.join(format!("storage-{round}"));
        let mut server = serve(&home, &storage, &[("KG_SAVE_INTERVAL", "1")]);
        let port = server.port;
        let acks = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (acks, q) = (acks.clone(), q.clone());
                std::thread::spawn(move || {
                    while acks.lock().expect("acks").len() < most {
                        let Ok((200, v)) =
                            wire::json_request(port, "POST", &q, None, REQUEST_TIMEOUT)
                        else {
                            break;
                        };
                        let sid = v["session_id"].as_str().unwrap_or_default().to_string();
                        acks.lock().expect("acks").push(sid);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150 + 60 * (round % 8) as u64));
        let acked: Vec<String> = {
            // Everything acknowledged before the kill must be on disk after it.
            let acks = acks.lock().expect("acks");
            server.kill();
            acks.clone()
        };
        for h in handles {
            h.join().expect("client");
        }
        let file: Value =
            serde_json::from_slice(&std::fs::read(storage.join("sessions.json")).expect("file"))
                .expect("sessions.json parses");
        let missing: Vec<_> = acked
            .iter()
            .filter(|s| file[s.as_str()].is_null())
            .collect();
        assert!(
            missing.is_empty(),
            "round {round}: acknowledged sessions missing after SIGKILL: {missing:?}"
        );
        total += acked.len();
    }
    assert!(total > 50, "registrations were made ({total})");
}
