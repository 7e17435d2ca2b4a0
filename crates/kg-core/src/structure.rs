//! The derived structure of a graph: where its edges and versions point, as node
//! positions, resolved once per change of the graph's keys (see
//! [`crate::graph::Graph::structure`]) so that rendering, charging and search never
//! hash ids on every call.

use crate::model::{EdgeKey, char_len};
use std::fmt;

/// One end of an edge: the length of its text, and the node it names in this graph.
/// Kept in 32-bit fields: a settled tick streams every edge of the level, and at 100k
/// nodes the 56-byte form was 17 MB of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeEnd {
    chars: u32,
    /// [`NOT_A_NODE`] for an artifact path or a node of the other level.
    node: u32,
}

impl EdgeEnd {
    pub fn new(chars: usize, node: Option<usize>) -> EdgeEnd {
        let mut end = EdgeEnd {
            chars: saturating_u32(chars),
            node: NOT_A_NODE,
        };
        end.set_node(node);
        end
    }

    /// The length of the end's text in characters.
    pub fn chars(&self) -> usize {
        self.chars as usize
    }

    /// The node the end names; `None` for an artifact path or a node of the other level.
    pub fn node(&self) -> Option<usize> {
        (self.node != NOT_A_NODE).then_some(self.node as usize)
    }

    pub(crate) fn set_node(&mut self, node: Option<usize>) {
        // Positions below `NOT_A_NODE`: a graph of four billion nodes is not loaded.
        self.node = node.map_or(NOT_A_NODE, |i| saturating_u32(i).min(NOT_A_NODE - 1));
    }
}

/// Texts and positions are far below 2^32; saturating keeps a conversion total.
fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// An edge with its endpoints resolved to node positions (its texts stay in the
/// graph: only the lines a render writes need them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeRef {
    pub from: EdgeEnd,
    pub to: EdgeEnd,
    rel_chars: u32,
}

impl EdgeRef {
    pub fn new(from: EdgeEnd, to: EdgeEnd, rel_chars: usize) -> EdgeRef {
        EdgeRef {
            from,
            to,
            rel_chars: saturating_u32(rel_chars),
        }
    }

    /// The length of the relation's text in characters.
    pub fn rel_chars(&self) -> usize {
        self.rel_chars as usize
    }

    /// `    → <rel> → <to>` or `    ← <rel> ← <from>`, without the newline.
    pub fn citation_chars(&self, dir: Dir) -> usize {
        9 + self.rel_chars()
            + match dir {
                Dir::Out => self.to.chars(),
                Dir::In => self.from.chars(),
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

/// Where a graph's edges and versions point, as node positions: the structure every
/// render, charge and search needs, resolved once per change of the graph instead of
/// by hashing ids on every call.
#[derive(Debug)]
pub struct Structure {
    stamps: [u64; 3],
    /// Per edge, in edge order: the positions of its `from` and `to` among the nodes
    /// (`None` for an artifact path or a node of another graph) and the lengths of its
    /// texts in characters.
    pub edges: Vec<EdgeRef>,
    /// Edge positions touching each node (a self-loop once), as one flat list: node
    /// `i` owns `incident[incident_from[i]..incident_from[i + 1]]`, in edge order.
    incident_from: Vec<usize>,
    incident: Vec<usize>,
    /// Beside each entry of `incident`: the node at the edge's other end (the node
    /// itself for a self-loop, [`NOT_A_NODE`] when that end names no node here), so a
    /// walk over neighbours reads one list instead of every edge.
    neighbour: Vec<u32>,
    /// Per node, in node order: the position of its `node:<id>` entry among the versions.
    pub node_versions: Vec<Option<u32>>,
    /// Per node: the length of its id in characters.
    pub id_chars: Vec<usize>,
    /// The ids, for ranking them.
    ids: IdList,
    /// The nodes in sorted id order, and each node's rank in it; computed on first use.
    id_order: std::sync::OnceLock<IdOrder>,
}

#[derive(Debug)]
struct IdOrder {
    rank: Vec<u32>,
    by_rank: Vec<u32>,
}

/// Ids laid end to end in one buffer: a graph's node ids (resolving every edge end
/// against them, and sorting them, then reads one compact block instead of one
/// allocation per id; a 10k-node graph's ids fit the CPU caches, its nodes do not), and
/// the ids a render lists (hundreds per render, where an allocation each cost more
/// than the rest of its bookkeeping).
#[derive(Clone, PartialEq, Eq)]
pub struct IdList {
    text: String,
    /// Id `i` is `text[ends[i]..ends[i + 1]]`.
    ends: Vec<usize>,
}

impl Default for IdList {
    fn default() -> Self {
        IdList {
            text: String::new(),
            ends: vec![0],
        }
    }
}

impl IdList {
    fn of<'a>(ids: impl ExactSizeIterator<Item = &'a String>) -> IdList {
        let mut list = IdList {
            text: String::new(),
            ends: Vec::with_capacity(ids.len() + 1),
        };
        list.ends.push(0);
        for id in ids {
            list.push(id);
        }
        list
    }

    pub fn push(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len());
    }

    pub fn get(&self, i: usize) -> &str {
        &self.text[self.ends[i]..self.ends[i + 1]]
    }

    pub fn len(&self) -> usize {
        self.ends.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.ends.windows(2).map(|w| &self.text[w[0]..w[1]])
    }

    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_string).collect()
    }
}

