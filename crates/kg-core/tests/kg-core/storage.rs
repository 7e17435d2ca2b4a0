//! Bad files, bad identifiers, bad paths: refused or quarantined, nothing lost.

use kg_core::store::SyncItem;
use kg_core::{ChangeKind, Level, StoreError, Target};
use kg_test_support::{T, TempHome, open_store};
use std::fs;

const GOOD: &str = r#"{"nodes": {"kept": {"id": "kept", "gist": "from the backup"}}, "edges": {}}"#;

fn user() -> Target<'static> {
    Target {
        level: Level::User,
        session: None,
        project_path: None,
    }
}

#[test]
fn corrupt_graph_files_are_quarantined_and_prev_used() {
    let cases: [(&str, &[u8]); 5] = [
        ("truncated", br#"{"nodes": {"a": {"id": "a", "gi"#),
        ("wrong types", br#"{"nodes": {"a": 5}, "edges": {}}"#),
        ("array", b"[1, 2, 3]"),
        (
            "invalid utf-8",
            b"{\"nodes\": {\"a\": {\"gist\": \"\xc3\x28\"}}}",
        ),
        (
            "edge without rel",
            br#"{"edges": {"k": {"from": "a", "to": "b"}}}"#,
        ),
    ];
    for (with_prev, (name, bytes)) in [true, false]
        .into_iter()
        .flat_map(|p| cases.iter().map(move |c| (p, c)))
    {
        let home = TempHome::new();
        fs::create_dir_all(home.storage()).expect("storage");
        let file = home.storage().join("user.json");
        fs::write(&file, bytes).expect("write");
        if with_prev {
            fs::write(home.storage().join("user.prev"), GOOD).expect("prev");
        }
        let store = open_store(&home, T);
        let quarantined = store
            .changes_since(0)
            .expect("log")
            .into_iter()
            .find_map(|c| match c.kind {
                ChangeKind::Quarantined {
                    moved_to,
                    recovered_from_prev,
                    ..
                } => Some((moved_to, recovered_from_prev)),
                _ => None,
            });
        let (moved_to, recovered) =
            quarantined.unwrap_or_else(|| panic!("{name}: no quarantine reported"));
        assert_eq!(
            fs::read(&moved_to).expect("quarantined bytes"),
            *bytes,
            "{name}: bytes intact"
        );
        assert!(
            moved_to.to_string_lossy().contains("user.json.corrupt-"),
            "{name}"
        );
        assert_eq!(recovered, with_prev, "{name}");
        let nodes = store.with_graph(store.user_slot(), |g| g.nodes.len());
        assert_eq!(
            nodes,
            usize::from(with_prev),
            "{name}: backup content loaded"
        );
        // The next save never turns the corrupt bytes (or nothing) into the backup.
        store
            .put_node(user(), "fresh", "after recovery", None, None, T)
            .expect("write");
        store
            .put_node(user(), "fresh", "again", None, None, T + 1.0)
            .expect("write");
        let prev = fs::read_to_string(home.storage().join("user.prev")).expect("prev exists");
        assert!(
            kg_core::persist::parse_graph(prev.as_bytes()).is_ok(),
            "{name}: .prev stays valid"
        );
        assert_eq!(
            fs::read(&moved_to).expect("still there"),
            *bytes,
            "{name}: never overwritten"
        );
    }
}

/// A graph recovered from its backup is on disk at once: a server stopped before its
/// next write (a crash, a quit) must not come back to a missing file and an empty graph
/// (the backup is read only for a damaged file, not a missing one).
#[test]
fn a_graph_recovered_from_its_backup_is_saved_at_once() {
    let home = TempHome::new();
    fs::create_dir_all(home.storage()).expect("storage");
    fs::write(home.storage().join("user.json"), b"{\"nodes\": {").expect("damaged");
    fs::write(home.storage().join("user.prev"), GOOD).expect("prev");
    let store = open_store(&home, T);
    assert_eq!(store.with_graph(store.user_slot(), |g| g.nodes.len()), 1);
    let on_disk = fs::read(home.storage().join("user.json")).expect("saved at once");
    let saved = kg_core::persist::parse_graph(&on_disk).expect("parses");
    assert!(saved.graph.nodes.contains_key("kept"), "the backup's node");
    drop(store); // no write, no flush: as if the server were killed now
    let again = open_store(&home, T + 1.0);
    assert_eq!(
        again.with_graph(again.user_slot(), |g| g
            .nodes
            .keys()
            .cloned()
            .collect::<Vec<_>>()),
        ["kept"]
    );
}

#[test]
fn a_corrupt_project_graph_is_quarantined_on_first_use() {
    let home = TempHome::new();
    let project = home.path.join("src/app");
    fs::create_dir_all(&project).expect("project");
    let dir = home.storage().join("projects/app");
    fs::create_dir_all(&dir).expect("dir");
    fs::write(dir.join("graph.json"), b"{\"nodes\": ").expect("write");
    let store = open_store(&home, T);
    let root = store
        .resolve_root(&project.to_string_lossy())
        .expect("root");
    let slot = store.project_slot(&root, T).expect("loads empty");
    assert_eq!(store.with_graph(&slot, |g| g.nodes.len()), 0);
    let moved: Vec<_> = fs::read_dir(&dir)
        .expect("ls")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("graph.json.corrupt-")
        })
        .collect();
    assert_eq!(moved.len(), 1);
}

