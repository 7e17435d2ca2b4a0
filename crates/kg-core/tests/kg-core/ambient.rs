//! The ambient loop's decisions: prompt recall (interfaces.md §7.3) and capture nudges
//! (§7.4) — the reference goldens 046–063 plus the acceptance items of core.md
//! §12.10–§12.11 (interfaces.md §13 E–G, I).

use crate::golden::replay;
use kg_core::ambient::{RECALL_BUDGET, RECALL_HEADER, prompt_context, tool_event};
use kg_core::search::{SearchGraph, search};
use kg_core::tools::{self, PutEdgeArgs, PutNodeArgs};
use kg_core::{Level, Policy, Store};
use kg_test_support::golden::{case_files, read_case};
use kg_test_support::hook::{prompt_event, tool_use};
use kg_test_support::{T, TempHome, open_store, open_store_with};
use serde_json::{Value, json};
use std::fs;
use std::sync::Arc;

#[test]
fn goldens_046_to_063_match_through_kg_core() {
    let mut checked = 0;
    for name in case_files() {
        let Some(number) = name.get(..3).and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if !(46..=63).contains(&number) {
            continue;
        }
        match replay(&name, read_case(&name)) {
            Ok(None) => checked += 1,
            Ok(Some(why)) => panic!("{name} was skipped: {why}"),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(checked, 18);
}

// ----- scaffolding ------------------------------------------------------------------

/// A home with one project folder and a store over it.
struct World {
    home: TempHome,
    store: Store,
    project: String,
}

impl World {
    fn new() -> World {
        World::with_policy(Policy::Ours)
    }

    /// Under `KG_POLICY=reference`: the reference's recall, pinned by the goldens.
    fn reference() -> World {
        World::with_policy(Policy::Reference)
    }

    fn with_policy(policy: Policy) -> World {
        World::at("proj", policy)
    }

    /// A world whose project folder is `<home>/<below_home>` (its last name `proj`).
    fn at(below_home: &str, policy: Policy) -> World {
        let home = TempHome::new();
        let project = home.path.join(below_home);
        fs::create_dir_all(project.join("src")).expect("project folder");
        let store = open_store_with(&home, T, policy);
        World {
            project: project.to_string_lossy().into_owned(),
            home,
            store,
        }
    }

    /// A session for the project bound to `claude`, past its full read unless `fresh`.
    fn session(&self, claude: &str, full_read: bool) -> String {
        let sid = self
            .store
            .register_session(Some(&self.project), Some(claude), T)
            .expect("register");
        if full_read {
            // Set directly: a real full read would also mark every active gist seen.
            self.store.mark_full_read(&sid, T);
        }
        sid
    }

    fn node(&self, sid: &str, id: &str, gist: &str, touches: &[&str]) {
        let answer = tools::kg_put_node(
            &self.store,
            &PutNodeArgs {
                session_id: sid.to_string(),
                level: Level::Project,
                id: id.to_string(),
                gist: gist.to_string(),
                notes: None,
                touches: (!touches.is_empty())
                    .then(|| touches.iter().map(|t| t.to_string()).collect()),
            },
            T,
        );
        assert!(!answer.is_error, "{}", answer.text);
    }

    /// Set a project node's gist by editing the graph file and reloading it: the way
    /// to store what the write path refuses (a hand edit, an older version's file).
    fn set_gist_by_hand(&self, id: &str, gist: &str) {
        let root = self.store.resolve_root(&self.project).expect("root");
        let slot = self.store.project_slot(&root, T).expect("slot");
        let text = std::fs::read_to_string(&slot.path).expect("graph file");
        let mut file: Value = serde_json::from_str(&text).expect("graph json");
        file["nodes"][id]["gist"] = json!(gist);
        std::fs::write(&slot.path, file.to_string()).expect("hand edit");
        self.store.reload(&slot, T).expect("reload");
    }

    fn edge(&self, sid: &str, from: &str, to: &str, rel: &str) {
        let answer = tools::kg_put_edge(
            &self.store,
            &PutEdgeArgs {
                session_id: sid.to_string(),
                level: Level::Project,
                from: from.to_string(),
                to: to.to_string(),
                rel: rel.to_string(),
                notes: None,
            },
            T,
        );
        assert!(!answer.is_error, "{}", answer.text);
    }

    fn prompt(&self, claude: &str, prompt: &str) -> Option<String> {
        self.prompt_at(claude, prompt, T)
    }

    fn prompt_at(&self, claude: &str, prompt: &str, now: f64) -> Option<String> {
        let payload = json!({
            "session_id": claude,
            "transcript_path": "/nowhere.jsonl",
            "cwd": self.project,
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        });
        prompt_context(&self.store, &prompt_event(&payload), now)
    }

    fn seen(&self, sid: &str) -> Vec<String> {
        self.store
            .session(sid)
            .map(|r| r.seen_ids().to_vec())
            .unwrap_or_default()
    }

    fn read(&self, claude: &str, file_path: &str, now: f64) -> Option<String> {
        self.event(
            claude,
            "Read",
            json!({"file_path": file_path}),
            &self.project,
            now,
        )
    }

    fn event(&self, claude: &str, tool: &str, input: Value, cwd: &str, now: f64) -> Option<String> {
        let payload = json!({
            "session_id": claude,
            "transcript_path": "/nowhere.jsonl",
            "cwd": cwd,
            "hook_event_name": "PostToolUse",
            "tool_name": tool,
            "tool_input": input,
            "tool_response": {},
        });
        tool_event(&self.store, &tool_use(&payload), now)
    }

    fn counter_path(&self) -> std::path::PathBuf {
        self.home.storage().join("projects/proj/tool_events.json")
    }

    fn counters(&self) -> Value {
        fs::read_to_string(self.counter_path())
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

// ----- prompt recall ------------------------------------------------------------------

#[test]
fn without_a_session_silence_and_before_the_full_read_only_the_nudge() {
    let w = World::new();
    // No session for this project (and none bound to the Claude sid).
    assert_eq!(w.prompt("cc-1", "compactor logging is too chatty"), None);
    w.session("cc-1", false);
    let nudge = kg_core::wording::FULL_READ_NUDGE.to_string();
    for prompt in [
        "compactor logging is too chatty",
        "[SYSTEM NOTIFICATION: build finished]",
        "",
    ] {
        assert_eq!(w.prompt("cc-1", prompt).as_ref(), Some(&nudge), "{prompt}");
    }
    assert!(nudge.contains("kg_read(session_id)"));
}

#[test]
fn a_matching_prompt_injects_once_and_unrelated_prompts_stay_silent() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    w.node(
        &sid,
        "compactor-logging",
        "The compactor logs every archive pass at debug level; raise it to info for triage",
        &[],
    );
    w.node(
        &sid,
        "garden-hose",
        "Tomato seedlings want a soaker hose on a timer",
        &[],
    );
    let text = w
        .prompt("cc-1", "why is the compactor logging so noisy lately?")
        .expect("injects");
    let got = lines(&text);
    assert_eq!(got[0], RECALL_HEADER);
    assert_eq!(
        got[1],
        "- [project] compactor-logging: The compactor logs every archive pass at debug level; \
         raise it to info for triage"
    );
    assert_eq!(got.len(), 2);
    assert!(!text.contains("kg_read") && !text.contains("garden-hose"));
    assert!(text.chars().count() <= RECALL_BUDGET);
    assert!(w.seen(&sid).contains(&"compactor-logging".to_string()));
    // Seen now: never again in this session.
    assert_eq!(
        w.prompt("cc-1", "why is the compactor logging so noisy lately?"),
        None
    );
    assert_eq!(w.prompt("cc-1", "the quarterly budget spreadsheet"), None);
    assert_eq!(w.prompt("cc-1", "yes go on"), None);
    assert_eq!(w.prompt("cc-1", "yes go on, do that please"), None);
}

/// a —links-to→ mid —links-to→ b, plus filler so shared words keep some weight.
fn chain(w: &World, sid: &str) {
    w.node(
        sid,
        "chain-a",
        "Quokka shard rebalance moves one tenant at a time",
        &[],
    );
    w.node(
        sid,
        "chain-mid",
        "Placement service owns the tenant map",
        &[],
    );
    w.node(
        sid,
        "chain-b",
        "Wombat shard rebalance pauses writes briefly",
        &[],
    );
    for i in 0..4 {
        w.node(
            sid,
            &format!("filler-{i}"),
            "Unrelated release checklist item",
            &[],
        );
    }
    w.edge(sid, "chain-a", "chain-mid", "reads-from");
    w.edge(sid, "chain-mid", "chain-b", "feeds");
}

#[test]
fn both_chain_ends_inject_with_the_connector_and_path_edges() {
    let w = World::reference();
    let sid = w.session("cc-1", true);
    chain(&w, &sid);
    let text = w
        .prompt("cc-1", "quokka and wombat shard rebalance")
        .expect("injects");
    assert_eq!(
        lines(&text),
        [
            RECALL_HEADER,
            "- [project] chain-a: Quokka shard rebalance moves one tenant at a time",
            "- [project] chain-b: Wombat shard rebalance pauses writes briefly",
            "  connections:",
            "  - [project] chain-mid: Placement service owns the tenant map",
            "  chain-mid --feeds--> chain-b",
            "  chain-a --reads-from--> chain-mid",
        ]
    );
    let seen = w.seen(&sid);
    for id in ["chain-a", "chain-b", "chain-mid"] {
        assert!(seen.contains(&id.to_string()), "{id}");
    }
    assert!(!seen.iter().any(|s| s.starts_with("filler")));
    assert_eq!(w.prompt("cc-1", "quokka and wombat shard rebalance"), None);

    // A new node linked to a seen one: its gist, the seen node as an anchor, the edge
    // again (edges are not deduplicated across injections).
    w.node(
        &sid,
        "chain-c",
        "Quokka rebalance needs the pause flag set first",
        &[],
    );
    w.edge(&sid, "chain-c", "chain-a", "part-of");
    let text = w
        .prompt("cc-1", "quokka rebalance pause flag")
        .expect("injects the new node");
    assert!(text.contains("- [project] chain-c: Quokka rebalance needs the pause flag set first"));
    assert!(text.contains("[project] chain-a (in context)"));
    assert!(!text.contains("moves one tenant"));
    assert!(text.contains("  chain-c --part-of--> chain-a"));
    assert_eq!(w.prompt("cc-1", "tomato seedlings and garden hoses"), None);
}

#[test]
fn an_edge_through_a_node_without_a_gist_is_dropped() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    chain(&w, &sid);
    // The write path always stores a gist: blank it by hand in the file.
    w.set_gist_by_hand("chain-mid", "");
    let text = w
        .prompt("cc-1", "quokka and wombat shard rebalance")
        .expect("injects the hits");
    assert_eq!(lines(&text).len(), 3, "no connections section: {text}");
    assert!(!w.seen(&sid).contains(&"chain-mid".to_string()));
}

#[test]
fn a_rare_term_beats_generic_vocabulary() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    for i in 0..9 {
        w.node(
            &sid,
            &format!("generic-{i}"),
            "The widget handler reads its settings at startup",
            &[],
        );
    }
    w.node(
        &sid,
        "rare-node",
        "The flibbertigibbet quux-frobnicator handler drops late events",
        &[],
    );
    // In search, the rare term ranks its node first, far ahead of the rest.
    let root = w.store.resolve_root(&w.project).expect("root");
    let slot = w.store.project_slot(&root, T).expect("slot");
    let terms = ["flibbertigibbet".to_string(), "widget".to_string()];
    let result = w.store.with_graph(&slot, |graph| {
        let graphs = [SearchGraph {
            level: Level::Project,
            graph,
        }];
        search(&graphs, &terms, None)
    });
    assert_eq!(result.top[0].id, "rare-node");
    assert!(result.top[0].raw_score > 2.0 * result.top[1].raw_score);

    assert_eq!(
        w.prompt("cc-1", "the widget reads settings at startup"),
        None
    );
    // `handler` is in every node: it tells nothing apart.
    assert_eq!(w.prompt("cc-1", "the handler"), None);
    let text = w
        .prompt("cc-1", "flibbertigibbet quux-frobnicator widget trouble")
        .expect("injects");
    assert!(text.contains(
        "- [project] rare-node: The flibbertigibbet quux-frobnicator handler drops late events"
    ));
    assert!(!text.contains("generic-"));
    assert_eq!(
        w.prompt("cc-1", "flibbertigibbet quux-frobnicator widget trouble"),
        None,
        "a gist injects once per session"
    );
}

#[test]
fn machine_text_stays_silent_even_on_strong_matches() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    w.node(
        &sid,
        "quokka-shards",
        "Quokka shard rebalance runs nightly",
        &[],
    );
    let home = w.home.path.display();
    for prompt in [
        "[SYSTEM NOTIFICATION: quokka shard rebalance finished]".to_string(),
        "<task-notification>quokka shard rebalance done</task-notification>".to_string(),
        format!("[Image: {home}/proj/quokka-shard.png]"),
        format!("'{home}/proj/screens/quokka shard rebalance.png'"),
        format!("{home}/proj/src/quokka_shard_rebalance.rs"),
    ] {
        assert_eq!(w.prompt("cc-1", &prompt), None, "{prompt}");
    }
    assert!(w.seen(&sid).is_empty());
    let text = w
        .prompt("cc-1", "Why did the quokka shard rebalance stall?")
        .expect("human text injects");
    assert_eq!(lines(&text)[0], "KG recall — memory matching this prompt:");
    assert!(!text.contains("depth") && !text.contains("ids=["));
}

