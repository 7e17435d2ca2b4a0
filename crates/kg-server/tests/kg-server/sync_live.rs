//! Git sync inside running servers (issue 23): each storage root served by its own
//! real `kg-memory serve`, agents' writes over REST while the servers sync through a
//! bare repository on this machine, and the faults a sync must survive.

use crate::server::{logged, temp_home};
use crate::sync::{bare_remote, bare_repo, clone_folder, git_in, kg_memory_on};
use kg_core::{GraphFile, parse_graph};
use kg_test_support::http::json_request;
use kg_test_support::serve::ServerProcess;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// One machine: its home (git's global config is there, none of the user's), its
/// storage root, and the server holding that root.
pub(crate) struct Machine {
    pub(crate) name: String,
    pub(crate) home: PathBuf,
    pub(crate) root: PathBuf,
    /// Where the shared project folder lies (`KG_PROJECT_ROOTS`).
    pub(crate) work: PathBuf,
    pub(crate) server: Option<ServerProcess>,
}

impl Machine {
    pub(crate) fn new(base: &Path, name: &str) -> Machine {
        let home = base.join(name);
        fs::create_dir_all(&home).expect("home");
        Machine {
            name: name.to_string(),
            root: home.join("storage"),
            home,
            work: base.join("work"),
            server: None,
        }
    }

    pub(crate) fn command(&self, args: &[&str]) -> Output {
        kg_memory_on(&self.home, &self.root)
            .args(args)
            .output()
            .expect("run kg-memory")
    }

    /// `kg-memory sync <args>`: whether it succeeded, and what it printed.
    pub(crate) fn cli_sync(&self, args: &[&str]) -> (bool, String) {
        let mut full = vec!["sync"];
        full.extend_from_slice(args);
        let out = self.command(&full);
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), said)
    }

    pub(crate) fn start(&mut self) {
        self.start_with(&[]);
    }

    /// [`Machine::start`] with more of the server's environment.
    pub(crate) fn start_with(&mut self, env: &[(&str, &str)]) {
        fs::create_dir_all(&self.work).expect("work folder");
        let server = logged(&self.home, &self.root)
            .envs(env)
            .env("KG_PROJECT_ROOTS", &self.work)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .start();
        self.server = Some(server);
    }

    pub(crate) fn port(&self) -> u16 {
        self.server.as_ref().expect("server running").port
    }

    pub(crate) fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        json_request(self.port(), method, path, body, TIMEOUT)
            .unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }

    /// Ask the server to sync now: its answer.
    pub(crate) fn sync(&self) -> (u16, Value) {
        self.call("POST", "/api/sync/now", Some(&json!({})))
    }

    pub(crate) fn sync_ok(&self) -> Value {
        let (status, answer) = self.sync();
        assert_eq!(status, 200, "{} could not sync: {answer}", self.name);
        answer
    }

    pub(crate) fn graph(&self, relative: &str) -> GraphFile {
        let bytes = fs::read(self.root.join(relative)).expect("graph file");
        parse_graph(&bytes).expect("graph parses")
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        git_in(&self.root, args)
    }
}

/// `names.len()` machines set up on one remote (the first one's memory seeds it),
/// each with its server running.
pub(crate) fn machines(base: &Path, names: &[&str]) -> (Vec<Machine>, PathBuf) {
    let remote = bare_remote(base);
    let url = remote.to_string_lossy().into_owned();
    let mut all = Vec::new();
    for name in names {
        let mut m = Machine::new(base, name);
        let (ok, said) = m.cli_sync(&["setup", &url]);
        assert!(ok, "setup on {name}: {said}");
        m.start();
        all.push(m);
    }
    (all, remote)
}

/// Sync every machine in turn until all hold the same commit (at most three rounds;
/// two always suffice when nobody writes).
pub(crate) fn settle(machines: &[Machine]) {
    for _round in 0..3 {
        for m in machines {
            m.sync_ok();
        }
        let heads: Vec<String> = machines
            .iter()
            .map(|m| m.git(&["rev-parse", "HEAD"]))
            .collect();
        if heads.windows(2).all(|w| w[0] == w[1]) {
            return;
        }
    }
    panic!("the machines did not settle on one commit");
}