impl fmt::Debug for IdList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Node positions by id. Lookups that arrive in node order (a node's edges, the
/// versions) find their id at or just after the last one found, in the compact id
/// arena. The others (edges' `to` ends, all over the graph) go to an open-addressing
/// table, in batches: in a large graph each lookup misses the CPU caches twice (its
/// slot, then the id it compares), and a batch's misses overlap instead of queueing.
struct Positions<'a> {
    ids: &'a IdList,
    /// Linear probing. A slot holds a node's position + 1 (0: empty) in its low half
    /// and the high half of its id's hash in its high half, so a probe compares an id
    /// only when the hashes agree.
    slots: Vec<u64>,
    mask: usize,
}

/// Lookups resolved together by [`Positions::get_batch`].
const LOOKUP_BATCH: usize = 16;

fn id_hash(id: &str) -> u64 {
    use std::hash::Hasher;
    // FxHash: the ids are our own, and SipHash was most of the cost here.
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(id.as_bytes());
    hasher.finish()
}

impl<'a> Positions<'a> {
    fn of(ids: &'a IdList) -> Positions<'a> {
        let n = ids.len();
        // At most half full: probes stay short.
        let size = (2 * n).next_power_of_two().max(16);
        let mut positions = Positions {
            ids,
            slots: vec![0; size],
            mask: size - 1,
        };
        for i in 0..n {
            let hash = id_hash(ids.get(i));
            let mut at = hash as usize & positions.mask;
            while positions.slots[at] != 0 {
                at = (at + 1) & positions.mask;
            }
            positions.slots[at] = (hash & 0xffff_ffff_0000_0000) | (i as u64 + 1);
        }
        positions
    }

    /// The position of `id`, probing from `slot` (its hash's first slot, already read).
    fn probe(&self, id: &str, hash: u64, mut at: usize, mut slot: u64) -> Option<usize> {
        while slot != 0 {
            let position = (slot & 0xffff_ffff) as usize - 1;
            if slot >> 32 == hash >> 32 && self.ids.get(position) == id {
                return Some(position);
            }
            at = (at + 1) & self.mask;
            slot = self.slots[at];
        }
        None
    }

    fn get(&self, id: &str) -> Option<usize> {
        let hash = id_hash(id);
        let at = hash as usize & self.mask;
        self.probe(id, hash, at, self.slots[at])
    }

    /// Positions of `ids` (at most [`LOOKUP_BATCH`]) into `found`: every first slot is
    /// read before any id is compared, so those reads overlap.
    fn get_batch(&self, ids: &[&str], found: &mut [Option<usize>]) {
        let mut hashes = [0u64; LOOKUP_BATCH];
        let mut firsts = [0u64; LOOKUP_BATCH];
        for (k, id) in ids.iter().enumerate() {
            hashes[k] = id_hash(id);
            firsts[k] = self.slots[hashes[k] as usize & self.mask];
        }
        for (k, id) in ids.iter().enumerate() {
            let at = hashes[k] as usize & self.mask;
            found[k] = self.probe(id, hashes[k], at, firsts[k]);
        }
    }

    /// The position of `id`, trying `*guess` and the one after first; `*guess` then
    /// holds the position found (ids are unique, so a match there is the answer).
    fn find(&self, id: &str, guess: &mut usize) -> Option<usize> {
        for at in [*guess, *guess + 1] {
            if at < self.ids.len() && self.ids.get(at) == id {
                *guess = at;
                return Some(at);
            }
        }
        let at = self.get(id)?;
        *guess = at;
        Some(at)
    }
}

impl Structure {
    /// The structure of a graph with these keys; `stamps` are those of the graph's
    /// node, edge and version maps (see [`Structure::is_current`]).
    pub(crate) fn of<'k>(
        node_ids: impl ExactSizeIterator<Item = &'k String>,
        edge_keys: impl ExactSizeIterator<Item = &'k EdgeKey>,
        version_keys: impl Iterator<Item = &'k String>,
        stamps: [u64; 3],
    ) -> Structure {
        let ids = IdList::of(node_ids);
        let n = ids.len();
        let (edges, node_versions) = {
            let positions = Positions::of(&ids);
            // Edges are usually stored grouped by their `from` end, in node order; their
            // `to` ends go anywhere, and are resolved in batches.
            let mut from_guess = 0;
            let mut edges: Vec<EdgeRef> = Vec::with_capacity(edge_keys.len());
            let mut batch: Vec<&str> = Vec::with_capacity(LOOKUP_BATCH);
            let mut found = [None; LOOKUP_BATCH];
            let mut resolve = |edges: &mut Vec<EdgeRef>, batch: &mut Vec<&str>| {
                positions.get_batch(batch, &mut found);
                let first = edges.len() - batch.len();
                for (edge, node) in edges[first..].iter_mut().zip(found) {
                    edge.to.set_node(node);
                }
                batch.clear();
            };
            for k in edge_keys {
                edges.push(EdgeRef::new(
                    EdgeEnd::new(
                        char_len(k.from()),
                        positions.find(k.from(), &mut from_guess),
                    ),
                    EdgeEnd::new(char_len(k.to()), None),
                    char_len(k.rel()),
                ));
                batch.push(k.to());
                if batch.len() == LOOKUP_BATCH {
                    resolve(&mut edges, &mut batch);
                }
            }
            resolve(&mut edges, &mut batch);
            // Node versions are usually in node order.
            let mut guess = 0;
            let mut node_versions = vec![None; n];
            for (v, key) in version_keys.enumerate() {
                if let Some(i) = key
                    .strip_prefix("node:")
                    .and_then(|id| positions.find(id, &mut guess))
                {
                    node_versions[i] = Some(v as u32);
                }
            }
            (edges, node_versions)
        };
        let (incident_from, incident, neighbour) = incidence(n, &edges);
        let id_chars = (0..n).map(|i| char_len(ids.get(i))).collect();
        Structure {
            stamps,
            edges,
            incident_from,
            incident,
            neighbour,
            node_versions,
            id_chars,
            ids,
            id_order: std::sync::OnceLock::new(),
        }
    }

