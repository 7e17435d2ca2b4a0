//! The render plan of one level (core.md §7.2–§7.3): which nodes render, in which
//! order, which edges are cited under which node, and which nodes are anchors.
//!
//! It is the single source of both the text `kg_read` prints and the size the
//! compactor charges: [`Plan::body_chars`] counts exactly the characters
//! [`crate::render`] writes for the same plan (render equals charge), and both use the
//! one live-edge predicate below.

use crate::graph::Graph;
use crate::model::{EdgeKey, Tier};
use crate::pyfmt::{float_repr, round_int, round_to};
use crate::structure::{Dir, EdgeEnd, EdgeRef, NOT_A_NODE};

pub const ACTIVE_HEAD: &str = "ACTIVE:";
pub const ARCHIVED_HEAD: &str = "ARCHIVED (use kg_read with id to view full content):";

/// A graph's nodes and edges flattened into positions, built once per operation so
/// planning and scoring never touch the JSON objects.
#[derive(Debug, Clone)]
pub struct LevelIndex<'g> {
    pub ids: Vec<&'g str>,
    pub id_chars: Vec<usize>,
    pub gist_chars: Vec<usize>,
    /// Tiers as stored.
    pub tiers: Vec<Tier>,
    /// Locked by a person: never archived, and its line says so.
    pub locked: Vec<bool>,
    graph: &'g Graph,
    structure: std::sync::Arc<crate::structure::Structure>,
}

impl<'g> LevelIndex<'g> {
    pub fn of(graph: &'g Graph) -> LevelIndex<'g> {
        let n = graph.nodes.len();
        let structure = graph.structure();
        let mut index = LevelIndex {
            ids: Vec::with_capacity(n),
            id_chars: Vec::with_capacity(n),
            gist_chars: Vec::with_capacity(n),
            tiers: Vec::with_capacity(n),
            locked: Vec::with_capacity(n),
            graph,
            structure: structure.clone(),
        };
        for (id, node) in graph.nodes.iter() {
            index.ids.push(id);
            let meta = node.meta();
            index.gist_chars.push(meta.gist_chars);
            index.tiers.push(meta.tier);
            index.locked.push(meta.locked);
        }
        index.id_chars.extend_from_slice(&structure.id_chars);
        index
    }

    /// The number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The edges, in edge order, resolved to node positions.
    pub fn edges(&self) -> &[EdgeRef] {
        &self.structure.edges
    }

    /// The positions of the edges touching node `i`, in edge order.
    pub fn incident(&self, i: usize) -> &[u32] {
        self.structure.incident(i)
    }

    /// The gist of node `i` (read only for the nodes a render prints: a gist lies in its
    /// node's object, away from the memoised fields a pass reads for every node).
    pub fn gist(&self, i: usize) -> &'g str {
        self.graph
            .nodes
            .get_index(i)
            .map_or("", |(_, node)| node.gist())
    }

    /// The key (texts) of edge `k`.
    pub fn edge_key(&self, k: usize) -> Option<&'g EdgeKey> {
        self.graph.edges.get_index(k).map(|(key, _)| key)
    }

    /// Each node's rank in sorted id order.
    pub fn id_rank(&self) -> &[u32] {
        self.structure.id_rank()
    }

    /// The nodes in sorted id order.
    pub fn nodes_by_id(&self) -> &[u32] {
        self.structure.nodes_by_id()
    }

    /// `  <id>: <gist>` plus its newline.
    pub fn node_line_cost(&self, i: usize) -> usize {
        let lock = if self.locked[i] { LOCKED_TAIL.len() } else { 0 };
        2 + self.id_chars[i] + lock + 2 + self.gist_chars[i] + 1
    }

    /// `  <id>` plus its newline.
    pub fn anchor_cost(&self, i: usize) -> usize {
        2 + self.id_chars[i] + 1
    }
}

/// What follows the id of a locked node in its active line: `  <id> (locked): <gist>`.
pub const LOCKED_TAIL: &str = " (locked)";

/// Which nodes render in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Active nodes render; archived ones are anchors.
    Active,
    /// Archived nodes are planned as if active (comparable costs).
    IncludeArchived,
}

/// The live-edge predicate (core.md §1.2), shared by rendering and charging: an edge
/// touching an orphan is dead; otherwise it is live when at least one end is present
/// (renders, or is not a node of this graph at all).
pub fn is_live(edge: &EdgeRef, tiers: &[Tier], renders: &[bool]) -> bool {
    !touches_orphan(edge, tiers) && has_present_end(edge, renders)
}

