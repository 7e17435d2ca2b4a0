//! The scores (definitions in tests/recall-eval/README.md, "Running the evaluation").
//!
//! A prompt is *labelled* when its `relevant` list is not empty: every kind except
//! `off-topic` and the acknowledgements of `short`. Labelled prompts are the on-topic
//! prompts of the "injection rate on on-topic prompts"; the others are where
//! silence is right.

use crate::run::{PromptRun, SearchRun};
use serde::Serialize;

/// Prompt kinds in the order the tables show them; a kind not listed comes after.
pub const KIND_ORDER: &[&str] = &[
    "on-topic",
    "paraphrase",
    "multi-hop",
    "file-path",
    "multi-topic",
    "mixed-language",
    "short",
    "off-topic",
];

/// Query kinds in table order.
pub const QUERY_KIND_ORDER: &[&str] = &["direct", "paraphrase"];

/// How many injected ids recall@5 looks at.
pub const RECALL_AT: usize = 5;

/// Prompt recall over a group of prompts. Rates are `None` when the group has no
/// prompt they apply to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallStats {
    /// Labelled prompts (the on-topic set).
    pub labelled: usize,
    /// Labelled prompts that got a recall block.
    pub injected: usize,
    /// `injected / labelled`.
    pub injection_rate: Option<f64>,
    /// Ids injected into labelled prompts, hits and connectors, each once per prompt.
    pub ids_injected: usize,
    /// Of those, the labelled ones.
    pub ids_relevant: usize,
    /// `ids_relevant / ids_injected`: precision of injected ids, pooled over prompts.
    pub precision: Option<f64>,
    /// The same counting hit lines only (connectors left out).
    pub precision_hits: Option<f64>,
    /// Mean over labelled prompts of |first 5 injected ids ∩ labels| / |labels|; a
    /// prompt that got nothing scores 0.
    pub recall_at_5: Option<f64>,
    /// Mean over labelled prompts of 1 / rank of the first labelled id among the
    /// injected ids (hits, then connectors); 0 when none is there.
    pub mrr: Option<f64>,
    /// Mean injected ids per labelled prompt that got a recall block.
    pub ids_per_injection: Option<f64>,
    /// Prompts with no labels (off-topic, acknowledgements): silence is right.
    pub unlabelled: usize,
    /// Of those, the ones that got no recall block.
    pub silent: usize,
    /// `silent / unlabelled`: nothing from memory injected (a nudge or a reminder is
    /// fixed wording and does not count against it).
    pub silence_rate: Option<f64>,
    /// Share of unlabelled prompts that got nothing at all: no recall, no nudge, no
    /// reminder (the reference hook adds a random reminder whenever the server says
    /// nothing, so under that policy this is 0).
    pub strict_silence_rate: Option<f64>,
}

pub(crate) fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

fn mean(sum: f64, n: usize) -> Option<f64> {
    (n > 0).then(|| sum / n as f64)
}