    /// Whether this is the structure of maps with these stamps.
    pub(crate) fn is_current(&self, stamps: [u64; 3]) -> bool {
        self.stamps == stamps
    }

    /// The positions of the edges touching node `i`, in edge order.
    pub fn incident(&self, i: usize) -> &[usize] {
        &self.incident[self.incident_from[i]..self.incident_from[i + 1]]
    }

    /// The other ends of the edges touching node `i`, beside [`Structure::incident`].
    pub fn neighbours(&self, i: usize) -> &[u32] {
        &self.neighbour[self.incident_from[i]..self.incident_from[i + 1]]
    }

    /// Per node: the rank of its id in sorted id order (ids are unique in a graph).
    pub(crate) fn id_rank(&self) -> &[u32] {
        &self.id_order().rank
    }

    /// The nodes in sorted id order.
    pub(crate) fn nodes_by_id(&self) -> &[u32] {
        &self.id_order().by_rank
    }

    fn id_order(&self) -> &IdOrder {
        self.id_order.get_or_init(|| {
            let ids = &self.ids;
            // Sort by the first 16 bytes as one number (zero-padded: a shorter id that
            // is a prefix of another still sorts first) and compare whole ids only
            // where those tie: whenever the numbers differ they order as the ids do.
            let head = |i: usize| {
                let bytes = ids.get(i).as_bytes();
                let mut head = [0u8; 16];
                let len = bytes.len().min(16);
                head[..len].copy_from_slice(&bytes[..len]);
                u128::from_be_bytes(head)
            };
            let mut sorted: Vec<(u128, u32)> =
                (0..ids.len()).map(|i| (head(i), i as u32)).collect();
            sorted.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| ids.get(a.1 as usize).cmp(ids.get(b.1 as usize)))
            });
            let mut rank = vec![0; ids.len()];
            for (r, &(_, i)) in sorted.iter().enumerate() {
                rank[i as usize] = r as u32;
            }
            IdOrder {
                rank,
                by_rank: sorted.into_iter().map(|(_, i)| i).collect(),
            }
        })
    }
}