#[test]
fn a_basename_from_a_path_matches_touches() {
    let w = World::reference();
    let sid = w.session("cc-1", true);
    w.node(
        &sid,
        "journal-writer",
        "Appends journal lines with sequence numbers",
        &["src/ledger/journal.rs"],
    );
    w.node(&sid, "other-node", "Something else entirely", &[]);
    // Three terms need 0.020: `sequence` alone scores 0.0167, the basename adds the rest.
    assert_eq!(
        w.prompt("cc-1", "sequence ordering bug in lib/other.rs"),
        None
    );
    let text = w
        .prompt("cc-1", "sequence ordering bug in lib/journal.rs")
        .expect("the basename matches the touch");
    assert!(text.contains("- [project] journal-writer: Appends journal lines"));
}

#[test]
fn recall_loads_the_project_graph_of_a_session_from_before_a_restart() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    w.node(
        &sid,
        "quokka-shards",
        "Quokka shard rebalance runs nightly",
        &[],
    );
    w.store.flush();
    let again = open_store(&w.home, T + 10.0);
    assert_eq!(again.loaded_projects().len(), 0);
    let payload =
        json!({"session_id": "cc-1", "cwd": w.project, "prompt": "quokka shard rebalance stalls"});
    let text =
        prompt_context(&again, &prompt_event(&payload), T + 10.0).expect("injects after loading");
    assert!(text.contains("quokka-shards: Quokka shard rebalance runs nightly"));
    // Resolving the project refreshed activity but counted no op.
    let record = again.session(&sid).expect("session");
    assert_eq!(record.last_activity, T + 10.0);
    assert_eq!(record.op_count, 1, "only the put from before the restart");
}