fn touches_orphan(edge: &EdgeRef, tiers: &[Tier]) -> bool {
    let orphan = |end: &EdgeEnd| end.node().is_some_and(|i| tiers[i] == Tier::Orphaned);
    orphan(&edge.from) || orphan(&edge.to)
}

fn has_present_end(edge: &EdgeRef, renders: &[bool]) -> bool {
    let present = |end: &EdgeEnd| end.node().is_none_or(|i| renders[i]);
    present(&edge.from) || present(&edge.to)
}

/// The plan of one level under some tier assignment.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Rendered nodes in render order.
    pub order: Vec<usize>,
    /// Every citation, grouped by the render position of the node it is printed
    /// under, each group in edge order (see [`Plan::citations`]).
    cited: Vec<(usize, Dir)>,
    /// Where each render position's group starts in `cited`, plus the end.
    cited_at: Vec<usize>,
    /// Archived, non-orphaned, non-rendered nodes in node order.
    pub anchors: Vec<usize>,
}

impl Plan {
    pub fn build(index: &LevelIndex<'_>, tiers: &[Tier], mode: Mode) -> Plan {
        let n = index.len();
        let renders: Vec<bool> = tiers
            .iter()
            .map(|t| match t {
                Tier::Active => true,
                Tier::Archived => mode == Mode::IncludeArchived,
                Tier::Orphaned => false,
            })
            .collect();
        // Degrees and live edges in one pass over the edges.
        let mut degree = vec![0usize; n];
        let mut live = Vec::with_capacity(index.edges().len());
        for (k, edge) in index.edges().iter().enumerate() {
            if touches_orphan(edge, tiers) {
                continue;
            }
            count_degree(&mut degree, edge);
            if has_present_end(edge, &renders) {
                live.push(k);
            }
        }
        // A table over all nodes: building the plan visits every node anyway.
        let mut pos = Positions::Dense(vec![u32::MAX; n]);
        let order = render_order(index, &degree, |i| renders[i], IdCompare::Ranked, &mut pos);
        // Where each live edge is cited, then one counting sort by render position (not
        // a list per node: an allocation each, on every render).
        let mut placed: Vec<(usize, usize, Dir)> = Vec::with_capacity(live.len());
        let mut cited_at = vec![0usize; order.len() + 1];
        for &k in &live {
            let edge = &index.edges()[k];
            let from = edge.from.node().and_then(|i| pos.get(i));
            let to = edge.to.node().and_then(|i| pos.get(i));
            let (p, dir) = match (from, to) {
                (None, None) => continue, // e.g. archived → artifact: nowhere to print it
                (Some(f), None) => (f, Dir::Out),
                (Some(f), Some(t)) if f <= t => (f, Dir::Out),
                (_, Some(t)) => (t, Dir::In),
            };
            placed.push((p, k, dir));
            cited_at[p + 1] += 1;
        }
        for p in 0..order.len() {
            cited_at[p + 1] += cited_at[p];
        }
        let mut next = cited_at.clone();
        let mut cited = vec![(0, Dir::Out); placed.len()];
        for (p, k, dir) in placed {
            cited[next[p]] = (k, dir);
            next[p] += 1;
        }
        let anchors = (0..n)
            .filter(|&i| tiers[i] == Tier::Archived && !renders[i])
            .collect();
        Plan {
            order,
            cited,
            cited_at,
            anchors,
        }
    }

    /// Characters of the level's body: `ACTIVE:`, node lines with their citations,
    /// the `ARCHIVED` head and the anchors, each line with its newline.
    pub fn body_chars(&self, index: &LevelIndex<'_>) -> usize {
        let mut total = 0;
        if !self.order.is_empty() {
            total += ACTIVE_HEAD.chars().count() + 1;
        }
        for (p, &i) in self.order.iter().enumerate() {
            total += index.node_line_cost(i);
            total += self
                .citations(p)
                .iter()
                .map(|&(k, dir)| index.edges()[k].citation_chars(dir) + 1)
                .sum::<usize>();
        }
        if !self.anchors.is_empty() {
            total += ARCHIVED_HEAD.chars().count() + 1;
        }
        total += self
            .anchors
            .iter()
            .map(|&i| index.anchor_cost(i))
            .sum::<usize>();
        total
    }

