//! The render plan of one level (core.md §7.2–§7.3): which nodes render, in which
//! order, which edges are cited under which node, and which nodes are anchors.
//!
//! It is the single source of both the text `kg_read` prints and the size the
//! compactor charges: [`Plan::body_chars`] counts exactly the characters
//! [`crate::render`] writes for the same plan (render equals charge), and both use the
//! one live-edge predicate below.

use crate::model::{Graph, Tier};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast, non-cryptographic hasher for the per-operation id lookup (the FxHash
/// recipe). Ids come from our own graphs, so flooding is not a concern, and SipHash
/// was the largest cost of planning a 2,000-node graph.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by ids, hashed with [`FxHasher`].
pub type IdMap<'g, V> = HashMap<&'g str, V, BuildHasherDefault<FxHasher>>;

pub const ACTIVE_HEAD: &str = "ACTIVE:";
pub const ARCHIVED_HEAD: &str = "ARCHIVED (use kg_read with id to view full content):";

/// One end of an edge: its text, and the node it names in this graph, if any.
#[derive(Debug, Clone, Copy)]
pub struct EdgeEnd<'g> {
    pub text: &'g str,
    pub chars: usize,
    /// `None` for an artifact path or a node of the other level.
    pub node: Option<usize>,
}

/// An edge with its endpoints resolved to node positions.
#[derive(Debug, Clone, Copy)]
pub struct EdgeRef<'g> {
    pub from: EdgeEnd<'g>,
    pub to: EdgeEnd<'g>,
    pub rel: &'g str,
    pub rel_chars: usize,
}

impl EdgeRef<'_> {
    /// `    → <rel> → <to>` or `    ← <rel> ← <from>`, without the newline.
    pub fn citation_chars(&self, dir: Dir) -> usize {
        9 + self.rel_chars
            + match dir {
                Dir::Out => self.to.chars,
                Dir::In => self.from.chars,
            }
    }
}

/// Under which endpoint an edge is cited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Under `from`: `→ rel → to`.
    Out,
    /// Under `to`: `← rel ← from`.
    In,
}

/// A graph's nodes and edges flattened into positions, built once per operation so
/// planning and scoring never touch the JSON objects.
#[derive(Debug, Clone)]
pub struct LevelIndex<'g> {
    pub ids: Vec<&'g str>,
    pub id_chars: Vec<usize>,
    pub gists: Vec<&'g str>,
    pub gist_chars: Vec<usize>,
    /// Tiers as stored.
    pub tiers: Vec<Tier>,
    pub edges: Vec<EdgeRef<'g>>,
    lookup: IdMap<'g, usize>,
}