#[test]
fn two_sessions_of_one_project_keep_their_own_seen_sets() {
    let w = World::new();
    let older = w.session("cc-old", true);
    let newer = w.session("cc-new", true);
    w.node(
        &older,
        "quokka-shards",
        "Quokka shard rebalance runs nightly",
        &[],
    );
    let prompt = "quokka shard rebalance stalls";
    assert!(w.prompt("cc-old", prompt).is_some());
    assert_eq!(w.seen(&older), ["quokka-shards"]);
    assert!(w.seen(&newer).is_empty());
    assert!(w.prompt("cc-new", prompt).is_some());
    assert_eq!(w.prompt("cc-old", prompt), None);
    // An unbound Claude session falls back to the newest session for the cwd.
    assert_eq!(w.prompt("cc-other", prompt), None);
}

#[test]
fn concurrent_prompts_of_one_session_inject_a_gist_once() {
    let w = Arc::new(World::new());
    let sid = w.session("cc-1", true);
    w.node(
        &sid,
        "quokka-shards",
        "Quokka shard rebalance runs nightly",
        &[],
    );
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let w = Arc::clone(&w);
            std::thread::spawn(move || w.prompt("cc-1", "quokka shard rebalance stalls"))
        })
        .collect();
    let injected = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .filter(Option::is_some)
        .count();
    assert_eq!(injected, 1);
}

#[test]
fn the_budget_trims_from_the_least_valuable_end() {
    let w = World::reference();
    let sid = w.session("cc-1", true);
    let long = "x".repeat(900);
    for i in 0..5 {
        w.node(
            &sid,
            &format!("quokka-{i}"),
            &format!("Quokka note kiwi{i} {long}"),
            &[],
        );
    }
    for i in 0..5 {
        w.node(
            &sid,
            &format!("filler-{i}"),
            "Unrelated release checklist",
            &[],
        );
    }
    let prompt = "quokka kiwi0 kiwi1 kiwi2 kiwi3 kiwi4";
    let text = w.prompt("cc-1", prompt).expect("injects");
    assert!(text.chars().count() <= RECALL_BUDGET, "{}", text.len());
    let shown: Vec<&str> = lines(&text)[1..].to_vec();
    assert_eq!(shown.len(), 2, "two 900-char gists fit, three do not");
    assert!(shown[0].starts_with("- [project] quokka-0: "));
    // Only what was rendered is marked seen, so the rest can still come up; the
    // seen anchors go before any unseen gist.
    assert_eq!(w.seen(&sid), ["quokka-0", "quokka-1"]);
    let again = w.prompt("cc-1", prompt).expect("the trimmed hits");
    assert!(!again.contains("(in context)"));
    assert_eq!(lines(&again).len(), 3);
    assert_eq!(w.seen(&sid).len(), 4);

    // A single hit stays even when it alone exceeds the budget (a gist longer than
    // writes accept, from a hand-edited file).
    w.node(&sid, "huge", "Wombat", &[]);
    w.set_gist_by_hand("huge", &format!("Wombat {}", "y".repeat(3_000)));
    let text = w
        .prompt("cc-1", "the wombat")
        .expect("one hit always stays");
    assert!(text.chars().count() > RECALL_BUDGET);
    assert_eq!(lines(&text).len(), 2);
}

