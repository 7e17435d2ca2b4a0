//! Other sessions' writes (issue 37 item 2, since-0.9.30.md §2): a session hears of a
//! node another session wrote when it bears on its own work, once, after its search's
//! hits, its write's answer or its hooks' own text; under `KG_POLICY=reference`
//! never.

use kg_core::tools::{self, PutEdgeArgs, PutNodeArgs, kg_search};
use kg_core::{Level, Policy, Store, prompt_reply, session_news};
use kg_test_support::hook::prompt_event;
use kg_test_support::{T, TempHome, open_store_with};
use serde_json::json;
use std::fs;

const HEADER: &str = "Meanwhile others wrote to this memory";

struct World {
    _home: TempHome,
    store: Store,
    project: String,
}

impl World {
    fn new(policy: Policy) -> World {
        let home = TempHome::new();
        let project = home.path.join("shop");
        fs::create_dir_all(&project).expect("project folder");
        let store = open_store_with(&home, T, policy);
        World {
            project: project.to_string_lossy().into_owned(),
            _home: home,
            store,
        }
    }

    fn session(&self, claude: &str) -> String {
        self.store
            .register_session(Some(&self.project), Some(claude), T)
            .expect("register")
    }

    fn put(&self, sid: &str, level: Level, id: &str, gist: &str, now: f64) -> String {
        let answer = tools::kg_put_node(
            &self.store,
            &PutNodeArgs {
                session_id: sid.to_string(),
                level,
                id: id.to_string(),
                gist: gist.to_string(),
                notes: None,
                touches: None,
            },
            now,
        );
        assert!(!answer.is_error, "{}", answer.text);
        answer.text
    }

    fn edge(&self, sid: &str, from: &str, to: &str, now: f64) {
        let answer = tools::kg_put_edge(
            &self.store,
            &PutEdgeArgs {
                session_id: sid.to_string(),
                level: Level::Project,
                from: from.to_string(),
                to: to.to_string(),
                rel: "relates_to".to_string(),
                notes: None,
            },
            now,
        );
        assert!(!answer.is_error, "{}", answer.text);
    }

    fn search(&self, sid: &str, query: &str, now: f64) -> String {
        kg_search(&self.store, query, Some(sid), now).text
    }