/// [`Structure::neighbours`] of an edge end that names no node of the graph.
pub const NOT_A_NODE: u32 = u32::MAX;

/// Incidence lists of `n` nodes as offsets into one flat list (see
/// [`Structure::incident`]), with the neighbour beside each entry.
fn incidence(n: usize, edges: &[EdgeRef]) -> (Vec<usize>, Vec<usize>, Vec<u32>) {
    let ends = |e: &EdgeRef| {
        let second = e.to.node().filter(|&t| Some(t) != e.from.node());
        [e.from.node(), second]
    };
    let mut from = vec![0usize; n + 1];
    for e in edges {
        for i in ends(e).into_iter().flatten() {
            from[i + 1] += 1;
        }
    }
    for i in 0..n {
        from[i + 1] += from[i];
    }
    let mut incident = vec![0usize; from[n]];
    let mut neighbour = vec![NOT_A_NODE; from[n]];
    let mut fill = from.clone();
    for (k, e) in edges.iter().enumerate() {
        for i in ends(e).into_iter().flatten() {
            let other = if e.from.node() == Some(i) {
                e.to.node()
            } else {
                e.from.node()
            };
            incident[fill[i]] = k;
            neighbour[fill[i]] = other.map_or(NOT_A_NODE, |m| m as u32);
            fill[i] += 1;
        }
    }
    (from, incident, neighbour)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Graph;
    use crate::model::Node;
    use proptest::prelude::*;

    #[test]
    fn id_lists_give_back_each_id_pushed() {
        let mut ids = IdList::default();
        for id in ["retry-policy", "é", "a"] {
            ids.push(id);
        }
        assert_eq!(ids.iter().collect::<Vec<_>>(), ["retry-policy", "é", "a"]);
        assert_eq!((ids.get(1), ids.len(), ids.to_vec().len()), ("é", 3, 3));
        assert_eq!(format!("{ids:?}"), r#"["retry-policy", "é", "a"]"#);
        assert!(IdList::default().is_empty() && IdList::default().iter().next().is_none());
    }

    proptest! {
        /// Every id is found at its position, alone or in a batch, and nothing else is
        /// found: small tables, so probes collide and wrap around their end.
        #[test]
        fn positions_find_every_id_and_nothing_else(
            ids in prop::collection::vec("(c|\\x00|é|-){0,4}", 0..40),
            strangers in prop::collection::vec("(c|\\x00|é|-|z){0,5}", 0..20),
        ) {
            let unique: indexmap::IndexSet<String> = ids.into_iter().collect();
            let arena = IdList::of(unique.iter());
            let positions = Positions::of(&arena);
            let mut asked: Vec<&str> = unique.iter().map(String::as_str).collect();
            asked.extend(strangers.iter().map(String::as_str));
            for chunk in asked.chunks(LOOKUP_BATCH) {
                let mut found = [Some(usize::MAX); LOOKUP_BATCH];
                positions.get_batch(chunk, &mut found);
                for (id, got) in chunk.iter().zip(found) {
                    let want = unique.get_index_of(*id);
                    prop_assert_eq!(got, want);
                    prop_assert_eq!(positions.get(id), want);
                    let mut guess = 0;
                    prop_assert_eq!(positions.find(id, &mut guess), want);
                }
            }
        }
    }

    proptest! {
        /// Ranks order ids exactly as comparing the strings does, also where ids share
        /// their first 16 bytes, are prefixes of each other, hold NUL bytes (zero
        /// padding must not tie them wrongly) or multi-byte characters; the nodes listed
        /// by id are the ranks inverted.
        #[test]
        fn id_ranks_order_ids_as_strings_do(
            ids in prop::collection::hash_set("(component-topic-|a|\\x00|é|z){0,5}", 1..60),
        ) {
            let mut graph = Graph::default();
            for id in &ids {
                graph.nodes.insert(id.clone(), Node::new(id));
            }
            let structure = graph.structure();
            let rank = structure.id_rank();
            let keys: Vec<&String> = graph.nodes.keys().collect();
            for a in 0..keys.len() {
                for b in 0..keys.len() {
                    prop_assert_eq!(rank[a].cmp(&rank[b]), keys[a].cmp(keys[b]));
                }
            }
            let by_id = structure.nodes_by_id();
            prop_assert_eq!(by_id.len(), keys.len());
            for (r, &i) in by_id.iter().enumerate() {
                prop_assert_eq!(rank[i as usize] as usize, r);
            }
        }
    }
}
