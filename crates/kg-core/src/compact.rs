//! Compaction (core.md §6): keep each level's rendered size under its budget by moving
//! low-value nodes down the tiers, and bring archived nodes back when there is room.
//!
//! Every size decision re-measures the level with the render plan itself (render
//! equals charge); the passes work on a tier array and write the node flags once at
//! the end, in the order the reference writes them, so the files match it byte for byte.

use crate::change::TierMoves;
use crate::graph::Graph;
use crate::journal::Journal;
use crate::model::{Node, Tier, field, float_value};
use crate::plan::{LevelIndex, Meter};
use crate::score::{self, DAY_SECS, PoolScorer, RawSignals, ScoreOrder};
use serde_json::Value;

/// Rendered characters a level may hold unless configured otherwise (`KG_LEVEL_BUDGET`):
/// the reference's budget, which its fixtures are pinned to.
pub const LEVEL_BUDGET: usize = 17_500;
/// A stranded archived node must beat a just-archived one by this much to swap back.
pub const RESURRECTION_MARGIN: f64 = 0.05;

/// A level's size budget and the lines compaction derives from it. Every size decision
/// of a maintenance pass and every explanation of the graph view reads these, so a
/// configured budget moves all of them together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelBudget {
    chars: usize,
}

impl LevelBudget {
    /// A budget of `chars` rendered characters.
    pub const fn new(chars: usize) -> LevelBudget {
        LevelBudget { chars }
    }

    /// Rendered characters the level may hold: over this, the next pass archives.
    pub const fn chars(self) -> usize {
        self.chars
    }

    /// Archiving stops, and refill fills, at this size (0.8 × budget: 14,000 of 17,500).
    pub const fn fill_ceiling(self) -> usize {
        self.chars * 4 / 5
    }

    /// Characters the archived anchors of a level may take (0.3 × budget: 5,250).
    pub const fn anchor_budget(self) -> usize {
        self.chars * 3 / 10
    }

    /// Characters of node lines that nodes inside their grace period may hold out of
    /// compaction's reach under [`GraceRule::Shared`] (0.35 × budget: 6,125). Past it,
    /// the oldest of them compete on score like everyone else.
    pub const fn grace_share(self) -> usize {
        self.chars * 35 / 100
    }
}

impl Default for LevelBudget {
    fn default() -> LevelBudget {
        LevelBudget::new(LEVEL_BUDGET)
    }
}

/// What a maintenance pass goes by: the level's budget, the grace period in days and
/// how far it shields new nodes. The store builds it from its configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelRules {
    /// The level's size budget.
    pub budget: LevelBudget,
    /// Days a new node is protected from archiving.
    pub grace_days: f64,
    /// How far that protection reaches.
    pub grace_rule: GraceRule,
}

impl Default for LevelRules {
    /// Ours with the default budget and a 5-day grace period.
    fn default() -> LevelRules {
        LevelRules {
            budget: LevelBudget::default(),
            grace_days: 5.0,
            grace_rule: GraceRule::Shared,
        }
    }
}

/// A node read or liked this recently (7 days) is in use: under
/// [`GraceRule::Shared`] it is not archived to make room for new nodes nobody has read.
pub const IN_USE_SECS: f64 = 7.0 * DAY_SECS;

/// How far the grace period shields new nodes from archiving. The store picks it from
/// its policy: [`GraceRule::Shared`] is ours, [`GraceRule::Unlimited`] the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GraceRule {
    /// Ours, so that a burst of agent writes cannot flood a level: nodes in grace hold
    /// at most [`LevelBudget::grace_share`] out of reach (the newest first); while new nodes nobody
    /// has read sit in an over-budget level, nodes in use are archived last, after the
    /// burst's archived nodes were orphaned and the share gave way (see [`burst_walk`]);
    /// and when anchors overflow, new unread nodes lose their anchors first.
    #[default]
    Shared,
    /// The reference's (core.md §6.2): every node in grace is out of reach, however
    /// many there are, so a burst archives everything else.
    Unlimited,
}

