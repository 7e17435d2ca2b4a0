//! Every text the memory shows: the full read, the session-start preload, node reads,
//! sync reports and the short tool answers (core.md §7).
//!
//! The level bodies come from [`crate::plan`], the same plan the compactor charges, so
//! what an agent reads is exactly what was paid for. Budgets are in characters.

use crate::graph::Graph;
use crate::model::{Level, Tier};
use crate::plan::{ACTIVE_HEAD, ARCHIVED_HEAD, Health, LOCKED_TAIL, LevelIndex, Mode, Plan};
pub use crate::results::LeftOut;
use crate::score::{
    NodeScore, RawSignals, created_at, eligible, past_grace, percentiles, score_pool, usefulness_at,
};
use crate::structure::Dir;
use crate::structure::IdList;
use crate::wording;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet};

/// Character budget of a full `kg_read`.
pub const READ_BUDGET: usize = 40_000;
/// Character budget of the session-start preload (header included).
pub const PRELOAD_BUDGET: usize = 10_000;

/// One level to render.
#[derive(Debug, Clone, Copy)]
pub struct LevelSource<'a> {
    pub level: Level,
    pub graph: &'a Graph,
    /// The level's `DEBT:` line, when debt is known.
    pub debt_line: Option<&'a str>,
}

/// What kind of two-level render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    /// `kg_read(session_id)`: never drops gists; notes when it degraded.
    FullRead,
    /// The session-start preload: may drop whole gists, lowest score first.
    Preload,
}

/// Inputs of a two-level render besides the graphs.
#[derive(Debug, Clone)]
pub struct ReadOptions<'a> {
    pub kind: ReadKind,
    pub budget: usize,
    /// Ids whose gists the session-start preload already showed (full read only).
    pub preloaded: Option<&'a HashSet<String>>,
    /// The preload header (preload only): counted in the budget, followed by a blank line.
    pub header: Option<&'a str>,
    /// `Session: <sid>` footer.
    pub session_id: Option<&'a str>,
    pub now: f64,
    pub grace_days: f64,
}

/// The result of a two-level render.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRender {
    /// What the budget left out.
    pub left_out: LeftOut,
    /// Prefix (dedup note or preload header), a blank line, then the body.
    pub text: String,
    /// Where the body starts in `text`.
    body_at: usize,
    /// Ids whose gists are shown in full, render order, user level first.
    pub shown_ids: IdList,
    /// Ids of every rendered active node (gist or preloaded anchor), both levels.
    pub active_ids: IdList,
    pub user_active: usize,
    pub project_active: usize,
}

impl ReadRender {
    /// The text without its prefix.
    pub fn body(&self) -> &str {
        &self.text[self.body_at..]
    }
}

#[derive(Debug, Clone, Copy)]
struct Value(f64);

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0) == Ordering::Equal
    }
}
impl Eq for Value {}
impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[derive(Debug)]
struct Cite {
    /// Position in edge order, for reading-order ties.
    seq: usize,
    edge: usize,
    dir: Dir,
    chars: usize,
    value: f64,
    removed: bool,
}

/// An active node's entry; its lines are written from the index only at the end, so
/// nothing is formatted for what the budget drops.
#[derive(Debug)]
struct Entry {
    node: usize,
    chars: usize,
    value: f64,
    full_gist: bool,
    /// Its citations' range in the block's `cites` (see [`Block::order_for_shedding`]).
    cites: std::ops::Range<usize>,
    /// Citations before it (in the range) are removed.
    next_cite: usize,
    removed: bool,
}

#[derive(Debug)]
struct Anchor {
    node: usize,
    chars: usize,
    value: f64,
}

#[derive(Debug)]
struct Block<'g> {
    level: Level,
    index: LevelIndex<'g>,
    head: String,
    health: String,
    debt: Option<String>,
    entries: Vec<Entry>,
    /// Every entry's citations, entry by entry; each entry's in edge order until
    /// [`Block::order_for_shedding`].
    cites: Vec<Cite>,
    /// In node order until [`Block::order_for_shedding`]; the first `next_anchor` are
    /// removed.
    anchors: Vec<Anchor>,
    next_anchor: usize,
    active_count: usize,
    hidden_active: usize,
    hidden_edges: usize,
    entries_chars: usize,
    cites_chars: usize,
    anchors_chars: usize,
    live_entries: usize,
}