    /// The citations printed under the node at render position `p`, in edge order.
    pub fn citations(&self, p: usize) -> &[(usize, Dir)] {
        &self.cited[self.cited_at[p]..self.cited_at[p + 1]]
    }

    pub fn cited_edges(&self) -> usize {
        self.cited.len()
    }

    /// Rendered nodes that are no endpoint of any cited edge (HEALTH's "orphans").
    pub fn unlinked_nodes(&self, index: &LevelIndex<'_>) -> usize {
        let mut linked = vec![false; index.len()];
        for &(k, _) in &self.cited {
            let e = &index.edges()[k];
            for end in [e.from.node(), e.to.node()].into_iter().flatten() {
                linked[end] = true;
            }
        }
        self.order.iter().filter(|&&i| !linked[i]).count()
    }
}

/// A node's degree when rendered, the `degree` the render order ranks by (core.md §7.2):
/// its edges that touch no orphan, a self-loop once. Such an edge is live whenever the
/// node renders, so the degree of a rendered node is its count of live edges.
fn degrees(index: &LevelIndex<'_>, tiers: &[Tier]) -> Vec<usize> {
    let mut degree = vec![0usize; index.len()];
    // One pass in edge order (the edges outnumber the nodes; walking them by node
    // would jump around memory).
    for e in index.edges() {
        if !touches_orphan(e, tiers) {
            count_degree(&mut degree, e);
        }
    }
    degree
}

/// Count an edge that touches no orphan towards [`degrees`].
fn count_degree(degree: &mut [usize], e: &EdgeRef) {
    let second = e.to.node().filter(|&t| Some(t) != e.from.node());
    for i in [e.from.node(), second].into_iter().flatten() {
        degree[i] += 1;
    }
}

/// How [`render_order`] compares ids: two ways to the same order.
#[derive(Debug, Clone, Copy)]
enum IdCompare<'r> {
    /// By their memoised ranks, the seeds counting-sorted from the list of every node
    /// in id order: integer comparisons, but a walk over the whole level.
    Ranked,
    /// As strings, the seeds sorted from this list of the rendered nodes (in any
    /// order): for a few rendered nodes in a large level.
    Text(&'r [usize]),
}

/// The render order (core.md §7.2 step 4): the nodes `is_rendered` accepts, in
/// clusters, hubs first. Seeds go by degree descending, ties to the greatest id; each
/// seed not yet placed starts a group that grows breadth first, the neighbours each
/// node newly reaches (over an edge, rendered, placed when first reached) taken by
/// degree descending, then id ascending; groups go largest first, then by their seed's
/// degree descending and id ascending. Two rendered nodes joined by an edge are
/// neighbours: such an edge touches no orphan, so it is live.
///
/// `pos` starts empty and ends holding each rendered node's render position. `degree`
/// is read for rendered nodes only (see [`degrees`]).
fn render_order(
    index: &LevelIndex<'_>,
    degree: &[usize],
    is_rendered: impl Fn(usize) -> bool,
    ids: IdCompare<'_>,
    pos: &mut Positions,
) -> Vec<usize> {
    let order = match ids {
        IdCompare::Ranked => {
            let rank = index.id_rank();
            let seeds = seeds_by_degree(index.nodes_by_id(), degree, &is_rendered);
            groups_in_order(index, degree, &is_rendered, seeds, pos, |a, b| {
                rank[a].cmp(&rank[b])
            })
        }
        IdCompare::Text(rendered) => {
            let ids = &index.ids;
            let mut seeds = rendered.to_vec();
            // Ids are unique: an unstable sort is exact.
            seeds.sort_unstable_by(|&a, &b| {
                degree[b].cmp(&degree[a]).then_with(|| ids[b].cmp(ids[a]))
            });
            groups_in_order(index, degree, &is_rendered, seeds, pos, |a, b| {
                ids[a].cmp(ids[b])
            })
        }
    };
    for (p, &i) in order.iter().enumerate() {
        pos.insert(i, p);
    }
    order
}

