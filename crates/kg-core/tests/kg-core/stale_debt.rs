//! DEBT's stale touches follow the graph at once: a write that changes a touch, or
//! a tier move, is counted on the next DEBT without waiting for the periodic look at
//! the disk (which a write that changes no touch does not repeat).

use kg_core::{Action, Level, Store, Target};
use kg_test_support::{T, TempHome, open_store};
use std::fs;

fn user() -> Target<'static> {
    Target {
        level: Level::User,
        session: None,
        project_path: None,
    }
}

fn put(store: &Store, id: &str, touches: &[&str], at: f64) {
    let touches = touches.iter().map(|t| t.to_string()).collect();
    store
        .put_node(
            user(),
            id,
            &format!("{id} explains a file"),
            None,
            Some(touches),
            at,
        )
        .expect("put");
}

fn stale_in_debt(store: &Store, at: f64) -> usize {
    store.level_debt(store.user_slot(), at).stale_touches
}

#[test]
fn stale_touches_in_debt_follow_writes_and_tier_moves_at_once() {
    let home = TempHome::new();
    fs::create_dir_all(home.path.join("notes")).expect("folder");
    fs::write(home.path.join("notes/here.rs"), "fn main() {}\n").expect("file");
    let store = open_store(&home, T);

    put(
        &store,
        "parser-entry",
        &["~/notes/gone.rs:10-20 (parser)"],
        T,
    );
    assert_eq!(stale_in_debt(&store, T), 1, "a touch of a missing file");

    put(&store, "parser-entry", &["~/notes/here.rs"], T + 1.0);
    assert_eq!(
        stale_in_debt(&store, T + 1.0),
        0,
        "the touch now names a file that is there"
    );

    put(&store, "lexer-entry", &["~/notes/lexer.rs"], T + 2.0);
    assert_eq!(
        stale_in_debt(&store, T + 2.0),
        1,
        "a new node's missing file"
    );

    store
        .perform(
            user(),
            &[Action::Archive {
                id: "lexer-entry".into(),
            }],
            T + 3.0,
        )
        .expect("archive");
    assert_eq!(
        stale_in_debt(&store, T + 3.0),
        0,
        "archived nodes' touches are not counted"
    );

    store
        .perform(
            user(),
            &[Action::Promote {
                id: "lexer-entry".into(),
            }],
            T + 4.0,
        )
        .expect("promote");
    assert_eq!(stale_in_debt(&store, T + 4.0), 1, "back in the active tier");
}

/// A full read looks at the disk every time: a file that goes or comes back while
/// the graph stays as it was is counted on the next read, and a look that finds
/// what the last one found answers the same list.
#[test]
fn a_fresh_look_follows_the_disk_while_the_graph_stays() {
    let home = TempHome::new();
    fs::create_dir_all(home.path.join("notes")).expect("folder");
    let file = home.path.join("notes/here.rs");
    fs::write(&file, "fn main() {}\n").expect("file");
    let store = open_store(&home, T);
    put(&store, "parser-entry", &["~/notes/here.rs:3 (main)"], T);
    let fresh = |at: f64| store.level_debt_now(store.user_slot(), at).stale_touches;
    assert_eq!(fresh(T), 0, "the file is there");

    fs::remove_file(&file).expect("remove");
    assert_eq!(fresh(T + 1.0), 1, "the file went");
    assert_eq!(fresh(T + 2.0), 1, "and is still gone");
    assert_eq!(store.stale_touches(store.user_slot()).len(), 1);

    fs::write(&file, "fn main() {}\n").expect("file again");
    assert_eq!(fresh(T + 3.0), 0, "the file came back");
}
