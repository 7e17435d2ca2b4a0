//! Locked nodes and compaction (since-0.9.30.md §9): a locked node is never archived,
//! one found archived comes back at the next compaction, and its `(locked)` line is
//! charged like any other text, so the level's gauge stays true.

use kg_core::{Action, Level, Store, Target, Tier, level_budget};
use kg_test_support::{T, TempHome, open_store};

const DAY: f64 = 86_400.0;

fn user() -> Target<'static> {
    Target {
        level: Level::User,
        session: None,
        project_path: None,
    }
}

fn tier(store: &Store, id: &str) -> Tier {
    store.with_graph(store.user_slot(), |g| g.nodes[id].tier())
}

#[test]
fn compaction_never_archives_a_locked_node_and_brings_one_back() {
    let home = TempHome::new();
    let store = open_store(&home, T - 30.0 * DAY);
    // Twice the level's budget, written a month ago: compaction must archive half.
    for i in 0..140 {
        let gist = format!(
            "insight {i:03} padded to a realistic length {}",
            "x".repeat(200)
        );
        store
            .put_node(
                user(),
                &format!("topic-{i:03}"),
                &gist,
                None,
                None,
                T - 30.0 * DAY + f64::from(i),
            )
            .expect("put");
    }
    for id in ["topic-000", "topic-001"] {
        store
            .set_locked(user(), id, true, T - 20.0 * DAY)
            .expect("lock");
    }
    // An archived node a person locks comes back to the active tier with it.
    store
        .perform(
            user(),
            &[Action::Archive {
                id: "topic-002".into(),
            }],
            T - 20.0 * DAY,
        )
        .expect("archive");
    assert_eq!(tier(&store, "topic-002"), Tier::Archived);
    store
        .set_locked(user(), "topic-002", true, T - 20.0 * DAY)
        .expect("lock");
    assert_eq!(tier(&store, "topic-002"), Tier::Active);
    store.tick(T);
    for id in ["topic-000", "topic-001", "topic-002"] {
        assert_eq!(tier(&store, id), Tier::Active, "{id}");
    }
    let archived = store.with_graph(store.user_slot(), |g| g.ids_in_tier(Tier::Archived).len());
    assert!(archived > 40, "the others made room: {archived} archived");
    let budget = store.with_graph(store.user_slot(), |g| {
        level_budget(g, store.config().budgets.level)
    });
    assert!(budget.chars <= budget.budget, "{budget:?}");

    // A hand edit that archives a locked node is undone by the next compaction.
    let path = home.storage().join("user.json");
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("file")).expect("json");
    file["nodes"]["topic-001"]["_archived"] = serde_json::json!(true);
    std::fs::write(&path, file.to_string()).expect("hand edit");
    store.reload(store.user_slot(), T + 1.0).expect("reload");
    assert_eq!(tier(&store, "topic-001"), Tier::Archived);
    store.tick(T + 2.0);
    assert_eq!(tier(&store, "topic-001"), Tier::Active);
}
