//! The recall evaluation, for `make test`: the harness runs on both memories under both
//! policies and every protocol, every number is in range, a second run gives the same
//! numbers, the live protocol really holds every active gist in context, and a runs
//! file scores exactly as the runs it was written from. The targets are `make
//! eval`'s to judge, not checked here: the harness must measure whatever the algorithm
//! does.

use recall_eval::metrics::{RecallStats, SearchStats};
use recall_eval::{Options, Report, data, evaluate, report};
use std::process::Command;

fn in_unit_range(value: Option<f64>, what: &str) {
    if let Some(v) = value {
        assert!((0.0..=1.0).contains(&v), "{what} = {v} is not a rate");
    }
}

fn check_recall(stats: &RecallStats, what: &str) {
    for (value, name) in [
        (stats.injection_rate, "injection rate"),
        (stats.precision, "precision"),
        (stats.precision_hits, "precision of hit lines"),
        (stats.recall_at_5, "recall@5"),
        (stats.mrr, "MRR"),
        (stats.silence_rate, "silence"),
        (stats.strict_silence_rate, "strict silence"),
    ] {
        in_unit_range(value, &format!("{what}: {name}"));
    }
    assert!(stats.injected <= stats.labelled, "{what}");
    assert!(stats.ids_relevant <= stats.ids_injected, "{what}");
    assert!(stats.silent <= stats.unlabelled, "{what}");
    // A rate is there exactly when its group is not empty.
    assert_eq!(stats.injection_rate.is_some(), stats.labelled > 0, "{what}");
    assert_eq!(stats.silence_rate.is_some(), stats.unlabelled > 0, "{what}");
}

fn check_search(stats: &SearchStats, what: &str) {
    for value in [stats.hit_at_1, stats.hit_at_5, stats.mrr, stats.ideal_at_1] {
        in_unit_range(value, what);
    }
    if let (Some(h1), Some(h5), Some(mrr)) = (stats.hit_at_1, stats.hit_at_5, stats.mrr) {
        assert!(
            h1 <= h5 && h1 <= mrr,
            "{what}: hit@1 {h1}, hit@5 {h5}, MRR {mrr}"
        );
    }
}

fn check(report: &Report, data: &data::Dataset) {
    assert_eq!(report.memories.len(), data.memories.len());
    for (memory, source) in report.memories.iter().zip(&data.memories) {
        assert_eq!(memory.prompts, source.prompts.len(), "{}", memory.name);
        assert_eq!(memory.searches, source.searches.len(), "{}", memory.name);
        let names: Vec<&str> = memory.policies.iter().map(|p| p.policy.as_str()).collect();
        assert_eq!(names, ["reference", "ours"]);
        for policy in &memory.policies {
            let what = format!("{} under {}", memory.name, policy.policy);
            let load = policy.load.as_ref().expect("in-process runs load a graph");
            assert_eq!(load.project_nodes, source_nodes(source), "{what}");
            for rows in [
                &policy.quality.clean,
                &policy.quality.live,
                &policy.quality.first_prompt,
            ] {
                let all = rows.last().expect("an `all` row");
                assert_eq!(all.kind, "all");
                assert_eq!(all.stats.labelled + all.stats.unlabelled, memory.prompts);
                let kinds: usize = rows[..rows.len() - 1]
                    .iter()
                    .map(|r| r.stats.labelled + r.stats.unlabelled)
                    .sum();
                assert_eq!(kinds, memory.prompts, "{what}: kinds add up");
                for row in rows {
                    check_recall(&row.stats, &format!("{what}, {}", row.kind));
                }
            }
            for row in &policy.quality.search {
                check_search(&row.stats, &format!("{what}, kg_search {}", row.kind));
            }
            let runs = policy.runs.as_ref().expect("per-prompt outcomes");
            for run in runs
                .clean
                .iter()
                .chain(&runs.live)
                .chain(&runs.first_prompt)
            {
                assert!(run.micros.is_finite() && run.micros >= 0.0);
                assert_eq!(run.said.injected(), !run.hits.is_empty(), "{}", run.id);
            }
            for ms in [
                policy.latency.prompt_recall_ms,
                policy.latency.prompt_recall_live_ms,
                policy.latency.kg_search_ms,
            ] {
                assert!(ms.is_some_and(|m| m.is_finite() && m >= 0.0), "{what}");
            }
        }
    }
}

fn source_nodes(memory: &data::Memory) -> usize {
    let path = memory
        .storage_root
        .join("projects")
        .join(&memory.spec.slug)
        .join("graph.json");
    let text = std::fs::read_to_string(&path).expect("project graph");
    let value: serde_json::Value = serde_json::from_str(&text).expect("graph JSON");
    value["nodes"].as_object().expect("nodes").len()
}

#[test]
fn the_evaluation_runs_in_range_and_reproduces() {
    let dir = data::default_data_dir();
    let data = data::load(&dir).expect("the labelled data loads");
    assert!(data.memories.len() >= 2, "two memories at least");
    let options = Options::new(dir);
    let first = evaluate(&options).expect("the evaluation runs");
    check(&first, &data);
    // Same data, same frozen clock, fresh stores: the same numbers (timings aside).
    let second = evaluate(&options).expect("the evaluation runs again");
    for (a, b) in first.memories.iter().zip(&second.memories) {
        for (pa, pb) in a.policies.iter().zip(&b.policies) {
            assert_eq!(pa.quality, pb.quality, "{} under {}", a.name, pa.policy);
            assert_eq!(pa.load, pb.load, "{} under {}", a.name, pa.policy);
        }
    }
    // The pooled scores are the memories' runs together: labelled prompts add up.
    for totals in &first.pooled {
        let all = totals.quality.clean.last().expect("an `all` row");
        let sum: usize = first.memories.iter().map(|m| m.prompts).sum();
        assert_eq!(
            all.stats.labelled + all.stats.unlabelled,
            sum,
            "{}",
            totals.policy
        );
    }
    let text = report::render(&first, true);
    for memory in &data.memories {
        assert!(text.contains(&memory.name), "{text}");
    }
    for part in [
        "clean:",
        "live:",
        "kg_search per query kind",
        "issue 37 targets",
        "multi-topic",
    ] {
        assert!(text.contains(part), "no {part:?} in\n{text}");
    }
}