/// The groups of [`render_order`] from its `seeds`, sorted and laid end to end; every
/// node reached is marked in `pos` (position 0 until the order is known).
fn groups_in_order(
    index: &LevelIndex<'_>,
    degree: &[usize],
    is_rendered: impl Fn(usize) -> bool,
    seeds: Vec<usize>,
    pos: &mut Positions,
    id_cmp: impl Fn(usize, usize) -> std::cmp::Ordering,
) -> Vec<usize> {
    let by_degree_then_id =
        |&a: &usize, &b: &usize| degree[b].cmp(&degree[a]).then_with(|| id_cmp(a, b));
    // Groups lie end to end in `bfs`, each in breadth-first order: a group's own
    // stretch is its queue (nodes are appended as they are reached, read at `next`).
    let mut bfs: Vec<usize> = Vec::with_capacity(seeds.len());
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for seed in seeds {
        if pos.get(seed).is_some() {
            continue;
        }
        pos.insert(seed, 0);
        let start = bfs.len();
        bfs.push(seed);
        let mut next = start;
        while let Some(&current) = bfs.get(next) {
            next += 1;
            let fresh = bfs.len();
            for &m in index.structure.neighbours(current) {
                let m = m as usize;
                if m != NOT_A_NODE as usize
                    && m != current
                    && is_rendered(m)
                    && pos.get(m).is_none()
                {
                    pos.insert(m, 0);
                    bfs.push(m);
                }
            }
            // Ids are unique: unstable sorts are exact.
            bfs[fresh..].sort_unstable_by(by_degree_then_id);
        }
        groups.push(start..bfs.len());
    }
    groups.sort_unstable_by(|g, h| {
        h.len()
            .cmp(&g.len())
            .then_with(|| by_degree_then_id(&bfs[g.start], &bfs[h.start]))
    });
    let mut order = Vec::with_capacity(bfs.len());
    for g in groups {
        order.extend_from_slice(&bfs[g]);
    }
    order
}

/// The seeds of the breadth-first ordering (core.md §7): greatest degree first, ties
/// to the lexicographically greatest id. `by_id` lists the nodes in id order; walked
/// backwards and counting-sorted (stably) by descending degree, no comparisons.
fn seeds_by_degree(by_id: &[u32], degree: &[usize], is_seed: impl Fn(usize) -> bool) -> Vec<usize> {
    let by_id_descending: Vec<usize> = by_id
        .iter()
        .rev()
        .map(|&i| i as usize)
        .filter(|&i| is_seed(i))
        .collect();
    let max_degree = by_id_descending.iter().map(|&i| degree[i]).max();
    let max_degree = max_degree.unwrap_or(0);
    // Where each degree's seeds start, greatest degree first.
    let mut start = vec![0usize; max_degree + 2];
    for &i in &by_id_descending {
        start[max_degree - degree[i] + 1] += 1;
    }
    for d in 1..start.len() {
        start[d] += start[d - 1];
    }
    let mut seeds = vec![0; by_id_descending.len()];
    for &i in &by_id_descending {
        let slot = &mut start[max_degree - degree[i]];
        seeds[*slot] = i;
        *slot += 1;
    }
    seeds
}

/// Render positions of the rendered nodes: a table over all nodes when a good share of
/// them render, a hash map when few do (a level may hold far more nodes than it renders).
enum Positions {
    Dense(Vec<u32>),
    Sparse(rustc_hash::FxHashMap<usize, usize>),
}

impl Positions {
    /// A table when at least one of `nodes` in `dense_share` renders.
    fn new(nodes: usize, rendered: usize, dense_share: usize) -> Positions {
        if rendered.saturating_mul(dense_share) >= nodes {
            Positions::Dense(vec![u32::MAX; nodes])
        } else {
            Positions::Sparse(rustc_hash::FxHashMap::with_capacity_and_hasher(
                rendered,
                rustc_hash::FxBuildHasher,
            ))
        }
    }

    fn is_dense(&self) -> bool {
        matches!(self, Positions::Dense(_))
    }

    fn get(&self, i: usize) -> Option<usize> {
        match self {
            Positions::Dense(table) => table
                .get(i)
                .filter(|&&p| p != u32::MAX)
                .map(|&p| p as usize),
            Positions::Sparse(map) => map.get(&i).copied(),
        }
    }

    fn insert(&mut self, i: usize, p: usize) {
        match self {
            // Positions count rendered nodes, which fit a level's node count.
            Positions::Dense(table) => table[i] = p as u32,
            Positions::Sparse(map) => {
                map.insert(i, p);
            }
        }
    }
}