#[test]
fn edges_are_trimmed_before_connectors() {
    let prompt = "quokka and wombat shard rebalance";
    let world = |pad: usize| {
        let w = World::reference();
        let sid = w.session("cc-1", true);
        chain(&w, &sid);
        // Long pads exceed what writes accept: set by hand.
        let gist = format!("Placement service owns the tenant map {}", "z".repeat(pad));
        w.set_gist_by_hand("chain-mid", &gist);
        w
    };
    let base = world(0).prompt("cc-1", prompt).expect("injects");
    let last_edge = "  chain-a --reads-from--> chain-mid";
    assert!(base.ends_with(last_edge));
    // Pad the connector's gist until the text is one character over budget: dropping
    // the last edge line is then enough.
    let over = RECALL_BUDGET + 1 - base.chars().count();
    let text = world(over).prompt("cc-1", prompt).expect("injects");
    assert!(text.chars().count() <= RECALL_BUDGET);
    assert!(text.contains("  - [project] chain-mid: Placement service owns the tenant map"));
    assert!(text.contains("  chain-mid --feeds--> chain-b"));
    assert!(!text.contains(last_edge));
}

// ----- tool events ----------------------------------------------------------------------

#[test]
fn reads_nudge_on_the_second_distinct_session_then_cool_down() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    let file = format!("{}/src/limits.rs", w.project);
    assert_eq!(
        w.read("cc-1", &format!("{}/node_modules/x/index.js", w.project), T),
        None
    );
    assert_eq!(w.read("cc-1", "/tmp/kg-scratch/limits.rs", T), None);
    assert_eq!(w.counters(), Value::Null, "noise is not counted");
    assert_eq!(w.read("cc-1", &file, T), None, "first read");
    assert_eq!(w.read("cc-1", &file, T + 1.0), None, "same session again");
    let nudge = w
        .read("cc-2", &file, T + 2.0)
        .expect("second session nudges");
    assert!(nudge.starts_with("KG capture: 'src/limits.rs'"));
    assert!(nudge.contains("read in 2 distinct sessions"));
    assert!(nudge.contains(&format!("session_id='{sid}'")));
    assert!(nudge.contains("kg_put_node(") && nudge.contains("level='project'"));
    assert!(nudge.contains("touches=['src/limits.rs']"));
    assert!(!nudge.contains('\n'));
    assert_eq!(w.read("cc-3", &file, T + 3_000.0), None, "target cooldown");
    let counters = w.counters();
    let entry = &counters["events"]["read:src/limits.rs"];
    assert_eq!(entry["count"], 4);
    assert_eq!(entry["sessions"], json!(["cc-1", "cc-2", "cc-3"]));
    assert_eq!(entry["nudged_ts"], json!(T + 2.0));
    assert_eq!(
        counters["throttle"][&sid],
        json!({"count": 1, "last_ts": T + 2.0})
    );
    // 1-space indent, like the reference's file.
    let text = fs::read_to_string(w.counter_path()).expect("file");
    assert!(text.starts_with("{\n \"events\": {\n  \"read:"));
    // A day later the same target may nudge again.
    assert!(w.read("cc-4", &file, T + 2.0 + 86_400.0).is_some());
}

#[test]
fn a_covered_target_never_nudges() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    w.node(&sid, "limits", "Payout limits", &["src/payouts/LIMITS.rs"]);
    w.node(&sid, "fx", "Rates come from src/fx/rates.rs nightly", &[]);
    for file in ["src/payouts/limits.rs", "src/fx/rates.rs"] {
        let path = format!("{}/{file}", w.project);
        assert_eq!(w.read("cc-1", &path, T), None);
        assert_eq!(w.read("cc-2", &path, T), None, "{file} is covered");
    }
    assert_eq!(
        w.counters()["events"]["read:src/fx/rates.rs"]["count"],
        2,
        "counted all the same"
    );
}

#[test]
fn a_session_gets_at_most_three_nudges_ten_minutes_apart() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    let mut now = T;
    let nudge = |name: &str, now: f64| {
        let path = format!("{}/src/{name}.rs", w.project);
        assert_eq!(w.read("cc-1", &path, now), None);
        w.read("cc-2", &path, now)
    };
    assert!(nudge("one", now).is_some());
    assert_eq!(nudge("two", now + 300.0), None, "within 600 s");
    now += 601.0;
    assert!(nudge("three", now).is_some(), "after 600 s");
    now += 601.0;
    assert!(nudge("four", now).is_some());
    now += 601.0;
    assert_eq!(nudge("five", now), None, "three per session");
    assert_eq!(w.counters()["throttle"][&sid]["count"], 3);
    // The throttled targets were counted and never stamped, so another session may
    // still be nudged about them.
    let other = w.session("cc-9", true);
    let path = format!("{}/src/two.rs", w.project);
    let text = w.read("cc-9", &path, now + 1.0).expect("a fresh session");
    assert!(text.contains(&format!("session_id='{other}'")));
    assert!(text.contains("read in 3 distinct sessions"));
}

#[test]
fn web_targets_count_hits_not_sessions() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    let url = "https://docs.rs/sqlx/latest/sqlx/postgres/advisory_lock";
    let fetch = |now: f64| {
        w.event(
            "cc-1",
            "WebFetch",
            json!({"url": url, "prompt": "x"}),
            &w.project,
            now,
        )
    };
    assert_eq!(fetch(T), None);
    let nudge = fetch(T + 1.0).expect("second fetch nudges");
    assert!(nudge.starts_with(&format!("KG capture: '{url}'")));
    assert!(nudge.contains("fetched 2 times"));
    assert!(nudge.contains(&format!("session_id='{sid}'")));
    assert!(nudge.contains(&format!("touches=['{url}']")));

    let search =
        |q: &str, now: f64| w.event("cc-1", "WebSearch", json!({"query": q}), &w.project, now);
    assert_eq!(search("  Postgres Advisory LOCK ", T + 700.0), None);
    let nudge = search("postgres advisory lock", T + 701.0).expect("repeated query");
    assert!(nudge.starts_with("KG capture: 'postgres advisory lock'"));
    assert!(nudge.contains("searched 2 times"));
    // A blank query is no target: not even counted.
    assert_eq!(search(" \t ", T + 702.0), None);
    let events = w.counters()["events"].clone();
    assert!(events.get("search:").is_none());
    assert_eq!(events["search:postgres advisory lock"]["count"], 2);
}