/// `  …<k> more active gist(s) not shown …` (preload only).
fn hidden_active_line(k: usize) -> String {
    format!("  …{k}{HIDDEN_ACTIVE_TAIL}")
}
const HIDDEN_ACTIVE_TAIL: &str =
    " more active gist(s) not shown (lowest-scored) — kg_read(session_id) renders the full graph";

fn hidden_edges_line(k: usize) -> String {
    format!("  …{k}{HIDDEN_EDGES_TAIL}")
}
const HIDDEN_EDGES_TAIL: &str = " edge(s) hidden (lowest-value)";

fn hidden_anchors_line(k: usize) -> String {
    format!("  …{k}{HIDDEN_ANCHORS_TAIL}")
}
const HIDDEN_ANCHORS_TAIL: &str = " more archived hidden (lowest-scored) — kg_search reaches them";

/// `  <id> (preloaded)`: an active node whose gist the session-start preload showed.
const PRELOADED_TAIL: &str = " (preloaded)";

fn line_cost(s: &str) -> usize {
    s.chars().count() + 1
}

/// `  …<k><tail>` plus its newline.
fn summary_cost(tail: &str, k: usize) -> usize {
    3 + k.to_string().len() + tail.chars().count() + 1
}

impl<'g> Block<'g> {
    fn new(source: &LevelSource<'g>, opts: &ReadOptions<'_>) -> Block<'g> {
        let index = LevelIndex::of(source.graph);
        let plan = Plan::build(&index, &index.tiers, Mode::Active);
        let raw = RawSignals::of(source.graph, &index, opts.now);
        // What [`ClockKey::of`] keys a memoised render on: the pool and the raw values
        // scored here are the ones it reads.
        let pool = scored_pool(&index, &raw, opts);
        let scores = score_pool(&index, &raw, &index.tiers, &pool);
        let score_or = |i: Option<usize>, missing: f64| {
            i.and_then(|i| scores[i])
                .map_or(missing, |s: NodeScore| s.score)
        };
        let name = match source.level {
            Level::User => "USER",
            Level::Project => "PROJECT",
        };
        let head = format!(
            "=== {name} GRAPH — {} active, {} archived ===",
            plan.order.len(),
            plan.anchors.len()
        );
        let mut entries = Vec::with_capacity(plan.order.len());
        let mut all_cites: Vec<Cite> = Vec::with_capacity(plan.cited_edges());
        for (p, &i) in plan.order.iter().enumerate() {
            let preloaded = opts.preloaded.is_some_and(|set| set.contains(index.ids[i]));
            let chars = if preloaded {
                2 + index.id_chars[i] + PRELOADED_TAIL.len() + 1
            } else {
                index.node_line_cost(i)
            };
            let start = all_cites.len();
            all_cites.extend(
                plan.citations(p)
                    .iter()
                    .enumerate()
                    .map(|(seq, &(k, dir))| {
                        let e = &index.edges()[k];
                        Cite {
                            seq,
                            edge: k,
                            dir,
                            chars: e.citation_chars(dir) + 1,
                            value: score_or(e.from.node(), 0.5) + score_or(e.to.node(), 0.5),
                            removed: false,
                        }
                    }),
            );
            entries.push(Entry {
                node: i,
                chars,
                value: score_or(Some(i), 0.5),
                full_gist: !preloaded,
                cites: start..all_cites.len(),
                next_cite: start,
                removed: false,
            });
        }
        let anchors: Vec<Anchor> = plan
            .anchors
            .iter()
            .map(|&i| Anchor {
                node: i,
                chars: index.anchor_cost(i),
                value: score_or(Some(i), 0.0),
            })
            .collect();
        let health = Health::of(&plan, &index).line;
        let entries_chars = entries.iter().map(|e| e.chars).sum();
        let cites_chars = all_cites.iter().map(|c| c.chars).sum();
        let anchors_chars = anchors.iter().map(|a| a.chars).sum();
        Block {
            level: source.level,
            head,
            health,
            debt: source.debt_line.map(str::to_string),
            live_entries: entries.len(),
            active_count: plan.order.len(),
            index,
            entries,
            cites: all_cites,
            anchors,
            next_anchor: 0,
            hidden_active: 0,
            hidden_edges: 0,
            entries_chars,
            cites_chars,
            anchors_chars,
        }
    }

    /// Sort what the budget may shed cheapest first: anchors, and each entry's
    /// citations, ascending by value (stable: ties keep node and edge order). Only a
    /// render over its budget needs it; writing orders lines by itself.
    fn order_for_shedding(&mut self) {
        self.anchors.sort_by(|a, b| a.value.total_cmp(&b.value));
        for entry in &self.entries {
            self.cites[entry.cites.clone()].sort_by(|a, b| a.value.total_cmp(&b.value));
        }
    }

    fn id(&self, entry: &Entry) -> &'g str {
        self.index.ids[entry.node]
    }

    fn hidden_anchors(&self) -> usize {
        self.next_anchor
    }

    /// Σ(chars + 1) over the block's lines.
    fn chars(&self) -> usize {
        let mut total = line_cost(&self.head);
        if self.live_entries > 0 || self.hidden_active > 0 {
            total += ACTIVE_HEAD.len() + 1;
        }
        total += self.entries_chars + self.cites_chars;
        if self.hidden_active > 0 {
            total += summary_cost(HIDDEN_ACTIVE_TAIL, self.hidden_active);
        }
        if self.hidden_edges > 0 {
            total += summary_cost(HIDDEN_EDGES_TAIL, self.hidden_edges);
        }
        if self.anchors.len() > self.next_anchor || self.hidden_anchors() > 0 {
            total += ARCHIVED_HEAD.len() + 1;
        }
        total += self.anchors_chars;
        if self.hidden_anchors() > 0 {
            total += summary_cost(HIDDEN_ANCHORS_TAIL, self.hidden_anchors());
        }
        total += line_cost(&self.health);
        if let Some(d) = &self.debt {
            total += line_cost(d);
        }
        total
    }

    /// Append the block's lines, each followed by a newline.
    fn write(&self, out: &mut String) {
        let mut line = |parts: &[&str]| {
            for part in parts {
                out.push_str(part);
            }
            out.push('\n');
        };
        line(&[&self.head]);
        if self.live_entries > 0 || self.hidden_active > 0 {
            line(&[ACTIVE_HEAD]);
        }
        let index = &self.index;
        let mut cites: Vec<&Cite> = Vec::new();
        for entry in self.entries.iter().filter(|e| !e.removed) {
            let id = self.id(entry);
            if entry.full_gist {
                let lock = if index.locked[entry.node] {
                    LOCKED_TAIL
                } else {
                    ""
                };
                line(&["  ", id, lock, ": ", index.gist(entry.node)]);
            } else {
                line(&["  ", id, PRELOADED_TAIL]);
            }
            cites.clear();
            cites.extend(
                self.cites[entry.cites.clone()]
                    .iter()
                    .filter(|c| !c.removed),
            );
            // Reading order: most valuable first; ties keep edge order.
            cites.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.seq.cmp(&b.seq)));
            for cite in &cites {
                if let Some(key) = index.edge_key(cite.edge) {
                    match cite.dir {
                        Dir::Out => line(&["    → ", key.rel(), " → ", key.to()]),
                        Dir::In => line(&["    ← ", key.rel(), " ← ", key.from()]),
                    }
                }
            }
        }
        if self.hidden_active > 0 {
            line(&[&hidden_active_line(self.hidden_active)]);
        }
        if self.hidden_edges > 0 {
            line(&[&hidden_edges_line(self.hidden_edges)]);
        }
        if self.anchors.len() > self.next_anchor || self.hidden_anchors() > 0 {
            line(&[ARCHIVED_HEAD]);
        }
        // Anchors print in id order: walking the nodes in that order is cheaper than
        // sorting the anchors, which are most of a level's nodes.
        let mut shown = vec![false; index.len()];
        for anchor in &self.anchors[self.next_anchor..] {
            shown[anchor.node] = true;
        }
        for &i in index.nodes_by_id() {
            if shown[i as usize] {
                line(&["  ", index.ids[i as usize]]);
            }
        }
        if self.hidden_anchors() > 0 {
            line(&[&hidden_anchors_line(self.hidden_anchors())]);
        }
        line(&[&self.health]);
        if let Some(d) = &self.debt {
            line(&[d]);
        }
    }
}

