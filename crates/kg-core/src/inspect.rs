//! What the graph view shows about a level: why each node sits in its tier (its score
//! and the percentiles it is made of), what the level costs against its budget, its
//! HEALTH and DEBT with their raw factors, and what the maintenance debt consists of.
//!
//! Pure functions over a borrowed graph, with `now` passed in. Every size comes from
//! the one render plan (render equals charge); every score from [`score::score_all`],
//! the same call compaction and refill make, so the view never second-guesses them.

use crate::compact::{
    GraceRule, IN_USE_SECS, LevelBudget, grace_overflow_of, in_use, unread_since_written,
};
use crate::debt::{Debt, GIST_SCAN_LIMIT, level_debt};
use crate::graph::Graph;
use crate::model::Tier;
use crate::plan::{Health, LevelIndex, Mode, Plan, is_live};
use crate::pyfmt::{float_repr, g_format, round_int, round_to};
use crate::score::{DAY_SECS, NodeScore, RawSignals, eligible, score_all, score_pool};

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
    /// The archive threshold (17,500 unless `KG_LEVEL_BUDGET` says otherwise).
    pub budget: usize,
    /// The refill ceiling (0.8 × budget: 14,000).
    pub fill_line: usize,
    /// Characters of the archived anchors (the orphan pass keeps them within
    /// `anchor_budget`).
    pub anchor_chars: usize,
    /// The anchors' share (0.3 × budget: 5,250); beyond it the orphan pass orphans
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
    /// Days of grace left, when in grace (how far grace protects a new node depends
    /// on the policy: see [`InspectConfig::grace_rule`]).
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
    /// A path-shaped touch of an active node whose file is gone (our policy).
    StaleTouch,
}

impl DebtKind {
    /// The kind as the graph view's payload spells it: `oversized`, `unconnected` or
    /// `stale_touch`.
    pub fn as_str(self) -> &'static str {
        match self {
            DebtKind::Oversized => "oversized",
            DebtKind::Unconnected => "unconnected",
            DebtKind::StaleTouch => "stale_touch",
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
    /// The stale entry, as stored, for a [`DebtKind::StaleTouch`] item.
    pub touch: Option<String>,
}

/// Everything the view shows about one level.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelInspection {
    /// The level's rendered size against its budget.
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
    /// What happens to the level next, given where its size stands and what grace
    /// protects: the budget gauge's sentence.
    pub outlook: String,
    /// Characters of node lines new nodes may hold out of compaction's reach: the
    /// share under our policy, `None` under the reference's (grace protects every new
    /// node there).
    pub grace_share: Option<usize>,
}

/// Settings the explanations depend on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InspectConfig {
    /// Days a new node is protected from archiving (`KG_GRACE_PERIOD_DAYS`, 5 by default).
    pub grace_days: f64,
    /// Days an orphan is kept before it is deleted (`KG_ORPHAN_GRACE_DAYS`, 365 by
    /// default).
    pub orphan_grace_days: f64,
    /// The grace rule of the store's policy (`Policy::grace_rule`), whose compaction
    /// the view explains: under ours ([`GraceRule::Shared`]) new nodes share part of
    /// the budget, nodes in use are archived last and the debt counts new nodes a burst
    /// got archived; under the reference's ([`GraceRule::Unlimited`]) grace protects
    /// every new node.
    pub grace_rule: GraceRule,
    /// The level's budget (`KG_LEVEL_BUDGET`), whose lines compaction keeps.
    pub level_budget: LevelBudget,
}

impl Default for InspectConfig {
    fn default() -> Self {
        InspectConfig {
            grace_days: 5.0,
            orphan_grace_days: 365.0,
            grace_rule: GraceRule::Shared,
            level_budget: LevelBudget::default(),
        }
    }
}