#[test]
fn gemini_clis_reads_and_searches_count_as_claude_codes() {
    let w = World::new();
    w.session("gem-1", true);
    w.session("gem-2", true);
    let file = format!("{}/src/limits.rs", w.project);
    let read = |session: &str, now: f64| {
        w.event(
            session,
            "read_file",
            json!({"file_path": file}),
            &w.project,
            now,
        )
    };
    assert_eq!(read("gem-1", T), None);
    let nudge = read("gem-2", T + 1.0).expect("second session nudges");
    assert!(nudge.starts_with("KG capture: 'src/limits.rs'"), "{nudge}");
    let search = |now: f64| {
        w.event(
            "gem-1",
            "google_web_search",
            json!({"query": "tokio select fairness"}),
            &w.project,
            now,
        )
    };
    assert_eq!(search(T + 700.0), None);
    let nudge = search(T + 701.0).expect("repeated query");
    assert!(nudge.contains("searched 2 times"), "{nudge}");
}

#[test]
fn other_tools_and_malformed_payloads_are_ignored() {
    let w = World::new();
    w.session("cc-1", true);
    for tool in ["Bash", "Grep", "Edit"] {
        for now in [T, T + 1.0] {
            let input = json!({"file_path": format!("{}/src/a.rs", w.project), "command": "ls"});
            assert_eq!(w.event("cc-1", tool, input, &w.project, now), None);
        }
    }
    assert_eq!(w.event("cc-1", "Read", json!({}), &w.project, T), None);
    assert_eq!(
        w.event("cc-1", "Read", json!({"file_path": ""}), &w.project, T),
        None
    );
    let no_cwd =
        json!({"session_id": "cc-1", "tool_name": "Read", "tool_input": {"file_path": "/x"}});
    assert_eq!(tool_event(&w.store, &tool_use(&no_cwd), T), None);
    assert_eq!(
        tool_event(&w.store, &tool_use(&json!("not an object")), T),
        None
    );
    assert_eq!(w.counters(), Value::Null, "nothing was counted");
    // A cwd outside home is neither counted nor nudged.
    for now in [T, T + 1.0] {
        assert_eq!(
            w.event(
                &format!("cc-{now}"),
                "Read",
                json!({"file_path": "/etc/hosts"}),
                "/etc",
                now
            ),
            None
        );
    }
    assert!(!w.home.storage().join("projects/etc").exists());
}

#[test]
fn a_project_under_tmp_or_build_folders_gets_its_read_nudges() {
    // The project's own location says nothing about noise: only what lies inside it.
    let w = World::at("tmp/build/dist/proj", Policy::Ours);
    let sid = w.session("cc-1", true);
    let file = format!("{}/src/limits.rs", w.project);
    assert_eq!(w.read("cc-1", &file, T), None, "first read");
    let nudge = w
        .read("cc-2", &file, T + 1.0)
        .expect("second session nudges");
    assert!(nudge.starts_with("KG capture: 'src/limits.rs'"), "{nudge}");
    assert!(nudge.contains(&format!("session_id='{sid}'")));
    // Inside the project, its ignored folders are noise; outside it, everything is.
    let home = w.home.path.to_string_lossy().into_owned();
    for noise in [
        format!("{}/node_modules/x/index.js", w.project),
        format!("{}/target/debug/build.rs", w.project),
        format!("{}/build/out.rs", w.project),
        format!("{}/.git/config", w.project),
        format!("{home}/elsewhere/notes.md"),
        "/etc/hosts".to_string(),
    ] {
        assert_eq!(w.read("cc-1", &noise, T + 700.0), None, "{noise}");
        assert_eq!(w.read("cc-2", &noise, T + 700.0), None, "{noise}");
    }
    let counted: Vec<String> = w.counters()["events"]
        .as_object()
        .expect("events")
        .keys()
        .cloned()
        .collect();
    assert_eq!(counted, vec!["read:src/limits.rs".to_string()]);
}

#[test]
fn the_reference_policy_keeps_its_path_substring_noise() {
    let w = World::at("tmp/proj", Policy::Reference);
    w.session("cc-1", true);
    let file = format!("{}/src/limits.rs", w.project);
    assert_eq!(w.read("cc-1", &file, T), None);
    assert_eq!(w.read("cc-2", &file, T + 1.0), None, "under /tmp/: noise");
    assert_eq!(w.counters(), Value::Null, "not even counted");
}

#[test]
fn every_example_call_in_a_web_nudge_is_valid() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    let url = "https://docs.rs/tokio/latest/tokio/sync/struct.Mutex.html";
    let fetch = |now: f64| w.event("cc-1", "WebFetch", json!({"url": url}), &w.project, now);
    assert_eq!(fetch(T), None);
    let nudge = fetch(T + 1.0).expect("second fetch nudges");
    // Every `level='…'` the nudge names is one kg_put_node accepts.
    let levels: Vec<&str> = nudge
        .split("level='")
        .skip(1)
        .filter_map(|rest| rest.split('\'').next())
        .collect();
    assert_eq!(levels, vec!["project", "user"], "{nudge}");
    assert!(nudge.contains(&format!(
        "kg_put_node(session_id='{sid}', level='project', id='<kebab-id>'"
    )));
    // The reference's wording (its level is prose) stays under its policy.
    let r = World::reference();
    r.session("cc-1", true);
    let fetch = |now: f64| r.event("cc-1", "WebFetch", json!({"url": url}), &r.project, now);
    assert_eq!(fetch(T), None);
    let nudge = fetch(T + 1.0).expect("nudges");
    assert!(nudge.contains("level='project (or user, if the finding is cross-project)'"));
}