/// Render both levels within a budget, shedding anchors, then citations, then (preload
/// only) whole gists, lowest value first (core.md §7.4, §7.8, §7.9).
pub fn render_read(levels: [LevelSource<'_>; 2], opts: &ReadOptions<'_>) -> ReadRender {
    let mut blocks: Vec<Block> = levels.iter().map(|s| Block::new(s, opts)).collect();
    let preloaded_count: usize = blocks
        .iter()
        .flat_map(|b| &b.entries)
        .filter(|e| !e.full_gist)
        .count();
    let prefix: Option<String> = match opts.kind {
        ReadKind::Preload => opts.header.map(str::to_string),
        ReadKind::FullRead => (preloaded_count > 0).then(|| wording::dedup_prefix(preloaded_count)),
    };
    let fixed = prefix.as_ref().map_or(0, |p| p.chars().count() + 2)
        + opts
            .session_id
            .map_or(0, |sid| "\n\nSession: ".len() + sid.chars().count());
    let notes = opts.kind == ReadKind::FullRead;
    let measure = |blocks: &[Block]| -> usize {
        let body: usize = blocks.iter().map(Block::chars).sum::<usize>() - 1;
        let hidden_anchors: usize = blocks.iter().map(Block::hidden_anchors).sum();
        let hidden_edges: usize = blocks.iter().map(|b| b.hidden_edges).sum();
        let note = if notes && (hidden_anchors > 0 || hidden_edges > 0) {
            2 + wording::degradation_note(hidden_anchors, hidden_edges)
                .chars()
                .count()
        } else {
            0
        };
        fixed + body + note
    };
    let over = |blocks: &[Block]| measure(blocks) > opts.budget;

    if over(&blocks) {
        for block in &mut blocks {
            block.order_for_shedding();
        }
    }

    // 1. Anchors, globally cheapest first (ties: user level first).
    while over(&blocks) {
        let pick = (0..blocks.len())
            .filter(|&b| blocks[b].next_anchor < blocks[b].anchors.len())
            .min_by(|&a, &b| {
                let va = blocks[a].anchors[blocks[a].next_anchor].value;
                let vb = blocks[b].anchors[blocks[b].next_anchor].value;
                va.total_cmp(&vb).then(a.cmp(&b))
            });
        let Some(b) = pick else { break };
        let block = &mut blocks[b];
        block.anchors_chars -= block.anchors[block.next_anchor].chars;
        block.next_anchor += 1;
    }

    // 2. Citations, globally cheapest first (ties: first entry in level/render order).
    let mut heap: BinaryHeap<std::cmp::Reverse<(Value, usize, usize)>> = BinaryHeap::new();
    for (b, block) in blocks.iter().enumerate() {
        for (p, entry) in block.entries.iter().enumerate() {
            if let Some(c) = block.cites[entry.cites.clone()].first() {
                heap.push(std::cmp::Reverse((Value(c.value), b, p)));
            }
        }
    }
    while over(&blocks) {
        let Some(std::cmp::Reverse((_, b, p))) = heap.pop() else {
            break;
        };
        let block = &mut blocks[b];
        let entry = &mut block.entries[p];
        let cite = &mut block.cites[entry.next_cite];
        cite.removed = true;
        block.cites_chars -= cite.chars;
        block.hidden_edges += 1;
        entry.next_cite += 1;
        if entry.cites.contains(&entry.next_cite) {
            let next = &block.cites[entry.next_cite];
            heap.push(std::cmp::Reverse((Value(next.value), b, p)));
        }
    }

    // 3. Preload only: whole gists, lowest score first (hubs survive).
    if opts.kind == ReadKind::Preload {
        let mut order: Vec<(usize, usize)> = blocks
            .iter()
            .enumerate()
            .flat_map(|(b, block)| (0..block.entries.len()).map(move |p| (b, p)))
            .collect();
        order.sort_by(|&(b1, p1), &(b2, p2)| {
            blocks[b1].entries[p1]
                .value
                .total_cmp(&blocks[b2].entries[p2].value)
        });
        for (b, p) in order {
            if !over(&blocks) {
                break;
            }
            let block = &mut blocks[b];
            let entry = &mut block.entries[p];
            entry.removed = true;
            let remaining: usize = block.cites[entry.cites.clone()]
                .iter()
                .filter(|c| !c.removed)
                .map(|c| c.chars)
                .sum();
            block.cites_chars -= remaining;
            block.entries_chars -= entry.chars;
            block.live_entries -= 1;
            block.hidden_active += 1;
        }
    }

    let budgeted = measure(&blocks);
    let mut text = String::with_capacity(budgeted + budgeted / 2 + 64);
    if let Some(p) = &prefix {
        text.push_str(p);
        text.push_str("\n\n");
    }
    let body_at = text.len();
    for block in &blocks {
        block.write(&mut text);
    }
    text.pop(); // lines are joined, not terminated
    let hidden_anchors: usize = blocks.iter().map(Block::hidden_anchors).sum();
    let hidden_edges: usize = blocks.iter().map(|b| b.hidden_edges).sum();
    if notes && (hidden_anchors > 0 || hidden_edges > 0) {
        text.push_str("\n\n");
        text.push_str(&wording::degradation_note(hidden_anchors, hidden_edges));
    }
    if let Some(sid) = opts.session_id {
        text.push_str("\n\nSession: ");
        text.push_str(sid);
    }
    debug_assert_eq!(text.chars().count(), budgeted, "render must equal charge");
    let mut shown_ids = IdList::default();
    let mut active_ids = IdList::default();
    for block in &blocks {
        for entry in &block.entries {
            active_ids.push(block.id(entry));
            if !entry.removed && entry.full_gist {
                shown_ids.push(block.id(entry));
            }
        }
    }
    let count = |level: Level| {
        blocks
            .iter()
            .find(|b| b.level == level)
            .map_or(0, |b| b.active_count)
    };
    ReadRender {
        left_out: LeftOut {
            gists: blocks.iter().map(|b| b.hidden_active).sum(),
            edges: hidden_edges,
            anchors: hidden_anchors,
        },
        shown_ids,
        active_ids,
        user_active: count(Level::User),
        project_active: count(Level::Project),
        text,
        body_at,
    }
}

/// The nodes a render scores (active and archived past grace), as
/// [`crate::score::score_all`] picks them.
fn scored_pool(index: &LevelIndex<'_>, raw: &RawSignals, opts: &ReadOptions<'_>) -> Vec<usize> {
    eligible(raw, &index.tiers, true, opts.now, opts.grace_days)
}

/// What a render of one level reads of the clock. The scores a render orders by are
/// percentiles over a pool: with the graph unchanged, recency and connectedness are
/// fixed, and the clock moves only which nodes are past their grace period (the pool)
/// and what their endorsements are worth as they decay (their ranks). Two keys equal
/// for the same graph give equal scores, so byte-equal renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockKey {
    pool: Vec<usize>,
    /// Usefulness percentiles over the pool, as bits (so that equal means identical).
    usefulness: Vec<u64>,
}