/// A small deterministic random source (xorshift), so a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// What the test knows of one acknowledged write, in acknowledgement order.
#[derive(Debug, Clone)]
enum Op {
    Put { gist: String },
    Delete,
}

#[derive(Default)]
struct Ledger {
    /// Per graph and node id: the acknowledged writes, with their order.
    nodes: HashMap<(String, String), Vec<(u64, Op)>>,
    /// Per graph and edge (`from`, `to`, `rel`): the order of the last acknowledged put.
    edges: HashMap<(String, String, String, String), u64>,
    edge_deletes: HashMap<(String, String, String, String), u64>,
}

/// The graph a level's writes land in, as the ledger and the files name it.
fn graph_name(level: &str) -> String {
    match level {
        "user" => "user.json".to_string(),
        _ => "projects/shop/graph.json".to_string(),
    }
}

/// `ops` random writes on machine `m` over REST (new nodes, edits of nodes any
/// machine wrote, deletes, edges and edge deletes, at both levels), each recorded in
/// the ledger once the server acknowledged it.
fn write_randomly(
    m: &Machine,
    seed: u64,
    ops: usize,
    order: &AtomicU64,
    ledger: &std::sync::Mutex<Ledger>,
    received: &AtomicU64,
) {
    let mut rng = Rng(seed);
    let project = m.work.join("shop").to_string_lossy().into_owned();
    let known = |level: &str| -> Vec<String> {
        let ledger = ledger.lock().expect("ledger");
        let mut ids: Vec<String> = ledger
            .nodes
            .keys()
            .filter(|(g, _)| *g == graph_name(level))
            .map(|(_, id)| id.clone())
            .collect();
        ids.sort();
        ids
    };
    for k in 0..ops {
        // An agent's pace, roughly: the syncs get to run between the writes.
        std::thread::sleep(Duration::from_millis(2 + rng.below(10) as u64));
        // Besides the syncs at random moments, one between every 40 writes here, so
        // every machine's writes go out and come in while the others write.
        if k % 40 == 39 && m.sync().1["received"].as_u64() > Some(0) {
            received.fetch_add(1, Ordering::SeqCst);
        }
        let level = ["user", "project"][rng.below(2)];
        let with_level = |mut body: Value| {
            body["level"] = json!(level);
            if level == "project" {
                body["project_path"] = json!(project);
            }
            body
        };
        let query = if level == "project" {
            format!("?project_path={}", kg_client::encode(&project))
        } else {
            String::new()
        };
        let ids = known(level);
        let pick = |rng: &mut Rng| ids[rng.below(ids.len())].clone();
        let roll = rng.below(100);
        let graph = graph_name(level);
        let node_op = |id: String, op: Op| {
            let seq = order.fetch_add(1, Ordering::SeqCst);
            let mut ledger = ledger.lock().expect("ledger");
            ledger
                .nodes
                .entry((graph.clone(), id))
                .or_default()
                .push((seq, op));
        };
        if roll < 55 || ids.len() < 2 {
            // A new node, or a new gist for a node some machine wrote.
            let (id, gist) = if roll < 35 || ids.len() < 2 {
                (
                    format!("{}-note-{k}", m.name),
                    format!("{} learned fact {k}", m.name),
                )
            } else {
                (
                    pick(&mut rng),
                    format!("{} revised this at step {k}", m.name),
                )
            };
            let body = with_level(json!({"id": id, "gist": gist}));
            let (status, answer) = m.call("POST", "/api/nodes", Some(&body));
            assert_eq!(status, 200, "{answer}");
            node_op(id, Op::Put { gist });
        } else if roll < 65 {
            let id = pick(&mut rng);
            let (status, _) = m.call("DELETE", &format!("/api/nodes/{level}/{id}{query}"), None);
            // A node this machine has not received yet is not found: nothing happened.
            if status == 200 {
                node_op(id, Op::Delete);
            }
        } else if roll < 90 {
            let (from, to) = (pick(&mut rng), pick(&mut rng));
            let rel = ["uses", "explains"][rng.below(2)];
            let (status, answer) = m.call(
                "POST",
                "/api/edges",
                Some(&with_level(json!({"from": from, "to": to, "rel": rel}))),
            );
            assert_eq!(status, 200, "{answer}");
            let seq = order.fetch_add(1, Ordering::SeqCst);
            ledger
                .lock()
                .expect("ledger")
                .edges
                .insert((graph, from, to, rel.to_string()), seq);
        } else {
            let (from, to) = (pick(&mut rng), pick(&mut rng));
            let rel = ["uses", "explains"][rng.below(2)];
            let (status, _) = m.call(
                "DELETE",
                &format!("/api/edges/{level}/{from}/{to}/{rel}{query}"),
                None,
            );
            if status == 200 {
                let seq = order.fetch_add(1, Ordering::SeqCst);
                ledger
                    .lock()
                    .expect("ledger")
                    .edge_deletes
                    .insert((graph, from, to, rel.to_string()), seq);
            }
        }
    }
}