/// Where [`Meter::exact`] switches between two ways to the same result, each cheaper on
/// one side. Production uses [`Thresholds::default`]; tests pass their own to run both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Render positions are kept in a table over all nodes when at least one node in
    /// this many renders, in a hash map when fewer do (a level may hold far more nodes
    /// than it renders); the table also lets the citing ends be summed in one pass over
    /// every edge instead of over the rendered nodes' edges.
    pub dense_positions_share: usize,
    /// From this many rendered nodes on, ids compare by their memoised rank (one sort
    /// of all ids, kept with the structure) instead of as strings.
    pub ranked_ids_from: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            dense_positions_share: 16,
            ranked_ids_from: 1024,
        }
    }
}

/// How one edge counts towards a level's size under some tiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EdgePart {
    /// Not printed (dead, or no end renders).
    Hidden,
    /// Printed with a known length (one end renders, or a self-loop).
    Fixed(usize),
    /// Both ends render: `base` plus the length of whichever end is cited, which
    /// depends on the render order.
    Both { base: usize, from: usize, to: usize },
}

/// The exact size of a level, kept up to date one tier change at a time.
///
/// Compaction walks thousands of single-node moves; re-planning the whole level after
/// each would be quadratic. Everything but the choice of citing end for edges between
/// two rendered nodes is order-independent and kept as running sums, which also give
/// cheap lower and upper bounds; the order (clusters, hubs first) is only computed when
/// the bounds cannot decide, over the rendered nodes alone. [`Meter::exact`] always
/// equals [`Plan::body_chars`] for the same tiers (checked by property tests).
#[derive(Debug, Clone)]
pub struct Meter<'a, 'g> {
    index: &'a LevelIndex<'g>,
    thresholds: Thresholds,
    tiers: Vec<Tier>,
    /// A node's degree when rendered: its edges whose other end is not an orphan.
    /// Orphan status does not change while a meter is in use, so this is constant.
    degree: Vec<usize>,
    parts: Vec<EdgePart>,
    /// The rendered nodes, in no particular order, and each node's place in that list
    /// (`usize::MAX` when not rendered): planning the order visits these alone.
    rendered_list: Vec<usize>,
    rendered_slot: Vec<usize>,
    rendered: usize,
    anchors: usize,
    fixed: usize,
    both_min: usize,
    both_max: usize,
}

impl<'a, 'g> Meter<'a, 'g> {
    /// Start from `tiers` (Active mode: active nodes render, archived are anchors).
    pub fn new(index: &'a LevelIndex<'g>, tiers: &[Tier]) -> Meter<'a, 'g> {
        Meter::with_thresholds(index, tiers, Thresholds::default())
    }

    /// As [`Meter::new`], switching ways of computing at `thresholds`.
    pub fn with_thresholds(
        index: &'a LevelIndex<'g>,
        tiers: &[Tier],
        thresholds: Thresholds,
    ) -> Meter<'a, 'g> {
        let n = index.len();
        let mut meter = Meter {
            index,
            thresholds,
            tiers: tiers.to_vec(),
            degree: degrees(index, tiers),
            parts: vec![EdgePart::Hidden; index.edges().len()],
            rendered_list: Vec::new(),
            rendered_slot: vec![usize::MAX; n],
            rendered: 0,
            anchors: 0,
            fixed: 0,
            both_min: 0,
            both_max: 0,
        };
        meter.count();
        meter
    }

    /// Sum every node and edge under the current tiers (the sums start at zero).
    fn count(&mut self) {
        for i in 0..self.tiers.len() {
            self.add_node(i, 1);
        }
        for k in 0..self.index.edges().len() {
            let part = self.edge_part(k);
            self.parts[k] = part;
            self.add_part(part, 1);
        }
    }

    /// Move many nodes between the active and archived tiers: as [`Meter::set`] on each,
    /// but when they are a large share of the level, the sums are counted afresh in one
    /// sequential pass instead of visiting each node's edges in turn (a first pass over
    /// a large level archives nearly every node, in score order, all over memory).
    pub fn set_many(&mut self, nodes: &[usize], tier: Tier) {
        if nodes.len() * 4 < self.tiers.len() {
            for &i in nodes {
                self.set(i, tier);
            }
            return;
        }
        for &i in nodes {
            debug_assert!(
                tier != Tier::Orphaned && self.tiers[i] != Tier::Orphaned,
                "degrees assume fixed orphans"
            );
            self.tiers[i] = tier;
        }
        self.rendered_list.clear();
        self.rendered_slot.fill(usize::MAX);
        (self.rendered, self.anchors, self.fixed) = (0, 0, 0);
        (self.both_min, self.both_max) = (0, 0);
        self.count();
    }