#[test]
fn bad_identifiers_and_paths_are_refused_and_nothing_is_written() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let graph = home.storage().join("user.json");
    for bad in [
        "<script>alert(1)</script>",
        "has space",
        "a/b",
        "-x",
        "",
        "x\n",
    ] {
        let err = store
            .put_node(user(), bad, "g", None, None, T)
            .expect_err(bad);
        assert!(matches!(err, StoreError::Invalid(_)), "{bad}");
        assert!(err.to_string().contains("use letters, digits"), "{err}");
    }
    let err = store
        .put_edge(user(), "a", "x' onerror='1", "rel", None, T)
        .expect_err("ref");
    assert!(err.to_string().contains("'/', '~'"), "{err}");
    assert!(
        store
            .put_edge(user(), "a", "b", "has space", None, T)
            .is_err()
    );
    assert!(!graph.exists(), "nothing was written");

    let outside = |path: &str| {
        let t = Target {
            level: Level::Project,
            session: None,
            project_path: Some(path),
        };
        store.put_node(t, "ok-id", "g", None, None, T)
    };
    for path in ["/etc", "/", &format!("{}/../..", home.path.display())] {
        let err = outside(path).expect_err(path);
        assert!(
            err.to_string()
                .starts_with("Project path must be within home directory"),
            "{err}"
        );
    }
    fs::create_dir_all(home.path.join("-dash")).expect("dir");
    let err = outside(&home.path.join("-dash").to_string_lossy()).expect_err("slug");
    assert_eq!(err.to_string(), "Invalid slug: '-dash'");
    assert!(
        !home.storage().join("projects").exists(),
        "no project folder was created"
    );
    assert!(store.register_session(Some("/etc"), None, T).is_err());
}

#[test]
fn namesake_projects_keep_separate_files() {
    let home = TempHome::new();
    let (a, b) = (home.path.join("work/api"), home.path.join("oss/api"));
    fs::create_dir_all(&a).expect("a");
    fs::create_dir_all(&b).expect("b");
    {
        let store = open_store(&home, T);
        for (dir, gist) in [(&a, "work api"), (&b, "oss api")] {
            let path = dir.to_string_lossy().into_owned();
            let t = Target {
                level: Level::Project,
                session: None,
                project_path: Some(&path),
            };
            store
                .put_node(t, "about", gist, None, None, T)
                .expect("write");
        }
    }
    let store = open_store(&home, T);
    for (dir, gist) in [(&b, "oss api"), (&a, "work api")] {
        let root = store.resolve_root(&dir.to_string_lossy()).expect("root");
        let slot = store.project_slot(&root, T).expect("load");
        let got = store.with_graph(&slot, |g| g.nodes["about"].gist().to_string());
        assert_eq!(got, gist, "{} found its own graph again", dir.display());
    }
}