impl<'g> LevelIndex<'g> {
    pub fn of(graph: &'g Graph) -> LevelIndex<'g> {
        let n = graph.nodes.len();
        let mut index = LevelIndex {
            ids: Vec::with_capacity(n),
            id_chars: Vec::with_capacity(n),
            gists: Vec::with_capacity(n),
            gist_chars: Vec::with_capacity(n),
            tiers: Vec::with_capacity(n),
            edges: Vec::with_capacity(graph.edges.len()),
            lookup: IdMap::with_capacity_and_hasher(n, BuildHasherDefault::default()),
        };
        for (i, (id, node)) in graph.nodes.iter().enumerate() {
            index.ids.push(id);
            index.id_chars.push(id.chars().count());
            let meta = node.meta();
            index.gists.push(node.gist());
            index.gist_chars.push(meta.gist_chars);
            index.tiers.push(meta.tier);
            index.lookup.insert(id, i);
        }
        for edge in graph.edges.values() {
            let end = |text: &'g str| EdgeEnd {
                text,
                chars: text.chars().count(),
                node: index.lookup.get(text).copied(),
            };
            let (from, to) = (end(edge.from()), end(edge.to()));
            index.edges.push(EdgeRef {
                from,
                to,
                rel: edge.rel(),
                rel_chars: edge.rel().chars().count(),
            });
        }
        index
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn position(&self, id: &str) -> Option<usize> {
        self.lookup.get(id).copied()
    }

    /// `  <id>: <gist>` plus its newline.
    pub fn node_line_cost(&self, i: usize) -> usize {
        2 + self.id_chars[i] + 2 + self.gist_chars[i] + 1
    }

    /// `  <id>` plus its newline.
    pub fn anchor_cost(&self, i: usize) -> usize {
        2 + self.id_chars[i] + 1
    }
}

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
pub fn is_live(edge: &EdgeRef<'_>, tiers: &[Tier], renders: &[bool]) -> bool {
    let orphan = |end: &EdgeEnd<'_>| end.node.is_some_and(|i| tiers[i] == Tier::Orphaned);
    if orphan(&edge.from) || orphan(&edge.to) {
        return false;
    }
    let present = |end: &EdgeEnd<'_>| end.node.is_none_or(|i| renders[i]);
    present(&edge.from) || present(&edge.to)
}

/// The plan of one level under some tier assignment.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Rendered nodes in render order.
    pub order: Vec<usize>,
    /// For each rendered node (by render position), its citations in edge order.
    pub citations: Vec<Vec<(usize, Dir)>>,
    /// Archived, non-orphaned, non-rendered nodes in node order.
    pub anchors: Vec<usize>,
    /// Number of live edges (cited or not).
    pub live_edges: usize,
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
        let mut degree = vec![0usize; n];
        let mut neighbours: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut live = Vec::with_capacity(index.edges.len());
        for (k, edge) in index.edges.iter().enumerate() {
            if !is_live(edge, tiers, &renders) {
                continue;
            }
            live.push(k);
            let from = edge.from.node.filter(|&i| renders[i]);
            let to = edge.to.node.filter(|&i| renders[i]);
            if let Some(f) = from {
                degree[f] += 1;
            }
            if let Some(t) = to
                && Some(t) != edge.from.node
            {
                degree[t] += 1;
            }
            if let (Some(f), Some(t)) = (from, to)
                && f != t
            {
                neighbours[f].push(t);
                neighbours[t].push(f);
            }
        }
        for list in &mut neighbours {
            list.sort_unstable();
            list.dedup();
        }
        let order = communities(index, &renders, &degree, &neighbours);
        let mut pos = vec![usize::MAX; n];
        for (p, &i) in order.iter().enumerate() {
            pos[i] = p;
        }
        let mut citations: Vec<Vec<(usize, Dir)>> = vec![Vec::new(); order.len()];
        for &k in &live {
            let edge = &index.edges[k];
            let from = edge.from.node.map(|i| pos[i]).filter(|&p| p != usize::MAX);
            let to = edge.to.node.map(|i| pos[i]).filter(|&p| p != usize::MAX);
            match (from, to) {
                (None, None) => {} // e.g. archived → artifact: nowhere to print it
                (Some(f), None) => citations[f].push((k, Dir::Out)),
                (Some(f), Some(t)) if f <= t => citations[f].push((k, Dir::Out)),
                (_, Some(t)) => citations[t].push((k, Dir::In)),
            }
        }
        let anchors = (0..n)
            .filter(|&i| tiers[i] == Tier::Archived && !renders[i])
            .collect();
        Plan {
            order,
            citations,
            anchors,
            live_edges: live.len(),
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
            total += self.citations[p]
                .iter()
                .map(|&(k, dir)| index.edges[k].citation_chars(dir) + 1)
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

    pub fn cited_edges(&self) -> usize {
        self.citations.iter().map(Vec::len).sum()
    }

    /// Rendered nodes that are no endpoint of any cited edge (HEALTH's "orphans").
    pub fn unlinked_nodes(&self, index: &LevelIndex<'_>) -> usize {
        let mut linked = vec![false; index.len()];
        for list in &self.citations {
            for &(k, _) in list {
                let e = &index.edges[k];
                for end in [e.from.node, e.to.node].into_iter().flatten() {
                    linked[end] = true;
                }
            }
        }
        self.order.iter().filter(|&&i| !linked[i]).count()
    }
}

/// Order rendered nodes in clusters, hubs first (core.md §7.2 step 4).
fn communities(
    index: &LevelIndex<'_>,
    renders: &[bool],
    degree: &[usize],
    neighbours: &[Vec<usize>],
) -> Vec<usize> {
    let mut seeds: Vec<usize> = (0..index.len()).filter(|&i| renders[i]).collect();
    // Seed order: greatest degree, ties to the lexicographically greatest id.
    seeds.sort_by(|&a, &b| {
        degree[b]
            .cmp(&degree[a])
            .then_with(|| index.ids[b].cmp(index.ids[a]))
    });
    let mut placed = vec![false; index.len()];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut queue = std::collections::VecDeque::new();
    for seed in seeds {
        if placed[seed] {
            continue;
        }
        placed[seed] = true;
        let mut group = vec![seed];
        queue.push_back(seed);
        while let Some(current) = queue.pop_front() {
            let mut fresh: Vec<usize> = neighbours[current]
                .iter()
                .copied()
                .filter(|&m| !placed[m])
                .collect();
            fresh.sort_by(|&a, &b| {
                degree[b]
                    .cmp(&degree[a])
                    .then_with(|| index.ids[a].cmp(index.ids[b]))
            });
            for m in fresh {
                placed[m] = true;
                group.push(m);
                queue.push_back(m);
            }
        }
        groups.push(group);
    }
    groups.sort_by(|a, b| {
        b.len()
            .cmp(&a.len())
            .then_with(|| degree[b[0]].cmp(&degree[a[0]]))
            .then_with(|| index.ids[a[0]].cmp(index.ids[b[0]]))
    });
    groups.concat()
}