#[test]
fn relative_paths_resolve_against_the_cwd() {
    let w = World::new();
    w.session("cc-1", true);
    assert_eq!(w.read("cc-1", "src/rel.rs", T), None);
    let nudge = w
        .read("cc-2", "./src/../src/rel.rs", T)
        .expect("the same file, reached another way");
    assert!(nudge.starts_with("KG capture: 'src/rel.rs'"));
    let counters = w.counters();
    assert_eq!(counters["events"]["read:src/rel.rs"]["count"], 2);
}

#[test]
fn the_throttle_forgets_sessions_idle_for_a_week() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    fs::create_dir_all(w.counter_path().parent().expect("dir")).expect("mkdir");
    let seeded = json!({
        "events": {},
        "throttle": {
            "0ldd0ne0": {"count": 3, "last_ts": T - 8.0 * 86_400.0},
            "recent00": {"count": 1, "last_ts": T - 86_400.0}
        }
    });
    fs::write(w.counter_path(), seeded.to_string()).expect("seed");
    let file = format!("{}/src/a.rs", w.project);
    assert_eq!(w.read("cc-1", &file, T), None);
    assert!(w.read("cc-2", &file, T).is_some());
    let throttle = w.counters()["throttle"].clone();
    assert!(throttle.get("0ldd0ne0").is_none());
    assert_eq!(throttle["recent00"]["count"], 1);
    assert_eq!(throttle[&sid]["count"], 1);
}

#[test]
fn concurrent_events_lose_no_count_and_the_file_stays_bounded() {
    let w = Arc::new(World::new());
    w.session("cc-0", true);
    let file = format!("{}/src/hot.rs", w.project);
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let w = Arc::clone(&w);
            let file = file.clone();
            std::thread::spawn(move || w.read(&format!("cc-{i}"), &file, T))
        })
        .collect();
    let nudges = handles
        .into_iter()
        .filter_map(|h| h.join().expect("thread"))
        .count();
    assert_eq!(nudges, 1, "the target cooldown holds under concurrency");
    let entry = w.counters()["events"]["read:src/hot.rs"].clone();
    assert_eq!(entry["count"], 16);
    assert_eq!(entry["sessions"].as_array().map(Vec::len), Some(10));

    for i in 0..510 {
        w.read("cc-1", &format!("{}/src/f{i}.rs", w.project), T + i as f64);
    }
    let events = w.counters()["events"].clone();
    assert_eq!(events.as_object().map(|o| o.len()), Some(500));
    assert!(events.get("read:src/hot.rs").is_none(), "oldest evicted");
    assert!(events.get("read:src/f509.rs").is_some());
}

// ----- our policy: recall on the first prompts, reminders that fit -------------------

impl World {
    fn reply(&self, claude: &str, prompt: &str, now: f64) -> kg_core::PromptReply {
        let payload = json!({
            "session_id": claude,
            "transcript_path": "",
            "cwd": self.project,
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        });
        kg_core::prompt_reply(&self.store, &prompt_event(&payload), now)
    }
}

#[test]
fn the_first_prompt_gets_its_recall_with_the_full_read_nudge() {
    let w = World::new();
    let writer = w.session("cc-writer", true);
    w.node(
        &writer,
        "billing-webhook-signature",
        "Stripe webhook signatures fail when the body is parsed before verifying",
        &[],
    );
    let sid = w.session("cc-first", false);
    let kg_core::PromptReply::Say(text) = w.reply(
        "cc-first",
        "why does the stripe webhook signature check fail?",
        T,
    ) else {
        panic!("the first prompt is answered");
    };
    let (nudge, recall) = text.split_once("\n\n").expect("nudge, then recall");
    assert_eq!(nudge, kg_core::wording::FULL_READ_NUDGE);
    assert!(recall.starts_with(RECALL_HEADER), "{recall}");
    assert!(recall.contains("billing-webhook-signature"), "{recall}");
    assert!(
        w.seen(&sid)
            .contains(&"billing-webhook-signature".to_string())
    );
    // Seen now: the same question brings only the nudge.
    assert_eq!(
        w.reply(
            "cc-first",
            "why does the stripe webhook signature check fail?",
            T + 5.0
        ),
        kg_core::PromptReply::Say(kg_core::wording::FULL_READ_NUDGE.to_string())
    );
}

#[test]
fn the_reference_policy_gives_the_first_prompt_the_nudge_alone() {
    let home = TempHome::new();
    let project = home.path.join("proj");
    fs::create_dir_all(&project).expect("project folder");
    let mut config = kg_core::StoreConfig::new(home.storage(), &home.path);
    config.policy = kg_core::Policy::Reference;
    let w = World {
        project: project.to_string_lossy().into_owned(),
        store: Store::open(config, T).expect("store"),
        home,
    };
    let writer = w.session("cc-writer", true);
    w.node(
        &writer,
        "billing-webhook-signature",
        "Stripe webhook signatures fail when the body is parsed first",
        &[],
    );
    w.session("cc-first", false);
    assert_eq!(
        w.reply(
            "cc-first",
            "why does the stripe webhook signature check fail?",
            T
        ),
        kg_core::PromptReply::Say(kg_core::wording::FULL_READ_NUDGE.to_string())
    );
    // After the full read, nothing new: the hook picks a reminder itself.
    let done = w.session("cc-done", true);
    w.store.mark_seen(&done, ["billing-webhook-signature"]);
    assert_eq!(
        w.reply(
            "cc-done",
            "why does the stripe webhook signature check fail?",
            T
        ),
        kg_core::PromptReply::Nothing
    );
}

