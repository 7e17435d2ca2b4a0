//! Fast mode of the recall evaluation, for `make test`: the harness runs on both
//! memories under both policies, every number is in range, and a second run gives the
//! same numbers. The targets are `make eval`'s to report, not checked here:
//! they are not met yet, and the harness must measure whatever the algorithm does.

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
            assert_eq!(policy.load.project_nodes, source_nodes(source), "{what}");
            for rows in [
                &policy.quality.after_full_read,
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
            for run in runs.after_full_read.iter().chain(&runs.first_prompt) {
                assert!(run.micros.is_finite() && run.micros >= 0.0);
                assert_eq!(run.said.injected(), !run.hits.is_empty(), "{}", run.id);
            }
            for ms in [policy.latency.prompt_recall_ms, policy.latency.kg_search_ms] {
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
    let text = report::render(&first, true);
    for memory in &data.memories {
        assert!(text.contains(&memory.name), "{text}");
    }
    assert!(text.contains("after the full read") && text.contains("kg_search"));
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
        let all = &memory["policies"][0]["quality"]["after_full_read"]
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