impl ClockKey {
    /// The key of `graph` at `now`, computed the way the render scores it (what a
    /// kept key must equal).
    #[cfg(test)]
    pub fn of(graph: &Graph, now: f64, grace_days: f64) -> ClockKey {
        let index = LevelIndex::of(graph);
        let raw = RawSignals::of(graph, &index, now);
        let opts = ReadOptions {
            kind: ReadKind::FullRead,
            budget: 0,
            preloaded: None,
            header: None,
            session_id: None,
            now,
            grace_days,
        };
        let pool = scored_pool(&index, &raw, &opts);
        let values: Vec<f64> = pool.iter().map(|&i| raw.usefulness[i]).collect();
        ClockKey {
            usefulness: percentiles(&values).into_iter().map(f64::to_bits).collect(),
            pool,
        }
    }

    /// [`ClockKey::of`] from what it reads of the graph, gathered once per graph
    /// change: a full read of an unchanged graph redoes only the clock's arithmetic.
    fn at(inputs: &ClockInputs, now: f64, grace_days: f64) -> ClockKey {
        let mut pool = Vec::new();
        let mut values = Vec::new();
        for candidate in &inputs.candidates {
            if past_grace(created_at(candidate.created_ts, now), now, grace_days) {
                pool.push(candidate.node);
                values.push(usefulness_at(&candidate.useful_ts, now));
            }
        }
        ClockKey {
            usefulness: percentiles(&values).into_iter().map(f64::to_bits).collect(),
            pool,
        }
    }
}