    fn prompt(&self, claude: &str, prompt: &str, now: f64) -> Option<String> {
        let payload = json!({
            "session_id": claude, "cwd": self.project, "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        });
        match prompt_reply(&self.store, &prompt_event(&payload), now) {
            kg_core::PromptReply::Say(text) => Some(text),
            _ => None,
        }
    }
}

/// The ids a push names, in order.
fn pushed(text: &str) -> Vec<String> {
    let Some(at) = text.find(HEADER) else {
        return Vec::new();
    };
    text[at..]
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split(" (").next())
        .map(str::to_string)
        .collect()
}

/// A project where session A has searched for retries, with a few nodes of other topics.
fn retry_world(policy: Policy) -> (World, String, String) {
    let w = World::new(policy);
    let a = w.session("aaaaaaaa-0000-4000-8000-000000000001");
    let b = w.session("bbbbbbbb-0000-4000-8000-000000000002");
    w.put(
        &b,
        Level::Project,
        "retry-backoff-policy",
        "Retries back off exponentially from 200 ms, capped at 5 s",
        T + 1.0,
    );
    w.put(
        &b,
        Level::Project,
        "css-grid-layout",
        "The dashboard lays out cards with CSS grid, not flexbox",
        T + 2.0,
    );
    w.put(
        &b,
        Level::Project,
        "release-tagging",
        "Releases are tagged vX.Y.Z on main after the changelog is merged",
        T + 3.0,
    );
    let hits = w.search(&a, "retry backoff", T + 10.0);
    assert!(hits.contains("retry-backoff-policy"), "{hits}");
    (w, a, b)
}

#[test]
fn a_write_on_a_sessions_topic_reaches_its_next_search_once_and_others_stay_out() {
    let (w, a, b) = retry_world(Policy::Ours);
    // B rewrites the node A used, adds one linked to it, one on A's words, one elsewhere.
    w.put(
        &b,
        Level::Project,
        "retry-backoff-policy",
        "Retries back off exponentially from 100 ms, capped at 2 s",
        T + 20.0,
    );
    w.put(
        &b,
        Level::Project,
        "jitter-on-reconnect",
        "Reconnects add full jitter so clients do not stampede",
        T + 21.0,
    );
    w.edge(&b, "jitter-on-reconnect", "retry-backoff-policy", T + 21.5);
    w.put(
        &b,
        Level::Project,
        "retry-budget-per-request",
        "Each request gets a retry budget of three; backoff doubles each time",
        T + 22.0,
    );
    w.put(
        &b,
        Level::Project,
        "css-dark-mode",
        "Dark mode swaps CSS custom properties on the root element",
        T + 23.0,
    );

    // A search on another topic: its hits are A's, the news comes after them.
    let text = w.search(&a, "css grid cards", T + 30.0);
    let ids = pushed(&text);
    assert_eq!(
        ids,
        [
            "retry-budget-per-request",
            "jitter-on-reconnect",
            "retry-backoff-policy"
        ],
        "newest first, the unrelated one left out:\n{text}"
    );
    // The node A had seen is an update; the others are new to it.
    assert!(
        text.contains(
            "- retry-backoff-policy (updated): Retries back off exponentially from 100 ms"
        ),
        "{text}"
    );
    assert!(text.contains("- jitter-on-reconnect (new): "), "{text}");
    assert!(
        text.ends_with("rather than writing a second one."),
        "{text}"
    );
    // Told once: the next search has no news.
    assert!(pushed(&w.search(&a, "css grid cards", T + 40.0)).is_empty());
    // A search without hits carries none either, even with news waiting.
    w.put(
        &b,
        Level::Project,
        "retry-on-idempotent-only",
        "Only idempotent requests retry with backoff; POSTs never",
        T + 50.0,
    );
    let none = w.search(&a, "zzqx nothing matches", T + 51.0);
    assert!(!none.contains(HEADER), "{none}");
    // It waits for the next reply that may carry it: A's own write.
    let saved = w.put(
        &a,
        Level::Project,
        "timeouts-per-call",
        "Every outbound call sets its own timeout",
        T + 52.0,
    );
    assert_eq!(pushed(&saved), ["retry-on-idempotent-only"], "{saved}");
}

#[test]
fn more_than_three_are_counted_and_left_to_kg_sync() {
    let (w, a, b) = retry_world(Policy::Ours);
    for i in 0..5 {
        let id = format!("retry-backoff-note-{i}");
        w.put(
            &b,
            Level::Project,
            &id,
            "Retry backoff detail for one of the clients",
            T + 20.0 + f64::from(i),
        );
    }
    let text = w.search(&a, "css grid cards", T + 30.0);
    assert_eq!(pushed(&text).len(), 3, "{text}");
    assert!(
        text.contains(&format!(
            "(2 more: kg_sync(session_id='{a}') lists every change.)"
        )),
        "{text}"
    );
}

#[test]
fn a_session_that_has_done_nothing_hears_nothing_and_its_own_writes_never() {
    let (w, a, b) = retry_world(Policy::Ours);
    let idle = w.session("cccccccc-0000-4000-8000-000000000003");
    w.put(
        &b,
        Level::Project,
        "retry-backoff-policy",
        "Retries back off from 300 ms now",
        T + 20.0,
    );
    assert_eq!(session_news(&w.store, &idle, T + 30.0), None);
    // A's own write on its topic is not news to A; B's rewrite is.
    let saved = w.put(
        &a,
        Level::Project,
        "retry-backoff-own-note",
        "Retry backoff numbers come from the load test",
        T + 31.0,
    );
    assert_eq!(pushed(&saved), ["retry-backoff-policy"], "{saved}");
    assert!(pushed(&w.search(&a, "css grid cards", T + 32.0)).is_empty());
}

#[test]
fn user_nodes_come_only_from_a_writer_of_the_same_project() {
    let (w, a, b) = retry_world(Policy::Ours);
    let elsewhere = w.home_project_session("other", "dddddddd-0000-4000-8000-000000000004");
    w.put(
        &elsewhere,
        Level::User,
        "retry-backoff-general",
        "Retry backoff belongs in one shared helper",
        T + 20.0,
    );
    w.put(
        &b,
        Level::User,
        "retry-backoff-helpers",
        "Retry backoff helpers live in the shared crate",
        T + 21.0,
    );
    let text = w.search(&a, "css grid cards", T + 30.0);
    assert_eq!(pushed(&text), ["retry-backoff-helpers"], "{text}");
}

#[test]
fn the_prompt_hook_carries_the_news_after_its_recall() {
    let (w, a, b) = retry_world(Policy::Ours);
    let _ = a;
    w.put(
        &b,
        Level::Project,
        "retry-backoff-policy",
        "Retries back off from 150 ms, capped at 3 s",
        T + 20.0,
    );
    let text = w
        .prompt(
            "aaaaaaaa-0000-4000-8000-000000000001",
            "why is the release tag missing on main",
            T + 30.0,
        )
        .expect("news");
    assert!(text.contains(HEADER), "{text}");
    assert_eq!(pushed(&text), ["retry-backoff-policy"]);
    assert!(
        w.prompt(
            "aaaaaaaa-0000-4000-8000-000000000001",
            "and the css grid?",
            T + 31.0
        )
        .is_none_or(|t| !t.contains(HEADER))
    );
}

#[test]
fn racing_replies_tell_a_write_once() {
    let (w, a, b) = retry_world(Policy::Ours);
    for i in 0..3 {
        w.put(
            &b,
            Level::Project,
            &format!("retry-backoff-case-{i}"),
            "Retry backoff case for a client",
            T + 20.0 + f64::from(i),
        );
    }
    let told: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| session_news(&w.store, &a, T + 30.0).unwrap_or_default()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| pushed(&h.join().expect("thread")))
            .collect()
    });
    let mut sorted = told.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(told.len(), sorted.len(), "a write told twice: {told:?}");
    assert_eq!(told.len(), 3, "{told:?}");
}

#[test]
fn the_reference_policy_pushes_nothing() {
    let (w, a, b) = retry_world(Policy::Reference);
    w.put(
        &b,
        Level::Project,
        "retry-backoff-policy",
        "Retries back off from 150 ms",
        T + 20.0,
    );
    let text = w.search(&a, "css grid cards", T + 30.0);
    assert!(!text.contains(HEADER), "{text}");
    assert_eq!(session_news(&w.store, &a, T + 31.0), None);
}

impl World {
    /// A session of another project folder under the same home.
    fn home_project_session(&self, folder: &str, claude: &str) -> String {
        let path = std::path::Path::new(&self.project)
            .parent()
            .expect("home")
            .join(folder);
        fs::create_dir_all(&path).expect("other project");
        self.store
            .register_session(Some(&path.to_string_lossy()), Some(claude), T)
            .expect("register")
    }
}
