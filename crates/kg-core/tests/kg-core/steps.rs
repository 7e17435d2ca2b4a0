//! The graph view's steps: a dry run names exactly what the commit then moves, and
//! undo puts the graph file back byte for byte, the re-balance included.

use kg_core::{Action, Level, Outcome, Store, StoreError, Target};
use kg_test_support::{T, TempHome, open_store};
use std::fs;

const DAY: f64 = 86_400.0;

fn user() -> Target<'static> {
    Target {
        level: Level::User,
        session: None,
        project_path: None,
    }
}

fn put(id: &str, chars: usize) -> Action {
    Action::PutNode {
        id: id.into(),
        gist: format!("{id} is the insight numbered by its id, padded ")
            .chars()
            .chain(std::iter::repeat('x'))
            .take(chars)
            .collect(),
        notes: None,
        touches: None,
        written_ts: None,
    }
}

/// A user level at its budget: 80 nodes written ten days ago, in a chain of edges,
/// with those that do not fit archived by the maintenance tick (at `T` they are out
/// of their grace period).
fn full_level() -> (TempHome, Store) {
    let home = TempHome::new();
    let store = open_store(&home, T - 10.0 * DAY);
    for i in 0..80 {
        let id = format!("topic-{i:02}");
        let Action::PutNode { gist, .. } = put(&id, 240) else {
            unreachable!()
        };
        let at = T - 10.0 * DAY + f64::from(i);
        store
            .put_node(user(), &id, &gist, None, None, at)
            .expect("put");
        if i > 0 {
            let prev = format!("topic-{:02}", i - 1);
            store
                .put_edge(user(), &prev, &id, "relates", None, at)
                .expect("edge");
        }
    }
    store.tick(T);
    let chars = store.with_graph(store.user_slot(), kg_core::render::level_chars);
    assert!(
        chars > 14_000,
        "the level starts near its budget ({chars} chars)"
    );
    assert!(
        !archived_ids(&store).is_empty(),
        "the tick archived some nodes"
    );
    (home, store)
}

fn user_file(home: &TempHome) -> Vec<u8> {
    fs::read(home.storage().join("user.json")).expect("user.json")
}

fn archived_ids(store: &Store) -> Vec<String> {
    store.with_graph(store.user_slot(), |g| {
        g.nodes
            .iter()
            .filter(|(_, n)| n.tier() == kg_core::Tier::Archived)
            .map(|(id, _)| id.clone())
            .collect()
    })
}

/// New nodes enough to take the level over its budget, one archived node promoted,
/// and one active node deleted.
fn overflowing_step(store: &Store) -> Vec<Action> {
    let mut actions: Vec<Action> = (0..12).map(|i| put(&format!("new-{i:02}"), 290)).collect();
    let archived = archived_ids(store);
    let promoted = &archived[0];
    actions.push(Action::Promote {
        id: promoted.clone(),
    });
    actions.push(Action::DeleteNode {
        id: "topic-79".into(),
    });
    actions
}

#[test]
fn a_dry_run_names_what_the_step_then_moves_and_changes_nothing() {
    let (home, store) = full_level();
    let actions = overflowing_step(&store);
    let file_before = user_file(&home);
    let graph_before = store.with_graph(store.user_slot(), Clone::clone);
    let head = store.change_head();

    let preview = store.preview(user(), &actions, T).expect("preview");
    assert_eq!(user_file(&home), file_before, "a dry run writes nothing");
    assert!(
        store.with_graph(store.user_slot(), |g| *g == graph_before),
        "a dry run leaves the graph in memory as it was"
    );
    assert_eq!(store.change_head(), head, "a dry run announces nothing");
    assert!(!store.is_dirty(store.user_slot()));
    assert!(
        !preview.rebalanced.archived.is_empty(),
        "the step overfills the level: {preview:?}"
    );
    assert_eq!(preview.created.len(), 12);
    assert_eq!(preview.promoted.len(), 1);
    assert_eq!(preview.deleted, ["topic-79"]);

    let done = store.perform(user(), &actions, T).expect("perform");
    assert_eq!(
        done,
        Outcome {
            undo_steps: 1,
            ..preview
        },
        "the commit moves exactly what the dry run named"
    );
    assert_ne!(user_file(&home), file_before);
    for id in &done.rebalanced.archived {
        assert!(archived_ids(&store).contains(id), "{id} was archived");
    }
}