/// What [`ClockKey::of`] reads of a graph: the nodes a render may score (active and
/// archived), in index order, with their creation and endorsement times.
#[derive(Debug)]
struct ClockInputs {
    candidates: Vec<ClockCandidate>,
}

#[derive(Debug)]
struct ClockCandidate {
    node: usize,
    created_ts: f64,
    useful_ts: Box<[f64]>,
}

impl ClockInputs {
    fn of(graph: &Graph) -> ClockInputs {
        let candidates = graph
            .nodes
            .values()
            .enumerate()
            .filter(|(_, node)| matches!(node.meta().tier, Tier::Active | Tier::Archived))
            .map(|(node, n)| ClockCandidate {
                node,
                created_ts: n.created_ts(),
                useful_ts: n.useful_ts().into(),
            })
            .collect();
        ClockInputs { candidates }
    }
}

/// Everything a two-level render reads besides the clock's [`ClockKey`]s: the
/// graphs (by change stamp), the DEBT lines, and the options.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderKey {
    /// Change stamps of the user and project graphs (none: an empty graph).
    pub stamps: [Option<u64>; 2],
    pub clock: [Option<ClockKey>; 2],
    pub debt: [Option<String>; 2],
    pub kind: ReadKind,
    pub budget: usize,
    pub preloaded: Option<HashSet<String>>,
    pub header: Option<String>,
    pub session_id: Option<String>,
}

