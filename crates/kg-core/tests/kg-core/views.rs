//! Who wrote each node and when (`_written`), and when each session last saw each node
//! (`seen_at`) and read it in full (`read_at`), on every route that shows a node: what
//! the stale-write guard and cross-session push stand on (since-0.9.30.md §4, §10).

use kg_core::ambient::{BootstrapRequest, session_bootstrap};
use kg_core::tools::{ReadArgs, kg_read, kg_search};
use kg_core::{Action, Level, Store, Target, Tier, View, WriteStamp, field};
use kg_test_support::{T, TempHome, open_store};
use serde_json::json;

fn user(session: Option<&str>) -> Target<'_> {
    Target {
        level: Level::User,
        session,
        project_path: None,
    }
}

fn stamp(store: &Store, id: &str) -> Option<WriteStamp> {
    store.with_graph(store.user_slot(), |g| {
        g.nodes.get(id).and_then(|n| n.written())
    })
}

fn views(store: &Store, sid: &str, id: &str) -> (Option<f64>, Option<f64>) {
    let record = store.session(sid).expect("session");
    (record.seen_at(id), record.read_at(id))
}

fn project(home: &TempHome) -> String {
    let folder = home.path.join("app");
    std::fs::create_dir_all(&folder).expect("project folder");
    folder.to_string_lossy().into_owned()
}

#[test]
fn every_content_write_is_stamped_with_its_writer_and_nothing_else_is() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let sid = store.register_session(None, None, T).expect("session");
    store
        .put_node(
            user(Some(&sid)),
            "retry-policy",
            "Retry twice",
            None,
            None,
            T + 1.0,
        )
        .expect("put");
    let first = stamp(&store, "retry-policy").expect("stamped");
    assert_eq!(
        (first.ts, first.by.as_deref()),
        (T + 1.0, Some(sid.as_str()))
    );
    // The same content again changes nothing, so the stamp stays.
    store
        .put_node(
            user(Some(&sid)),
            "retry-policy",
            "Retry twice",
            None,
            None,
            T + 2.0,
        )
        .expect("re-put");
    assert_eq!(stamp(&store, "retry-policy"), Some(first.clone()));
    // A person's write (no session; or the graph view's connection id, which is no
    // session) is stamped with no writer.
    store
        .put_node(
            user(None),
            "retry-policy",
            "Retry three times",
            None,
            None,
            T + 3.0,
        )
        .expect("rest put");
    assert_eq!(
        stamp(&store, "retry-policy"),
        Some(WriteStamp {
            ts: T + 3.0,
            by: None
        })
    );
    let connection = store.connection_id();
    let edit = Action::PutNode {
        id: "retry-policy".into(),
        gist: "Retry three times".into(),
        notes: Some(vec!["after a 503".into()]),
        touches: None,
        written_ts: None,
    };
    store
        .perform(user(Some(&connection)), &[edit], T + 4.0)
        .expect("view step");
    assert_eq!(
        stamp(&store, "retry-policy"),
        Some(WriteStamp {
            ts: T + 4.0,
            by: None
        })
    );
    // Endorsements, read stamps and promotions are not content.
    store
        .useful(&sid, &["retry-policy".into()], T + 5.0)
        .expect("like");
    let archive = Action::Archive {
        id: "retry-policy".into(),
    };
    store
        .perform(user(None), &[archive], T + 6.0)
        .expect("archive");
    store
        .read_node(Some(user(Some(&sid))), Some(&sid), "retry-policy", T + 7.0)
        .expect("read promotes");
    let tier = store.with_graph(store.user_slot(), |g| g.nodes["retry-policy"].tier());
    assert_eq!(tier, Tier::Active);
    assert_eq!(
        stamp(&store, "retry-policy"),
        Some(WriteStamp {
            ts: T + 4.0,
            by: None
        })
    );
    // The stamp is in the file, as the reference 0.17 writes it.
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(home.storage().join("user.json")).expect("file"),
    )
    .expect("json");
    assert_eq!(
        file["nodes"]["retry-policy"][field::WRITTEN],
        json!({"ts": T + 4.0, "by": null})
    );
}

#[test]
fn stamps_and_view_times_never_tie_even_on_a_frozen_clock() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let times: Vec<f64> = (0..1_000).map(|_| store.event_ts(T)).collect();
    assert_eq!(times[0], T);
    assert!(times.windows(2).all(|w| w[0] < w[1]));
    // A clock that moves on is followed as it is.
    assert_eq!(store.event_ts(T + 10.0), T + 10.0);
}