/// The budget of a level from its plan.
fn budget_of(plan: &Plan, index: &LevelIndex<'_>, budget: LevelBudget) -> Budget {
    let chars = plan.body_chars(index);
    let anchor_chars = plan.anchors.iter().map(|&i| index.anchor_cost(i)).sum();
    let state = if chars > budget.chars() {
        BudgetState::Over
    } else if chars < budget.fill_ceiling() {
        BudgetState::UnderFill
    } else {
        BudgetState::Settled
    };
    Budget {
        chars,
        budget: budget.chars(),
        fill_line: budget.fill_ceiling(),
        anchor_chars,
        anchor_budget: budget.anchor_budget(),
        state,
    }
}

/// A level's size against `budget` (cheap: one plan, no scoring).
pub fn level_budget(graph: &Graph, budget: LevelBudget) -> Budget {
    let index = LevelIndex::of(graph);
    let plan = Plan::build(&index, &index.tiers, Mode::Active);
    budget_of(&plan, &index, budget)
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
        config.grace_rule == GraceRule::Shared,
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

impl DebtFactors {
    /// These factors with `items` held back from sync counted (see
    /// [`Debt::held_back`]): the level and the line change, the factors do not.
    pub fn with_held_back(mut self, items: usize) -> DebtFactors {
        self.debt = self.debt.with_held_back(items);
        self.line = self.debt.line();
        self
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
                touch: None,
            });
        }
        if !endpoints.contains(id.as_str()) {
            unconnected.push(DebtItem {
                kind: DebtKind::Unconnected,
                id: id.clone(),
                gist_chars,
                touch: None,
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

/// How a node stands under our grace rule (all `false` under the reference's).
#[derive(Debug, Clone, Copy)]
struct Usage {
    /// Read in full or liked lately: archived last while a burst is in the level.
    in_use: bool,
    /// Inside its grace period, and neither read since it was written nor in use.
    new_unread: bool,
}

/// The archive order compaction would walk now.
struct Walk {
    /// Active nodes, archived first to last.
    order: Vec<usize>,
    /// Nodes in use are held back to the end of `order` because the level holds new
    /// nodes nobody has read.
    in_use_last: bool,
}

/// The order in which compaction would archive the active nodes now (`compact`'s
/// `burst_walk`): the scored ones by ascending score; under our rule, while the level
/// holds new nodes nobody has read, the nodes in use go last, and just before them
/// the new unread nodes the share protects, oldest first.
fn archive_walk_order(
    active: &[usize],
    scores: &[Option<NodeScore>],
    usage: &[Usage],
    created: &[f64],
) -> Walk {
    let by_score = walk_order(scores, active, true);
    let burst = active.iter().any(|&i| usage[i].new_unread);
    let (in_use, mut order): (Vec<usize>, Vec<usize>) =
        by_score.iter().partition(|&&i| burst && usage[i].in_use);
    if in_use.is_empty() {
        return Walk {
            order,
            in_use_last: false,
        };
    }
    let mut shielded: Vec<usize> = active
        .iter()
        .copied()
        .filter(|&i| usage[i].new_unread && scores[i].is_none())
        .collect();
    shielded.sort_by(|&a, &b| created[a].total_cmp(&created[b]).then(a.cmp(&b)));
    order.extend(shielded);
    order.extend(in_use);
    Walk {
        order,
        in_use_last: true,
    }
}

/// The grace share as the explanations word it.
struct Share {
    /// `6,125`.
    chars: String,
    /// `35`.
    pct: i64,
}

/// `n` with a comma between thousands, as the explanations write sizes (17,500).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `5 days`, `1 day`, `0.5 days`.
fn days(x: f64) -> String {
    format!("{} day{}", g_format(x), if x == 1.0 { "" } else { "s" })
}

/// What the active nodes' grace allows, for the gauge's sentence.
struct GraceStand {
    /// Active nodes.
    active: usize,
    /// Active nodes inside their grace period.
    in_grace: usize,
    /// Days until the first of them leaves it.
    first_ends: Option<f64>,
    /// Our rule only: active nodes in grace the share protects (the rest are walked
    /// with the older nodes), and whether nodes in use go last.
    shared: Option<(usize, bool)>,
}

/// The gauge's sentence: what happens to the level next.
fn outlook(state: BudgetState, grace_days: f64, stand: &GraceStand, share: &Share) -> String {
    match state {
        BudgetState::UnderFill => {
            return "under the fill line: refill may bring archived nodes back".to_string();
        }
        BudgetState::Settled => {
            return "between the fill line and the budget: nothing moves".to_string();
        }
        BudgetState::Over => {}
    }
    let soon = stand.first_ends.map_or(String::new(), |d| {
        format!(
            " The first leaves it in {}; the level shrinks from then on.",
            days(d)
        )
    });
    let Some((protected, in_use_last)) = stand.shared else {
        let free = stand.active - stand.in_grace;
        if free > 0 {
            let among = if stand.in_grace > 0 {
                format!(
                    " among the {free} active nodes older than {} (the {} newer ones are protected)",
                    days(grace_days),
                    stand.in_grace
                )
            } else {
                String::new()
            };
            return format!(
                "over the budget: the next write or tick archives the lowest-scored nodes{among}"
            );
        }
        return format!(
            "over the budget, but nothing can be archived yet: every active node is newer than {}, and a node that new is never archived (it has not had time to prove useful).{soon} Archive by hand to make room now",
            days(grace_days)
        );
    };
    let open = stand.active - protected;
    if open == 0 {
        return format!(
            "over the budget, but nothing can be archived yet: every active node is newer than {}, and together they fit in the {}% share of the budget that protects new nodes ({} characters).{soon} Archive by hand to make room now",
            days(grace_days),
            share.pct,
            share.chars
        );
    }
    let among = if protected > 0 {
        format!(
            " of {open} active nodes, and spares the {protected} newest: nodes written in the last {} are protected while their lines fit in {}% of the budget ({} characters), newest first",
            days(grace_days),
            share.pct,
            share.chars
        )
    } else {
        " nodes".to_string()
    };
    let last = if in_use_last {
        format!(
            "; nodes read or liked in the last {} go last, after new nodes nobody has read",
            days(IN_USE_SECS / DAY_SECS)
        )
    } else {
        String::new()
    };
    format!("over the budget: the next write or tick archives the lowest-scored{among}{last}")
}

impl LevelInspection {
    /// This inspection with the level's stale touches (see `stale_touches`) counted in
    /// its DEBT, as the store counts them, and listed after the other debt items.
    pub fn with_stale_touches(mut self, stale: &[crate::stale_touches::StaleTouch]) -> Self {
        if stale.is_empty() {
            return self;
        }
        let (entries, nodes) = crate::stale_touches::stale_counts(stale);
        let debt = self.debt.debt.clone().with_stale_touches(entries, nodes);
        self.debt = DebtFactors {
            staleness: debt.staleness(),
            activity: debt.activity(),
            deficit: debt.deficit(),
            line: debt.line(),
            debt,
        };
        self.debt_items.extend(stale.iter().map(|s| DebtItem {
            kind: DebtKind::StaleTouch,
            id: s.id.clone(),
            gist_chars: 0,
            touch: Some(s.touch.clone()),
        }));
        self
    }
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
    let budget = budget_of(&plan, &index, config.level_budget);
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
    let shared = config.grace_rule == GraceRule::Shared;
    let grace = config.grace_days * DAY_SECS;
    let in_grace = |i: usize| now - raw.created[i] < grace;
    // Under our rule, the new nodes beyond their share of the budget are scored and
    // walked with the older ones, exactly as compaction takes them.
    let overflow = if shared {
        let share = config.level_budget.grace_share();
        grace_overflow_of(&index, tiers, (&raw.created, share), in_grace)
    } else {
        Vec::new()
    };
    let mut active_pool = eligible(&raw, tiers, false, now, config.grace_days);
    active_pool.extend_from_slice(&overflow);
    active_pool.sort_unstable();
    let active_scores = score_pool(&index, &raw, tiers, &active_pool);
    let unified_scores = score_all(&index, &raw, tiers, true, now, config.grace_days);
    let active: Vec<usize> = (0..n).filter(|&i| tiers[i] == Tier::Active).collect();
    let archived: Vec<usize> = (0..n).filter(|&i| tiers[i] == Tier::Archived).collect();
    let usage: Vec<Usage> = graph
        .nodes
        .values()
        .enumerate()
        .map(|(i, node)| Usage {
            in_use: shared && in_use(node, now),
            new_unread: shared && in_grace(i) && unread_since_written(node, now),
        })
        .collect();
    let walk = archive_walk_order(&active, &active_scores, &usage, &raw.created);
    let archive_walk = &walk.order;
    let mut rank = vec![None; n];
    for (r, &i) in archive_walk.iter().enumerate() {
        rank[i] = Some(r + 1);
    }
    let refill_walk = walk_order(&unified_scores, &archived, false);
    for (r, &i) in refill_walk.iter().enumerate() {
        rank[i] = Some(r + 1);
    }

    let over = budget.state == BudgetState::Over;
    let grace_share = config.level_budget.grace_share();
    let share = Share {
        chars: thousands(grace_share),
        pct: round_int(100.0 * grace_share as f64 / budget.budget as f64),
    };
    let fill_line = thousands(budget.fill_line);
    // (The reference's wording is kept as it is; ours names the end the walk starts
    // from, which "bottom" leaves unclear beside "1 = archived first".)
    let limit = thousands(budget.budget);
    let when = match (over, shared) {
        (true, false) => format!(
            "The level is over its {limit}-character budget: the next write or tick archives from the bottom of this order."
        ),
        (false, false) => format!(
            "When the level exceeds {limit} characters, compaction archives from the bottom of this order until it is under {fill_line}."
        ),
        (true, true) => format!(
            "The level is over its {limit}-character budget: the next write or tick archives nodes in this order, from place 1, until it is under {fill_line}."
        ),
        (false, true) => format!(
            "When the level exceeds {limit} characters, compaction archives nodes in this order, from place 1, until it is under {fill_line}."
        ),
    };
    let grace_days = g_format(config.grace_days);
    let in_use_days = g_format(IN_USE_SECS / DAY_SECS);
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
        let place = || {
            format!(
                "It is {} of {} in the archive order (1 = archived first).",
                rank[i].unwrap_or(0),
                archive_walk.len()
            )
        };
        // Ours only: why a node read or liked lately goes last.
        let in_use_note = if usage[i].in_use {
            format!(
                " It was read or liked in the last {in_use_days} days: while new nodes nobody has read are in the level, nodes in use like it are archived last."
            )
        } else {
            String::new()
        };
        let deleted_at = node
            .orphaned_ts()
            .filter(|_| tier == Tier::Orphaned)
            .map(|ts| ts + config.orphan_grace_days * DAY_SECS);
        let burst_new = shared && grace_left_days.is_some();
        let reason = match (tier, &score, grace_left_days) {
            (Tier::Active, None, Some(left)) if shared => {
                let fits = format!(
                    "Active: new, inside its {grace_days}-day grace period ({} days left){}. New nodes are protected from archiving while their lines fit in a {}% share of the level's budget ({} characters), newest first",
                    g_format(left),
                    if usage[i].in_use {
                        format!(", and read or liked in the last {in_use_days} days")
                    } else {
                        String::new()
                    },
                    share.pct,
                    share.chars
                );
                if rank[i].is_some() {
                    format!(
                        "{fits}, and this one fits. But nodes read or liked in the last {in_use_days} days are kept longer: if archiving every other node outside the share is not enough, new nodes nobody has read go before them, oldest first. {}",
                        place()
                    )
                } else {
                    format!("{fits}; this one fits, so compaction does not archive it.")
                }
            }
            // The reference's rule: grace protects every new node.
            (Tier::Active, None, Some(left)) => format!(
                "Active: new, inside its {grace_days}-day grace period ({} days left), so compaction never archives it.",
                g_format(left)
            ),
            // Ours only (the reference scores no node in grace): beyond the share.
            (Tier::Active, Some(s), Some(left)) => format!(
                "Active: new ({} days of its {grace_days}-day grace period left), but newer nodes already fill the {}% of the level's budget ({} characters) that protects new nodes, so it is scored like an older node: {}. {} {when}{in_use_note}",
                g_format(left),
                share.pct,
                share.chars,
                mix(s),
                place()
            ),
            (Tier::Active, Some(s), None) => {
                format!("Active: {}. {} {when}{in_use_note}", mix(s), place())
            }
            (Tier::Active, None, None) => "Active.".to_string(),
            (Tier::Archived, Some(s), _) => {
                let r = rank[i].unwrap_or(0);
                let refill = if budget.chars < budget.fill_line {
                    format!(
                        "The level is under its {fill_line}-character fill line: refill restores archived nodes in this order while they fit."
                    )
                } else {
                    format!(
                        "Refill restores archived nodes in this order only while the level stays under its {fill_line}-character fill line."
                    )
                };
                format!(
                    "Archived: it scored among the lowest when the level last ran over budget (or it was archived by hand); {}. It is {} of {} in the refill order. {refill} Reading it (or dragging it to the active area) promotes it.",
                    mix(s),
                    r,
                    refill_walk.len()
                )
            }
            (Tier::Archived, None, Some(left)) if burst_new => format!(
                "Archived although new: a burst of writes went past the {}% share of the level's budget that new nodes get, so compaction archived it rather than older nodes or nodes in use (or it was archived by hand). It is not scored until its {grace_days}-day grace period ends ({} days left), so refill considers it last. The level's DEBT counts it as part of a burst, for a maintenance pass to review. Reading it (or dragging it to the active area) promotes it.",
                share.pct,
                g_format(left)
            ),
            (Tier::Archived, None, _) => {
                "Archived (inside its grace period, so not yet scored); reading it promotes it."
                    .to_string()
            }
            (Tier::Orphaned, _, _) if burst_new => format!(
                "Orphaned although new: a burst of writes went past the {}% share of the level's budget that new nodes get, and new archived nodes nobody has read are the first to stop rendering when the level or its archived anchors overflow, so it left the rendered graph; it is dropped for good {} days after orphaning. The level's DEBT counts it as part of a burst. Search still finds it; reading it (or dragging it to the active area) promotes it and rescues its orphaned neighbours.",
                share.pct,
                g_format(config.orphan_grace_days)
            ),
            (Tier::Orphaned, _, _) => format!(
                "Orphaned: archived anchors exceeded their {}-character share and this one had the fewest links to non-archived nodes{}, so it left the rendered graph; it is dropped for good {} days after orphaning. Search still finds it; reading it (or dragging it to the active area) promotes it and rescues its orphaned neighbours.",
                thousands(budget.anchor_budget),
                if shared {
                    " (new archived nodes nobody had read go first)"
                } else {
                    ""
                },
                g_format(config.orphan_grace_days)
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

    let active_in_grace = || {
        nodes
            .iter()
            .filter(|w| w.tier == Tier::Active)
            .filter_map(|w| w.grace_left_days)
    };
    let stand = GraceStand {
        active: counts.0,
        in_grace: active_in_grace().count(),
        first_ends: active_in_grace().reduce(f64::min),
        shared: shared.then(|| {
            let protected = nodes
                .iter()
                .filter(|w| w.tier == Tier::Active && w.grace_left_days.is_some())
                .filter(|w| w.score.is_none())
                .count();
            (protected, walk.in_use_last)
        }),
    };
    LevelInspection {
        budget,
        counts,
        nodes,
        live_edges,
        health,
        debt: debt_factors(graph, extra_activity, config, now),
        debt_items: debt_items(graph),
        outlook: outlook(budget.state, config.grace_days, &stand, &share),
        grace_share: shared.then_some(grace_share),
    }
}

#[cfg(test)]
mod tests;
