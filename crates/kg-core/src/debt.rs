//! Maintenance debt (core.md §7.6, interfaces.md §8): how much a graph needs a
//! `/kg-maintain` pass — staleness × activity × wear. The list of every graph with its
//! debt is the [`crate::catalogue`].
//!
//! Debt also counts the merge conflicts a graph holds ([`unresolved_conflicts`]):
//! they wait for a person or an agent, not for the score.

use crate::graph::Graph;
use crate::model::{Object, as_ts};
use crate::pyfmt::{float_repr, g_format, round_to};
use crate::score::{DAY_SECS, credible_ts};
use crate::wording;
use serde_json::Value;
use std::collections::BTreeSet;

/// Gists longer than this scan badly and stall the compactor.
pub const GIST_SCAN_LIMIT: usize = 300;
pub use crate::wording::CONFLICT_NOTE_PREFIX;

/// Days after which a graph counts as fully stale.
pub const STALE_DAYS: f64 = 14.0;
/// Active days (of the last 7) at which activity saturates.
pub const BUSY_DAYS: f64 = 4.0;

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DebtLevel {
    /// Score under 0.3: nothing to do yet.
    Low,
    /// Score from 0.3, or any unresolved merge conflict: the tray shows the graph as
    /// needing tending.
    Med,
    /// Score from 0.5: the DEBT line asks for a `/kg-maintain` pass and the tray
    /// notifies (at most once per graph per day).
    High,
}

impl DebtLevel {
    /// The verdict as DEBT lines, payloads and the change log spell it: `LOW`, `MED`
    /// or `HIGH`.
    pub fn as_str(self) -> &'static str {
        match self {
            DebtLevel::Low => "LOW",
            DebtLevel::Med => "MED",
            DebtLevel::High => "HIGH",
        }
    }
}

/// One graph's debt, with its raw factors.
#[derive(Debug, Clone, PartialEq)]
pub struct Debt {
    /// Unrounded; the level is decided on it (and on `merge_conflicts`).
    pub score: f64,
    /// The verdict on `score`: HIGH from 0.5, MED from 0.3, else LOW; and at least MED
    /// while `merge_conflicts` is not 0.
    pub level: DebtLevel,
    /// Active nodes whose gist is over the 300-character scan limit.
    pub oversized: usize,
    /// Active nodes that no edge names as an end.
    pub unconnected: usize,
    /// Nodes whose `_archived` flag is not truthy: the `n` the deficit divides by.
    pub active_nodes: usize,
    /// Unrounded days since the last stamped maintenance pass (14 when never).
    pub untended_days: f64,
    /// No credible maintenance stamp (`_meta.progress.maintain.last_ts`): never
    /// tended, or stamped further in the future than clock skew explains.
    pub never_maintained: bool,
    /// Distinct UTC days among the nodes' last-read stamps (and, for a project, its
    /// tool-event stamps) of the last 7 × 24 hours; activity saturates at 4.
    pub active_days_7d: usize,
    /// Archived nodes still inside their grace period: new nodes that compaction
    /// archived (or orphaned) because a burst of writes went past the new nodes' share
    /// of the level's budget or crowded nodes in use. Counted under our policy only; 0
    /// under the reference's, whose DEBT has no such component.
    pub burst: usize,
    /// Merge-conflict notes ([`CONFLICT_NOTE_PREFIX`]) on the level's nodes, any tier:
    /// conflicts a sync's merge could not settle, waiting for a person or an agent.
    /// They leave the score alone (a maintenance pass does not resolve them) but raise
    /// the level to at least MED, so that the tray lists the graph until they are
    /// settled. The same under both policies: the reference never writes such notes,
    /// so none of its outputs change.
    pub merge_conflicts: usize,
    /// Path-shaped `touches` entries of active nodes whose file is gone (see
    /// `stale_touches`). Counted under our policy only; 0 under the reference's.
    pub stale_touches: usize,
    /// The active nodes holding them: what the deficit weighs.
    pub stale_nodes: usize,
    /// Items a sync held back from this graph (content from a remote that broke a
    /// write rule; see `Store::hold_back`): waiting for a person, so, like merge
    /// conflicts, they raise the level to at least MED and leave the score alone.
    pub held_back: usize,
}

