//! The properties over a real store driven by random operation sequences.

use super::*;

/// Ids of fresh nodes that operations create: short, medium and near the 128-char
/// limit (long ids make anchors expensive, which drives the orphan pass), in few
/// words, as the id length rule wants of new ids.
fn fresh_id(i: usize) -> String {
    let pad = [0, 3, 120, 10, 60, 1, 90, 25][i % 8];
    let tail: String = "fresh.memory.node.".chars().cycle().take(pad).collect();
    format!("f{i}{tail}")
}
const FRESH: usize = 24;

/// Archived nodes with 100-char ids added to the seeded project graph, linked to the
/// seeded nodes: enough of them overflow the anchor budget.
fn bulk_id(k: usize) -> String {
    let id = format!("bulk{k}-");
    let pad: String = "archived".chars().cycle().take(100 - id.len()).collect();
    format!("{id}{pad}")
}

#[derive(Clone)]
enum Op {
    Put {
        project: bool,
        node: usize,
        gist: String,
        notes: bool,
    },
    Edge {
        project: bool,
        from: usize,
        to: End,
        rel: usize,
    },
    Unedge {
        project: bool,
        nth: usize,
    },
    Delete {
        project: bool,
        node: usize,
    },
    /// A single-node read: promotes an archived or orphaned node.
    Read {
        project: bool,
        node: usize,
    },
    Like {
        node: usize,
    },
    Wait(u32),
    /// Maintenance ticks at one instant until nothing moves.
    Tick,
}

fn level_name(project: bool) -> &'static str {
    if project { "project" } else { "user" }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Put {
                project,
                node,
                gist,
                notes,
            } => write!(
                f,
                "put {} @{node} gist {}{}",
                level_name(*project),
                preview(gist),
                if *notes { " +notes" } else { "" }
            ),
            Op::Edge {
                project,
                from,
                to,
                rel,
            } => write!(
                f,
                "edge {} @{from} -{}-> {to:?}",
                level_name(*project),
                RELS[*rel]
            ),
            Op::Unedge { project, nth } => write!(f, "unedge {} #{nth}", level_name(*project)),
            Op::Delete { project, node } => write!(f, "delete {} @{node}", level_name(*project)),
            Op::Read { project, node } => write!(f, "read {} @{node}", level_name(*project)),
            Op::Like { node } => write!(f, "like @{node}"),
            Op::Wait(s) => write!(f, "wait {:.2}d", f64::from(*s) / DAY),
            Op::Tick => write!(f, "tick"),
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    let d = DAY as u32;
    let node = 0usize..400;
    prop_oneof![
        6 => (any::<bool>(), node.clone(), gist(20), prop::bool::weighted(0.2))
            .prop_map(|(project, node, gist, notes)| Op::Put { project, node, gist, notes }),
        4 => (any::<bool>(), node.clone(), end(400), 0..RELS.len())
            .prop_map(|(project, from, to, rel)| Op::Edge { project, from, to, rel }),
        1 => (any::<bool>(), 0usize..100).prop_map(|(project, nth)| Op::Unedge { project, nth }),
        1 => (any::<bool>(), node.clone()).prop_map(|(project, node)| Op::Delete { project, node }),
        3 => (any::<bool>(), node.clone()).prop_map(|(project, node)| Op::Read { project, node }),
        1 => node.prop_map(|node| Op::Like { node }),
        2 => prop::sample::select(vec![60, 3_600, 2 * d, 6 * d, 100 * d, 365 * d, 366 * d])
            .prop_map(Op::Wait),
        2 => Just(Op::Tick),
    ]
}

/// A storage root: a seeded project graph (plus `bulk` archived long-id nodes), an
/// empty user graph, and one session for the project.
struct World {
    home: TempHome,
    store: Store,
    project: String,
    sid: String,
    /// Every id operations address: seeded, bulk, fresh.
    ids: Vec<String>,
}

impl World {
    fn new(seed: &GraphSpec, bulk: usize) -> World {
        let home = TempHome::new();
        let project_dir = home.path.join("proj");
        std::fs::create_dir_all(&project_dir).expect("project folder");
        let project = project_dir.to_string_lossy().into_owned();
        let mut graph = build(seed, T);
        let seeded: Vec<String> = graph.nodes.keys().cloned().collect();
        for k in 0..bulk {
            let id = bulk_id(k);
            let mut node = Node::new(&id);
            node.set(field::GIST, Value::String(format!("bulk memory {k}")));
            node.set(field::CREATED_TS, float_value(T - 90.0 * DAY));
            node.set(field::ARCHIVED, json!(true));
            graph.nodes.insert(id.clone(), node);
            if k % 3 == 0 && !seeded.is_empty() {
                let key = EdgeKey::new(&id, &seeded[(k * 7) % seeded.len()], "r");
                graph.edges.insert(key.clone(), Edge::new(key));
            }
        }
        let file = home.storage().join("projects/proj/graph.json");
        std::fs::create_dir_all(file.parent().expect("folder")).expect("storage folder");
        let text = kg_core::persist::serialize_graph(&graph, Level::Project, Some(&project));
        std::fs::write(&file, text).expect("seed graph");
        let store = open_store(&home, T);
        let sid = store
            .register_session(Some(&project), None, T)
            .expect("session");
        let mut ids: Vec<String> = graph.nodes.keys().cloned().collect();
        ids.extend((0..FRESH).map(fresh_id));
        World {
            home,
            store,
            project,
            sid,
            ids,
        }
    }

