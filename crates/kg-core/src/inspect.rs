//! What the graph view shows about a level: why each node sits in its tier (its score
//! and the percentiles it is made of), what the level costs against its budget, its
//! HEALTH and DEBT with their raw factors, and what the maintenance debt consists of.
//!
//! Pure functions over a borrowed graph, with `now` passed in. Every size comes from
//! the one render plan (render equals charge); every score from [`score::score_all`],
//! the same call compaction and refill make, so the view never second-guesses them.

use crate::compact::{ANCHOR_BUDGET, FILL_CEILING, LEVEL_BUDGET};
use crate::debt::{Debt, GIST_SCAN_LIMIT, level_debt};
use crate::graph::Graph;
use crate::model::Tier;
use crate::plan::{Health, LevelIndex, Mode, Plan, is_live};
use crate::pyfmt::{float_repr, round_int, round_to};
use crate::score::{DAY_SECS, NodeScore, RawSignals, score_all};

/// Where a level's rendered size stands against its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetState {
    /// Below the fill line: refill may bring archived nodes back.
    UnderFill,
    /// Between the fill line and the budget: nothing moves.
    Settled,
    /// Over the budget: the next write or tick archives the lowest-scored nodes.
    Over,
}

impl BudgetState {
    /// The state as the graph view's payload spells it: `under_fill`, `settled`, `over`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetState::UnderFill => "under_fill",
            BudgetState::Settled => "settled",
            BudgetState::Over => "over",
        }
    }
}

/// A level's rendered size, exactly as the compactor charges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Characters of the level's rendered body (`render::level_chars`).
    pub chars: usize,
    /// The archive threshold (17,500).
    pub budget: usize,
    /// The refill ceiling (14,000 = 0.8 × budget).
    pub fill_line: usize,
    /// Characters of the archived anchors (the orphan pass keeps them ≤ 5,250).
    pub anchor_chars: usize,
    /// The anchors' share (5,250 = 0.3 × budget); beyond it the orphan pass orphans
    /// the least connected archived nodes.
    pub anchor_budget: usize,
    /// Where `chars` stands against the fill line and the budget.
    pub state: BudgetState,
}

/// Which pool a node's score was computed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// Active nodes only: the order in which compaction archives.
    Active,
    /// Active and archived nodes: the order in which refill restores.
    Unified,
}

impl Pool {
    /// The pool as the graph view shows it: `active` or `active+archived`.
    pub fn as_str(self) -> &'static str {
        match self {
            Pool::Active => "active",
            Pool::Unified => "active+archived",
        }
    }
}

/// Why one node is in its tier.
#[derive(Debug, Clone, PartialEq)]
pub struct TierWhy {
    /// The node's id (its map key).
    pub id: String,
    /// The tier its flags put it in now.
    pub tier: Tier,
    /// `None` inside the grace period and for orphans (they are not scored).
    pub score: Option<NodeScore>,
    /// The pool `score` was computed in; `None` exactly when `score` is.
    pub pool: Option<Pool>,
    /// Active: place in the archive order (1 = archived first). Archived: place in the
    /// refill order among archived nodes (1 = restored first).
    pub rank: Option<usize>,
    /// How many nodes share that order.
    pub rank_of: usize,
    /// Days of grace left (new nodes are never archived), when in grace.
    pub grace_left_days: Option<f64>,
    /// Characters this node puts in the level: its line and the edges cited under it
    /// (active), its anchor line (archived), nothing (orphaned).
    pub cost: usize,
    /// Active nodes with a live edge to this node, if archived ("memory traces").
    pub traces: usize,
    /// When an orphan is deleted for good.
    pub deleted_at: Option<f64>,
    /// The explanation in words.
    pub reason: String,
}

/// The debt verdict with the factors it multiplies.
#[derive(Debug, Clone, PartialEq)]
pub struct DebtFactors {
    /// The verdict with its raw counts, as `kg_read` and the catalogue compute it.
    pub debt: Debt,
    /// `min(1, untended_days / 14)`.
    pub staleness: f64,
    /// `min(1, active_days_7d / 4)`.
    pub activity: f64,
    /// `oversized / n + 0.5 × unconnected / n`, before capping at 1.
    pub deficit: f64,
    /// The `DEBT: …` line `kg_read` prints for the level.
    pub line: String,
}