impl Debt {
    /// `min(1, untended_days / 14)`.
    pub fn staleness(&self) -> f64 {
        (self.untended_days / STALE_DAYS).min(1.0)
    }

    /// `min(1, active_days_7d / 4)`.
    pub fn activity(&self) -> f64 {
        (self.active_days_7d as f64 / BUSY_DAYS).min(1.0)
    }

    /// `oversized / n + 0.5 × unconnected / n` over the `n` active nodes, plus
    /// `0.5 × burst / n` when a burst was archived and `0.5 × stale_nodes / n` when
    /// touches are stale, before the score caps it at 1.
    pub fn deficit(&self) -> f64 {
        if self.active_nodes == 0 {
            return 0.0;
        }
        let n = self.active_nodes as f64;
        let mut deficit = (self.oversized as f64 + 0.5 * self.unconnected as f64) / n;
        // Each addition only when present: without them the sum is evaluated exactly
        // as the reference does (its DEBT has neither).
        if self.burst > 0 {
            deficit += 0.5 * self.burst as f64 / n;
        }
        if self.stale_nodes > 0 {
            deficit += 0.5 * self.stale_nodes as f64 / n;
        }
        deficit
    }

    /// This debt with stale touches counted (`entries` stale entries on `nodes` active
    /// nodes): a pointer to a file that is gone misleads whoever follows it, wear for
    /// a maintenance pass like an unconnected node.
    pub fn with_stale_touches(mut self, entries: usize, nodes: usize) -> Debt {
        if entries == 0 {
            return self;
        }
        self.stale_touches = entries;
        self.stale_nodes = nodes;
        self.rescore();
        self
    }

    /// This debt with `burst` archived new nodes counted (see [`Debt::burst`]): a
    /// burst is wear for a maintenance pass to review (merge, shorten or delete what
    /// the burst wrote), so it weighs in the deficit like an unconnected node.
    pub fn with_burst(mut self, burst: usize) -> Debt {
        if burst == 0 {
            return self;
        }
        self.burst = burst;
        self.rescore();
        self
    }

    /// This debt with `items` held back from sync counted (see [`Debt::held_back`]).
    pub fn with_held_back(mut self, items: usize) -> Debt {
        if items == 0 {
            return self;
        }
        self.held_back = items;
        self.rescore();
        self
    }

    /// Score and level from the factors.
    fn rescore(&mut self) {
        self.score = self.staleness()
            * (0.4 + 0.6 * self.activity())
            * (0.25 + 0.75 * self.deficit().min(1.0));
        self.level = if self.score >= 0.5 {
            DebtLevel::High
        } else if self.score >= 0.3 {
            DebtLevel::Med
        } else {
            DebtLevel::Low
        };
        if self.merge_conflicts > 0 || self.held_back > 0 {
            self.level = self.level.max(DebtLevel::Med);
        }
    }

    /// The JSON object the survey and the graph view show (rounded fields).
    pub fn to_object(&self) -> Object {
        let mut obj = Object::new();
        obj.insert("score".into(), float(round_to(self.score, 2)));
        obj.insert("level".into(), Value::String(self.level.as_str().into()));
        obj.insert("oversized_gists".into(), Value::from(self.oversized));
        obj.insert("unconnected_active".into(), Value::from(self.unconnected));
        obj.insert("active_nodes".into(), Value::from(self.active_nodes));
        obj.insert(
            "untended_days".into(),
            float(round_to(self.untended_days, 1)),
        );
        obj.insert(
            "never_maintained".into(),
            Value::Bool(self.never_maintained),
        );
        obj.insert("active_days_7d".into(), Value::from(self.active_days_7d));
        // Only when there are some: the survey's format has no such field.
        if self.merge_conflicts > 0 {
            obj.insert("merge_conflicts".into(), Value::from(self.merge_conflicts));
        }
        // Named as the reference's later versions name them.
        if self.stale_touches > 0 {
            obj.insert("dangling_touches".into(), Value::from(self.stale_touches));
            obj.insert("dangling_nodes".into(), Value::from(self.stale_nodes));
        }
        if self.held_back > 0 {
            obj.insert("held_back".into(), Value::from(self.held_back));
        }
        obj
    }

