//! The store's side of the trust boundary: multi-graph locking, bounded memory,
//! namesake projects, session ids and text sizes.

use kg_core::ambient::prompt_context;
use kg_core::store::{MAX_LOADED_PROJECTS, StoreError};
use kg_core::tools::{kg_search, search_slots};
use kg_core::{Level, Store, Target};
use kg_test_support::hook::prompt_event;
use kg_test_support::{T, TempHome, open_store};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn project_folder(home: &TempHome, name: &str) -> String {
    let dir = home.path.join(name);
    std::fs::create_dir_all(&dir).expect("project folder");
    dir.to_string_lossy().into_owned()
}

fn put(store: &Store, level: Level, project: Option<&str>, id: &str, gist: &str) {
    let target = Target {
        level,
        session: None,
        project_path: project,
    };
    store
        .put_node(target, id, gist, None, None, T)
        .expect("write");
}

/// Every path that holds several graphs at once, called from many threads with
/// duplicated and reversed graph lists while writers change the same graphs. On the
/// code before `Store::with_graphs`, a duplicated list locked one mutex twice on one
/// thread and this test never finished (`levels=user,user` in the view's search).
#[test]
fn multi_graph_paths_finish_with_duplicated_and_reversed_lists() {
    let home = TempHome::new();
    let store = Arc::new(open_store(&home, T));
    let projects: Vec<String> = (0..3)
        .map(|i| project_folder(&home, &format!("lockproj{i}")))
        .collect();
    for (i, p) in projects.iter().enumerate() {
        put(
            &store,
            Level::Project,
            Some(p),
            &format!("seed-{i}"),
            "ledger retries seed",
        );
    }
    put(
        &store,
        Level::User,
        None,
        "user-seed",
        "ledger retries user",
    );
    let sid = store
        .register_session(Some(&projects[0]), Some("cc-lock"), T)
        .expect("session");
    store.mark_full_read(&sid, T);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let mut workers = Vec::new();
    for worker in 0..8usize {
        let store = store.clone();
        let projects = projects.clone();
        let sid = sid.clone();
        let done = done_tx.clone();
        workers.push(std::thread::spawn(move || {
            for round in 0..60usize {
                let user = store.user_slot().clone();
                let mut slots: Vec<_> = projects
                    .iter()
                    .map(|p| store.existing_project_slot(p, T).expect("project"))
                    .collect();
                slots.push(user.clone());
                slots.push(user);
                if (worker + round) % 2 == 0 {
                    slots.reverse();
                }
                let duplicated = slots.clone();
                slots.extend(duplicated);
                let seen = store.with_graphs(&slots, |graphs| graphs.len());
                assert_eq!(seen, projects.len() + 1, "duplicates are dropped");
                match round % 4 {
                    0 => {
                        kg_search(&store, "ledger retries", Some(&sid), T);
                    }
                    1 => {
                        let payload = json!({"session_id": "cc-lock", "prompt": "ledger retries seed", "cwd": projects[0]});
                        prompt_context(&store, &prompt_event(&payload), T);
                    }
                    2 => {
                        let p = &projects[(worker + round) % projects.len()];
                        put(&store, Level::Project, Some(p), &format!("w{worker}-{round}"), "ledger retries note");
                    }
                    _ => {
                        put(&store, Level::User, None, &format!("u{worker}-{round}"), "ledger retries user note");
                        let slots = search_slots(&store, None, T).expect("slots");
                        store.with_graphs(&slots, |graphs| assert!(!graphs.is_empty()));
                    }
                }
            }
            done.send(()).expect("report");
        }));
    }
    drop(done_tx);
    for _ in 0..workers.len() {
        done_rx
            .recv_timeout(Duration::from_secs(120))
            .expect("a worker is stuck: the graph locks deadlocked");
    }
    for w in workers {
        w.join().expect("worker");
    }
}

/// Reading a project that has no folder and no graph loads nothing; on the code
/// before, any path inside home loaded a graph and kept it forever.
#[test]
fn made_up_projects_are_not_loaded() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let ghost = home
        .path
        .join("no/such/project")
        .to_string_lossy()
        .into_owned();
    let err = store
        .existing_project_slot(&ghost, T)
        .expect_err("no such project");
    assert!(err.to_string().starts_with("No such project: "), "{err}");
    assert_eq!(store.loaded_graph_count(), 1, "only the user graph");
    let read = store.read_node(
        Some(Target {
            level: Level::Project,
            session: None,
            project_path: Some(&ghost),
        }),
        None,
        "x",
        T,
    );
    assert!(matches!(read, Err(StoreError::Path(_))), "{read:?}");
    assert_eq!(store.loaded_graph_count(), 1);
    // A project whose folder is gone but whose graph is stored still opens.
    let real = project_folder(&home, "gone-later");
    put(
        &store,
        Level::Project,
        Some(&real),
        "kept",
        "A node of a moved project",
    );
    std::fs::remove_dir(&real).expect("remove folder");
    drop(store);
    let store = open_store(&home, T);
    let slot = store.existing_project_slot(&real, T).expect("stored graph");
    assert!(store.with_graph(&slot, |g| g.nodes.contains_key("kept")));
}