    fn edges_of(&self, i: usize) -> &'a [u32] {
        self.index.structure.incident(i)
    }

    pub fn tiers(&self) -> &[Tier] {
        &self.tiers
    }

    fn edge_part(&self, k: usize) -> EdgePart {
        let e = &self.index.edges()[k];
        let tier = |end: &EdgeEnd| end.node().map(|i| self.tiers[i]);
        let (tf, tt) = (tier(&e.from), tier(&e.to));
        if tf == Some(Tier::Orphaned) || tt == Some(Tier::Orphaned) {
            return EdgePart::Hidden;
        }
        let (rf, rt) = (tf == Some(Tier::Active), tt == Some(Tier::Active));
        let base = 9 + e.rel_chars();
        match (rf, rt) {
            (false, false) => EdgePart::Hidden,
            (true, true) if e.from.node() != e.to.node() => EdgePart::Both {
                base,
                from: e.from.chars(),
                to: e.to.chars(),
            },
            (true, _) => EdgePart::Fixed(base + e.to.chars() + 1),
            (false, true) => EdgePart::Fixed(base + e.from.chars() + 1),
        }
    }

    /// Add (`sign` = 1) or remove (`sign` = -1, as wrapping) a part's sums.
    fn add_part(&mut self, part: EdgePart, sign: isize) {
        let apply = |sum: &mut usize, v: usize| *sum = sum.wrapping_add_signed(sign * v as isize);
        match part {
            EdgePart::Hidden => {}
            EdgePart::Fixed(c) => apply(&mut self.fixed, c),
            EdgePart::Both { base, from, to } => {
                apply(&mut self.fixed, base + 1);
                apply(&mut self.both_min, from.min(to));
                apply(&mut self.both_max, from.max(to));
            }
        }
    }

    fn add_node(&mut self, i: usize, sign: isize) {
        let apply = |sum: &mut usize, v: usize| *sum = sum.wrapping_add_signed(sign * v as isize);
        match self.tiers[i] {
            Tier::Active => {
                apply(&mut self.rendered, 1);
                apply(&mut self.fixed, self.index.node_line_cost(i));
                if sign > 0 {
                    self.rendered_slot[i] = self.rendered_list.len();
                    self.rendered_list.push(i);
                } else {
                    let slot = std::mem::replace(&mut self.rendered_slot[i], usize::MAX);
                    self.rendered_list.swap_remove(slot);
                    if let Some(&moved) = self.rendered_list.get(slot) {
                        self.rendered_slot[moved] = slot;
                    }
                }
            }
            Tier::Archived => {
                apply(&mut self.anchors, 1);
                apply(&mut self.fixed, self.index.anchor_cost(i));
            }
            Tier::Orphaned => {}
        }
    }

    /// Move one node between the active and archived tiers.
    pub fn set(&mut self, i: usize, tier: Tier) {
        if self.tiers[i] == tier {
            return;
        }
        debug_assert!(
            tier != Tier::Orphaned && self.tiers[i] != Tier::Orphaned,
            "degrees assume fixed orphans"
        );
        self.add_node(i, -1);
        self.tiers[i] = tier;
        self.add_node(i, 1);
        for &k in self.edges_of(i) {
            let k = k as usize;
            let old = self.parts[k];
            let new = self.edge_part(k);
            if old != new {
                self.add_part(old, -1);
                self.add_part(new, 1);
                self.parts[k] = new;
            }
        }
    }

    fn heads(&self) -> usize {
        let mut h = 0;
        if self.rendered > 0 {
            h += ACTIVE_HEAD.len() + 1;
        }
        if self.anchors > 0 {
            h += ARCHIVED_HEAD.len() + 1;
        }
        h
    }

    /// The size is at least this.
    pub fn lower(&self) -> usize {
        self.fixed + self.heads() + self.both_min
    }

    /// The size is at most this.
    pub fn upper(&self) -> usize {
        self.fixed + self.heads() + self.both_max
    }

    /// Is the exact size above `limit`? Plans the order only when the bounds straddle it.
    pub fn exceeds(&self, limit: usize) -> bool {
        if self.lower() > limit {
            true
        } else if self.upper() <= limit {
            false
        } else {
            self.exact() > limit
        }
    }

    /// The exact size when it is at most `limit` (measured once), `None` when above.
    pub fn exact_within(&self, limit: usize) -> Option<usize> {
        if self.lower() > limit {
            return None;
        }
        Some(self.exact()).filter(|&size| size <= limit)
    }

    /// The exact size: plan the render order of the rendered nodes and charge each
    /// edge between two of them under its earlier end.
    pub fn exact(&self) -> usize {
        if self.both_min == self.both_max {
            return self.lower();
        }
        let rendered = &self.rendered_list;
        // Many rendered nodes (an oversized level before its first archive pass): one
        // sort of all ids instead of a string comparison per step.
        let ids = if rendered.len() >= self.thresholds.ranked_ids_from {
            IdCompare::Ranked
        } else {
            IdCompare::Text(rendered)
        };
        let mut pos = Positions::new(
            self.index.len(),
            rendered.len(),
            self.thresholds.dense_positions_share,
        );
        render_order(
            self.index,
            &self.degree,
            |i| self.tiers[i] == Tier::Active,
            ids,
            &mut pos,
        );
        // Each edge between two rendered nodes is cited under the earlier of its ends.
        let at = |node: Option<usize>| node.and_then(|t| pos.get(t)).unwrap_or(usize::MAX);
        let cited = |k: usize, from: usize, to: usize| {
            let e = &self.index.edges()[k];
            if at(e.from.node()) <= at(e.to.node()) {
                to
            } else {
                from
            }
        };
        let order_part: usize = if pos.is_dense() {
            // Most nodes render: one sequential pass over every edge.
            self.parts
                .iter()
                .enumerate()
                .map(|(k, part)| match *part {
                    EdgePart::Both { from, to, .. } => cited(k, from, to),
                    _ => 0,
                })
                .sum()
        } else {
            // Few render: only their edges, each counted once from its `from` side.
            let mut sum = 0;
            for &i in &self.rendered_list {
                for &k in self.edges_of(i) {
                    let k = k as usize;
                    if let EdgePart::Both { from, to, .. } = self.parts[k]
                        && self.index.edges()[k].from.node() == Some(i)
                    {
                        sum += cited(k, from, to);
                    }
                }
            }
            sum
        };
        self.fixed + self.heads() + order_part
    }
}