    /// `DEBT: <LEVEL> (<score>) — <o> oversized gist(s), <u> unconnected, <untended>, active <d>/7d`,
    /// with `, <b> new node(s) archived in a burst` after `<u> unconnected` when a
    /// burst was archived, then [`Debt::conflicts_clause`] when merge conflicts wait.
    /// The line as the reference wrote it (`KG_POLICY=reference`): a HIGH line names
    /// the plugin's `/kg-maintain`.
    pub fn reference_line(&self) -> String {
        let line = self.line();
        match line.strip_suffix(wording::DEBT_HIGH_CALL) {
            Some(head) => format!("{head}{}", wording::DEBT_HIGH_CALL_REFERENCE),
            None => line,
        }
    }

    /// The line (our policy's wording: no plugin-only command is named).
    pub fn line(&self) -> String {
        let untended = if self.never_maintained {
            "never maintained".to_string()
        } else {
            format!("untended {}d", g_format(round_to(self.untended_days, 1)))
        };
        let burst = if self.burst > 0 {
            wording::debt_burst(self.burst)
        } else {
            String::new()
        };
        let stale = if self.stale_touches > 0 {
            wording::debt_stale_touches(self.stale_touches)
        } else {
            String::new()
        };
        let mut conflicts = match self.conflicts_clause() {
            Some(clause) => format!(", {clause}"),
            None => String::new(),
        };
        if self.held_back > 0 {
            conflicts.push_str(&format!(", {}", wording::debt_held_back(self.held_back)));
        }
        let mut line = format!(
            "DEBT: {} ({}) — {} oversized gist(s), {} unconnected{burst}{stale}{conflicts}, {untended}, active {}/7d",
            self.level.as_str(),
            float_repr(round_to(self.score, 2)),
            self.oversized,
            self.unconnected,
            self.active_days_7d
        );
        if self.level == DebtLevel::High {
            line.push_str(wording::DEBT_HIGH_CALL);
        }
        line
    }

    /// `merged with conflicts: <n> (…)`, saying where the conflicts are and how to
    /// settle them; `None` when there are none (the line then reads as the reference's).
    pub fn conflicts_clause(&self) -> Option<String> {
        (self.merge_conflicts > 0)
            .then(|| wording::debt_merge_conflicts(self.merge_conflicts, CONFLICT_NOTE_PREFIX))
    }

    /// `merged with conflicts: <n>` in short (the tray's tooltip), `None` when there are
    /// none.
    pub fn conflicts_summary(&self) -> Option<String> {
        (self.merge_conflicts > 0).then(|| wording::merged_with_conflicts(self.merge_conflicts))
    }

    /// The factor that weighs most, in words (for notifications). Merge conflicts come
    /// first when they alone make the graph need tending (its score is under MED's).
    pub fn largest_factor(&self) -> String {
        if self.merge_conflicts > 0 && self.score < 0.3 {
            wording::merged_with_conflicts(self.merge_conflicts)
        } else if self.burst > 0 && self.burst >= self.oversized && self.burst >= self.unconnected {
            wording::debt_burst(self.burst)
                .trim_start_matches(", ")
                .to_string()
        } else if self.stale_nodes > 0
            && self.stale_nodes > self.unconnected
            && self.stale_nodes > self.oversized * 2
        {
            wording::debt_stale_touches(self.stale_touches)
                .trim_start_matches(", ")
                .to_string()
        } else if self.oversized > 0 && self.oversized * 2 >= self.unconnected {
            format!("{} oversized gist(s)", self.oversized)
        } else if self.unconnected > 0 {
            format!("{} unconnected node(s)", self.unconnected)
        } else if self.never_maintained {
            "never maintained".to_string()
        } else {
            format!("untended {}d", g_format(round_to(self.untended_days, 1)))
        }
    }
}

fn float(x: f64) -> Value {
    crate::model::float_value(x)
}

/// Distinct UTC days among truthy timestamps of the last seven days.
pub fn activity_days(stamps: impl IntoIterator<Item = f64>, now: f64) -> usize {
    let since = now - 7.0 * 86_400.0;
    stamps
        .into_iter()
        .filter(|&ts| ts != 0.0 && ts > since && credible_ts(ts, now).is_some())
        .map(|ts| (ts / 86_400.0).floor() as i64)
        .collect::<BTreeSet<_>>()
        .len()
}

