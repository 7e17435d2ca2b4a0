//! Compaction (core.md §6): keep each level's rendered size under its budget by moving
//! low-value nodes down the tiers, and bring archived nodes back when there is room.
//!
//! Every size decision re-measures the level with the render plan itself (render
//! equals charge); the passes work on a tier array and write the node flags once at
//! the end, in the order the reference writes them, so the files match it byte for byte.

use crate::change::TierMoves;
use crate::model::{Graph, Tier, field, float_value};
use crate::plan::{LevelIndex, Mode, Plan};
use crate::score::{DAY_SECS, RawSignals, score_all};
use crate::store::{GraphSlot, GraphState, Journal, StoreConfig};
use serde_json::Value;

/// Rendered characters a level may hold.
pub const LEVEL_BUDGET: usize = 17_500;
/// Archiving stops, and refill fills, at this size (0.8 × budget).
pub const FILL_CEILING: usize = 14_000;
/// Characters the archived anchors of a level may take (0.3 × budget).
pub const ANCHOR_BUDGET: usize = 5_250;
/// A stranded archived node must beat a just-archived one by this much to swap back.
pub const RESURRECTION_MARGIN: f64 = 0.05;

/// The working state of one maintenance pass.
struct Pass<'g> {
    graph: &'g Graph,
    index: LevelIndex<'g>,
    /// Computed only when a pass needs scores (most writes leave the level in band).
    raw: std::cell::OnceCell<RawSignals>,
    tiers: Vec<Tier>,
    /// The last value each node's `_archived` flag was given by this pass.
    flag: Vec<Option<bool>>,
    now: f64,
    grace_days: f64,
}