#[test]
fn reminders_fit_the_topic_and_the_state_and_do_not_repeat_at_once() {
    let w = World::new();
    let sid = w.session("cc-remind", true);
    w.node(
        &sid,
        "billing-webhook-signature",
        "Stripe webhook signatures fail when the body is parsed first",
        &[],
    );
    w.store.mark_seen(&sid, ["billing-webhook-signature"]);
    // Nothing the memory knows: silence, not a tip.
    assert_eq!(
        w.reply("cc-remind", "write a haiku about autumn leaves", T),
        kg_core::PromptReply::Quiet
    );
    // Known topic, already in context: a pointer to the node that fits, once.
    assert_eq!(
        w.reply("cc-remind", "the stripe webhook signature", T),
        kg_core::PromptReply::Say(format!(
            "{RECALL_HEADER}\n- [project] billing-webhook-signature (in context)"
        ))
    );
    // Pointed at already, nothing new: a reminder, never "if no memory is loaded
    // yet" after the full read, and about subagents only when the prompt speaks of
    // them.
    let kg_core::PromptReply::Say(reminder) =
        w.reply("cc-remind", "the stripe webhook signature again", T)
    else {
        panic!("a reminder");
    };
    let fits = kg_core::wording::REMINDERS_MID
        .iter()
        .chain(kg_core::wording::REMINDERS_EARLY)
        .chain(kg_core::wording::REMINDERS_DEEP)
        .find(|r| r.text == reminder)
        .map(|r| r.fits);
    assert_eq!(fits, Some(kg_core::ReminderFits::Always), "{reminder}");
    // Within ten minutes of it: nothing more.
    assert_eq!(
        w.reply(
            "cc-remind",
            "the stripe webhook signature once more",
            T + 60.0
        ),
        kg_core::PromptReply::Quiet
    );
    let later = T + kg_core::ambient::REMINDER_GAP_SECS + 1.0;
    assert!(matches!(
        w.reply(
            "cc-remind",
            "the stripe webhook signature, third time",
            later
        ),
        kg_core::PromptReply::Say(_)
    ));
    // No reminder ever says to load memory once it is loaded.
    for (i, prompt) in [
        "stripe webhook retries",
        "the webhook signature header",
        "stripe signature secrets",
    ]
    .iter()
    .enumerate()
    {
        let at = later + (i as f64 + 1.0) * (kg_core::ambient::REMINDER_GAP_SECS + 1.0);
        if let kg_core::PromptReply::Say(text) = w.reply("cc-remind", prompt, at) {
            assert!(!text.contains("no memory is loaded"), "{text}");
            assert!(!text.contains("subagent"), "{text}");
        }
    }
}

#[test]
fn a_session_outside_home_gets_the_user_graph_and_the_reason_there_is_no_project_memory() {
    let w = World::new();
    let writer = w.store.register_session(None, None, T).expect("session");
    let answer = tools::kg_put_node(
        &w.store,
        &PutNodeArgs {
            session_id: writer,
            level: Level::User,
            id: "style-tabs".into(),
            gist: "The user indents with tabs in every language".into(),
            notes: None,
            touches: None,
        },
        T,
    );
    assert!(!answer.is_error, "{}", answer.text);
    let outside = tempfile::tempdir().expect("a folder outside home");
    let folder = outside.path().to_string_lossy().into_owned();
    let boot = kg_core::session_bootstrap(
        &w.store,
        &kg_core::BootstrapRequest {
            project_path: folder.clone(),
            claude_session_id: Some("cc-outside".into()),
            source: Some("startup".into()),
            transcript_path: None,
        },
        kg_core::PreloadHeader::Standard,
        T,
    )
    .expect("a preload, not an error");
    assert!(boot.context.contains("style-tabs"), "{}", boot.context);
    assert!(
        boot.context
            .ends_with(&kg_core::wording::no_project_memory(&folder)),
        "{}",
        boot.context
    );
    assert!(boot.context.contains("KG_PROJECT_ROOTS"));
    assert_eq!(
        w.store
            .session(&boot.session_id)
            .and_then(|r| r.project_path),
        None
    );
    // A relative folder is refused: the server cannot know what it is relative to.
    let relative = kg_core::session_bootstrap(
        &w.store,
        &kg_core::BootstrapRequest {
            project_path: "src/shop".into(),
            ..Default::default()
        },
        kg_core::PreloadHeader::Standard,
        T,
    );
    assert!(relative.is_err_and(|e| e.to_string().starts_with("Project path must be absolute")),);
}

// ----- our recall (the default policy) ---------------------------------------------------

/// A small memory in several topics, so rarity means something.
fn our_memory(w: &World, sid: &str) {
    for (id, gist, touches) in [
        (
            "auth-jwt-access-ttl",
            "Access JWT lives 15 minutes; pods cache the JWKS for 10 minutes",
            &[][..],
        ),
        (
            "auth-jwks-rotation-overlap",
            "JWKS rotation keeps the old key published 25 minutes, or everyone is logged out",
            &[][..],
        ),
        (
            "billing-webhook-raw-body",
            "The Stripe webhook handler takes the raw body as Bytes: signatures break on re-serialised JSON",
            &["crates/api/src/billing/webhook.rs:20-75 (async fn stripe_webhook)"][..],
        ),
        (
            "billing-stripe-429",
            "Stripe answers 429 during the nightly sync; the client backs off with jitter",
            &[][..],
        ),
        (
            "radio-duty-cycle",
            "Uplink batch sizes were derived from the radio duty cycle limit",
            &[][..],
        ),
        (
            "deploy-rollback",
            "Rollback redeploys the previous image tag; migrations only move forward",
            &[][..],
        ),
        (
            "queue-lease-timeout",
            "A job lease lasts 5 minutes; longer jobs must heartbeat or run twice",
            &[][..],
        ),
        (
            "tenant-gdpr-export",
            "GDPR export of a tenant runs as a long job in the bulk lane",
            &[][..],
        ),
    ] {
        w.node(sid, id, gist, touches);
    }
    w.edge(
        sid,
        "tenant-gdpr-export",
        "queue-lease-timeout",
        "depends-on",
    );
    w.edge(
        sid,
        "auth-jwks-rotation-overlap",
        "auth-jwt-access-ttl",
        "explains",
    );
}

/// A world under our policy holding [`our_memory`], with session `cc-1` past its full
/// read.
fn our_world() -> World {
    let w = World::new();
    let sid = w.session("cc-1", true);
    our_memory(&w, &sid);
    w
}

fn hit_ids(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.strip_prefix("- [project] "))
        .filter_map(|rest| rest.split(':').next())
        .collect()
}