/// The last renders, by their [`RenderKey`]: a full read of an unchanged graph is
/// answered from here, byte for byte what rendering it again would give.
#[derive(Debug, Default)]
pub struct RenderMemo {
    kept: std::sync::Mutex<Vec<(RenderKey, std::sync::Arc<ReadRender>)>>,
    /// What the clock keys read of each graph, by the graph's change stamp.
    clocks: std::sync::Mutex<Vec<(u64, std::sync::Arc<ClockInputs>)>>,
    /// Renders answered from here (tests check the memo answers at all).
    #[cfg(test)]
    hits: std::sync::atomic::AtomicU64,
    /// Tests render past the memo to compare.
    #[cfg(test)]
    off: std::sync::atomic::AtomicBool,
}

/// Renders kept: a few sessions reading in turn (each render ends with its own
/// session's id).
const RENDERS_KEPT: usize = 8;

impl RenderMemo {
    /// [`ClockKey::of`] the graph under change stamp `stamp`.
    pub fn clock_key(&self, graph: &Graph, stamp: u64, now: f64, grace_days: f64) -> ClockKey {
        #[cfg(test)]
        if self.off.load(std::sync::atomic::Ordering::Relaxed) {
            return ClockKey::of(graph, now, grace_days);
        }
        let kept = {
            let clocks = self.clocks.lock().unwrap_or_else(|e| e.into_inner());
            clocks
                .iter()
                .find(|(s, _)| *s == stamp)
                .map(|(_, c)| c.clone())
        };
        let inputs = kept.unwrap_or_else(|| {
            let inputs = std::sync::Arc::new(ClockInputs::of(graph));
            let mut clocks = self.clocks.lock().unwrap_or_else(|e| e.into_inner());
            if clocks.len() >= RENDERS_KEPT {
                clocks.remove(0);
            }
            clocks.push((stamp, inputs.clone()));
            inputs
        });
        ClockKey::at(&inputs, now, grace_days)
    }