#[test]
fn undo_puts_the_file_back_byte_for_byte_re_balance_included() {
    let (home, store) = full_level();
    let actions = overflowing_step(&store);
    let file_before = user_file(&home);
    let graph_before = store.with_graph(store.user_slot(), Clone::clone);
    let done = store.perform(user(), &actions, T).expect("perform");
    assert!(!done.rebalanced.archived.is_empty());

    let undone = store.undo(user(), T + 1.0).expect("undo");
    assert_eq!(user_file(&home), file_before);
    assert!(store.with_graph(store.user_slot(), |g| *g == graph_before));
    assert_eq!(undone.undo_steps, 0);
    for id in done.rebalanced.archived.iter().chain(&done.created) {
        assert!(
            undone.nodes.contains(id),
            "{id} is among the restored nodes"
        );
    }
    // Only the nodes the step moved or wrote: none it weighed and left in their tier.
    let moved = named_by(&done);
    for id in &undone.nodes {
        assert!(
            moved.contains(id),
            "{id} is named, but the step left it as it was"
        );
    }
    // The file is what a fresh load reads, too.
    let reopened = open_store(&home, T + 2.0);
    assert!(reopened.with_graph(reopened.user_slot(), |g| g.nodes == graph_before.nodes));
}

#[test]
fn undo_walks_back_ten_steps_in_order() {
    let (home, store) = full_level();
    let mut files = Vec::new();
    for i in 0..12 {
        files.push(user_file(&home));
        let at = T + f64::from(i);
        store
            .perform(user(), &[put(&format!("step-{i:02}"), 200)], at)
            .expect("perform");
    }
    for (i, file) in files.iter().enumerate().rev().take(10) {
        store.undo(user(), T + 100.0 + i as f64).expect("undo");
        assert_eq!(&user_file(&home), file, "after undoing step {i}");
    }
}

#[test]
fn undo_refuses_when_someone_changed_what_the_step_touched() {
    let (home, store) = full_level();
    store
        .perform(user(), &[put("shared-idea", 120)], T)
        .expect("perform");
    // An agent rewrites the same node.
    store
        .put_node(
            user(),
            "shared-idea",
            "An agent's better wording",
            None,
            None,
            T + 1.0,
        )
        .expect("agent put");
    let file = user_file(&home);
    match store.undo(user(), T + 2.0) {
        Err(StoreError::CannotUndo(message)) => {
            assert!(message.contains("node 'shared-idea'"), "{message}");
            assert!(message.contains("Nothing was changed"), "{message}");
        }
        other => panic!("undo over an agent's write: {other:?}"),
    }
    assert_eq!(user_file(&home), file, "the refused undo wrote nothing");
    assert!(matches!(
        store.undo(user(), T + 3.0),
        Err(StoreError::CannotUndo(_))
    ));
}

#[test]
fn a_step_that_names_a_missing_node_changes_nothing() {
    let (home, store) = full_level();
    let file = user_file(&home);
    let actions = [
        put("would-be-new", 100),
        Action::Promote {
            id: "no-such-node".into(),
        },
    ];
    for result in [
        store.preview(user(), &actions, T),
        store.perform(user(), &actions, T),
    ] {
        assert!(
            matches!(result, Err(StoreError::NodeNotFound { ref id, .. }) if id == "no-such-node")
        );
    }
    assert_eq!(user_file(&home), file);
    assert!(store.with_graph(store.user_slot(), |g| !g.nodes.contains_key("would-be-new")));
    assert!(matches!(
        store.undo(user(), T),
        Err(StoreError::CannotUndo(_))
    ));
}

#[test]
fn a_reload_from_disk_forgets_the_steps() {
    let (_home, store) = full_level();
    store
        .perform(user(), &[put("before-reload", 120)], T)
        .expect("perform");
    store.reload(store.user_slot(), T + 1.0).expect("reload");
    assert!(matches!(
        store.undo(user(), T + 2.0),
        Err(StoreError::CannotUndo(m)) if m.starts_with("Nothing to undo")
    ));
}

// A deleted node's edges leave from several places in the edge list at once; undo
// put them back out of order (the file differed) until they were remembered last
// first.
#[test]
fn undoing_a_deletion_puts_each_edge_back_in_its_place() {
    let (home, store) = full_level();
    for to in ["topic-40", "topic-60"] {
        store
            .put_edge(user(), "topic-10", to, "relates", None, T)
            .expect("edge");
    }
    let edge_order = |store: &Store| {
        store.with_graph(store.user_slot(), |g| {
            g.edges.keys().map(ToString::to_string).collect::<Vec<_>>()
        })
    };
    let file_before = user_file(&home);
    let order_before = edge_order(&store);
    let deleted = Action::DeleteNode {
        id: "topic-10".into(),
    };
    let done = store.perform(user(), &[deleted], T).expect("delete");
    assert_eq!(done.edges_deleted, 4, "{done:?}");
    store.undo(user(), T + 1.0).expect("undo");
    assert_eq!(edge_order(&store), order_before);
    assert_eq!(user_file(&home), file_before);
}

/// Every node a step's outcome names.
fn named_by(done: &Outcome) -> Vec<String> {
    done.created
        .iter()
        .chain(&done.updated)
        .chain(&done.promoted)
        .chain(&done.rescued)
        .chain(&done.archived)
        .chain(&done.deleted)
        .chain(&done.rebalanced.archived)
        .chain(&done.rebalanced.restored)
        .chain(&done.rebalanced.orphaned)
        .cloned()
        .collect()
}