#[test]
fn our_recall_counts_short_technical_words() {
    let w = our_world();
    let text = w
        .prompt("cc-1", "JWT ttl")
        .expect("a two-word prompt in the memory's words injects");
    assert_eq!(hit_ids(&text)[0], "auth-jwt-access-ttl", "{text}");
    let text = w.prompt("cc-1", "429s").expect("a status code is a word");
    assert_eq!(hit_ids(&text), ["billing-stripe-429"], "{text}");
}

#[test]
fn our_recall_stays_silent_when_the_prompt_shares_one_ordinary_word() {
    let w = our_world();
    // "derivative" and "derived" share a stem, and nothing else is shared.
    assert_eq!(
        w.prompt("cc-1", "what's the derivative of x^3 * sin(x)?"),
        None
    );
    // Words the memory has never seen outweigh the one it has.
    assert_eq!(
        w.prompt("cc-1", "write a haiku about autumn rain and a job"),
        None
    );
    assert_eq!(w.prompt("cc-1", "ok go ahead"), None);
}

#[test]
fn our_recall_pulls_in_the_neighbour_the_prompt_also_names() {
    let w = our_world();
    let text = w
        .prompt(
            "cc-1",
            "the GDPR export job of one tenant runs twice, what about the lease?",
        )
        .expect("injects");
    let ids = hit_ids(&text);
    assert!(ids.contains(&"tenant-gdpr-export"), "{text}");
    let lease_named = text.contains("queue-lease-timeout");
    assert!(
        lease_named,
        "the neighbour joins as a hit or a connection: {text}"
    );
    assert!(!text.contains("auth-"), "nothing of another topic: {text}");
}

#[test]
fn our_recall_finds_the_node_touching_a_pasted_file() {
    let w = our_world();
    let text = w
        .prompt(
            "cc-1",
            "crates/api/src/billing/webhook.rs why do we take Bytes here instead of Json?",
        )
        .expect("injects");
    assert_eq!(hit_ids(&text), ["billing-webhook-raw-body"], "{text}");
}

#[test]
fn our_recall_judges_a_prompt_in_another_language_by_its_technical_words() {
    let w = our_world();
    let text = w
        .prompt(
            "cc-1",
            "warum bekommen wir 429 von Stripe beim nächtlichen Sync?",
        )
        .expect("injects");
    assert_eq!(hit_ids(&text), ["billing-stripe-429"], "{text}");
}

#[test]
fn our_recall_says_nothing_twice() {
    let w = our_world();
    assert!(w.prompt("cc-1", "rollback of a deploy").is_some());
    assert_eq!(w.prompt("cc-1", "rollback of a deploy again"), None);
}

#[test]
fn a_codex_session_gets_a_preload_sized_in_bytes_for_codex() {
    let w = World::new();
    let writer = w.store.register_session(None, None, T).expect("session");
    // Cyrillic gists: two bytes per character, one UTF-16 unit, so the units differ.
    for i in 0..70 {
        let gist = format!("Заметка номер {i}: {}", "память агента ".repeat(18));
        let answer = tools::kg_put_node(
            &w.store,
            &PutNodeArgs {
                session_id: writer.clone(),
                level: Level::User,
                id: format!("note-{i}"),
                gist,
                notes: None,
                touches: None,
            },
            T,
        );
        assert!(!answer.is_error, "{}", answer.text);
    }
    let home = w.store.config().home.clone();
    let boot = |id: &str, transcript: &str| {
        kg_core::session_bootstrap(
            &w.store,
            &kg_core::BootstrapRequest {
                project_path: home.to_string_lossy().into_owned(),
                claude_session_id: Some(id.into()),
                source: Some("startup".into()),
                transcript_path: Some(transcript.into()),
            },
            kg_core::PreloadHeader::Standard,
            T,
        )
        .expect("a preload")
        .context
    };
    let codex = boot(
        "019a0000-0000-7000-8000-00000000c0de",
        &format!(
            "{}/.codex/sessions/2026/12/05/rollout-2026-12-05T18-00-00-019a.jsonl",
            home.display()
        ),
    );
    let claude = boot(
        "0b1e0000-0000-4000-8000-00000000c1a0",
        &format!("{}/.claude/projects/-p/0b1e.jsonl", home.display()),
    );
    let utf16 = |t: &str| t.chars().map(char::len_utf16).sum::<usize>();
    assert!(codex.len() <= 9_000, "{} bytes", codex.len());
    assert!(
        codex.len() > 8_000,
        "the budget is used: {} bytes",
        codex.len()
    );
    assert!(utf16(&claude) <= 10_000, "{} units", utf16(&claude));
    assert!(claude.len() > 9_000, "Claude Code counts units, not bytes");
}

#[test]
fn a_codex_session_without_hooks_is_told_how_to_get_them_once() {
    use kg_core::tools::ReadArgs;
    let w = World::new();
    let read = |client: kg_core::Client| {
        kg_core::kg_read(
            &w.store,
            &ReadArgs {
                cwd: Some(w.project.clone()),
                client,
                ..ReadArgs::default()
            },
            T,
        )
    };
    let hint = kg_core::wording::CODEX_NO_HOOKS;
    let claude = read(kg_core::Client::ClaudeCode);
    assert!(
        !claude.is_error && !claude.text.contains(hint),
        "{}",
        claude.text
    );
    let codex = read(kg_core::Client::Codex);
    assert!(codex.text.ends_with(hint), "{}", codex.text);
    // Once its hooks preload a session here, a Codex read starts without the note.
    kg_core::session_bootstrap(
        &w.store,
        &kg_core::BootstrapRequest {
            project_path: w.project.clone(),
            claude_session_id: Some("019a0000-0000-7000-8000-0000000000c1".into()),
            source: Some("startup".into()),
            transcript_path: None,
        },
        kg_core::PreloadHeader::Standard,
        T,
    )
    .expect("a preload");
    let text = kg_core::kg_read(
        &w.store,
        &ReadArgs {
            cwd: Some(w.project.clone()),
            client: kg_core::Client::Codex,
            ..ReadArgs::default()
        },
        T + 1.0,
    );
    assert!(!text.text.contains(hint), "{}", text.text);
}
