//! Maintenance debt (core.md §7.6, interfaces.md §8): how much a graph needs a
//! `/kg-maintain` pass — staleness × activity × wear. The list of every graph with its
//! debt is the [`crate::catalogue`].

use crate::graph::Graph;
use crate::model::{Object, as_ts};
use crate::pyfmt::{float_repr, g_format, round_to};
use crate::score::{DAY_SECS, credible_ts};
use crate::wording;
use serde_json::Value;
use std::collections::BTreeSet;

/// Gists longer than this scan badly and stall the compactor.
pub const GIST_SCAN_LIMIT: usize = 300;
/// Days after which a graph counts as fully stale.
pub const STALE_DAYS: f64 = 14.0;
/// Active days (of the last 7) at which activity saturates.
pub const BUSY_DAYS: f64 = 4.0;

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DebtLevel {
    /// Score under 0.3: nothing to do yet.
    Low,
    /// Score from 0.3: the tray shows the graph as needing tending.
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
    /// Unrounded; the level is decided on it.
    pub score: f64,
    /// The verdict on `score`: HIGH from 0.5, MED from 0.3, else LOW.
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
    /// `0.5 × burst / n` when a burst was archived, before the score caps it at 1.
    pub fn deficit(&self) -> f64 {
        if self.active_nodes == 0 {
            return 0.0;
        }
        let n = self.active_nodes as f64;
        let deficit = (self.oversized as f64 + 0.5 * self.unconnected as f64) / n;
        if self.burst == 0 {
            // Evaluated exactly as the reference does (its DEBT has no burst).
            return deficit;
        }
        deficit + 0.5 * self.burst as f64 / n
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
        obj
    }

    /// `DEBT: <LEVEL> (<score>) — <o> oversized gist(s), <u> unconnected, <untended>, active <d>/7d`,
    /// with `, <b> new node(s) archived in a burst` after `<u> unconnected` when a
    /// burst was archived.
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
        let mut line = format!(
            "DEBT: {} ({}) — {} oversized gist(s), {} unconnected{burst}, {untended}, active {}/7d",
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

    /// The factor that weighs most, in words (for notifications).
    pub fn largest_factor(&self) -> String {
        if self.burst > 0 && self.burst >= self.oversized && self.burst >= self.unconnected {
            wording::debt_burst(self.burst)
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
        };
        debt.rescore();
        debt
    }
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

/// Debt of one graph at `now` (see [`DebtInputs::of`] for `use_id_field`).
pub fn compute_debt(
    graph: &Graph,
    use_id_field: bool,
    extra_activity: impl IntoIterator<Item = f64>,
    now: f64,
) -> Debt {
    DebtInputs::of(graph, use_id_field).debt(extra_activity, now)
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
            line.contains("/kg-maintain") && line.contains("never maintained"),
            "{line}"
        );
        let mut maintained = g.clone();
        maintained.progress.insert(
            "maintain".into(),
            serde_json::json!({"last_ts": NOW - 3600.0}),
        );
        let d = compute_debt(&maintained, false, [], NOW);
        assert!(d.level == DebtLevel::Low && d.score < 0.1);
        assert!(!d.line().contains("kg-maintain"));
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
             in a burst, never maintained, active 4/7d — time for a /kg-maintain pass (or a \
             maintenance subagent)"
        );
        assert_eq!(plain.level, DebtLevel::Med, "{}", plain.line());
        assert!(burst.score > plain.score && burst.deficit() > plain.deficit());
        assert_eq!(burst.largest_factor(), "24 new node(s) archived in a burst");
        assert_eq!(plain.largest_factor(), "5 unconnected node(s)");
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