impl<'g> Pass<'g> {
    fn new(graph: &'g Graph, now: f64, grace_days: f64) -> Pass<'g> {
        let index = LevelIndex::of(graph);
        let tiers = index.tiers.clone();
        let flag = vec![None; index.len()];
        Pass {
            graph,
            index,
            raw: std::cell::OnceCell::new(),
            tiers,
            flag,
            now,
            grace_days,
        }
    }

    /// The level's exact rendered size under the current tiers.
    fn measure(&self) -> usize {
        Plan::build(&self.index, &self.tiers, Mode::Active).body_chars(&self.index)
    }

    fn scores(&self, include_archived: bool) -> Vec<Option<f64>> {
        score_all(
            &self.index,
            self.raw
                .get_or_init(|| RawSignals::of(self.graph, &self.index, self.now)),
            &self.tiers,
            include_archived,
            self.now,
            self.grace_days,
        )
        .into_iter()
        .map(|s| s.map(|s| s.score))
        .collect()
    }

    fn set_archived(&mut self, i: usize, archived: bool) {
        self.tiers[i] = if archived {
            Tier::Archived
        } else {
            Tier::Active
        };
        self.flag[i] = Some(archived);
    }

    /// Is the `_archived` flag truthy now (as the orphan pass reads it)?
    fn archived_flag(&self, graph: &Graph, i: usize) -> bool {
        self.flag[i].unwrap_or_else(|| {
            graph
                .nodes
                .get_index(i)
                .is_some_and(|(_, n)| n.is_archived_flag())
        })
    }
}

/// Run the passes of core.md §6.1 on one graph: archive (with resurrection), refill
/// only when nothing was archived, then the orphan pass. Returns what moved; the caller
/// saves when anything did.
pub fn maybe_compact(
    slot: &GraphSlot,
    state: &mut GraphState,
    config: &StoreConfig,
    now: f64,
    journal: Option<&mut Journal>,
) -> TierMoves {
    let key = slot.namespace.key();
    let moves = compact_graph(
        &mut state.graph,
        &mut state.stall_logged,
        &key,
        config.grace_days,
        now,
        journal,
    );
    if !moves.is_empty() {
        state.dirty = true;
    }
    moves
}

/// The passes on a bare graph. `stall_logged` remembers whether a grace stall was
/// already reported for this graph; `journal` records undo steps for every node it
/// changes.
pub fn compact_graph(
    graph: &mut Graph,
    stall_logged: &mut bool,
    key: &str,
    grace_days: f64,
    now: f64,
    journal: Option<&mut Journal>,
) -> TierMoves {
    let (moves, orphaned, flags, stall) = {
        let mut pass = Pass::new(graph, now, grace_days);
        let before = pass.tiers.clone();
        let mut size = pass.measure();
        let mut stall = Stall::Clear;
        let mut archived = Vec::new();
        if size > LEVEL_BUDGET {
            let scores = pass.scores(false);
            let mut eligible: Vec<usize> = (0..pass.index.len())
                .filter(|&i| scores[i].is_some())
                .collect();
            if eligible.is_empty() {
                let active = pass.tiers.iter().filter(|t| **t == Tier::Active).count();
                stall = Stall::Stalled { size, active };
            } else {
                log::info!("Compacting graph {key}: {size} chars > {LEVEL_BUDGET} limit");
                eligible.sort_by(|&a, &b| {
                    let (sa, sb) = (scores[a].unwrap_or(0.0), scores[b].unwrap_or(0.0));
                    sa.total_cmp(&sb)
                });
                for i in eligible {
                    if size <= FILL_CEILING {
                        break;
                    }
                    pass.set_archived(i, true);
                    archived.push(i);
                    size = pass.measure();
                }
                if !archived.is_empty() {
                    size = resurrect(&mut pass, &archived, size, key);
                }
            }
        }
        if archived.is_empty() {
            size = refill(&mut pass, size);
        }
        let orphaned = orphan_pass(&mut pass, graph);
        let _ = size;
        let mut moves = TierMoves::default();
        for ((id, was), now_tier) in pass.index.ids.iter().zip(&before).zip(&pass.tiers) {
            let id = id.to_string();
            match (*was, *now_tier) {
                (a, b) if a == b => {}
                (Tier::Active, Tier::Archived) => moves.archived.push(id),
                (_, Tier::Active) => moves.restored.push(id),
                (_, Tier::Orphaned) => moves.orphaned.push(id),
                _ => {}
            }
        }
        (moves, orphaned, pass.flag, stall)
    };
    match stall {
        Stall::Stalled { size, active } => {
            if *stall_logged {
                log::debug!(
                    "compaction of {key} still deferred: {size} chars, {active} active nodes in grace"
                );
            } else {
                log::info!(
                    "Graph {key} is {size} chars > {LEVEL_BUDGET} limit but all {active} active nodes are in grace; compaction deferred until a node leaves grace"
                );
                *stall_logged = true;
            }
        }
        Stall::Clear => *stall_logged = false,
    }
    if let Some(journal) = journal {
        let touched = flags
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_some())
            .map(|(i, _)| i);
        for i in touched.chain(orphaned.iter().copied()) {
            if let Some((id, _)) = graph.nodes.get_index(i) {
                let id = id.clone();
                journal.node(graph, &id);
            }
        }
    }
    // Write the flags in the reference's order: `_archived` first, then `_orphaned_ts`.
    for (i, flag) in flags.iter().enumerate() {
        if let (Some(value), Some((_, node))) = (flag, graph.nodes.get_index_mut(i)) {
            node.set(field::ARCHIVED, Value::Bool(*value));
        }
    }
    for i in orphaned {
        if let Some((_, node)) = graph.nodes.get_index_mut(i) {
            node.set(field::ORPHANED_TS, float_value(now));
        }
    }
    moves
}

enum Stall {
    Clear,
    Stalled { size: usize, active: usize },
}

/// Resurrection (core.md §6.3): a pre-existing archived node that clearly outscores a
/// just-archived one takes its place, unless that would break the budget.
fn resurrect(pass: &mut Pass<'_>, archived: &[usize], mut size: usize, key: &str) -> usize {
    let unified = pass.scores(true);
    let candidates: Vec<usize> = (0..pass.index.len())
        .filter(|&i| unified[i].is_some())
        .collect();
    let mut revived = 0usize;
    for &x in archived {
        let own = unified[x].unwrap_or(0.0);
        let mut best: Option<(usize, f64)> = None;
        for &c in &candidates {
            if c == x || pass.tiers[c] != Tier::Archived {
                continue;
            }
            let s = unified[c].unwrap_or(0.0);
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((c, s));
            }
        }
        let Some((b, best_score)) = best else {
            continue;
        };
        if best_score - own >= RESURRECTION_MARGIN {
            pass.set_archived(b, false);
            let after = pass.measure();
            if after > LEVEL_BUDGET {
                pass.set_archived(b, true);
            } else {
                size = after;
                revived += 1;
            }
        }
    }
    log::info!(
        "Compacted graph {key}: archived {}, resurrected {revived}, now {size} chars",
        archived.len()
    );
    size
}