/// The working state of one maintenance pass.
struct Pass<'a, 'g> {
    graph: &'g Graph,
    index: &'a LevelIndex<'g>,
    /// The level's size under the current tiers, kept exact incrementally.
    meter: Meter<'a, 'g>,
    /// Computed only when a pass needs scores (most writes leave the level in band).
    raw: std::cell::OnceCell<RawSignals>,
    /// The last value each node's `_archived` flag was given by this pass.
    flag: Vec<Option<bool>>,
    now: f64,
    budget: LevelBudget,
    grace_days: f64,
    rule: GraceRule,
    /// Active nodes in grace beyond the grace share (node order): in this pass they
    /// are scored and archived like nodes past grace. Empty under the reference's rule.
    overflow: Vec<usize>,
    /// New unread nodes the archive walk orphaned so that their edges stop costing
    /// (see [`orphan_burst_residue`]).
    walk_orphans: Vec<usize>,
}

impl<'a, 'g> Pass<'a, 'g> {
    fn tiers(&self) -> &[Tier] {
        self.meter.tiers()
    }

    /// The eligible set of the active pool (active nodes past grace, and the grace
    /// overflow).
    fn active_pool(&self) -> Vec<usize> {
        self.with_overflow(score::eligible(
            self.raw(),
            self.tiers(),
            false,
            self.now,
            self.grace_days,
        ))
    }

    /// `pool` (node order, nodes past grace) with the grace overflow merged in, the
    /// locked nodes left out: a person's lock keeps a node active whatever it costs.
    fn with_overflow(&self, mut pool: Vec<usize>) -> Vec<usize> {
        if !self.overflow.is_empty() {
            pool.extend_from_slice(&self.overflow);
            pool.sort_unstable();
        }
        pool.retain(|&i| !self.index.locked[i]);
        pool
    }

    /// Is node `i` inside its grace period?
    fn in_grace(&self, i: usize) -> bool {
        self.now - self.raw().created[i] < self.grace_days * DAY_SECS
    }

    /// Is node `i` new, not read in full since it was created and not liked lately:
    /// written, and nothing since (what a burst of writes is made of)?
    fn new_and_unread(&self, i: usize) -> bool {
        self.in_grace(i)
            && self
                .graph
                .nodes
                .get_index(i)
                .is_some_and(|(_, n)| unread_since_written(n, self.now))
    }

    /// Was node `i` read in full or liked within [`IN_USE_SECS`]?
    fn in_use(&self, i: usize) -> bool {
        self.graph
            .nodes
            .get_index(i)
            .is_some_and(|(_, n)| in_use(n, self.now))
    }

    /// Scores of `pool` (scored by `scorer`) under the current tiers, by node: `None`
    /// outside the pool.
    fn scores_of(&self, pool: &[usize], scorer: &PoolScorer<'_>) -> Vec<Option<f64>> {
        let mut by_node = vec![None; self.index.len()];
        for (&i, score) in pool.iter().zip(scorer.scores(self.index, self.tiers())) {
            by_node[i] = Some(score.score);
        }
        by_node
    }

    /// The eligible set of the unified pool (active and archived, past grace). Moves
    /// between those two tiers leave it as it is, so refill computes it once.
    /// The grace overflow is not part of it: an unread new node beyond the share is
    /// not brought back in place of older knowledge.
    fn unified_pool(&self) -> Vec<usize> {
        score::eligible(self.raw(), self.tiers(), true, self.now, self.grace_days)
    }

    fn raw(&self) -> &RawSignals {
        self.raw
            .get_or_init(|| RawSignals::of(self.graph, self.index, self.now))
    }

    fn set_archived(&mut self, i: usize, archived: bool) {
        self.meter.set(
            i,
            if archived {
                Tier::Archived
            } else {
                Tier::Active
            },
        );
        self.flag[i] = Some(archived);
    }

    /// Archive `nodes` (active ones) in one move of the meter.
    fn archive_all(&mut self, nodes: &[usize]) {
        self.meter.set_many(nodes, Tier::Archived);
        for &i in nodes {
            self.flag[i] = Some(true);
        }
    }