#[test]
fn sync_reports_exactly_the_other_sessions_changes() {
    let home = TempHome::new();
    let project = home.path.join("p");
    fs::create_dir_all(&project).expect("project");
    let store = open_store(&home, T);
    let path = project.to_string_lossy().into_owned();
    let a = store.register_session(Some(&path), None, T).expect("a");
    let b = store.register_session(Some(&path), None, T).expect("b");
    let put = |sid: &str, id: &str, now: f64| {
        let t = Target {
            level: Level::Project,
            session: Some(sid),
            project_path: None,
        };
        store
            .put_node(t, id, &format!("gist of {id}"), None, None, now)
            .expect("put");
    };
    // Interleaved, some in the same second: a write by A between B's writes must not
    // hide them from A's next sync (the reference's watermark bug).
    put(&a, "a1", T + 1.0);
    put(&b, "b1", T + 2.0);
    put(&a, "a2", T + 3.0);
    put(&b, "b2", T + 3.0);
    put(&a, "a3", T + 3.0);
    let ids = |items: &[SyncItem]| -> Vec<String> {
        items
            .iter()
            .map(|i| match i {
                SyncItem::Node { id, .. } => id.clone(),
                SyncItem::Edge(k) => k.to_string(),
                SyncItem::Deleted(id) => format!("-{id}"),
            })
            .collect()
    };
    let for_a = store.sync(&a, T + 3.0).expect("sync a");
    assert_eq!(ids(&for_a.project), ["b1", "b2"]);
    let for_b = store.sync(&b, T + 3.0).expect("sync b");
    assert_eq!(ids(&for_b.project), ["a1", "a2", "a3"]);
    put(&b, "b3", T + 3.0);
    assert_eq!(
        ids(&store.sync(&a, T + 3.0).expect("again").project),
        ["b3"]
    );
    assert!(store.sync(&b, T + 4.0).expect("nothing").project.is_empty());
}

#[test]
fn sync_reports_other_sessions_deletes_under_our_policy_only() {
    for policy in [kg_core::Policy::Ours, kg_core::Policy::Reference] {
        let home = TempHome::new();
        let store = kg_test_support::open_store_with(&home, T, policy);
        let a = store.register_session(None, None, T).expect("a");
        let b = store.register_session(None, None, T).expect("b");
        fn user(sid: &str) -> Target<'_> {
            Target::session(Level::User, sid)
        }
        for id in ["kept", "dropped", "back"] {
            store
                .put_node(user(&a), id, &format!("gist of {id}"), None, None, T)
                .expect("put");
        }
        store.sync(&b, T).expect("b catches up");
        store
            .delete_node(Some(user(&a)), Some(&a), "dropped", T + 1.0)
            .expect("delete");
        store
            .delete_node(Some(user(&a)), Some(&a), "back", T + 1.0)
            .expect("delete");
        store
            .put_node(user(&a), "back", "written again", None, None, T + 2.0)
            .expect("put again");
        let text = kg_core::kg_sync(&store, &b, T + 3.0).text;
        match policy {
            kg_core::Policy::Ours => {
                assert!(
                    text.contains("User: 2 node changes, 0 edge changes"),
                    "{text}"
                );
                assert!(text.contains("  node back: written again"), "{text}");
                assert!(text.contains("  node dropped: deleted"), "{text}");
                assert!(!text.contains("kept"), "{text}");
            }
            kg_core::Policy::Reference => {
                assert!(text.contains("User: 1 node changes"), "{text}");
                assert!(!text.contains("dropped"), "{text}");
            }
        }
    }
}