/// 1 / the 1-based rank of the first id of `ranked` that is in `relevant`, or 0.
pub fn reciprocal_rank<S: AsRef<str>>(ranked: &[S], relevant: &[String]) -> f64 {
    ranked
        .iter()
        .position(|id| relevant.iter().any(|r| r == id.as_ref()))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// |first `k` of `ranked` ∩ relevant| / |relevant|.
pub fn recall_at<S: AsRef<str>>(ranked: &[S], relevant: &[String], k: usize) -> f64 {
    if relevant.is_empty() {
        return 0.0;
    }
    let found = relevant
        .iter()
        .filter(|r| ranked.iter().take(k).any(|id| id.as_ref() == r.as_str()))
        .count();
    found as f64 / relevant.len() as f64
}

impl RecallStats {
    /// Score a group of prompt runs.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a PromptRun>) -> RecallStats {
        let mut labelled = 0;
        let mut injected = 0;
        let mut ids_injected = 0;
        let mut ids_relevant = 0;
        let mut hit_ids = 0;
        let mut hit_relevant = 0;
        let mut recall_sum = 0.0;
        let mut rr_sum = 0.0;
        let mut unlabelled = 0;
        let mut silent = 0;
        let mut nothing = 0;
        for run in runs {
            if run.relevant.is_empty() {
                unlabelled += 1;
                silent += usize::from(!run.said.injected());
                nothing += usize::from(run.said.nothing_at_all());
                continue;
            }
            labelled += 1;
            if !run.said.injected() {
                continue;
            }
            injected += 1;
            let ids = run.injected();
            let is_relevant = |id: &str| run.relevant.iter().any(|r| r == id);
            ids_injected += ids.len();
            ids_relevant += ids.iter().filter(|id| is_relevant(id)).count();
            hit_ids += run.hits.len();
            hit_relevant += run.hits.iter().filter(|id| is_relevant(id)).count();
            recall_sum += recall_at(&ids, &run.relevant, RECALL_AT);
            rr_sum += reciprocal_rank(&ids, &run.relevant);
        }
        RecallStats {
            labelled,
            injected,
            injection_rate: ratio(injected, labelled),
            ids_injected,
            ids_relevant,
            precision: ratio(ids_relevant, ids_injected),
            precision_hits: ratio(hit_relevant, hit_ids),
            recall_at_5: mean(recall_sum, labelled),
            mrr: mean(rr_sum, labelled),
            ids_per_injection: ratio(ids_injected, injected),
            unlabelled,
            silent,
            silence_rate: ratio(silent, unlabelled),
            strict_silence_rate: ratio(nothing, unlabelled),
        }
    }
}

/// `kg_search` over a group of queries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchStats {
    /// Queries.
    pub queries: usize,
    /// Share whose first ranked id is labelled.
    pub hit_at_1: Option<f64>,
    /// Share with a labelled id among the first 5 (the top hits shown in full).
    pub hit_at_5: Option<f64>,
    /// Mean of 1 / rank of the first labelled id over the whole ranking (top hits,
    /// then "MORE MATCHES", 15 at most); 0 when none is there.
    pub mrr: Option<f64>,
    /// Share whose first ranked id is the first label (the ideal top result).
    pub ideal_at_1: Option<f64>,
}

impl SearchStats {
    /// Score a group of query runs.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a SearchRun>) -> SearchStats {
        let (mut n, mut hit1, mut hit5, mut ideal, mut rr) = (0, 0, 0, 0, 0.0);
        for run in runs {
            n += 1;
            let first = run.ranked.iter().position(|id| run.relevant.contains(id));
            rr += first.map_or(0.0, |i| 1.0 / (i + 1) as f64);
            hit1 += usize::from(first == Some(0));
            hit5 += usize::from(first.is_some_and(|i| i < 5));
            ideal += usize::from(
                run.ranked
                    .first()
                    .is_some_and(|top| Some(top) == run.relevant.first()),
            );
        }
        SearchStats {
            queries: n,
            hit_at_1: ratio(hit1, n),
            hit_at_5: ratio(hit5, n),
            mrr: mean(rr, n),
            ideal_at_1: ratio(ideal, n),
        }
    }
}

/// Stats of one kind (or `all`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByKind<T> {
    /// The kind, or `all`.
    pub kind: String,
    /// Its stats.
    pub stats: T,
}

/// Kinds present in `kinds`, in `order` first, then any other in name order.
pub fn kinds_in_order<'a>(kinds: impl Iterator<Item = &'a str>, order: &[&str]) -> Vec<String> {
    let mut present: Vec<&str> = kinds.collect();
    present.sort_unstable();
    present.dedup();
    let mut out: Vec<String> = order
        .iter()
        .filter(|k| present.contains(k))
        .map(|k| k.to_string())
        .collect();
    out.extend(
        present
            .iter()
            .filter(|k| !order.contains(k))
            .map(|k| k.to_string()),
    );
    out
}