/// What one item of maintenance debt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebtKind {
    /// An active gist over the 300-character scan limit.
    Oversized,
    /// An active node that is no endpoint of any edge.
    Unconnected,
}

impl DebtKind {
    /// The kind as the graph view's payload spells it: `oversized` or `unconnected`.
    pub fn as_str(self) -> &'static str {
        match self {
            DebtKind::Oversized => "oversized",
            DebtKind::Unconnected => "unconnected",
        }
    }
}

/// One active node the maintenance debt counts, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebtItem {
    /// Why it counts: its gist is over the scan limit, or it has no edge.
    pub kind: DebtKind,
    /// The node's id.
    pub id: String,
    /// Its gist's length in characters (what an oversized item is judged by).
    pub gist_chars: usize,
}

/// Everything the view shows about one level.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelInspection {
    /// The level's rendered size against its 17,500-character budget.
    pub budget: Budget,
    /// (active, archived, orphaned).
    pub counts: (usize, usize, usize),
    /// One entry per node, in node order.
    pub nodes: Vec<TierWhy>,
    /// Whether each edge (in edge order) is live: rendered, charged, drawn solid.
    pub live_edges: Vec<bool>,
    /// The `HEALTH: …` line `kg_read` prints and its numbers, from the active render.
    pub health: Health,
    /// The DEBT verdict and the factors it multiplies.
    pub debt: DebtFactors,
    /// What the debt counts, one item per oversized gist (longest first) and per
    /// unconnected active node (in node order).
    pub debt_items: Vec<DebtItem>,
}

/// Settings the explanations depend on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InspectConfig {
    /// Days a new node is protected from archiving (`KG_GRACE_PERIOD_DAYS`, 5 by default).
    pub grace_days: f64,
    /// Days an orphan is kept before it is deleted (`KG_ORPHAN_GRACE_DAYS`, 365 by
    /// default).
    pub orphan_grace_days: f64,
    /// The debt counts new nodes a burst got archived, as `kg_read`'s does under our
    /// policy (`Store::config().policy == Policy::Ours`).
    pub count_burst: bool,
}

impl Default for InspectConfig {
    fn default() -> Self {
        InspectConfig {
            grace_days: 5.0,
            orphan_grace_days: 365.0,
            count_burst: true,
        }
    }
}

/// The budget of a level from its plan.
fn budget_of(plan: &Plan, index: &LevelIndex<'_>) -> Budget {
    let chars = plan.body_chars(index);
    let anchor_chars = plan.anchors.iter().map(|&i| index.anchor_cost(i)).sum();
    let state = if chars > LEVEL_BUDGET {
        BudgetState::Over
    } else if chars < FILL_CEILING {
        BudgetState::UnderFill
    } else {
        BudgetState::Settled
    };
    Budget {
        chars,
        budget: LEVEL_BUDGET,
        fill_line: FILL_CEILING,
        anchor_chars,
        anchor_budget: ANCHOR_BUDGET,
        state,
    }
}

/// The budget of a level (cheap: one plan, no scoring).
pub fn level_budget(graph: &Graph) -> Budget {
    let index = LevelIndex::of(graph);
    let plan = Plan::build(&index, &index.tiers, Mode::Active);
    budget_of(&plan, &index)
}

/// The debt of a level with its factors; `extra_activity` are the project's
/// tool-event stamps (none for the user level).
pub fn debt_factors(
    graph: &Graph,
    extra_activity: impl IntoIterator<Item = f64>,
    config: InspectConfig,
    now: f64,
) -> DebtFactors {
    let debt = level_debt(
        graph,
        extra_activity,
        config.grace_days,
        config.count_burst,
        now,
    );
    DebtFactors {
        staleness: debt.staleness(),
        activity: debt.activity(),
        deficit: debt.deficit(),
        line: debt.line(),
        debt,
    }
}