/// The maintenance stamp of a graph: `_meta.progress.maintain.last_ts` when truthy.
pub fn maintain_stamp(graph: &Graph) -> Option<f64> {
    graph
        .progress
        .get("maintain")
        .and_then(|state| as_ts(state.get("last_ts")))
        .filter(|&ts| ts != 0.0)
}

/// What a graph's debt is computed from, apart from the clock: kept by the catalogue
/// for graphs it does not hold in memory, so that listing them re-reads no file that
/// has not changed.
#[derive(Debug, Clone, PartialEq)]
pub struct DebtInputs {
    pub oversized: usize,
    pub unconnected: usize,
    pub active_nodes: usize,
    /// The maintenance stamp, as stored (see [`maintain_stamp`]).
    pub maintained_ts: Option<f64>,
    /// The nodes' last-read stamps.
    pub read_stamps: Vec<f64>,
    /// See [`Debt::merge_conflicts`].
    pub merge_conflicts: usize,
}

impl DebtInputs {
    /// The inputs of one graph. With `use_id_field`, a node is named by its `id` field
    /// (the disk survey's rule: a hand-edited file may make it differ from the key),
    /// else by its key.
    pub fn of(graph: &Graph, use_id_field: bool) -> DebtInputs {
        // Which nodes some edge names: by map key from the memoised structure, or by
        // the `id` field.
        let connected: Vec<bool> = if use_id_field {
            let endpoints: rustc_hash::FxHashSet<&str> = graph
                .edges
                .keys()
                .flat_map(|k| [k.from(), k.to()])
                .collect();
            graph
                .nodes
                .values()
                .map(|node| endpoints.contains(node.id_field().unwrap_or("")))
                .collect()
        } else {
            let mut connected = vec![false; graph.nodes.len()];
            for edge in &graph.structure().edges {
                for i in [edge.from.node(), edge.to.node()].into_iter().flatten() {
                    connected[i] = true;
                }
            }
            connected
        };
        let mut inputs = DebtInputs {
            oversized: 0,
            unconnected: 0,
            active_nodes: 0,
            maintained_ts: maintain_stamp(graph),
            read_stamps: graph
                .nodes
                .values()
                .filter_map(|n| n.last_read_ts())
                .collect(),
            merge_conflicts: unresolved_conflicts(graph),
        };
        for (node, connected) in graph.nodes.values().zip(connected) {
            if node.is_archived_flag() {
                continue;
            }
            inputs.active_nodes += 1;
            if node.meta().gist_chars > GIST_SCAN_LIMIT {
                inputs.oversized += 1;
            }
            if !connected {
                inputs.unconnected += 1;
            }
        }
        inputs
    }

    /// The debt at `now`; `extra_activity` are the project's tool-event stamps.
    pub fn debt(&self, extra_activity: impl IntoIterator<Item = f64>, now: f64) -> Debt {
        // A maintenance stamp from the far future would silence debt until then.
        let stamp = self.maintained_ts.and_then(|ts| credible_ts(ts, now));
        let (untended_days, never_maintained) = match stamp {
            Some(ts) => (((now - ts) / 86_400.0).max(0.0), false),
            None => (STALE_DAYS, true),
        };
        let reads = self.read_stamps.iter().copied();
        let mut debt = Debt {
            score: 0.0,
            level: DebtLevel::Low,
            oversized: self.oversized,
            unconnected: self.unconnected,
            active_nodes: self.active_nodes,
            untended_days,
            never_maintained,
            active_days_7d: activity_days(reads.chain(extra_activity), now),
            burst: 0,
            merge_conflicts: self.merge_conflicts,
            stale_touches: 0,
            stale_nodes: 0,
            held_back: 0,
        };
        debt.rescore();
        debt
    }
}

/// How many merge-conflict notes ([`CONFLICT_NOTE_PREFIX`]) a graph's nodes hold, in
/// any tier: merge conflicts nobody has resolved yet. Each node counts its own once
/// per change of its fields (every `kg_read` asks).
pub fn unresolved_conflicts(graph: &Graph) -> usize {
    graph.nodes.values().map(|n| n.meta().conflict_notes).sum()
}