/// The change log is bounded: a session whose last sync it no longer reaches still
/// hears what changed (by the versions' timestamps), and, under our policy, is told
/// that the list cannot name deletions and how to see the whole memory again.
#[test]
fn a_session_the_log_left_behind_is_told_so() {
    for policy in [kg_core::Policy::Ours, kg_core::Policy::Reference] {
        let home = TempHome::new();
        let store = kg_test_support::open_store_with(&home, T, policy);
        store.bound_changes(kg_core::change::LogBounds {
            capacity: 5,
            bytes: 1 << 20,
            floor: 5,
        });
        let a = store.register_session(None, None, T).expect("a");
        let b = store.register_session(None, None, T).expect("b");
        fn user(sid: &str) -> Target<'_> {
            Target::session(Level::User, sid)
        }
        store
            .put_node(user(&a), "first", "written before b synced", None, None, T)
            .expect("put");
        store.sync(&b, T).expect("b catches up");
        let quiet = kg_core::kg_sync(&store, &b, T + 1.0).text;
        assert_eq!(quiet, "No updates from other sessions");
        // Seven changes by a: the log keeps five, so b's cursor is gone.
        for i in 0..7 {
            store
                .put_node(user(&a), &format!("n{i}"), "later", None, None, T + 2.0)
                .expect("put");
        }
        let text = kg_core::kg_sync(&store, &b, T + 3.0).text;
        assert!(text.contains("User: 7 node changes"), "{text}");
        let told = text.contains("older than what this server still remembers");
        assert_eq!(told, policy == kg_core::Policy::Ours, "{policy:?}: {text}");
        if told {
            assert!(text.contains("kg_read(session_id)"), "{text}");
        }
        // Synced again, b is back within the log: exact, and nothing to tell.
        store
            .put_node(user(&a), "after", "one more", None, None, T + 4.0)
            .expect("put");
        let text = kg_core::kg_sync(&store, &b, T + 5.0).text;
        assert!(text.contains("User: 1 node changes"), "{text}");
        assert!(!text.contains("older than"), "{text}");
    }
}

#[test]
fn rejected_likes_keep_their_first_rejection_order() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let sid = store.register_session(None, None, T).expect("session");
    let ids: Vec<String> = ["missing-a", "missing-b", "missing-a"]
        .map(String::from)
        .to_vec();
    let likes = store.useful(&sid, &ids, T).expect("likes");
    let order: Vec<&str> = likes.rejected.keys().map(String::as_str).collect();
    assert_eq!(order, ["missing-a", "missing-b"]);
}