    fn target(&self, project: bool) -> Target<'_> {
        Target {
            level: if project { Level::Project } else { Level::User },
            session: Some(&self.sid),
            project_path: project.then_some(self.project.as_str()),
        }
    }

    fn slot(&self, project: bool, now: f64) -> std::sync::Arc<GraphSlot> {
        self.store
            .resolve_target(self.target(project), now)
            .expect("graph")
    }

    fn graphs(&self, now: f64) -> [Graph; 2] {
        [false, true].map(|p| self.store.with_graph(&self.slot(p, now), Graph::clone))
    }

    fn id(&self, node: usize) -> &str {
        &self.ids[node % self.ids.len()]
    }
}

/// Only a not-found answer is an acceptable failure of an operation.
fn expect_found<T>(result: Result<T, StoreError>) -> Check {
    match result {
        Ok(_) | Err(StoreError::NodeNotFound { .. }) => Ok(()),
        Err(e) => Err(TestCaseError::fail(format!("store error: {e}"))),
    }
}

/// Run one operation; returns the ids a client deleted, per level.
fn apply(w: &World, op: &Op, now: &mut f64) -> Result<[HashSet<String>; 2], TestCaseError> {
    let mut deleted: [HashSet<String>; 2] = Default::default();
    let sid = Some(w.sid.as_str());
    match op {
        Op::Put {
            project,
            node,
            gist,
            notes,
        } => {
            let notes = notes.then(|| vec!["a note".to_string(), "שני".to_string()]);
            let id = w.id(*node);
            let put = w
                .store
                .put_node(w.target(*project), id, gist, notes, None, *now);
            // Exactly the gists the size rules refuse (empty, blank, too long) are
            // refused; a refusal changes nothing, which the next checks see.
            let healed = kg_core::heal::heal(gist, None, None).gist;
            if kg_core::limits::gist(&healed).is_err() {
                prop_assert!(
                    matches!(put, Err(kg_core::StoreError::Invalid(_))),
                    "put {id} of a refused gist: {put:?}"
                );
                return Ok(deleted);
            }
            prop_assert!(put.is_ok(), "put {}: {:?}", id, put.err());
            // The write ran maintenance on its level (§4.2 step 6).
            let g = w.store.with_graph(&w.slot(*project, *now), Graph::clone);
            check_budget(&g, *now, "after a write")?;
        }
        Op::Edge {
            project,
            from,
            to,
            rel,
        } => {
            let from = w.id(*from).to_string();
            let to = match to {
                End::Node(j) => w.id(*j).to_string(),
                End::SelfLoop => from.clone(),
                End::Artifact(k) => ARTIFACTS[k % ARTIFACTS.len()].to_string(),
                End::Cross(k) => format!("user-pref-{k}"),
            };
            let put = w
                .store
                .put_edge(w.target(*project), &from, &to, RELS[*rel], None, *now);
            prop_assert!(put.is_ok(), "edge: {:?}", put.err());
        }
        Op::Unedge { project, nth } => {
            let keys: Vec<EdgeKey> = w.store.with_graph(&w.slot(*project, *now), |g| {
                g.edges.keys().cloned().collect()
            });
            if !keys.is_empty() {
                let key = &keys[nth % keys.len()];
                let gone = w
                    .store
                    .delete_edge(Some(w.target(*project)), sid, key, *now);
                prop_assert!(matches!(gone, Ok(Some(_))), "unedge {}: {:?}", key, gone);
            }
        }
        Op::Delete { project, node } => {
            let id = w.id(*node);
            expect_found(w.store.delete_node(Some(w.target(*project)), sid, id, *now))?;
            deleted[usize::from(*project)].insert(id.to_string());
        }
        Op::Read { project, node } => {
            let id = w.id(*node);
            let read = w.store.read_node(Some(w.target(*project)), sid, id, *now);
            if let Ok(read) = &read {
                let n = Node::from_object(read.node.clone());
                prop_assert_eq!(n.tier(), Tier::Active, "a read node is active");
            }
            expect_found(read)?;
        }
        Op::Like { node } => {
            let liker = w
                .store
                .register_session(Some(&w.project), None, *now)
                .expect("session");
            let likes = w.store.useful(&liker, &[w.id(*node).to_string()], *now);
            prop_assert!(likes.is_ok(), "like: {:?}", likes.err());
        }
        Op::Wait(secs) => *now += f64::from(*secs),
        Op::Tick => settle_store(w, *now)?,
    }
    Ok(deleted)
}