/// A level's debt as `kg_read`, the catalogue and the graph view show it: with the
/// burst component when `count_burst` (our policy; the reference's DEBT has none).
pub fn level_debt(
    graph: &Graph,
    activity: impl IntoIterator<Item = f64>,
    grace_days: f64,
    count_burst: bool,
    now: f64,
) -> Debt {
    let debt = compute_debt(graph, false, activity, now);
    if count_burst {
        debt.with_burst(burst_count(graph, grace_days, now))
    } else {
        debt
    }
}

/// [`level_debt`] from the graph's [`DebtInputs`] (by key), computed before.
pub fn level_debt_of(
    inputs: &DebtInputs,
    graph: &Graph,
    activity: impl IntoIterator<Item = f64>,
    grace_days: f64,
    count_burst: bool,
    now: f64,
) -> Debt {
    let debt = inputs.debt(activity, now);
    if count_burst {
        debt.with_burst(burst_count(graph, grace_days, now))
    } else {
        debt
    }
}

/// Debt of one graph at `now` (see [`DebtInputs::of`] for `use_id_field`).
pub fn compute_debt(
    graph: &Graph,
    use_id_field: bool,
    extra_activity: impl IntoIterator<Item = f64>,
    now: f64,
) -> Debt {
    DebtInputs::of(graph, use_id_field).debt(extra_activity, now)
}