/// `HEALTH: …` and its numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// Nodes the read renders in full: the level's active nodes.
    pub nodes: usize,
    /// Edges the read cites under those nodes: an active end and no orphaned one (an
    /// edge to an artifact or to the other level counts).
    pub edges: usize,
    /// Rendered nodes that no cited edge touches. Not the orphaned tier: orphaned
    /// nodes are not rendered, so they are not counted here.
    pub orphans: usize,
    /// `orphans` as a whole percentage of `nodes` (Python `round`, ties to even); 0 for
    /// an empty level.
    pub orphan_pct: i64,
    /// `round(edges / nodes, 1)`; 0 for an empty level.
    pub avg_edges: f64,
    /// `HEALTH: <n> nodes, <e> edges, <o> orphans (<pct>%), avg <avg> edges/node`, as
    /// `kg_read` prints it and the graph view and the tray show it.
    pub line: String,
}

impl Health {
    /// HEALTH from the undegraded plan (core.md §7.5), the line `kg_read` prints.
    pub(crate) fn of(plan: &Plan, index: &LevelIndex<'_>) -> Health {
        let n = plan.order.len();
        let e = plan.cited_edges();
        let o = plan.unlinked_nodes(index);
        let (pct, avg, avg_text) = if n == 0 {
            (0, 0.0, "0".to_string())
        } else {
            let avg = round_to(e as f64 / n as f64, 1);
            (round_int(100.0 * o as f64 / n as f64), avg, float_repr(avg))
        };
        Health {
            nodes: n,
            edges: e,
            orphans: o,
            orphan_pct: pct,
            avg_edges: avg,
            line: format!(
                "HEALTH: {n} nodes, {e} edges, {o} orphans ({pct}%), avg {avg_text} edges/node"
            ),
        }
    }