/// Prompt stats per kind, then `all`.
pub fn recall_by_kind(runs: &[PromptRun]) -> Vec<ByKind<RecallStats>> {
    let mut out: Vec<ByKind<RecallStats>> =
        kinds_in_order(runs.iter().map(|r| r.kind.as_str()), KIND_ORDER)
            .into_iter()
            .map(|kind| ByKind {
                stats: RecallStats::of(runs.iter().filter(|r| r.kind == kind)),
                kind,
            })
            .collect();
    out.push(ByKind {
        kind: "all".into(),
        stats: RecallStats::of(runs),
    });
    out
}

/// Query stats per kind, then `all`.
pub fn search_by_kind(runs: &[SearchRun]) -> Vec<ByKind<SearchStats>> {
    let mut out: Vec<ByKind<SearchStats>> =
        kinds_in_order(runs.iter().map(|r| r.kind.as_str()), QUERY_KIND_ORDER)
            .into_iter()
            .map(|kind| ByKind {
                stats: SearchStats::of(runs.iter().filter(|r| r.kind == kind)),
                kind,
            })
            .collect();
    out.push(ByKind {
        kind: "all".into(),
        stats: SearchStats::of(runs),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Said;

    fn run(kind: &str, relevant: &[&str], said: Said, hits: &[&str], conn: &[&str]) -> PromptRun {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        PromptRun {
            id: "p".into(),
            kind: kind.into(),
            prompt: String::new(),
            relevant: owned(relevant),
            said,
            nudged: false,
            hits: owned(hits),
            connectors: owned(conn),
            micros: 0.0,
            reply: None,
        }
    }

    #[test]
    fn recall_stats_follow_the_definitions() {
        let runs = [
            // 2 of 3 injected ids relevant (1 of 2 hits); both labels within 5.
            run("on-topic", &["a", "b"], Said::Recall, &["x", "a"], &["b"]),
            // Missed: counts for recall and MRR, not for precision.
            run("on-topic", &["c"], Said::HookReminder, &[], &[]),
            run("off-topic", &[], Said::Quiet, &[], &[]),
            run("off-topic", &[], Said::Reminder, &[], &[]),
            run("off-topic", &[], Said::Recall, &["z"], &[]),
        ];
        let s = RecallStats::of(&runs);
        assert_eq!(
            (s.labelled, s.injected, s.unlabelled, s.silent),
            (2, 1, 3, 2)
        );
        assert_eq!(s.injection_rate, Some(0.5));
        assert_eq!(s.precision, Some(2.0 / 3.0));
        assert_eq!(s.precision_hits, Some(0.5));
        assert_eq!(s.recall_at_5, Some(0.5));
        assert_eq!(s.mrr, Some(0.25));
        assert_eq!(s.silence_rate, Some(2.0 / 3.0));
        assert_eq!(s.strict_silence_rate, Some(1.0 / 3.0));
        let empty = RecallStats::of(&[]);
        assert_eq!((empty.precision, empty.silence_rate), (None, None));
    }

    #[test]
    fn search_stats_follow_the_definitions() {
        let q = |ranked: &[&str], relevant: &[&str]| SearchRun {
            id: "q".into(),
            kind: "direct".into(),
            query: String::new(),
            relevant: relevant.iter().map(|s| s.to_string()).collect(),
            ranked: ranked.iter().map(|s| s.to_string()).collect(),
            micros: 0.0,
            text: None,
        };
        let runs = [
            q(&["b", "a"], &["a", "b"]),
            q(&["x", "y", "z", "w", "v", "a"], &["a"]),
            q(&[], &["a"]),
        ];
        let s = SearchStats::of(&runs);
        assert_eq!(s.hit_at_1, Some(1.0 / 3.0));
        assert_eq!(s.hit_at_5, Some(1.0 / 3.0));
        assert_eq!(s.ideal_at_1, Some(0.0));
        assert_eq!(s.mrr, Some((1.0 + 1.0 / 6.0) / 3.0));
    }

    #[test]
    fn kinds_keep_the_table_order() {
        let kinds = ["short", "zeta", "on-topic", "short"];
        assert_eq!(
            kinds_in_order(kinds.into_iter(), KIND_ORDER),
            ["on-topic", "short", "zeta"]
        );
    }
}