    /// Is the `_archived` flag truthy now (as the orphan pass reads it)?
    fn archived_flag(&self, i: usize) -> bool {
        self.flag[i].unwrap_or_else(|| {
            self.graph
                .nodes
                .get_index(i)
                .is_some_and(|(_, n)| n.is_archived_flag())
        })
    }
}

/// The passes on a bare graph under our grace rule ([`GraceRule::Shared`]) and the
/// default budget; see [`compact_graph_with`]. For benchmarks and tests; the store
/// passes its configured rules.
#[cfg(any(test, feature = "internals"))]
pub fn compact_graph(
    graph: &mut Graph,
    stall_logged: &mut bool,
    key: &str,
    grace_days: f64,
    now: f64,
    journal: Option<&mut Journal>,
) -> TierMoves {
    let rules = LevelRules {
        grace_days,
        ..LevelRules::default()
    };
    compact_graph_with(graph, stall_logged, key, rules, now, journal)
}

/// The passes on a bare graph. `stall_logged` remembers whether a grace stall was
/// already reported for this graph; `rules` are the level's budget and grace period;
/// `journal` records undo steps for every node it changes.
pub fn compact_graph_with(
    graph: &mut Graph,
    stall_logged: &mut bool,
    key: &str,
    rules: LevelRules,
    now: f64,
    mut journal: Option<&mut Journal>,
) -> TierMoves {
    let LevelRules {
        budget,
        grace_days,
        grace_rule: rule,
    } = rules;
    let limit = budget.chars();
    // A locked node found out of the active tier (an older file, a hand edit) comes
    // back first: compaction never archives one.
    let unlocked_out = restore_locked(graph, journal.as_deref_mut());
    let index = LevelIndex::of(graph);
    let (moves, orphaned, flags, stall) = {
        let mut pass = Pass {
            graph,
            index: &index,
            meter: Meter::new(&index, &index.tiers),
            raw: std::cell::OnceCell::new(),
            flag: vec![None; index.len()],
            now,
            budget,
            grace_days,
            rule,
            overflow: Vec::new(),
            walk_orphans: Vec::new(),
        };
        let mut stall = Stall::Clear;
        let mut archived = Vec::new();
        if pass.meter.exceeds(limit) {
            if rule == GraceRule::Shared {
                pass.overflow = grace_overflow(&pass);
            }
            let pool = pass.active_pool();
            let scorer = PoolScorer::new(&index, pass.raw(), &pool);
            let scores = pass.scores_of(&pool, &scorer);
            let size = pass.meter.exact();
            if pool.is_empty() {
                let active = pass.tiers().iter().filter(|t| **t == Tier::Active).count();
                stall = Stall::Stalled { size, active };
            } else {
                log::info!("Compacting graph {key}: {size} chars > {limit} limit");
                let eligible =
                    score::by_score(&pool, |i| scores[i].unwrap_or(0.0), ScoreOrder::Ascending);
                archived = if rule == GraceRule::Shared {
                    burst_walk(&mut pass, eligible)
                } else {
                    archive_walk(&mut pass, &eligible)
                };
                if !archived.is_empty() {
                    resurrect(&mut pass, &archived, key, (&pool, &scorer));
                }
            }
        }
        if archived.is_empty() {
            refill(&mut pass);
        }
        let mut tiers = pass.tiers().to_vec();
        let mut orphaned = orphan_pass(&pass, &mut tiers);
        orphaned.extend_from_slice(&pass.walk_orphans);
        let mut moves = TierMoves {
            restored: unlocked_out,
            ..TierMoves::default()
        };
        if pass.meter.exceeds(limit) && pass.index.locked.iter().any(|&l| l) {
            log::info!(
                "Graph {key} stays over its {limit}-character budget ({} chars): its locked nodes are never archived",
                pass.meter.exact()
            );
        }
        for ((id, was), now_tier) in index.ids.iter().zip(&index.tiers).zip(&tiers) {
            let list = match (*was, *now_tier) {
                (a, b) if a == b => continue,
                (Tier::Active, Tier::Archived) => &mut moves.archived,
                (_, Tier::Active) => &mut moves.restored,
                (_, Tier::Orphaned) => &mut moves.orphaned,
                _ => continue,
            };
            list.push(id.to_string());
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
                    "Graph {key} is {size} chars > {limit} limit but all {active} active nodes are in grace; compaction deferred until a node leaves grace"
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
    // Both for one node before the next, while its object is in the CPU caches.
    let mut orphaned = {
        let mut in_node_order = orphaned;
        in_node_order.sort_unstable();
        in_node_order.into_iter().peekable()
    };
    for (i, flag) in flags.iter().enumerate() {
        let orphan_now = orphaned.next_if_eq(&i).is_some();
        let Some(node) = graph.node_at_mut(i) else {
            continue;
        };
        if let Some(value) = flag {
            node.set(field::ARCHIVED, Value::Bool(*value));
        }
        if orphan_now {
            node.set(field::ORPHANED_TS, float_value(now));
        }
    }
    moves
}

/// Bring every locked node that is not active back to the active tier, journalled;
/// returns their ids.
fn restore_locked(graph: &mut Graph, mut journal: Option<&mut Journal>) -> Vec<String> {
    let out: Vec<String> = graph
        .nodes
        .iter()
        .filter(|(_, n)| n.is_locked() && n.tier() != Tier::Active)
        .map(|(id, _)| id.clone())
        .collect();
    for id in &out {
        if let Some(journal) = journal.as_deref_mut() {
            journal.node(graph, id);
        }
        if let Some(node) = graph.node_mut(id) {
            node.remove(field::ARCHIVED);
            node.remove(field::ORPHANED_TS);
        }
    }
    out
}

/// The archive walk (core.md §6.2): archive nodes in `order` (lowest score first) while
/// the level exceeds the fill ceiling. Returns the archived nodes, in that order.
fn archive_walk(pass: &mut Pass<'_, '_>, order: &[usize]) -> Vec<usize> {
    // The nodes the level surely stays above the ceiling through are archived in one
    // move; the walk goes on from there one node at a time.
    let sure = surely_over_ceiling(pass, order);
    pass.archive_all(&order[..sure]);
    let mut archived = order[..sure].to_vec();
    for &i in &order[sure..] {
        if !pass.meter.exceeds(pass.budget.fill_ceiling()) {
            break;
        }
        pass.set_archived(i, true);
        archived.push(i);
    }
    archived
}

/// The active nodes in grace that the grace share does not cover (node order): the
/// newest hold their protection while their node lines fit in the grace share; from
/// the first that does not fit, the older ones are scored like nodes past grace.
fn grace_overflow(pass: &Pass<'_, '_>) -> Vec<usize> {
    grace_overflow_of(
        pass.index,
        pass.tiers(),
        (&pass.raw().created, pass.budget.grace_share()),
        |i| pass.in_grace(i),
    )
}

/// [`grace_overflow`] over bare tiers (`created` are the nodes' creation stamps,
/// `share` the characters of node lines the grace share holds, `in_grace` tells the
/// nodes inside their grace period): shared with the graph view, which explains the
/// same rule.
pub(crate) fn grace_overflow_of(
    index: &LevelIndex<'_>,
    tiers: &[Tier],
    (created, share): (&[f64], usize),
    in_grace: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let mut young: Vec<usize> = (0..index.len())
        .filter(|&i| tiers[i] == Tier::Active && in_grace(i))
        .collect();
    // Newest first; of nodes stamped alike, the later written (later in node order).
    young.sort_by(|&a, &b| created[b].total_cmp(&created[a]).then(b.cmp(&a)));
    let mut held = 0usize;
    let kept = young
        .iter()
        .take_while(|&&i| {
            held += index.node_line_cost(i);
            held <= share
        })
        .count();
    let mut overflow = young.split_off(kept);
    overflow.sort_unstable();
    overflow
}

/// Was `node` read in full or liked within [`IN_USE_SECS`] of `now`? Such a node is
/// in use: under [`GraceRule::Shared`] it is archived last while new unread nodes
/// crowd the level.
pub(crate) fn in_use(node: &Node, now: f64) -> bool {
    let since = now - IN_USE_SECS;
    let recent = |ts: f64| ts >= since && score::credible_ts(ts, now).is_some();
    node.last_read_ts().is_some_and(recent) || node.useful_ts().iter().any(|&ts| recent(ts))
}

/// Is `node` not in use and not read since it was written? Inside its grace period,
/// that is what a burst of writes is made of.
pub(crate) fn unread_since_written(node: &Node, now: f64) -> bool {
    !in_use(node, now) && node.last_read_ts().is_none_or(|r| r < node.created_ts())
}

/// The archive walk under [`GraceRule::Shared`], over `order` (the pool, lowest score
/// first). While the level holds new nodes nobody has read, what sessions read or liked
/// this week is not archived to make room for them: the nodes in use are walked only
/// after every other candidate (each part in score order), and before them the burst's
/// archived nodes are orphaned as far as their anchors and edges still crowd the level.
/// Without such new nodes it is the plain walk. Returns the archived nodes, in order.
fn burst_walk(pass: &mut Pass<'_, '_>, order: Vec<usize>) -> Vec<usize> {
    let burst =
        (0..pass.index.len()).any(|i| pass.tiers()[i] == Tier::Active && pass.new_and_unread(i));
    if !burst {
        return archive_walk(pass, &order);
    }
    let ceiling = pass.budget.fill_ceiling();
    let (in_use, rest): (Vec<usize>, Vec<usize>) = order.into_iter().partition(|&i| pass.in_use(i));
    let mut archived = archive_walk(pass, &rest);
    if pass.meter.exceeds(ceiling) {
        orphan_burst_residue(pass);
    }
    if !in_use.is_empty() && pass.meter.exceeds(ceiling) {
        // The grace share yields to the nodes in use: the unread new nodes it shields
        // go first, oldest first. (With nothing in use, the share stands, as grace
        // does in the reference.)
        let created = &pass.raw().created;
        let mut shielded: Vec<usize> = (0..pass.index.len())
            .filter(|&i| pass.tiers()[i] == Tier::Active && pass.new_and_unread(i))
            .collect();
        shielded.sort_by(|&a, &b| created[a].total_cmp(&created[b]).then(a.cmp(&b)));
        archived.extend(archive_walk(pass, &shielded));
        if pass.meter.exceeds(ceiling) {
            orphan_burst_residue(pass);
        }
    }
    if pass.meter.exceeds(ceiling) {
        archived.extend(archive_walk(pass, &in_use));
    }
    archived
}

/// An archived node still renders as an anchor, and each of its edges to an active node
/// as a citation under that node: a burst of linked writes crowds the level even once
/// archived. Orphans (no anchor, no live edge; still found by `kg_search`, and a read
/// by id brings one back) the archived new unread nodes, oldest first, until the level
/// would be at the fill ceiling, then measures the level afresh.
fn orphan_burst_residue(pass: &mut Pass<'_, '_>) {
    let index = pass.index;
    let ceiling = pass.budget.fill_ceiling();
    let mut size = pass.meter.exact();
    let mut tiers = pass.tiers().to_vec();
    let created = &pass.raw().created;
    let mut residue: Vec<usize> = (0..index.len())
        .filter(|&i| tiers[i] == Tier::Archived && pass.new_and_unread(i))
        .collect();
    residue.sort_by(|&a, &b| created[a].total_cmp(&created[b]).then(a.cmp(&b)));
    let mut orphans = Vec::new();
    for i in residue {
        if size <= ceiling {
            break;
        }
        // What stops rendering: the anchor, and each edge to an active node (cited
        // under it, naming this node).
        let mut saved = index.anchor_cost(i);
        for &k in index.incident(i) {
            let edge = &index.edges()[k as usize];
            let (own, other) = if edge.from.node() == Some(i) {
                (&edge.from, &edge.to)
            } else {
                (&edge.to, &edge.from)
            };
            if other
                .node()
                .is_some_and(|o| o != i && tiers[o] == Tier::Active)
            {
                saved += 9 + edge.rel_chars() + own.chars() + 1;
            }
        }
        size = size.saturating_sub(saved);
        tiers[i] = Tier::Orphaned;
        orphans.push(i);
    }
    if orphans.is_empty() {
        return;
    }
    // The meter takes orphans as fixed (their neighbours' degrees order the render),
    // so it is built again over the new tiers.
    pass.meter = Meter::new(index, &tiers);
    pass.walk_orphans.extend(orphans);
}

/// How many of `order` (active nodes, in the order the archive walk takes them) the
/// walk archives before it could first find the level at or under the fill ceiling.
/// Node lines and anchors alone bound the size from below (edge citations and headings
/// only add), and archiving swaps a line for its shorter anchor, so the bound falls
/// along the walk: while it stays above the ceiling, so does the size.
fn surely_over_ceiling(pass: &Pass<'_, '_>, order: &[usize]) -> usize {
    let index = pass.index;
    let ceiling = pass.budget.fill_ceiling();
    let mut bound: usize = pass
        .tiers()
        .iter()
        .enumerate()
        .map(|(i, tier)| match tier {
            Tier::Active => index.node_line_cost(i),
            Tier::Archived => index.anchor_cost(i),
            Tier::Orphaned => 0,
        })
        .sum();
    let mut sure = 0;
    for &i in order {
        if bound <= ceiling {
            break;
        }
        debug_assert_eq!(
            pass.tiers()[i],
            Tier::Active,
            "the walk archives active nodes"
        );
        bound -= index.node_line_cost(i) - index.anchor_cost(i);
        sure += 1;
    }
    sure
}

enum Stall {
    Clear,
    Stalled { size: usize, active: usize },
}

/// Resurrection (core.md §6.3): a pre-existing archived node that clearly outscores a
/// just-archived one takes its place, unless that would break the budget.
/// `active` is the active pool the walk was ordered by, with its scorer.
fn resurrect(
    pass: &mut Pass<'_, '_>,
    archived: &[usize],
    key: &str,
    active: (&[usize], &PoolScorer<'_>),
) {
    let unified = unified_scores(pass, active);
    // Candidates by score, best first; ties go to the earlier node (the reference
    // scans in node order keeping the first strictly greater score).
    // Only archived nodes can be candidates, and none becomes archived during the loop.
    let candidates: Vec<usize> = (0..pass.index.len())
        .filter(|&i| unified[i].is_some() && pass.tiers()[i] == Tier::Archived)
        .collect();
    let ranked = score::by_score(
        &candidates,
        |i| unified[i].unwrap_or(0.0),
        ScoreOrder::Descending,
    );
    let mut revived = 0usize;
    // A promotion that broke the budget and was reverted leaves the tiers unchanged,
    // so the same attempt would fail again until something else moves.
    let mut known_too_big: Option<usize> = None;
    for &x in archived {
        let own = unified[x].unwrap_or(0.0);
        let Some(&b) = ranked
            .iter()
            .find(|&&c| c != x && pass.tiers()[c] == Tier::Archived)
        else {
            continue;
        };
        let best = unified[b].unwrap_or(0.0);
        if best - own < RESURRECTION_MARGIN || known_too_big == Some(b) {
            continue;
        }
        pass.set_archived(b, false);
        if pass.meter.exceeds(pass.budget.chars()) {
            pass.set_archived(b, true);
            known_too_big = Some(b);
        } else {
            revived += 1;
            known_too_big = None;
        }
    }
    log::info!(
        "Compacted graph {key}: archived {}, resurrected {revived}, now {} chars",
        archived.len(),
        pass.meter.exact()
    );
}

/// The unified pool's scores after the archive walk ordered by `active` (the active
/// pool and its scorer).
fn unified_scores(pass: &Pass<'_, '_>, active: (&[usize], &PoolScorer<'_>)) -> Vec<Option<f64>> {
    // The walk only moved nodes from active to archived, both in the unified pool. When
    // no archived node was eligible before it (a first pass over a grown level), the
    // unified pool is the active one, and its recency and usefulness ranks stand.
    let pool = pass.unified_pool();
    if pool == active.0 {
        return pass.scores_of(&pool, active.1);
    }
    pass.scores_of(&pool, &PoolScorer::new(pass.index, pass.raw(), &pool))
}

/// Refill (core.md §6.4): promote the best archived nodes while the level stays under
/// the fill ceiling, re-scoring after each promotion so a hub pulls its cluster back.
fn refill(pass: &mut Pass<'_, '_>) {
    let ceiling = pass.budget.fill_ceiling();
    // The meter's lower bound often decides without ordering the level (exact ≥ lower).
    if pass.meter.lower() >= ceiling {
        return;
    }
    let n = pass.index.len();
    // Only archived nodes are candidates, and a node leaves that tier here only by
    // being accepted: the candidates, the pool and the scores' storage are set up once,
    // and each round costs the pool's nodes and edges, not the whole graph's.
    let candidates: Vec<usize> = (0..n)
        .filter(|&i| pass.tiers()[i] == Tier::Archived)
        .collect();
    // A promotion grows the level by at least the node's gist line minus its anchor.
    // When even the cheapest archived node cannot fit, no round can accept anything,
    // and the scoring below (most of a tick at the fixed point) is skipped.
    let Some(cheapest) = candidates
        .iter()
        .map(|&i| pass.index.node_line_cost(i) - pass.index.anchor_cost(i))
        .min()
    else {
        return;
    };
    if pass.meter.lower() + cheapest > ceiling {
        return;
    }
    // (A node line is longer than its anchor, so this also covers a full level.)
    let mut size = pass.meter.exact();
    if size + cheapest > ceiling {
        return;
    }
    let pool = pass.unified_pool();
    let scorer = score::PoolScorer::new(pass.index, pass.raw(), &pool);
    let mut scores = vec![None; n];
    let mut set_aside = vec![false; n];
    for _round in 0..=n {
        let waiting: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&i| pass.tiers()[i] == Tier::Archived && !set_aside[i])
            .collect();
        if waiting.is_empty() {
            break;
        }
        for (&i, s) in pool.iter().zip(scorer.scores(pass.index, pass.tiers())) {
            scores[i] = Some(s.score);
        }
        let ranked = score::by_score(
            &waiting,
            |i| scores[i].unwrap_or(0.0),
            ScoreOrder::Descending,
        );
        let mut accepted = false;
        for x in ranked {
            let delta = pass.index.node_line_cost(x) - pass.index.anchor_cost(x)
                + newly_live(pass.index, pass.tiers(), x);
            if size + delta > ceiling {
                set_aside[x] = true;
                continue;
            }
            pass.set_archived(x, false);
            match pass.meter.exact_within(ceiling) {
                Some(promoted) => size = promoted,
                None => {
                    pass.set_archived(x, true);
                    set_aside[x] = true;
                    continue;
                }
            }
            accepted = true;
            break;
        }
        if !accepted {
            break;
        }
    }
}

/// What promoting archived node `x` makes live besides its own line (core.md §6.4): the
/// citation cost of each of its edges whose two ends are archived nodes (a self-loop
/// once). A rejected promotion is reverted before the next candidate is measured, so
/// this equals the value at the start of the round.
fn newly_live(index: &LevelIndex<'_>, tiers: &[Tier], x: usize) -> usize {
    index
        .incident(x)
        .iter()
        .map(|&k| &index.edges()[k as usize])
        .filter(|edge| match (edge.from.node(), edge.to.node()) {
            (Some(f), Some(t)) => tiers[f] == Tier::Archived && tiers[t] == Tier::Archived,
            _ => false,
        })
        .map(|edge| 9 + edge.rel_chars() + edge.to.chars() + 1)
        .sum()
}

/// The orphan pass (core.md §6.5): when anchors take more than their share, the least
/// connected archived nodes stop rendering at all. Returns the orphaned positions.
fn orphan_pass(pass: &Pass<'_, '_>, tiers: &mut [Tier]) -> Vec<usize> {
    let index = pass.index;
    let archived: Vec<usize> = (0..index.len())
        .filter(|&i| tiers[i] == Tier::Archived)
        .collect();
    let mut total: usize = archived.iter().map(|&i| index.anchor_cost(i)).sum();
    if total <= pass.budget.anchor_budget() {
        return Vec::new();
    }
    let mut connectivity = vec![0usize; index.len()];
    let live_flag: Vec<bool> = (0..index.len()).map(|i| !pass.archived_flag(i)).collect();
    for edge in index.edges() {
        if let (Some(f), Some(t)) = (edge.from.node(), edge.to.node()) {
            if live_flag[t] {
                connectivity[f] += 1;
            }
            if live_flag[f] && f != t {
                connectivity[t] += 1;
            }
        }
    }
    let mut order = archived;
    if pass.rule == GraceRule::Shared {
        // New unread nodes archived by the grace share give up their anchors before
        // anything older does: a burst must not orphan the archived knowledge either.
        let mut fresh = vec![false; index.len()];
        for &i in &order {
            fresh[i] = pass.new_and_unread(i);
        }
        order.sort_by_key(|&i| (!fresh[i], connectivity[i]));
    } else {
        order.sort_by_key(|&i| connectivity[i]);
    }
    let mut orphaned = Vec::new();
    for i in order {
        if total <= pass.budget.anchor_budget() {
            break;
        }
        tiers[i] = Tier::Orphaned;
        total -= index.anchor_cost(i);
        orphaned.push(i);
    }
    orphaned
}

/// Most nodes one maintenance pass deletes for good in one graph: a clock that jumped
/// past every orphan's grace at once (and was not caught) still cannot empty the
/// orphan drawer in one tick; the rest go in later passes.
pub const MAX_DELETES_PER_PASS: usize = 20;

/// Permanent deletion (core.md §6.6, tick only): orphans past the orphan grace go,
/// longest orphaned first and at most [`MAX_DELETES_PER_PASS`], with every edge of
/// this graph touching them. Returns the deleted ids.
pub fn prune_orphans(graph: &mut Graph, orphan_grace_days: f64, now: f64) -> Vec<String> {
    let limit = orphan_grace_days * DAY_SECS;
    let mut due: Vec<(f64, &String)> = graph
        .nodes
        .iter()
        .filter_map(|(id, n)| {
            n.orphaned_ts()
                .filter(|ts| now - ts > limit)
                .map(|ts| (ts, id))
        })
        .collect();
    due.sort_by(|a, b| a.0.total_cmp(&b.0));
    let doomed: Vec<String> = due
        .into_iter()
        .take(MAX_DELETES_PER_PASS)
        .map(|(_, id)| id.clone())
        .collect();
    for id in &doomed {
        log::info!("deleting orphan {id}: not recalled within {orphan_grace_days} days");
        graph.remove_node(id);
    }
    doomed
}

/// The newest credible stamp a graph holds (writes, reads, endorsements, creations,
/// tier moves): what its files say the time was when it was last used. `None` for a
/// graph without stamps.
pub fn newest_stamp(graph: &Graph, now: f64) -> Option<f64> {
    let credible = |ts: f64| crate::score::credible_ts(ts, now);
    let nodes = graph.nodes.values().flat_map(|n| {
        [Some(n.created_ts()), n.last_read_ts(), n.orphaned_ts()]
            .into_iter()
            .flatten()
            .chain(n.useful_ts().iter().copied())
    });
    let versions = graph.versions.values().map(|v| v.ts());
    nodes
        .chain(versions)
        .filter(|ts| *ts > 0.0)
        .filter_map(credible)
        .max_by(f64::total_cmp)
}

#[cfg(test)]
mod tests;