/// The live protocol is a real full read: the prompt's session has seen every active
/// node of both levels (so recall can only point at one, never repeat its gist), while
/// the clean protocol's session has seen nothing and gets the gist of a node the prompt
/// names outright.
#[test]
fn live_sessions_hold_every_active_gist() {
    use kg_core::{Policy, Tier};
    use recall_eval::run::{Protocol, run_prompts};
    use recall_eval::world::World;
    let data = data::load(&data::default_data_dir()).expect("the labelled data loads");
    let memory = &data.memories[0];
    let world = World::open(&data, memory, Policy::Ours, true).expect("the memory opens");
    let active: Vec<String> = world.store.with_graph(&world.slot, |g| {
        g.ids_in_tier(Tier::Active)
            .iter()
            .map(|id| id.to_string())
            .collect()
    });
    let id = active.first().expect("an active node").clone();
    let gist = world.store.with_graph(&world.slot, |g| {
        g.nodes
            .get(id.as_str())
            .map(|n| n.gist().to_string())
            .expect("its node")
    });
    let prompt = data::Prompt {
        id: "probe".into(),
        kind: "on-topic".into(),
        prompt: format!("what does {id} say? {gist}"),
        relevant: vec![id.clone()],
    };
    let one = std::slice::from_ref(&prompt);
    let clean = run_prompts(&world, one, Protocol::Clean, data.now_ts).expect("clean run");
    run_prompts(&world, one, Protocol::Live, data.now_ts).expect("live run");
    assert_eq!(clean[0].hits.first(), Some(&id), "clean: {:?}", clean[0]);
    let seen = |claude: &str| {
        world.store.with_sessions(|r| {
            let sid = r
                .find_by_claude_sid(claude)
                .expect("the prompt's session")
                .to_string();
            r.lookup(&sid).expect("its record").seen_ids().to_vec()
        })
    };
    let live_seen = seen("recall-eval-live-probe");
    let missing: Vec<&String> = active.iter().filter(|a| !live_seen.contains(a)).collect();
    assert!(
        missing.is_empty(),
        "the live session has not seen {missing:?}"
    );
    // Clean: only what the recall itself showed.
    assert!(seen("recall-eval-clean-probe").len() <= clean[0].injected().len());
}

/// A runs file written for a policy scores exactly as the in-process evaluation did:
/// the `--runs` option and the harness share every line of metric code.
#[test]
fn a_runs_file_scores_like_the_runs_it_holds() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let file = dir.path().join("ours.json");
    let bin = env!("CARGO_BIN_EXE_recall-eval");
    let written = Command::new(bin)
        .args(["--json", "--limit", "3", "--policy", "ours", "--write-runs"])
        .arg(&file)
        .output()
        .expect("recall-eval runs");
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let scored = Command::new(bin)
        .args(["--json", "--limit", "3", "--runs-only", "--runs"])
        .arg(&file)
        .output()
        .expect("recall-eval runs");
    assert!(
        scored.status.success(),
        "{}",
        String::from_utf8_lossy(&scored.stderr)
    );
    let a: serde_json::Value = serde_json::from_slice(&written.stdout).expect("JSON");
    let b: serde_json::Value = serde_json::from_slice(&scored.stdout).expect("JSON");
    for (ma, mb) in a["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .zip(b["memories"].as_array().expect("memories"))
    {
        assert_eq!(ma["policies"][0]["quality"], mb["policies"][0]["quality"]);
        assert_eq!(mb["policies"][0]["policy"], "ours");
    }
    assert_eq!(a["pooled"][0]["quality"], b["pooled"][0]["quality"]);
    // A file that misses a prompt is refused, naming it.
    let mut runs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("runs")).expect("JSON");
    let clean = runs["memories"][0]["runs"]["clean"]
        .as_array_mut()
        .expect("clean runs");
    let dropped = clean.remove(0)["id"].as_str().expect("an id").to_string();
    std::fs::write(&file, runs.to_string()).expect("write");
    let bad = Command::new(bin)
        .args(["--limit", "3", "--runs-only", "--runs"])
        .arg(&file)
        .output()
        .expect("recall-eval runs");
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains(&format!("no outcome for prompt {dropped}")),
        "{err}"
    );
}

#[test]
fn the_binary_prints_json_for_machines() {
    let out = Command::new(env!("CARGO_BIN_EXE_recall-eval"))
        .args(["--json", "--limit", "2", "--policy", "ours"])
        .output()
        .expect("recall-eval runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let memories = report["memories"].as_array().expect("memories");
    assert_eq!(memories.len(), 2);
    for memory in memories {
        assert_eq!(memory["policies"][0]["policy"], "ours");
        // Per-prompt outcomes only with --verbose.
        assert!(memory["policies"][0].get("runs").is_none());
        let all = &memory["policies"][0]["quality"]["clean"]
            .as_array()
            .expect("rows")
            .last()
            .expect("an `all` row")["stats"];
        assert!(all["labelled"].as_u64().is_some_and(|n| n > 0));
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_recall-eval"))
        .args(["--memory", "no-such-memory"])
        .output()
        .expect("recall-eval runs");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no memory named"));
}