    pub fn get(&self, key: &RenderKey) -> Option<std::sync::Arc<ReadRender>> {
        #[cfg(test)]
        if self.off.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let hit = kept.iter().find(|(k, _)| k == key).map(|(_, r)| r.clone());
        #[cfg(test)]
        if hit.is_some() {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        hit
    }

    pub fn put(&self, key: RenderKey, render: std::sync::Arc<ReadRender>) {
        #[cfg(test)]
        if self.off.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|(k, _)| k != &key);
        if kept.len() >= RENDERS_KEPT {
            kept.remove(0);
        }
        kept.push((key, render));
    }

    /// How many renders were answered from the memo.
    #[cfg(test)]
    pub fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Bypass the memo (neither read nor fill it) while `off`.
    #[cfg(test)]
    pub fn set_off(&self, off: bool) {
        self.off.store(off, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Size of a level as the compactor charges it: the rendered body, in characters.
/// (The front ends read it with the rest of the budget, `inspect::level_budget`.)
pub fn level_chars(graph: &Graph) -> usize {
    let index = LevelIndex::of(graph);
    Plan::build(&index, &index.tiers, Mode::Active).body_chars(&index)
}

/// Tier counts of a graph (for headers and the graph view).
pub fn tier_counts(graph: &Graph) -> (usize, usize, usize) {
    let mut counts = (0, 0, 0);
    for node in graph.nodes.values() {
        match node.tier() {
            Tier::Active => counts.0 += 1,
            Tier::Archived => counts.1 += 1,
            Tier::Orphaned => counts.2 += 1,
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, field, float_value};
    use crate::score::DAY_SECS;
    use serde_json::Value;

    const NOW: f64 = 1_795_176_000.0;

    /// Nodes created around the grace period, some archived, some endorsed at
    /// different times (one in the future, as a skewed clock writes).
    fn graph() -> Graph {
        let mut g = Graph::default();
        for i in 0..40u32 {
            let id = format!("node-{i:02}");
            let mut node = Node::new(&id);
            node.set(field::GIST, Value::String(format!("finding {i}")));
            let created = NOW - f64::from(i % 9) * DAY_SECS + f64::from(i) * 61.0;
            node.set(field::CREATED_TS, float_value(created));
            if i % 4 == 0 {
                node.set(field::ARCHIVED, Value::Bool(true));
            }
            let likes: Vec<Value> = (0..i % 3)
                .map(|k| float_value(NOW - f64::from(i * k) * 3_600.0 + f64::from(k) * 50.0))
                .collect();
            if !likes.is_empty() {
                node.set(field::USEFUL_TS, Value::Array(likes));
            }
            g.nodes.insert(id, node);
        }
        g
    }

    /// The key kept per graph change is the key the render's own scoring gives,
    /// as the clock crosses grace periods and endorsements decay.
    #[test]
    fn a_kept_clock_key_is_the_key_of_the_moment() {
        let graph = graph();
        let memo = RenderMemo::default();
        let mut pools = HashSet::new();
        for step in 0..200u32 {
            let now = NOW - DAY_SECS + f64::from(step) * 3_911.0;
            let kept = memo.clock_key(&graph, 7, now, 5.0);
            assert_eq!(kept, ClockKey::of(&graph, now, 5.0), "at step {step}");
            pools.insert(kept.pool.len());
        }
        assert!(pools.len() > 3, "the walk crosses grace periods: {pools:?}");
    }
}