/// The moves each level's tick reported on the change log.
fn logged_moves(store: &Store, from: u64) -> [TierMoves; 2] {
    let mut moves: [TierMoves; 2] = Default::default();
    for change in store.changes_since(from).unwrap_or_default() {
        if let kg_core::ChangeKind::TiersMoved(m) = change.kind {
            moves[usize::from(change.level == Level::Project)] = m;
        }
    }
    moves
}

/// (e) on the store: `Store::tick` until nothing moves, each tick checked, then one
/// more that changes nothing; then (b) and (c) on what a full read shows.
fn settle_store(w: &World, now: f64) -> Check {
    // Keep the session alive across long waits (ticks expire idle sessions).
    w.store.count_op(&w.sid, now).expect("registered session");
    let nodes: usize = w.graphs(now).iter().map(|g| g.nodes.len()).sum();
    let ticks = MAX_TICKS + nodes / kg_core::compact::MAX_DELETES_PER_PASS;
    for _ in 0..ticks {
        let before = w.graphs(now);
        let head = w.store.change_head();
        w.store.tick(now);
        let after = w.graphs(now);
        let moves = logged_moves(&w.store, head);
        for k in 0..2 {
            check_tick(&before[k], &after[k], &moves[k], now)?;
        }
        if moves.iter().all(TierMoves::is_empty) {
            w.store.tick(now);
            let again = w.graphs(now);
            prop_assert!(again == after, "a stable store changed on another tick");
            return check_store_read(w, &after, now);
        }
    }
    Err(TestCaseError::fail(format!(
        "store found no fixed point within {ticks} ticks at {now}"
    )))
}

/// (c) end to end: the read the `kg_read` tool renders for the session is the one
/// whose level bodies equal the plans' charge.
fn check_store_read(w: &World, graphs: &[Graph; 2], now: f64) -> Check {
    let debts = [false, true].map(|p| w.store.level_debt(&w.slot(p, now), now).line());
    check_render(
        [
            (&graphs[0], Some(debts[0].as_str())),
            (&graphs[1], Some(debts[1].as_str())),
        ],
        now,
    )?;
    if graphs.iter().all(|g| level_chars(g) <= LEVEL_BUDGET) {
        let (tool, _) = kg_core::tools::render_session(
            &w.store,
            &w.sid,
            ReadKind::FullRead,
            kg_core::tools::pages::Client::ClaudeCode,
            None,
            None,
            now,
        );
        let ours = render_read(
            [
                LevelSource {
                    level: Level::User,
                    graph: &graphs[0],
                    debt_line: Some(&debts[0]),
                },
                LevelSource {
                    level: Level::Project,
                    graph: &graphs[1],
                    debt_line: Some(&debts[1]),
                },
            ],
            &ReadOptions {
                kind: ReadKind::FullRead,
                budget: usize::MAX,
                preloaded: None,
                header: None,
                session_id: Some(&w.sid),
                now,
                grace_days: GRACE_DAYS,
            },
        );
        prop_assert!(
            tool.text == ours.text,
            "the tool's read differs from the plan's"
        );
    }
    Ok(())
}

/// A store driven by random operations keeps every invariant after every step.
fn drive(seed: &GraphSpec, bulk: usize, ops: &[Op]) -> Check {
    let w = World::new(seed, bulk);
    let mut now = T;
    for op in ops {
        let before = w.graphs(now);
        let stamps = before.clone().map(|g| orphan_stamps(&g));
        let deleted = apply(&w, op, &mut now)?;
        let after = w.graphs(now);
        for k in 0..2 {
            // (a) after every operation.
            check_tiers(&after[k])?;
            // (d) a write, read or like never deletes a node; a tick only expired orphans.
            let ids: HashSet<String> = before[k].nodes.keys().cloned().collect();
            check_deletions(&stamps[k], &ids, &after[k], &deleted[k], now)?;
        }
    }
    settle_store(&w, now)?;
    drop(w.home);
    Ok(())
}

proptest! {
    #![proptest_config(cases(48))]
    /// A seeded store under up to 80 random operations, checked after every one.
    #[test]
    fn a_store_under_random_operations_keeps_the_invariants(
        seed in graph_spec(HEAVY, 0..=80, 0..=160),
        bulk in prop_oneof![1 => Just(0usize), 2 => 0usize..=90],
        ops in prop::collection::vec(op(), 1..=80),
    ) {
        drive(&seed, bulk, &ops)?;
    }
}