/// Every acknowledged write whose node or edge no later write removed is in `file`:
/// a node whose last write was a put holds that gist, or keeps it in a conflict note
/// when another machine wrote the node at the same time; an edge put last, whose ends
/// nobody deleted since, is there when both its ends are.
fn assert_nothing_lost(ledger: &Ledger, graph: &str, file: &GraphFile) {
    let mut checked = 0;
    for ((g, id), ops) in &ledger.nodes {
        if g != graph {
            continue;
        }
        let Some((_, Op::Put { gist })) = ops.iter().max_by_key(|(seq, _)| *seq) else {
            continue;
        };
        let node = file
            .graph
            .nodes
            .get(id)
            .unwrap_or_else(|| panic!("{graph}: {id}, last written \"{gist}\", is gone"));
        let kept = node.gist() == gist || node.notes().iter().any(|n| n.contains(gist.as_str()));
        assert!(
            kept,
            "{graph}: {id} lost \"{gist}\": gist \"{}\", notes {:?}",
            node.gist(),
            node.notes()
        );
        checked += 1;
    }
    for ((g, from, to, rel), seq) in &ledger.edges {
        // Deleting the edge, or a node at either end (which takes its edges), later.
        let node_deleted_after = |id: &String| {
            ledger
                .nodes
                .get(&(g.clone(), id.clone()))
                .is_some_and(|ops| {
                    ops.iter()
                        .any(|(at, op)| matches!(op, Op::Delete) && at > seq)
                })
        };
        let deleted_later = ledger
            .edge_deletes
            .get(&(g.clone(), from.clone(), to.clone(), rel.clone()))
            .is_some_and(|d| d > seq)
            || node_deleted_after(from)
            || node_deleted_after(to);
        let ends = file.graph.nodes.contains_key(from) && file.graph.nodes.contains_key(to);
        if g == graph && !deleted_later && ends {
            let key = kg_core::EdgeKey::new(from, to, rel);
            assert!(
                file.graph.edges.contains_key(&key),
                "{graph}: edge {from} -{rel}-> {to} is gone"
            );
        }
    }
    assert!(checked > 0, "{graph}: nothing was checked");
}