#[test]
fn debt_verdict_changes_reach_the_change_log() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let head = store.change_head();
    // Busy (reads on four days), never maintained, every gist oversized and unconnected.
    for day in 0..4 {
        let now = T + day as f64 * 86_400.0;
        let id = format!("n{day}");
        store
            .put_node(user(), &id, &"x".repeat(400), None, None, now)
            .expect("put");
        store.read_node(None, None, &id, now).expect("read");
    }
    let verdicts: Vec<(Option<String>, String)> = store
        .changes_since(head)
        .expect("log")
        .into_iter()
        .filter_map(|c| match c.kind {
            ChangeKind::DebtChanged { from, to, .. } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(
        verdicts.last().map(|v| v.1.as_str()),
        Some("HIGH"),
        "{verdicts:?}"
    );
    // A maintenance stamp pays the debt down, and that is news too.
    store
        .progress_set(
            None,
            "maintain",
            serde_json::json!({"last_ts": T + 3.0 * 86_400.0}),
            Level::User,
            T + 3.0 * 86_400.0,
        )
        .expect("stamp");
    let last = store
        .changes_since(head)
        .expect("log")
        .into_iter()
        .rev()
        .find_map(|c| match c.kind {
            ChangeKind::DebtChanged { to, .. } => Some(to),
            _ => None,
        });
    assert_eq!(last.as_deref(), Some("LOW"));
}

/// Many threads opening project graphs for the first time at once. A thread that
/// found a graph another thread had just added but not yet loaded used to keep the
/// project map's read lock while loading it; loading reads the map again, and with a
/// third thread waiting to add a project in between, the three deadlocked (seen as a
/// server that would not stop). The window is small, so the test makes many rounds of
/// first loads; before the fix it deadlocked within its first thousand rounds.
#[test]
fn first_loads_of_many_projects_at_once_do_not_deadlock() {
    use std::sync::{Arc, Barrier, mpsc};
    const THREADS: usize = 12;
    const PROJECTS: usize = 16;
    const ROUNDS: usize = 1000;
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        for round in 0..ROUNDS {
            let home = TempHome::new();
            let roots: Vec<String> = (0..PROJECTS)
                .map(|p| {
                    let dir = home.path.join(format!("src/p{p}"));
                    fs::create_dir_all(&dir).expect("project folder");
                    let root = dir.to_string_lossy().into_owned();
                    let id = format!("p{p}-insight");
                    let graph = serde_json::json!({
                        "nodes": {&id: {"id": &id, "gist": format!("insight of project {p}")}},
                        "edges": {},
                        "_meta": {"project_path": root, "namespace": {"kind": "project", "owner": null}},
                    });
                    let file = home.storage().join(format!("projects/p{p}/graph.json"));
                    fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
                    fs::write(&file, graph.to_string()).expect("graph file");
                    root
                })
                .collect();
            let store = Arc::new(open_store(&home, T));
            let start = Arc::new(Barrier::new(THREADS));
            let threads: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (store, roots, start) = (store.clone(), roots.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        // Each thread walks the projects from a different start and
                        // stride, so first loads and lookups of half-loaded graphs mix.
                        for k in 0..PROJECTS {
                            let root = &roots[(k * (2 * t + 1) + round + t) % PROJECTS];
                            store.project_slot(root, T).expect("project graph opens");
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("no panic");
            }
            assert_eq!(store.loaded_graph_count(), PROJECTS + 1);
            let slot = store.project_slot(&roots[3], T).expect("project graph");
            assert_eq!(store.snapshot(&slot).0.len(), 1, "the graph's node loaded");
        }
        let _ = done.send(());
    });
    // A deadlock shows as threads that never finish; say so instead of hanging CI.
    if finished
        .recv_timeout(std::time::Duration::from_secs(120))
        .is_err()
    {
        panic!("project graph loads deadlocked (no progress in 120 s)");
    }
    worker.join().expect("no panic");
}

#[test]
fn temp_files_left_by_a_crash_are_swept_when_a_project_loads() {
    let home = TempHome::new();
    let project = home.path.join("svc");
    fs::create_dir_all(&project).expect("project");
    let path = project.to_string_lossy().into_owned();
    let target = Target {
        level: Level::Project,
        session: None,
        project_path: Some(&path),
    };
    open_store(&home, T)
        .put_node(target, "about", "the service", None, None, T)
        .expect("write");
    let folder = home.storage().join("projects/svc");
    let stale = [".graph.json.x1Y2z3.tmp", ".tool_events.json.a4B5c6.tmp"];
    for name in stale {
        fs::write(folder.join(name), b"{\"half\": ").expect("stale temp");
    }
    fs::write(folder.join("tool_events.json"), b"{\"events\": {}}").expect("events");
    let store = open_store(&home, T);
    let root = store.resolve_root(&path).expect("root");
    store.project_slot(&root, T).expect("load");
    for name in stale {
        assert!(!folder.join(name).exists(), "{name} was left behind");
    }
    assert!(
        folder.join("tool_events.json").exists(),
        "the real file stays"
    );
    assert!(folder.join("graph.json").exists(), "the real file stays");
}
