//! Graph files that arrive by sync (`Store::take_in`): merged with what the store
//! holds, saved, and announced with their origin; refused whole when the merge fails.

use kg_core::{ChangeKind, Level, Store, StoreError, Target, parse_graph, sync_origin};
use kg_test_support::{T, TempHome, open_store};
use std::fs;

fn user() -> Target<'static> {
    Target {
        level: Level::User,
        session: None,
        project_path: None,
    }
}

fn file_text(store: &Store) -> Vec<u8> {
    fs::read(&store.user_slot().path).expect("user graph")
}

/// The graph `store` holds now with `id` added, as another machine would send it.
fn with_node(store: &Store, id: &str) -> Vec<u8> {
    let other = TempHome::new();
    fs::create_dir_all(other.storage()).expect("storage");
    fs::write(other.storage().join("user.json"), file_text(store)).expect("copy");
    let elsewhere = open_store(&other, T + 5.0);
    elsewhere
        .put_node(
            user(),
            id,
            "Arrived from another machine",
            None,
            None,
            T + 5.0,
        )
        .expect("put");
    fs::read(other.storage().join("user.json")).expect("their file")
}

/// A stand-in for the 3-way merge: ours, plus the nodes only theirs holds.
fn with_their_new_nodes(ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let mut merged = parse_graph(ours).expect("ours").graph;
    let theirs = parse_graph(theirs).expect("theirs").graph;
    for (id, node) in theirs.nodes.iter() {
        if !merged.nodes.contains_key(id) {
            merged.nodes.insert(id.clone(), node.clone());
        }
    }
    kg_core::serialize_graph(&merged, Level::User, None).into_bytes()
}

#[test]
fn what_arrives_is_merged_with_local_writes_and_logged_with_its_origin() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    store
        .put_node(
            user(),
            "shared-base",
            "Known to both machines",
            None,
            None,
            T,
        )
        .expect("put");
    let theirs = with_node(&store, "from-desktop");
    // Written here after the last commit: the merge must keep it.
    store
        .put_node(
            user(),
            "local-late",
            "Written here meanwhile",
            None,
            None,
            T + 6.0,
        )
        .expect("put");
    let head = store.change_head();
    let taken = store
        .take_in(
            "user.json",
            "origin (/srv/memory.git)",
            T + 10.0,
            |current| {
                Ok(with_their_new_nodes(
                    current.expect("the user graph exists"),
                    &theirs,
                ))
            },
        )
        .expect("taken in");
    assert!(taken.loaded);
    assert_eq!(taken.updated, vec!["from-desktop".to_string()]);
    assert!(taken.deleted.is_empty());
    let on_disk = parse_graph(&file_text(&store)).expect("saved").graph;
    for id in ["shared-base", "from-desktop", "local-late"] {
        assert!(on_disk.nodes.contains_key(id), "{id} is not on disk");
    }
    let logged = store.changes_since(head).expect("log");
    let arrived = logged
        .iter()
        .find(|c| matches!(&c.kind, ChangeKind::NodeUpdated { node } if node.get("id").and_then(|v| v.as_str()) == Some("from-desktop")))
        .expect("the arrival is logged");
    assert_eq!(
        arrived.source_session.as_deref().and_then(sync_origin),
        Some("origin (/srv/memory.git)")
    );
}

#[test]
fn a_failed_merge_or_a_result_that_does_not_parse_changes_nothing() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    store
        .put_node(user(), "stays", "Untouched by a failed sync", None, None, T)
        .expect("put");
    let before = file_text(&store);
    let head = store.change_head();
    let failed = store.take_in("user.json", "origin", T + 1.0, |_| {
        Err("the remote's file is broken".into())
    });
    assert!(
        matches!(failed, Err(StoreError::Invalid(ref m)) if m.contains("broken")),
        "{failed:?}"
    );
    let garbage = store.take_in("user.json", "origin", T + 1.0, |_| {
        Ok(b"{\"nodes\": [".to_vec())
    });
    assert!(garbage.is_err());
    let outside = store.take_in(
        "../escape/graph.json",
        "origin",
        T + 1.0,
        |_| Ok(Vec::new()),
    );
    assert!(outside.is_err());
    assert_eq!(file_text(&store), before);
    assert_eq!(store.change_head(), head, "nothing was logged");
}

#[test]
fn a_project_graph_not_in_memory_has_its_file_replaced() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let incoming = br#"{"nodes": {"billing-retries": {"id": "billing-retries", "gist": "Retries back off to one hour"}}, "edges": {}, "_meta": {"namespace": {"kind": "project"}, "project_path": "/home/ana/shop"}}"#;
    let taken = store
        .take_in("projects/shop/graph.json", "origin", T, |current| {
            assert!(current.is_none(), "no such graph here yet");
            Ok(incoming.to_vec())
        })
        .expect("taken in");
    assert!(!taken.loaded);
    assert_eq!(taken.updated, vec!["billing-retries".to_string()]);
    let written = fs::read(home.storage().join("projects/shop/graph.json")).expect("written");
    assert_eq!(written, incoming.to_vec());
}

/// The merge runs without the graph's lock: a write that lands while it runs is
/// served at once, and the merge runs again on the graph that holds it.
#[test]
fn a_write_during_the_merge_is_served_and_kept() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    store
        .put_node(
            user(),
            "before-sync",
            "Written before the sync",
            None,
            None,
            T,
        )
        .expect("put");
    let theirs = with_node(&store, "from-laptop");
    let calls = std::cell::Cell::new(0);
    let taken = store
        .take_in("user.json", "origin", T + 10.0, |current| {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                // A request in the middle of the merge: it must not wait for it.
                store
                    .put_node(
                        user(),
                        "during-sync",
                        "Written while the sync merged",
                        None,
                        None,
                        T + 9.0,
                    )
                    .expect("a write during the merge");
            }
            Ok(with_their_new_nodes(current.expect("exists"), &theirs))
        })
        .expect("taken in");
    assert_eq!(calls.get(), 2, "the merge ran again on the changed graph");
    assert_eq!(taken.updated, vec!["from-laptop".to_string()]);
    let on_disk = parse_graph(&file_text(&store)).expect("saved").graph;
    for id in ["before-sync", "during-sync", "from-laptop"] {
        assert!(on_disk.nodes.contains_key(id), "{id} is not on disk");
    }
}