#[test]
fn every_route_that_shows_a_node_records_when() {
    let home = TempHome::new();
    let cwd = project(&home);
    let store = open_store(&home, T);
    let writer = store.register_session(None, None, T).expect("writer");
    for (i, id) in [
        "zephyr-widget-css",
        "quokka-shard-rebalance",
        "ledger-close",
    ]
    .iter()
    .enumerate()
    {
        store
            .put_node(
                user(Some(&writer)),
                id,
                &format!("{id} gist that says something rare about {id}"),
                Some(vec![format!("note on {id}")]),
                None,
                T + i as f64,
            )
            .expect("put");
    }
    // The session's own write: seen and read, at the write's own stamp.
    let own = stamp(&store, "ledger-close").expect("stamped").ts;
    assert_eq!(
        views(&store, &writer, "ledger-close"),
        (Some(own), Some(own))
    );

    // Preload: the gists it shows are seen, not read.
    let request = BootstrapRequest {
        project_path: cwd.clone(),
        claude_session_id: Some("cc-views-1".into()),
        source: Some("startup".into()),
        transcript_path: None,
    };
    let boot = session_bootstrap(&store, &request, kg_core::PreloadHeader::Standard, T + 10.0)
        .expect("bootstrap");
    let sid = boot.session_id;
    let (seen, read) = views(&store, &sid, "zephyr-widget-css");
    assert!(seen.is_some_and(|at| at >= T + 10.0), "{seen:?}");
    assert_eq!(read, None);

    // Search: each hit shown is seen again, later.
    let before = seen.unwrap_or_default();
    let found = kg_search(&store, "quokka", Some(&sid), T + 20.0);
    assert!(
        found.text.contains("quokka-shard-rebalance"),
        "{}",
        found.text
    );
    let (seen, read) = views(&store, &sid, "quokka-shard-rebalance");
    assert!(seen.is_some_and(|at| at >= T + 20.0 && at > before));
    assert_eq!(read, None);

    // A node read by id: seen and read.
    let args = ReadArgs {
        session_id: Some(sid.clone()),
        ids: Some(vec!["ledger-close".into()]),
        ..ReadArgs::default()
    };
    kg_read(&store, &args, T + 30.0);
    let (seen, read) = views(&store, &sid, "ledger-close");
    assert!(read.is_some_and(|at| at >= T + 30.0) && seen == read);

    // A full read: the gists it shows are seen (the preloaded ones were, by the
    // preload).
    let fresh = store
        .register_session(Some(&cwd), None, T + 40.0)
        .expect("fresh");
    let args = ReadArgs {
        session_id: Some(fresh.clone()),
        ..ReadArgs::default()
    };
    kg_read(&store, &args, T + 41.0);
    for id in [
        "zephyr-widget-css",
        "quokka-shard-rebalance",
        "ledger-close",
    ] {
        let (seen, read) = views(&store, &fresh, id);
        assert!(seen.is_some_and(|at| at >= T + 41.0), "{id}: {seen:?}");
        assert_eq!(read, None, "{id}");
    }

    // Prompt recall: what it injects is seen. (Under our policy a session's first
    // prompts get their recall before its full read.)
    let recaller = store
        .register_session(Some(&cwd), Some("cc-views-2"), T + 50.0)
        .expect("recaller");
    let payload = json!({
        "session_id": "cc-views-2",
        "cwd": cwd,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "the quokka shard rebalance keeps stalling",
    });
    let said = kg_core::prompt_context(
        &store,
        &kg_test_support::hook::prompt_event(&payload),
        T + 60.0,
    )
    .unwrap_or_default();
    assert!(said.contains("quokka-shard-rebalance"), "{said}");
    let (seen, read) = views(&store, &recaller, "quokka-shard-rebalance");
    assert!(seen.is_some_and(|at| at >= T + 60.0), "{seen:?}");
    assert_eq!(read, None);
}

#[test]
fn writes_unseen_by_a_session_are_those_others_made_after_its_last_look() {
    let home = TempHome::new();
    let store = open_store(&home, T);
    let a = store.register_session(None, None, T).expect("a");
    let b = store.register_session(None, None, T).expect("b");
    let put = |sid: Option<&str>, id: &str, gist: &str, at: f64| {
        store
            .put_node(user(sid), id, gist, None, None, at)
            .expect("put");
    };
    put(Some(&b), "b-old-node", "Before the window", T - 100.0);
    put(Some(&a), "a-own-node", "A wrote this", T + 1.0);
    put(Some(&b), "b-new-node", "B wrote this", T + 2.0);
    put(Some(&b), "b-seen-node", "B wrote this too", T + 3.0);
    put(None, "person-node", "A person wrote this", T + 4.0);
    // A sees b-seen-node after B's write; then B rewrites A's node.
    store.record_views(&a, ["b-seen-node"], View::Seen, store.event_ts(T + 5.0));
    put(Some(&b), "a-own-node", "B rewrote A's node", T + 6.0);

    let unseen = store.writes_unseen_by(&a, T);
    let ids: Vec<&str> = unseen.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["a-own-node", "person-node", "b-new-node"]);
    assert!(unseen[0].known, "A had a view time for its own node");
    assert!(!unseen[2].known);
    assert_eq!(unseen[1].written.by, None);
    assert_eq!(unseen[2].written.by.as_deref(), Some(b.as_str()));
    // Seeing them moves them out.
    let at = store.event_ts(T + 7.0);
    store.record_views(&a, ids.iter().copied(), View::Seen, at);
    assert!(store.writes_unseen_by(&a, T).is_empty());
    assert!(store.writes_unseen_by("0badf00d", T).is_empty());
}

#[test]
fn view_times_survive_a_restart() {
    let home = TempHome::new();
    let sid = {
        let store = open_store(&home, T);
        let sid = store.register_session(None, None, T).expect("session");
        store
            .put_node(
                user(Some(&sid)),
                "kept",
                "Kept across restarts",
                None,
                None,
                T + 1.0,
            )
            .expect("put");
        store.flush();
        sid
    };
    let store = open_store(&home, T + 2.0);
    assert_eq!(views(&store, &sid, "kept"), (Some(T + 1.0), Some(T + 1.0)));
    assert_eq!(
        stamp(&store, "kept"),
        Some(WriteStamp {
            ts: T + 1.0,
            by: Some(sid)
        })
    );
}