/// `names.len()` servers write `ops` random operations each, concurrently, while each
/// also syncs at random moments; then they settle. Both graph files are the same bytes
/// on every machine, and nothing acknowledged was lost.
fn converge(names: &[&str], ops: usize) {
    let (dir, base) = temp_home();
    let (machines, _remote) = machines(&base, names);
    fs::create_dir_all(base.join("work/shop")).expect("project folder");
    let order = AtomicU64::new(0);
    let ledger = std::sync::Mutex::new(Ledger::default());
    let failed_syncs = AtomicU64::new(0);
    let syncs_that_received = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for (i, m) in machines.iter().enumerate() {
            let writing = Arc::new(AtomicBool::new(true));
            let still = writing.clone();
            let (order, ledger, failed, received) =
                (&order, &ledger, &failed_syncs, &syncs_that_received);
            scope.spawn(move || {
                write_randomly(
                    m,
                    0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1),
                    ops,
                    order,
                    ledger,
                    received,
                );
                still.store(false, Ordering::SeqCst);
            });
            scope.spawn(move || {
                let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ (i as u64 + 7));
                while writing.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20 + rng.below(80) as u64));
                    // Two machines pushing at once: one may give up after its retries.
                    match m.sync() {
                        (200, answer) if answer["received"].as_u64() > Some(0) => {
                            received.fetch_add(1, Ordering::SeqCst);
                        }
                        (200, _) => {}
                        _ => {
                            failed.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            });
        }
    });
    // The syncs ran between the writes, not only after them.
    assert!(syncs_that_received.load(Ordering::SeqCst) > 0);
    settle(&machines);
    let ledger = ledger.into_inner().expect("ledger");
    for graph in ["user.json", "projects/shop/graph.json"] {
        let first = fs::read(machines[0].root.join(graph)).expect("graph file");
        for m in &machines[1..] {
            let other = fs::read(m.root.join(graph)).expect("graph file");
            assert!(
                first == other,
                "{graph} differs between {} and {}",
                machines[0].name,
                m.name
            );
        }
        assert_nothing_lost(&ledger, graph, &machines[0].graph(graph));
    }
    for m in &machines {
        let status = m.git(&["status", "--porcelain"]);
        assert!(
            status.trim().is_empty(),
            "{} has uncommitted files: {status}",
            m.name
        );
    }
    eprintln!(
        "{} machines, {ops} writes each: {} acknowledged, {} syncs brought commits in while writing, {} gave up on a racing push",
        names.len(),
        order.load(Ordering::SeqCst),
        syncs_that_received.load(Ordering::SeqCst),
        failed_syncs.load(Ordering::SeqCst)
    );
    drop(machines);
    drop(dir);
}

#[test]
fn two_running_servers_converge_under_concurrent_writes_and_syncs() {
    converge(&["laptop", "desktop"], 200);
}

#[test]
fn three_running_servers_converge() {
    converge(&["laptop", "desktop", "office"], 200);
}

/// Node ids of a graph file.
fn node_ids(file: &GraphFile) -> Vec<String> {
    file.graph.nodes.keys().cloned().collect()
}

pub(crate) fn put(m: &Machine, id: &str, gist: &str) {
    let (status, answer) = m.call(
        "POST",
        "/api/nodes",
        Some(&json!({"level": "user", "id": id, "gist": gist})),
    );
    assert_eq!(status, 200, "{answer}");
}