/// The items the maintenance debt counts, oversized gists first (longest first), then
/// unconnected nodes in node order. Uses the debt's own predicates.
pub fn debt_items(graph: &Graph) -> Vec<DebtItem> {
    let endpoints: std::collections::HashSet<&str> = graph
        .edges
        .keys()
        .flat_map(|k| [k.from(), k.to()])
        .collect();
    let mut oversized = Vec::new();
    let mut unconnected = Vec::new();
    for (id, node) in &graph.nodes {
        if node.is_archived_flag() {
            continue;
        }
        let gist_chars = node.meta().gist_chars;
        if gist_chars > GIST_SCAN_LIMIT {
            oversized.push(DebtItem {
                kind: DebtKind::Oversized,
                id: id.clone(),
                gist_chars,
            });
        }
        if !endpoints.contains(id.as_str()) {
            unconnected.push(DebtItem {
                kind: DebtKind::Unconnected,
                id: id.clone(),
                gist_chars,
            });
        }
    }
    oversized.sort_by_key(|d| std::cmp::Reverse(d.gist_chars));
    oversized.extend(unconnected);
    oversized
}

/// Positions of the scored nodes ordered the way a pass walks them: ascending score
/// for archiving, descending for refill; ties keep node order.
fn walk_order(scores: &[Option<NodeScore>], members: &[usize], ascending: bool) -> Vec<usize> {
    let mut order: Vec<usize> = members
        .iter()
        .copied()
        .filter(|&i| scores[i].is_some())
        .collect();
    order.sort_by(|&a, &b| {
        let (sa, sb) = (
            scores[a].map_or(0.0, |s| s.score),
            scores[b].map_or(0.0, |s| s.score),
        );
        let ord = if ascending {
            sa.total_cmp(&sb)
        } else {
            sb.total_cmp(&sa)
        };
        ord.then(a.cmp(&b))
    });
    order
}

fn pct(x: f64) -> String {
    format!("{}%", round_int(100.0 * x))
}