/// Archived nodes created less than `grace_days` ago (creation stamps from the far
/// future are not believed): what the grace share archived of a burst of new nodes.
/// Orphaned ones count too: they keep their `_archived` flag.
pub fn burst_count(graph: &Graph, grace_days: f64, now: f64) -> usize {
    let grace = grace_days * DAY_SECS;
    graph
        .nodes
        .values()
        .filter(|n| n.is_archived_flag())
        .filter(|n| credible_ts(n.created_ts(), now).is_some_and(|ts| now - ts < grace))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Edge, EdgeKey, Node, field, float_value};

    const NOW: f64 = 1_795_176_000.0;

    fn graph(active: usize, oversized: usize, unconnected: usize, reads: &[f64]) -> Graph {
        let mut g = Graph::default();
        for i in 0..active {
            let mut n = Node::new(&format!("n{i}"));
            let gist = if i < oversized {
                "x".repeat(301)
            } else {
                "short".into()
            };
            n.set(field::GIST, Value::String(gist));
            if let Some(&ts) = reads.get(i) {
                n.set(field::LAST_READ_TS, float_value(ts));
            }
            g.nodes.insert(format!("n{i}"), n);
        }
        for i in unconnected..active {
            let key = EdgeKey::new(&format!("n{i}"), "src/x.rs", "in");
            g.edges.insert(key.clone(), Edge::new(key));
        }
        g
    }

    #[test]
    fn busy_dirty_unmaintained_graph_is_high() {
        let reads = [
            NOW,
            NOW - 86_400.0,
            NOW - 2.0 * 86_400.0,
            NOW - 3.0 * 86_400.0,
        ];
        let g = graph(10, 5, 3, &reads);
        let d = compute_debt(&g, false, [], NOW);
        assert_eq!((d.oversized, d.unconnected, d.active_days_7d), (5, 3, 4));
        assert!(d.never_maintained);
        assert_eq!(d.level, DebtLevel::High);
        let line = d.line();
        assert!(
            line.contains("maintenance pass") && line.contains("never maintained"),
            "{line}"
        );
        let mut maintained = g.clone();
        maintained.progress.insert(
            "maintain".into(),
            serde_json::json!({"last_ts": NOW - 3600.0}),
        );
        let d = compute_debt(&maintained, false, [], NOW);
        assert!(d.level == DebtLevel::Low && d.score < 0.1);
        assert!(!d.line().contains("maintenance pass"));
    }

    #[test]
    fn only_the_reference_names_the_plugins_command() {
        let reads = [0.0, 1.0, 2.0, 3.0].map(|days| NOW - days * 86_400.0);
        let d = compute_debt(&graph(10, 5, 3, &reads), false, [], NOW);
        assert_eq!(d.level, DebtLevel::High);
        assert!(!d.line().contains("kg-maintain"));
        assert!(
            d.reference_line()
                .ends_with(" — time for a /kg-maintain pass (or a maintenance subagent)")
        );
        for text in [
            wording::degradation_note(1, 1),
            wording::DEBT_HIGH_CALL.to_string(),
        ]
        .into_iter()
        .chain(wording::REMINDERS_DEEP.iter().map(|r| r.text.to_string()))
        {
            assert!(
                !text.contains("/kg-"),
                "names a plugin-only command: {text}"
            );
        }
    }

    #[test]
    fn pristine_graphs_stay_low() {
        let dormant = compute_debt(&graph(6, 0, 0, &[]), false, [], NOW);
        assert_eq!(dormant.level, DebtLevel::Low);
        let reads = [
            NOW,
            NOW - 86_400.0,
            NOW - 2.0 * 86_400.0,
            NOW - 3.0 * 86_400.0,
        ];
        let busy = compute_debt(&graph(6, 0, 0, &reads), false, [], NOW);
        assert!(busy.score < 0.3);
        let empty = compute_debt(&Graph::default(), false, [], NOW);
        assert!(empty.score >= 0.0 && empty.active_nodes == 0);
    }

    #[test]
    fn activity_counts_distinct_recent_days() {
        let stamps = [
            NOW,
            NOW - 60.0,
            NOW - 2.0 * 86_400.0,
            NOW - 30.0 * 86_400.0,
            0.0,
        ];
        assert_eq!(activity_days(stamps, NOW), 2);
        // Days in the far future are not activity.
        assert_eq!(activity_days([NOW, 4_070_908_800.0], NOW), 1);
    }

    #[test]
    fn a_maintenance_stamp_from_the_far_future_is_no_stamp() {
        let mut g = graph(6, 0, 0, &[]);
        g.progress.insert(
            "maintain".into(),
            serde_json::json!({"last_ts": 4_070_908_800.0}),
        );
        let d = compute_debt(&g, false, [], NOW);
        assert!(d.never_maintained && d.untended_days == STALE_DAYS, "{d:?}");
    }

    #[test]
    fn lines_print_python_numbers() {
        let d = Debt {
            score: 0.165,
            level: DebtLevel::Low,
            oversized: 1,
            unconnected: 5,
            active_nodes: 76,
            untended_days: 32.94,
            never_maintained: false,
            active_days_7d: 1,
            burst: 0,
            merge_conflicts: 0,
            stale_touches: 0,
            stale_nodes: 0,
            held_back: 0,
        };
        assert_eq!(
            d.line(),
            "DEBT: LOW (0.17) — 1 oversized gist(s), 5 unconnected, untended 32.9d, active 1/7d"
        );
        let whole = Debt {
            untended_days: 2.0,
            ..d
        };
        assert!(whole.line().contains("untended 2d"));
    }

    #[test]
    fn a_burst_shows_as_one_more_component_and_weighs_in_the_deficit() {
        let d = Debt {
            score: 0.0,
            level: DebtLevel::Low,
            oversized: 1,
            unconnected: 5,
            active_nodes: 40,
            untended_days: 14.0,
            never_maintained: true,
            active_days_7d: 4,
            burst: 0,
            merge_conflicts: 0,
            stale_touches: 0,
            stale_nodes: 0,
            held_back: 0,
        };
        let plain = {
            let mut d = d.clone();
            d.rescore();
            d
        };
        assert_eq!(plain.clone().with_burst(0), plain, "no burst, no change");
        let burst = plain.clone().with_burst(24);
        assert_eq!(
            burst.line(),
            "DEBT: HIGH (0.54) — 1 oversized gist(s), 5 unconnected, 24 new node(s) archived \
             in a burst, never maintained, active 4/7d — time for a maintenance pass (or a \
             maintenance subagent)"
        );
        assert_eq!(plain.level, DebtLevel::Med, "{}", plain.line());
        assert!(burst.score > plain.score && burst.deficit() > plain.deficit());
        assert_eq!(burst.largest_factor(), "24 new node(s) archived in a burst");
        assert_eq!(plain.largest_factor(), "5 unconnected node(s)");
    }

    /// Notes on `id` (as a list), with an archived flag.
    fn annotate(g: &mut Graph, id: &str, notes: &[&str], archived: bool) {
        let node = g.nodes.get_mut(id).expect("node");
        let notes = notes.iter().map(|n| Value::String(n.to_string())).collect();
        node.set(field::NOTES, Value::Array(notes));
        node.set(field::ARCHIVED, Value::Bool(archived));
    }

    #[test]
    fn merge_conflict_notes_are_counted_in_every_tier_and_named_by_the_line() {
        let mut g = graph(6, 0, 0, &[]);
        g.progress.insert(
            "maintain".into(),
            serde_json::json!({"last_ts": NOW - 3600.0}),
        );
        let calm = compute_debt(&g, false, [], NOW);
        assert_eq!((calm.merge_conflicts, calm.level), (0, DebtLevel::Low));
        let conflict = format!("{CONFLICT_NOTE_PREFIX}the other gist was: old text");
        annotate(&mut g, "n0", &[&conflict, "an ordinary note"], false);
        annotate(&mut g, "n1", &[&conflict, &conflict], true);
        // A note that only mentions a conflict is not one, nor is a prefix mid-text.
        annotate(
            &mut g,
            "n2",
            &["[merge conflict]no space", "x [merge conflict] y"],
            false,
        );
        // `notes` as a single string (hand-edited files) is read as one note.
        g.nodes
            .get_mut("n3")
            .expect("node")
            .set(field::NOTES, Value::String(conflict.clone()));
        assert_eq!(unresolved_conflicts(&g), 4);

        let d = compute_debt(&g, false, [], NOW);
        assert_eq!(d.merge_conflicts, 4);
        assert_eq!(d.score, calm.score, "conflicts leave the score alone");
        assert_eq!(d.level, DebtLevel::Med, "but the graph needs tending");
        assert_eq!(
            d.line(),
            "DEBT: MED (0.0) — 0 oversized gist(s), 0 unconnected, merged with conflicts: 4 \
             (see the node notes starting \"[merge conflict]\": settle each, then remove its \
             note), untended 0d, active 0/7d"
        );
        assert_eq!(d.largest_factor(), "merged with conflicts: 4");
        assert_eq!(
            d.conflicts_summary().as_deref(),
            Some("merged with conflicts: 4")
        );
        assert_eq!(d.to_object()["merge_conflicts"], 4);
        assert!(!calm.to_object().contains_key("merge_conflicts"));
        assert_eq!(
            (calm.conflicts_clause(), calm.conflicts_summary()),
            (None, None)
        );
        // A burst rescores; the level stays raised (our policy's level debt).
        let burst = level_debt(&g, [], 5.0, true, NOW);
        assert_eq!((burst.merge_conflicts, burst.level), (4, DebtLevel::Med));

        // Removing the notes settles it.
        for id in ["n0", "n1", "n3"] {
            annotate(&mut g, id, &["resolved"], false);
        }
        let settled = compute_debt(&g, false, [], NOW);
        assert_eq!(
            (settled.merge_conflicts, settled.level),
            (0, DebtLevel::Low)
        );
        assert_eq!(settled.line(), calm.line());
    }

    #[test]
    fn a_high_debt_names_its_score_factors_before_merge_conflicts() {
        let reads = [
            NOW,
            NOW - 86_400.0,
            NOW - 2.0 * 86_400.0,
            NOW - 3.0 * 86_400.0,
        ];
        let mut g = graph(10, 5, 3, &reads);
        annotate(&mut g, "n9", &[&format!("{CONFLICT_NOTE_PREFIX}x")], false);
        let d = compute_debt(&g, false, [], NOW);
        assert_eq!((d.level, d.merge_conflicts), (DebtLevel::High, 1));
        assert_eq!(d.largest_factor(), "5 oversized gist(s)");
        assert!(
            d.line().contains("unconnected, merged with conflicts: 1 (")
                && d.line().ends_with(wording::DEBT_HIGH_CALL),
            "{}",
            d.line()
        );
    }

    #[test]
    fn the_burst_counts_archived_nodes_still_in_grace() {
        let mut g = graph(4, 0, 0, &[]);
        for (i, (age_days, archived)) in [(1.0, true), (6.0, true), (1.0, false), (-900.0, true)]
            .into_iter()
            .enumerate()
        {
            let node = g.nodes.get_mut(&format!("n{i}")).expect("node");
            node.set(field::CREATED_TS, float_value(NOW - age_days * DAY_SECS));
            node.set(field::ARCHIVED, Value::Bool(archived));
        }
        // n0 only: n1 is past grace, n2 active, n3 stamped far in the future.
        assert_eq!(burst_count(&g, 5.0, NOW), 1);
    }
}