    /// The HEALTH of one graph, as a full read prints it.
    pub fn of_graph(graph: &Graph) -> Health {
        let index = LevelIndex::of(graph);
        Health::of(&Plan::build(&index, &index.tiers, Mode::Active), &index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, field};
    use proptest::prelude::*;
    use serde_json::Value;

    /// A random graph: ids of varied length, edges between nodes, self-loops and
    /// artifact paths, nodes in all three tiers.
    fn graph_strategy() -> impl Strategy<Value = Graph> {
        (
            2usize..40,
            prop::collection::vec((0usize..60, 0usize..60, 0u8..4), 0..120),
            prop::collection::vec(0u8..3, 40),
        )
            .prop_map(|(n, edges, tiers)| {
                let mut g = Graph::default();
                for (i, tier) in tiers.iter().enumerate().take(n) {
                    let id = format!("n{}{}", i, "x".repeat(i % 7));
                    let mut node = Node::new(&id);
                    node.set(field::GIST, Value::String("g".repeat(1 + i % 13)));
                    match tier {
                        1 => node.set(field::ARCHIVED, Value::Bool(true)),
                        2 => {
                            node.set(field::ARCHIVED, Value::Bool(true));
                            node.set(field::ORPHANED_TS, Value::from(1.0));
                        }
                        _ => {}
                    }
                    g.nodes.insert(id, node);
                }
                crate::graph::add_test_edges(&mut g, edges);
                g
            })
    }

    /// Each switch of [`Thresholds`] always one way, always the other, or at a value
    /// the random graphs cross; production's values among them.
    fn thresholds() -> impl Strategy<Value = Thresholds> {
        let production = Thresholds::default();
        (
            prop::sample::select(vec![0, 2, usize::MAX, production.dense_positions_share]),
            prop::sample::select(vec![0, 6, usize::MAX, production.ranked_ids_from]),
        )
            .prop_map(|(dense_positions_share, ranked_ids_from)| Thresholds {
                dense_positions_share,
                ranked_ids_from,
            })
    }

    proptest! {
        #[test]
        fn meter_equals_the_plan_under_any_moves(g in graph_strategy(), moves in prop::collection::vec((0usize..40, any::<bool>()), 0..60), thresholds in thresholds()) {
            let index = LevelIndex::of(&g);
            let mut meter = Meter::with_thresholds(&index, &index.tiers, thresholds);
            let plan = |t: &[Tier]| Plan::build(&index, t, Mode::Active).body_chars(&index);
            prop_assert_eq!(meter.exact(), plan(meter.tiers()));
            for (i, active) in moves {
                let i = i % index.len();
                if meter.tiers()[i] == Tier::Orphaned {
                    continue;
                }
                meter.set(i, if active { Tier::Active } else { Tier::Archived });
                let want = plan(meter.tiers());
                prop_assert_eq!(meter.exact(), want);
                prop_assert!(meter.lower() <= want && want <= meter.upper());
                prop_assert_eq!(meter.exceeds(want), false);
                prop_assert_eq!(meter.exceeds(want.saturating_sub(1)), want > 0);
                prop_assert_eq!(meter.exact_within(want), Some(want));
                prop_assert_eq!(meter.exact_within(want.saturating_sub(1)), (want == 0).then_some(0));
            }
        }

        #[test]
        fn moving_many_at_once_equals_moving_each(g in graph_strategy(), picks in prop::collection::vec(0usize..40, 0..40), archive in any::<bool>(), thresholds in thresholds()) {
            let index = LevelIndex::of(&g);
            let tier = if archive { Tier::Archived } else { Tier::Active };
            let nodes: Vec<usize> = picks
                .into_iter()
                .map(|i| i % index.len())
                .filter(|&i| index.tiers[i] != Tier::Orphaned)
                .collect();
            let mut each = Meter::with_thresholds(&index, &index.tiers, thresholds);
            for &i in &nodes {
                each.set(i, tier);
            }
            let mut many = Meter::with_thresholds(&index, &index.tiers, thresholds);
            many.set_many(&nodes, tier);
            prop_assert_eq!(many.tiers(), each.tiers());
            prop_assert_eq!((many.lower(), many.upper()), (each.lower(), each.upper()));
            prop_assert_eq!(many.exact(), Plan::build(&index, many.tiers(), Mode::Active).body_chars(&index));
            prop_assert_eq!(many.exact(), each.exact());
            // Moves after a bulk move keep the sums exact.
            for &i in nodes.iter().rev().take(3) {
                many.set(i, Tier::Active);
                each.set(i, Tier::Active);
            }
            prop_assert_eq!(many.exact(), each.exact());
        }
    }
}