/// Inspect a level: budget, tier explanations, live edges, HEALTH, DEBT, debt items.
pub fn inspect_level(
    graph: &Graph,
    extra_activity: impl IntoIterator<Item = f64>,
    config: InspectConfig,
    now: f64,
) -> LevelInspection {
    let index = LevelIndex::of(graph);
    let tiers = &index.tiers;
    let plan = Plan::build(&index, tiers, Mode::Active);
    let budget = budget_of(&plan, &index);
    let health = Health::of(&plan, &index);
    let n = index.len();

    // Live edges: the predicate that renders and charges.
    let renders: Vec<bool> = tiers.iter().map(|t| *t == Tier::Active).collect();
    let live_edges: Vec<bool> = index
        .edges()
        .iter()
        .map(|e| is_live(e, tiers, &renders))
        .collect();

    // Cost: a rendered node's line plus the citations printed under it; an anchor's line.
    let mut cost = vec![0usize; n];
    for (p, &i) in plan.order.iter().enumerate() {
        cost[i] = index.node_line_cost(i)
            + plan
                .citations(p)
                .iter()
                .map(|&(k, dir)| index.edges()[k].citation_chars(dir) + 1)
                .sum::<usize>();
    }
    for &i in &plan.anchors {
        cost[i] = index.anchor_cost(i);
    }

    // Traces: active neighbours over live edges, for archived nodes.
    let mut traces = vec![0usize; n];
    for (k, e) in index.edges().iter().enumerate() {
        if !live_edges[k] {
            continue;
        }
        if let (Some(f), Some(t)) = (e.from.node(), e.to.node()) {
            if tiers[f] == Tier::Archived && tiers[t] == Tier::Active {
                traces[f] += 1;
            }
            if tiers[t] == Tier::Archived && tiers[f] == Tier::Active && f != t {
                traces[t] += 1;
            }
        }
    }

    let raw = RawSignals::of(graph, &index, now);
    let active_scores = score_all(&index, &raw, tiers, false, now, config.grace_days);
    let unified_scores = score_all(&index, &raw, tiers, true, now, config.grace_days);
    let active: Vec<usize> = (0..n).filter(|&i| tiers[i] == Tier::Active).collect();
    let archived: Vec<usize> = (0..n).filter(|&i| tiers[i] == Tier::Archived).collect();
    let mut rank = vec![None; n];
    let archive_walk = walk_order(&active_scores, &active, true);
    for (r, &i) in archive_walk.iter().enumerate() {
        rank[i] = Some(r + 1);
    }
    let refill_walk = walk_order(&unified_scores, &archived, false);
    for (r, &i) in refill_walk.iter().enumerate() {
        rank[i] = Some(r + 1);
    }

    let grace = config.grace_days * DAY_SECS;
    let over = budget.state == BudgetState::Over;
    let mut nodes = Vec::with_capacity(n);
    for (i, (id, node)) in graph.nodes.iter().enumerate() {
        let tier = tiers[i];
        let age = now - raw.created[i];
        let grace_left_days = (age < grace).then(|| round_to((grace - age) / DAY_SECS, 1));
        let (score, pool, rank_of) = match tier {
            Tier::Active => (active_scores[i], Some(Pool::Active), archive_walk.len()),
            Tier::Archived => (unified_scores[i], Some(Pool::Unified), refill_walk.len()),
            Tier::Orphaned => (None, None, 0),
        };
        let pool = score.and(pool);
        let mix = |s: &NodeScore| {
            format!(
                "score {} = 0.25 × recency {} + 0.40 × connectedness {} + 0.35 × usefulness {}",
                float_repr(round_to(s.score, 3)),
                pct(s.recency),
                pct(s.connectedness),
                pct(s.usefulness)
            )
        };
        let deleted_at = node
            .orphaned_ts()
            .filter(|_| tier == Tier::Orphaned)
            .map(|ts| ts + config.orphan_grace_days * DAY_SECS);
        let reason = match (tier, &score, grace_left_days) {
            (Tier::Active, _, Some(left)) => format!(
                "Active: new, inside its {}-day grace period ({} days left), so compaction never archives it.",
                crate::pyfmt::g_format(config.grace_days),
                crate::pyfmt::g_format(left)
            ),
            (Tier::Active, Some(s), None) => {
                let r = rank[i].unwrap_or(0);
                let when = if over {
                    "The level is over its 17,500-character budget: the next write or tick archives from the bottom of this order."
                } else {
                    "When the level exceeds 17,500 characters, compaction archives from the bottom of this order until it is under 14,000."
                };
                format!(
                    "Active: {}. It is {} of {} in the archive order (1 = archived first). {when}",
                    mix(s),
                    r,
                    archive_walk.len()
                )
            }
            (Tier::Active, None, None) => "Active.".to_string(),
            (Tier::Archived, Some(s), _) => {
                let r = rank[i].unwrap_or(0);
                let refill = if budget.chars < FILL_CEILING {
                    "The level is under its 14,000-character fill line: refill restores archived nodes in this order while they fit."
                } else {
                    "Refill restores archived nodes in this order only while the level stays under its 14,000-character fill line."
                };
                format!(
                    "Archived: it scored among the lowest when the level last ran over budget (or it was archived by hand); {}. It is {} of {} in the refill order. {refill} Reading it (or dragging it to the active area) promotes it.",
                    mix(s),
                    r,
                    refill_walk.len()
                )
            }
            (Tier::Archived, None, _) => {
                "Archived (inside its grace period, so not yet scored); reading it promotes it."
                    .to_string()
            }
            (Tier::Orphaned, _, _) => format!(
                "Orphaned: archived anchors exceeded their 5,250-character share and this one had the fewest links to non-archived nodes, so it left the rendered graph; it is dropped for good {} days after orphaning. Search still finds it; reading it (or dragging it to the active area) promotes it and rescues its orphaned neighbours.",
                crate::pyfmt::g_format(config.orphan_grace_days)
            ),
        };
        nodes.push(TierWhy {
            id: id.clone(),
            tier,
            score,
            pool,
            rank: rank[i],
            rank_of,
            grace_left_days,
            cost: cost[i],
            traces: traces[i],
            deleted_at,
            reason,
        });
    }

    let mut counts = (0, 0, 0);
    for t in tiers {
        match t {
            Tier::Active => counts.0 += 1,
            Tier::Archived => counts.1 += 1,
            Tier::Orphaned => counts.2 += 1,
        }
    }

    LevelInspection {
        budget,
        counts,
        nodes,
        live_edges,
        health,
        debt: debt_factors(graph, extra_activity, config, now),
        debt_items: debt_items(graph),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Edge, EdgeKey, Node, field, float_value};
    use crate::render::{LevelSource, ReadKind, ReadOptions, level_chars, render_read};
    use serde_json::Value;

    const NOW: f64 = 1_795_176_000.0;
    const OLD: f64 = NOW - 30.0 * DAY_SECS;

    fn node(g: &mut Graph, id: &str, gist: &str, created: f64) {
        let mut n = Node::new(id);
        n.set(field::GIST, Value::String(gist.into()));
        n.set(field::CREATED_TS, float_value(created));
        g.nodes.insert(id.into(), n);
    }

    fn edge(g: &mut Graph, from: &str, to: &str, rel: &str) {
        let key = EdgeKey::new(from, to, rel);
        g.edges.insert(key.clone(), Edge::new(key));
    }

    /// The view's debt is `kg_read`'s: under our policy it counts new nodes a burst got
    /// archived, under the reference's it does not.
    #[test]
    fn the_debt_counts_a_burst_as_kg_read_does_under_each_policy() {
        let mut g = sample();
        node(
            &mut g,
            "burst-1",
            "Written yesterday, archived by the share",
            NOW - DAY_SECS,
        );
        if let Some(n) = g.node_mut("burst-1") {
            n.set(field::ARCHIVED, Value::Bool(true));
        }
        let ours = inspect_level(&g, [], InspectConfig::default(), NOW);
        assert_eq!(ours.debt.debt.burst, 1);
        assert!(
            ours.debt.line.contains("1 new node(s) archived in a burst"),
            "{}",
            ours.debt.line
        );
        let reference = InspectConfig {
            count_burst: false,
            ..InspectConfig::default()
        };
        let theirs = inspect_level(&g, [], reference, NOW);
        assert_eq!(theirs.debt.debt.burst, 0);
        assert!(!theirs.debt.line.contains("burst"), "{}", theirs.debt.line);
    }

    fn sample() -> Graph {
        let mut g = Graph::default();
        node(&mut g, "hub", "The hub everyone cites", OLD);
        node(&mut g, "leaf", "A leaf", OLD);
        node(&mut g, "lonely", &"x".repeat(320), OLD);
        node(&mut g, "old", "Archived thought", OLD);
        node(&mut g, "gone", "Orphaned thought", OLD);
        node(&mut g, "fresh", "Brand new", NOW - 3600.0);
        if let Some(n) = g.node_mut("old") {
            n.set(field::ARCHIVED, Value::Bool(true));
        }
        if let Some(n) = g.node_mut("gone") {
            n.set(field::ARCHIVED, Value::Bool(true));
            n.set(field::ORPHANED_TS, float_value(NOW - DAY_SECS));
        }
        edge(&mut g, "leaf", "hub", "depends-on");
        edge(&mut g, "fresh", "hub", "extends");
        edge(&mut g, "old", "hub", "was-about");
        edge(&mut g, "old", "gone", "led-to");
        edge(&mut g, "hub", "src/lib.rs", "lives-in");
        g
    }

    #[test]
    fn budget_is_the_charged_size() {
        let g = sample();
        let i = inspect_level(&g, [], InspectConfig::default(), NOW);
        assert_eq!(i.budget.chars, level_chars(&g));
        assert_eq!(i.budget.state, BudgetState::UnderFill);
        assert_eq!(i.counts, (4, 1, 1));
        // Costs of the rendered nodes and anchors add up to the body minus the heads.
        let heads = "ACTIVE:".len() + 1 + crate::plan::ARCHIVED_HEAD.chars().count() + 1;
        let total: usize = i.nodes.iter().map(|w| w.cost).sum();
        assert_eq!(total + heads, i.budget.chars);
    }

    #[test]
    fn health_matches_the_rendered_line() {
        let g = sample();
        let i = inspect_level(&g, [], InspectConfig::default(), NOW);
        let empty = Graph::default();
        let opts = ReadOptions {
            kind: ReadKind::FullRead,
            budget: 40_000,
            preloaded: None,
            header: None,
            session_id: None,
            now: NOW,
            grace_days: 5.0,
        };
        let out = render_read(
            [
                LevelSource {
                    level: crate::model::Level::User,
                    graph: &g,
                    debt_line: None,
                },
                LevelSource {
                    level: crate::model::Level::Project,
                    graph: &empty,
                    debt_line: None,
                },
            ],
            &opts,
        );
        let line = out
            .text
            .lines()
            .find(|l| l.starts_with("HEALTH:"))
            .unwrap_or_default();
        assert_eq!(i.health.line, line);
    }

    #[test]
    fn tiers_are_explained_with_scores_from_the_right_pool() {
        let g = sample();
        let i = inspect_level(&g, [], InspectConfig::default(), NOW);
        let by = |id: &str| i.nodes.iter().find(|w| w.id == id).cloned();
        let hub = by("hub").unwrap_or_else(|| panic!("hub"));
        assert_eq!(hub.pool, Some(Pool::Active));
        let s = hub.score.unwrap_or_else(|| panic!("hub is scored"));
        assert!(s.connectedness > 0.5, "{s:?}");
        assert!(hub.reason.contains("archive order"), "{}", hub.reason);
        let fresh = by("fresh").unwrap_or_else(|| panic!("fresh"));
        assert!(fresh.score.is_none() && fresh.grace_left_days.is_some());
        let old = by("old").unwrap_or_else(|| panic!("old"));
        assert_eq!(
            (old.pool, old.rank, old.traces),
            (Some(Pool::Unified), Some(1), 1)
        );
        let gone = by("gone").unwrap_or_else(|| panic!("gone"));
        assert!(gone.score.is_none() && gone.cost == 0);
        assert_eq!(gone.deleted_at, Some(NOW - DAY_SECS + 365.0 * DAY_SECS));
        // Ranks follow the archive walk: ascending score.
        let mut active: Vec<_> = i
            .nodes
            .iter()
            .filter(|w| w.rank.is_some() && w.tier == Tier::Active)
            .collect();
        active.sort_by_key(|w| w.rank);
        let scores: Vec<f64> = active
            .iter()
            .filter_map(|w| w.score.map(|s| s.score))
            .collect();
        assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    }

    #[test]
    fn debt_items_follow_the_debt_counts() {
        let g = sample();
        let i = inspect_level(&g, [], InspectConfig::default(), NOW);
        let oversized = i
            .debt_items
            .iter()
            .filter(|d| d.kind == DebtKind::Oversized)
            .count();
        let unconnected: Vec<&str> = i
            .debt_items
            .iter()
            .filter(|d| d.kind == DebtKind::Unconnected)
            .map(|d| d.id.as_str())
            .collect();
        assert_eq!(oversized, i.debt.debt.oversized);
        assert_eq!(unconnected, ["lonely"]);
        assert_eq!(unconnected.len(), i.debt.debt.unconnected);
        assert!(i.debt.line.starts_with("DEBT: "));
        assert!((0.0..=1.0).contains(&i.debt.staleness));
    }

    #[test]
    fn live_edges_follow_the_render_predicate() {
        let g = sample();
        let i = inspect_level(&g, [], InspectConfig::default(), NOW);
        // leaf→hub, fresh→hub, old→hub (trace), old→gone (dead: orphan), hub→artifact.
        assert_eq!(i.live_edges, [true, true, true, false, true]);
    }
}