#[test]
fn what_arrives_is_announced_with_its_origin_and_the_status_says_when() {
    let (dir, base) = temp_home();
    let (machines, _remote) = machines(&base, &["laptop", "desktop"]);
    let (a, b) = (&machines[0], &machines[1]);
    put(a, "deploy-window", "Deploys happen on Tuesdays only");
    a.sync_ok();
    let answer = b.sync_ok();
    assert!(answer["received"].as_u64() >= Some(1), "{answer}");
    assert!(
        b.graph("user.json")
            .graph
            .nodes
            .contains_key("deploy-window")
    );

    // The activity timeline names the other machine's remote as the origin.
    let (status, activity) = b.call("GET", "/api/view/activity?levels=user", None);
    assert_eq!(status, 200, "{activity}");
    let arrived = activity["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["ids"][0] == "deploy-window")
        .unwrap_or_else(|| panic!("no entry for the synced node: {activity}"));
    assert_eq!(arrived["author"], "sync", "{arrived}");
    assert!(
        arrived["origin"]
            .as_str()
            .is_some_and(|o| o.starts_with("origin (")),
        "{arrived}"
    );
    assert_eq!(arrived["session"], Value::Null);

    // The status: on, synced just now, nothing pending.
    let (status, sync) = b.call("GET", "/api/sync", None);
    assert_eq!(status, 200, "{sync}");
    assert_eq!(sync["on"], true, "{sync}");
    assert!(sync["last_success"].as_f64().is_some(), "{sync}");
    assert_eq!(sync["offline_since"], Value::Null);
    assert_eq!(
        (sync["ahead"].as_u64(), sync["behind"].as_u64()),
        (Some(0), Some(0)),
        "{sync}"
    );

    // `kg-memory sync now` on a root a server holds asks that server; setup refuses.
    let (ok, said) = b.cli_sync(&["now"]);
    assert!(
        ok && said.contains("Through the running server: Synced"),
        "{said}"
    );
    let (ok, said) = b.cli_sync(&["setup", "/elsewhere.git"]);
    assert!(!ok && said.contains("Stop that server"), "{said}");
    drop(machines);
    drop(dir);
}

#[test]
fn a_remote_that_goes_away_is_reported_offline_and_nothing_is_lost() {
    let (dir, base) = temp_home();
    let (machines, remote) = machines(&base, &["laptop", "desktop"]);
    let (a, b) = (&machines[0], &machines[1]);
    let away = base.join("remote-away.git");
    fs::rename(&remote, &away).expect("take the remote away");
    put(a, "offline-fact", "Written while the remote was away");
    let (status, answer) = a.sync();
    assert_eq!(status, 502, "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .is_some_and(|d| d.contains("cannot reach the remote")),
        "{answer}"
    );
    let (_, sync) = a.call("GET", "/api/sync", None);
    assert!(sync["offline_since"].as_f64().is_some(), "{sync}");
    assert!(
        sync["summary"]
            .as_str()
            .is_some_and(|s| s.contains("Remote unreachable since")),
        "{sync}"
    );
    // Still served and on disk meanwhile.
    assert!(
        a.graph("user.json")
            .graph
            .nodes
            .contains_key("offline-fact")
    );

    fs::rename(&away, &remote).expect("bring the remote back");
    let answer = a.sync_ok();
    assert!(answer["sent"].as_u64() >= Some(1), "{answer}");
    let (_, sync) = a.call("GET", "/api/sync", None);
    assert_eq!(sync["offline_since"], Value::Null, "{sync}");
    b.sync_ok();
    assert!(
        b.graph("user.json")
            .graph
            .nodes
            .contains_key("offline-fact")
    );
    drop(machines);
    drop(dir);
}

#[test]
fn a_corrupted_graph_on_the_remote_is_refused_and_the_running_memory_untouched() {
    let (dir, base) = temp_home();
    let (machines, remote) = machines(&base, &["laptop", "desktop"]);
    let a = &machines[0];
    put(a, "kept-fact", "This stays whatever the remote holds");
    a.sync_ok();
    // Someone pushes a broken user.json.
    let clone = base.join("vandal");
    git_in(
        &base,
        &["clone", "--quiet", &remote.to_string_lossy(), "vandal"],
    );
    fs::write(clone.join("user.json"), b"{\"nodes\": {\"half").expect("break it");
    git_in(
        &clone,
        &[
            "-c",
            "user.name=v",
            "-c",
            "user.email=v@x",
            "commit",
            "--quiet",
            "-am",
            "break",
        ],
    );
    git_in(&clone, &["push", "--quiet", "origin", "HEAD:main"]);

    let before = fs::read(a.root.join("user.json")).expect("graph");
    let (status, answer) = a.sync();
    assert_eq!(status, 502, "{answer}");
    let detail = answer["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("user.json is not a readable memory graph"),
        "{detail}"
    );
    assert_eq!(fs::read(a.root.join("user.json")).expect("graph"), before);
    let (status, node) = a.call("GET", "/api/nodes/user/kept-fact", None);
    assert_eq!(status, 200, "{node}");
    let (_, sync) = a.call("GET", "/api/sync", None);
    assert!(
        sync["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("not a readable memory graph")),
        "{sync}"
    );
    drop(machines);
    drop(dir);
}

/// SIGKILL a server at moments inside its sync, again and again, while it merges a
/// large change from another machine into its own unsent writes: after each restart
/// the repository is sound, and the last sync holds every node of both machines.
#[test]
fn a_server_killed_while_it_merges_loses_nothing() {
    let (dir, base) = temp_home();
    let (mut machines, _remote) = machines(&base, &["laptop", "desktop"]);
    let others: Vec<String> = (0..300).map(|i| format!("desktop-bulk-{i}")).collect();
    for id in &others {
        put(&machines[1], id, &format!("The desktop's fact {id}"));
    }
    machines[1].sync_ok();
    let ours: Vec<String> = (0..40).map(|i| format!("laptop-own-{i}")).collect();
    let mut rng = Rng(0x5EED_0FC0_FFEE);
    let a = &mut machines[0];
    for (round, chunk) in ours.chunks(8).enumerate() {
        for id in chunk {
            put(a, id, &format!("The laptop's fact {id}"));
        }
        let port = a.port();
        let syncing = std::thread::spawn(move || {
            // The answer never comes: the server dies under it.
            let _ = json_request(port, "POST", "/api/sync/now", Some(&json!({})), TIMEOUT);
        });
        std::thread::sleep(Duration::from_millis(5 + rng.below(150) as u64));
        a.server.as_mut().expect("server").kill();
        let _ = syncing.join();
        // A git child of the killed server may still be finishing; the repository
        // must be sound once it has.
        std::thread::sleep(Duration::from_millis(300));
        git_in(&a.root, &["fsck", "--no-progress"]);
        for file in ["user.json"] {
            if a.root.join(file).exists() {
                let _ = a.graph(file); // parses
            }
        }
        a.start();
        eprintln!("round {round}: killed and restarted");
    }
    // The restart's own sync may be running: wait for a sync of ours to go through.
    let mut synced = false;
    for _ in 0..20 {
        if a.sync().0 == 200 {
            synced = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        synced,
        "the laptop could not sync after the kills:\n{}",
        a.server.as_ref().expect("server").log_tail()
    );
    let ids = node_ids(&a.graph("user.json"));
    for id in ours.iter().chain(&others) {
        assert!(ids.contains(id), "{id} is missing after the kills");
    }
    let status = a.git(&["status", "--porcelain"]);
    assert!(status.trim().is_empty(), "left in the work tree: {status}");
    machines[1].sync_ok();
    assert_eq!(
        fs::read(machines[0].root.join("user.json")).expect("graph"),
        fs::read(machines[1].root.join("user.json")).expect("graph")
    );
    drop(machines);
    drop(dir);
}

/// A team shares one project's memory through a remote of its own, each person at
/// their own folder, while each person's user graph stays private (and their own
/// storage root's remote never sees the team's project).
#[test]
fn a_team_shares_one_project_memory_and_nothing_else() {
    let (dir, base) = temp_home();
    let team = bare_repo(&base.join("team-shop.git"));
    let private = bare_remote(&base);
    let mut ana = Machine::new(&base, "ana");
    let mut bob = Machine::new(&base, "bob");
    let ana_shop = ana.home.join("work/shop");
    let bob_shop = bob.home.join("code/shop");
    for folder in [&ana_shop, &bob_shop] {
        fs::create_dir_all(folder).expect("project folder");
    }
    let ana_shop_path = ana_shop.to_string_lossy().into_owned();
    let bob_shop_path = bob_shop.to_string_lossy().into_owned();

    // Ana syncs her whole memory with her own remote, and the shop with the team's.
    let (ok, said) = ana.cli_sync(&["setup", &private.to_string_lossy()]);
    assert!(ok, "{said}");
    let (ok, said) = ana.cli_sync(&[
        "setup",
        "--project",
        &ana_shop_path,
        &team.to_string_lossy(),
    ]);
    assert!(ok, "{said}");
    assert!(said.contains("the project memory"), "{said}");
    ana.start();
    let in_project = |path: &str, id: &str, gist: &str| json!({"level": "project", "project_path": path, "id": id, "gist": gist});
    let (status, answer) = ana.call(
        "POST",
        "/api/nodes",
        Some(&in_project(
            &ana_shop_path,
            "shop-checkout-flow",
            "Checkout calls the tax service before payment",
        )),
    );
    assert_eq!(status, 200, "{answer}");
    put(&ana, "ana-editor-prefs", "Ana prefers tabs; private to her");
    // Each repository answers for itself: a conflict would name its graph.
    let answer = ana.sync_ok();
    let said = answer["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("the storage root") && said.contains("the project memory shop"),
        "{said}"
    );

    // Bob joins the team's project memory only.
    let (ok, said) = bob.cli_sync(&[
        "setup",
        "--project",
        &bob_shop_path,
        &team.to_string_lossy(),
    ]);
    assert!(ok, "{said}");
    bob.start();
    let (status, node) = bob.call(
        "GET",
        &format!(
            "/api/nodes/project/shop-checkout-flow?project_path={}",
            kg_client::encode(&bob_shop_path)
        ),
        None,
    );
    assert_eq!(
        status, 200,
        "Bob does not see the team's node at his own folder: {node}"
    );
    let (status, _) = bob.call("GET", "/api/nodes/user/ana-editor-prefs", None);
    assert_eq!(status, 404, "Ana's user graph must stay hers");

    // Bob writes; Ana receives it through the team remote.
    let (status, answer) = bob.call(
        "POST",
        "/api/nodes",
        Some(&in_project(
            &bob_shop_path,
            "shop-refund-window",
            "Refunds close 30 days after delivery",
        )),
    );
    assert_eq!(status, 200, "{answer}");
    bob.sync_ok();
    ana.sync_ok();
    let (status, node) = ana.call(
        "GET",
        &format!(
            "/api/nodes/project/shop-refund-window?project_path={}",
            kg_client::encode(&ana_shop_path)
        ),
        None,
    );
    assert_eq!(status, 200, "{node}");

    // The team's remote holds the project graph and nothing of anyone's user graph;
    // Ana's own remote holds her user graph and not the team's project.
    let team_files = git_in(&team, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        team_files.lines().any(|f| f == "graph.json"),
        "{team_files}"
    );
    assert!(!team_files.contains("user.json"), "{team_files}");
    let private_files = git_in(&private, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        private_files.lines().any(|f| f == "user.json"),
        "{private_files}"
    );
    assert!(!private_files.contains("projects/shop"), "{private_files}");
    let (_, status) = ana.call("GET", "/api/sync", None);
    assert_eq!(status["projects"][0]["on"], true, "{status}");
    drop((ana, bob));
    drop(dir);
}

/// The same node edited on both machines keeps the newer gist and the other in a
/// conflict note that DEBT counts; a node deleted on one machine and edited on the
/// other is kept with the edit.
#[test]
fn edits_on_both_sides_and_a_delete_against_an_edit_end_as_the_rules_say() {
    let (dir, base) = temp_home();
    let (machines, _remote) = machines(&base, &["laptop", "desktop"]);
    let (a, b) = (&machines[0], &machines[1]);
    put(a, "pricing-rule", "Prices are rounded to whole cents");
    put(a, "legacy-flag", "The legacy checkout flag is still read");
    settle(&machines);

    put(
        a,
        "pricing-rule",
        "Prices are rounded half-up to whole cents",
    );
    let (status, _) = a.call("DELETE", "/api/nodes/user/legacy-flag", None);
    assert_eq!(status, 200);
    // The desktop writes later: its gist is the newer one.
    std::thread::sleep(Duration::from_millis(20));
    put(
        b,
        "pricing-rule",
        "Prices are rounded half-even (banker's rounding)",
    );
    put(
        b,
        "legacy-flag",
        "The legacy checkout flag is read only by the mobile app",
    );
    settle(&machines);

    for m in [a, b] {
        let g = m.graph("user.json").graph;
        let rule = g.nodes.get("pricing-rule").expect("pricing-rule");
        assert_eq!(
            rule.gist(),
            "Prices are rounded half-even (banker's rounding)"
        );
        let notes = rule.notes();
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with(kg_core::CONFLICT_NOTE_PREFIX)
                    && n.contains("Prices are rounded half-up to whole cents")),
            "{}: the losing gist is not kept: {notes:?}",
            m.name
        );
        let flag = g
            .nodes
            .get("legacy-flag")
            .expect("the edited node survives the delete");
        assert_eq!(
            flag.gist(),
            "The legacy checkout flag is read only by the mobile app"
        );
        let (status, level) = m.call("GET", "/api/view/level?level=user", None);
        assert_eq!(status, 200, "{level}");
        assert_eq!(level["debt"]["merge_conflicts"], 1, "{}: {level}", m.name);
        assert_ne!(level["debt"]["level"], "LOW", "{level}");
    }
    drop(machines);
    drop(dir);
}

/// `--project` names a project folder of this machine: a made-up one is refused and
/// leaves nothing behind.
#[test]
fn a_project_sync_for_a_folder_that_is_not_there_is_refused_and_creates_nothing() {
    let (dir, base) = temp_home();
    let team = bare_remote(&base);
    let m = Machine::new(&base, "laptop");
    let ghost = m.home.join("code/ghost").to_string_lossy().into_owned();
    let (ok, said) = m.cli_sync(&["setup", "--project", &ghost, &team.to_string_lossy()]);
    assert!(!ok && said.contains("is not a folder"), "{said}");
    let (ok, said) = m.cli_sync(&["off", "--project", &ghost]);
    assert!(!ok && said.contains("has no memory of"), "{said}");
    assert!(!m.root.join("projects/ghost").exists());
    drop(dir);
}

/// One person's two machines sync a project through the storage root; the laptop then
/// gives the project a team remote of its own. The desktop's running server keeps its
/// copy of the project's memory when the storage root's remote stops tracking it, and
/// keeps it out of that remote from then on, as the laptop does.
#[test]
fn a_project_moved_to_its_own_remote_elsewhere_stays_in_the_running_memory() {
    let (dir, base) = temp_home();
    let (mut machines, remote) = machines(&base, &["laptop", "desktop"]);
    let team = bare_repo(&base.join("team-shop.git"));
    let url = "git@example.com:ana/shop.git";
    let shop_a = clone_folder(&machines[0].home.join("src/shop"), url);
    let shop_b = clone_folder(&machines[1].home.join("code/shop"), url);
    let put_in = |m: &Machine, folder: &str, id: &str| {
        let body = json!({"level": "project", "project_path": folder, "id": id, "gist": format!("{id} of the shop")});
        let (status, answer) = m.call("POST", "/api/nodes", Some(&body));
        assert_eq!(status, 200, "{answer}");
    };
    let has = |m: &Machine, folder: &str, id: &str| {
        let path = format!(
            "/api/nodes/project/{id}?project_path={}",
            kg_client::encode(folder)
        );
        m.call("GET", &path, None).0 == 200
    };
    put_in(&machines[0], &shop_a, "shop-from-laptop");
    settle(&machines);
    assert!(has(&machines[1], &shop_b, "shop-from-laptop"));

    // The laptop's server stops for the set-up, and starts again.
    let laptop = &mut machines[0];
    if let Some(mut server) = laptop.server.take() {
        server.stop();
    }
    let (ok, said) = laptop.cli_sync(&["setup", "--project", &shop_a, &team.to_string_lossy()]);
    assert!(ok, "{said}");
    laptop.start();
    laptop.sync_ok();

    let desktop = &machines[1];
    desktop.sync_ok();
    assert!(
        has(desktop, &shop_b, "shop-from-laptop"),
        "the desktop lost the project's node"
    );
    let tracked = desktop.git(&["ls-files", "projects"]);
    assert!(tracked.trim().is_empty(), "still tracked: {tracked}");
    put_in(desktop, &shop_b, "shop-from-desktop");
    desktop.sync_ok();
    assert!(has(desktop, &shop_b, "shop-from-desktop"));
    let shared = git_in(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!shared.contains("graph.json"), "{shared}");
    drop(machines);
    drop(dir);
}
