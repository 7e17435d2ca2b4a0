//! Servers that write and sync at random converge, and nothing acknowledged is lost.

use super::*;

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
