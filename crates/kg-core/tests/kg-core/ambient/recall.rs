//! Prompt recall: what a prompt injects, once, within its budget.

use super::*;

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