/// Refill (core.md §6.4): promote the best archived nodes while the level stays under
/// the fill ceiling, re-scoring after each promotion so a hub pulls its cluster back.
fn refill(pass: &mut Pass<'_>, mut size: usize) -> usize {
    if size >= FILL_CEILING {
        return size;
    }
    let n = pass.index.len();
    let mut set_aside = vec![false; n];
    for _round in 0..=n {
        let scores = pass.scores(true);
        let mut ranked: Vec<usize> = (0..n)
            .filter(|&i| pass.tiers[i] == Tier::Archived && !set_aside[i])
            .collect();
        if ranked.is_empty() {
            break;
        }
        ranked.sort_by(|&a, &b| {
            let (sa, sb) = (scores[a].unwrap_or(0.0), scores[b].unwrap_or(0.0));
            sb.total_cmp(&sa)
        });
        let mut newly_live = vec![0usize; n];
        for edge in &pass.index.edges {
            if let (Some(f), Some(t)) = (edge.from.node, edge.to.node)
                && pass.tiers[f] == Tier::Archived
                && pass.tiers[t] == Tier::Archived
            {
                let cost = 9 + edge.rel_chars + edge.to.chars + 1;
                newly_live[f] += cost;
                if t != f {
                    newly_live[t] += cost;
                }
            }
        }
        let mut accepted = false;
        for x in ranked {
            let delta = pass.index.node_line_cost(x) - pass.index.anchor_cost(x) + newly_live[x];
            if size + delta > FILL_CEILING {
                set_aside[x] = true;
                continue;
            }
            pass.set_archived(x, false);
            let after = pass.measure();
            if after > FILL_CEILING {
                pass.set_archived(x, true);
                set_aside[x] = true;
                continue;
            }
            size = after;
            accepted = true;
            break;
        }
        if !accepted {
            break;
        }
    }
    size
}

/// The orphan pass (core.md §6.5): when anchors take more than their share, the least
/// connected archived nodes stop rendering at all. Returns the orphaned positions.
fn orphan_pass(pass: &mut Pass<'_>, graph: &Graph) -> Vec<usize> {
    let archived: Vec<usize> = (0..pass.index.len())
        .filter(|&i| pass.tiers[i] == Tier::Archived)
        .collect();
    let mut total: usize = archived.iter().map(|&i| pass.index.anchor_cost(i)).sum();
    if total <= ANCHOR_BUDGET {
        return Vec::new();
    }
    let mut connectivity = vec![0usize; pass.index.len()];
    let live_flag: Vec<bool> = (0..pass.index.len())
        .map(|i| !pass.archived_flag(graph, i))
        .collect();
    for edge in &pass.index.edges {
        let (f, t) = (edge.from.node, edge.to.node);
        if let (Some(f), Some(t)) = (f, t) {
            if live_flag[t] {
                connectivity[f] += 1;
            }
            if live_flag[f] && f != t {
                connectivity[t] += 1;
            }
        }
    }
    let mut order = archived;
    order.sort_by_key(|&i| connectivity[i]);
    let mut orphaned = Vec::new();
    for i in order {
        if total <= ANCHOR_BUDGET {
            break;
        }
        pass.tiers[i] = Tier::Orphaned;
        total -= pass.index.anchor_cost(i);
        orphaned.push(i);
    }
    orphaned
}

/// Permanent deletion (core.md §6.6, tick only): orphans past the orphan grace go,
/// with every edge of this graph touching them. Returns the deleted ids.
pub fn prune_orphans(graph: &mut Graph, config: &StoreConfig, now: f64) -> Vec<String> {
    let limit = config.orphan_grace_days * DAY_SECS;
    let doomed: Vec<String> = graph
        .nodes
        .iter()
        .filter(|(_, n)| n.orphaned_ts().is_some_and(|ts| now - ts > limit))
        .map(|(id, _)| id.clone())
        .collect();
    for id in &doomed {
        log::info!(
            "deleting orphan {id}: not recalled within {} days",
            config.orphan_grace_days
        );
        graph.remove_node(id);
    }
    doomed
}