/// Memory follows the projects in use: past the cap, the least recently used graphs
/// are saved and unloaded, and come back intact on their next use.
#[test]
fn loaded_projects_are_capped_and_reload_intact() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let count = MAX_LOADED_PROJECTS + 8;
    let folders: Vec<String> = (0..count)
        .map(|i| project_folder(&home, &format!("many{i}")))
        .collect();
    for (i, p) in folders.iter().enumerate() {
        put(
            &store,
            Level::Project,
            Some(p),
            "mark",
            &format!("Project number {i}"),
        );
        assert!(store.loaded_graph_count() <= MAX_LOADED_PROJECTS + 1);
    }
    let slot = store
        .existing_project_slot(&folders[0], T)
        .expect("reloads");
    let gist = store.with_graph(&slot, |g| g.nodes.get("mark").map(|n| n.gist().to_string()));
    assert_eq!(gist.as_deref(), Some("Project number 0"));
    drop(slot);
    // An edge to a node of another project survives both being unloaded: the load-time
    // cleanup (core.md §2.7a) knows the unloaded graph's nodes.
    put(
        &store,
        Level::Project,
        Some(&folders[1]),
        "only-in-one",
        "A node of project 1",
    );
    let in_zero = Target {
        level: Level::Project,
        session: None,
        project_path: Some(&folders[0]),
    };
    store
        .put_edge(in_zero, "mark", "only-in-one", "uses", None, T)
        .expect("edge");
    for p in &folders[2..] {
        store.existing_project_slot(p, T).expect("load");
    }
    let slot = store
        .existing_project_slot(&folders[0], T)
        .expect("reloads");
    let kept = store.with_graph(&slot, |g| g.edges.keys().any(|k| k.to() == "only-in-one"));
    assert!(kept, "the cross-project edge was dropped at reload");
    drop(slot);
    // The tick unloads what has been idle long enough.
    store.tick(T + kg_core::store::IDLE_UNLOAD_SECS + 1.0);
    assert_eq!(store.loaded_graph_count(), 1, "idle projects unloaded");
}

/// A derived name (`<name>-<hash>`) can be another project's folder name. Today's
/// main gave project B the file of project D = `~/proj-<hash of B>`; B's writes then
/// vanished at D's next save.
#[test]
fn a_derived_slug_never_takes_another_projects_graph() {
    let home = TempHome::new();
    let b = home.path.join("b/proj").to_string_lossy().into_owned();
    let hash = {
        // The first derived name of B, computed the way the store does (FNV-1a).
        let h = b.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
            (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{:08x}", h as u32)
    };
    let d = project_folder(&home, &format!("proj-{hash}"));
    let a = project_folder(&home, "a/proj");
    project_folder(&home, "b/proj");
    {
        let store = open_store(&home, T);
        put(&store, Level::Project, Some(&d), "d-node", "Written to D");
        put(&store, Level::Project, Some(&a), "a-node", "Written to A");
        put(&store, Level::Project, Some(&b), "b-node", "Written to B");
        let slot_b = store.existing_project_slot(&b, T).expect("B");
        let slot_d = store.existing_project_slot(&d, T).expect("D");
        assert_ne!(slot_b.path, slot_d.path, "B and D share a file");
        assert!(!store.with_graph(&slot_b, |g| g.nodes.contains_key("d-node")));
        put(
            &store,
            Level::Project,
            Some(&d),
            "d-node-2",
            "D saves again",
        );
    }
    // After a restart, in any order of first use, each finds its own graph again.
    for order in [[&b, &d], [&d, &b]] {
        let store = open_store(&home, T);
        for p in order {
            store.existing_project_slot(p, T).expect("project");
        }
        let ids = |p: &str| {
            let slot = store.existing_project_slot(p, T).expect("project");
            store.with_graph(&slot, |g| g.nodes.keys().cloned().collect::<Vec<_>>())
        };
        assert_eq!(ids(&b), ["b-node"]);
        assert_eq!(ids(&d), ["d-node", "d-node-2"]);
    }
}

/// Session ids are checked where they enter: a made-up id (of any length) neither
/// creates a record nor gets "Internal error".
#[test]
fn made_up_session_ids_are_refused_without_a_trace() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let huge = "x".repeat(1 << 20);
    for sid in [huge.as_str(), "not-hex!", "deadbeef"] {
        let err = store.count_op(sid, T).expect_err("refused");
        let text = err.to_string();
        assert!(err.is_domain(), "{text}");
        assert!(text.contains("kg_read(cwd="), "says how to get one: {text}");
        assert!(text.len() < 400, "the id is cut: {} bytes", text.len());
        assert!(store.sync(sid, T).is_err());
    }
    assert_eq!(store.session_count(), 0, "no record was created");
    let answer = kg_search(&store, "anything", Some("deadbeef"), T);
    assert!(answer.is_error && answer.text.starts_with("Error: Unknown session: deadbeef."));
}

/// Gists are one line of bounded size; notes and touches are bounded the same way.
#[test]
fn text_fields_are_bounded_with_one_message_for_every_route() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let user = Target {
        level: Level::User,
        session: None,
        project_path: None,
    };
    let refused = |gist: &str| match store.put_node(user, "n", gist, None, None, T) {
        Err(StoreError::Invalid(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(
        refused(&"g".repeat(1_000_001))
            .starts_with("Gist is 1000001 characters; the limit is 1000.")
    );
    assert!(refused("   ").starts_with("Gist is empty"));
    let put = store
        .put_node(user, "n", "first line\nsecond line", None, None, T)
        .expect("flattened");
    assert_eq!(put.node["gist"], "first line second line");
    let notes = vec!["n".repeat(2_001)];
    let err = store.put_node(user, "n", "ok", Some(notes.clone()), None, T);
    assert!(
        matches!(err, Err(StoreError::Invalid(m)) if m.starts_with("Note 1 is 2001 characters"))
    );
    let err = store.put_edge(user, "a", "b", "uses", Some(notes), T);
    assert!(
        matches!(err, Err(StoreError::Invalid(m)) if m.starts_with("Note 1 is 2001 characters"))
    );
    let gist = store.with_graph(store.user_slot(), |g| {
        g.nodes.get("n").map(|n| n.gist().to_string())
    });
    assert_eq!(
        gist.as_deref(),
        Some("first line second line"),
        "refusals changed nothing"
    );
}
