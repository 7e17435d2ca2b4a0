//! The derived structure of a graph: where its edges and versions point, as node
//! positions, resolved once per change of the graph's keys (see
//! [`crate::graph::Graph::structure`]) so that rendering, charging and search never
//! hash ids on every call.

use crate::model::{EdgeKey, char_len};
use std::fmt;

/// One end of an edge: the length of its text, and the node it names in this graph.
/// Kept in 32-bit fields: a settled tick streams every edge of the level, so their size
/// is its memory traffic.
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
    /// The edges touching each node and the nodes at their other ends.
    incidence: Incidence,
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

/// Ids laid end to end in one buffer, one allocation instead of one per id: a graph's
/// node ids (resolving edge ends and sorting ids then read one compact block) and the
/// ids a render lists.
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

    pub(crate) fn len(&self) -> usize {
        self.ends.len() - 1
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

/// Node positions by id, for resolving edge ends and version keys.
struct Positions<'a> {
    ids: &'a IdList,
    // FxHash: the ids are our own, and SipHash's flooding resistance cost more than
    // the lookups.
    by_id: rustc_hash::FxHashMap<&'a str, u32>,
}

impl<'a> Positions<'a> {
    fn of(ids: &'a IdList) -> Positions<'a> {
        let mut by_id =
            rustc_hash::FxHashMap::with_capacity_and_hasher(ids.len(), Default::default());
        // Positions fit 32 bits: a graph of four billion nodes is not loaded.
        by_id.extend(ids.iter().zip(0u32..));
        Positions { ids, by_id }
    }

    fn get(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).map(|&i| i as usize)
    }

    /// The position of `id`, trying `*guess` and the one after first (lookups that
    /// arrive in node order, such as a node's edges and the versions, find their id
    /// there without hashing it); `*guess` then holds the position found.
    fn find(&self, id: &str, guess: &mut usize) -> Option<usize> {
        for at in [*guess, *guess + 1] {
            // Ids are unique, so a match there is the answer.
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
        edge_keys: impl ExactSizeIterator<Item = &'k EdgeKey> + Clone,
        version_keys: impl Iterator<Item = &'k String>,
        stamps: [u64; 3],
    ) -> Structure {
        let ids = IdList::of(node_ids);
        let n = ids.len();
        let positions = Positions::of(&ids);
        // The `to` ends (anywhere in the graph) in a pass of their own: with nothing else
        // in its body, the CPU overlaps the cache misses of consecutive lookups, which
        // each edge's other work would serialise.
        let to_nodes: Vec<Option<u32>> = edge_keys
            .clone()
            .map(|k| positions.get(k.to()).map(|i| i as u32))
            .collect();
        // `from` ends are usually grouped, in node order.
        let mut from_guess = 0;
        let edges: Vec<EdgeRef> = edge_keys
            .zip(to_nodes)
            .map(|(k, to)| {
                let from = positions.find(k.from(), &mut from_guess);
                EdgeRef::new(
                    EdgeEnd::new(char_len(k.from()), from),
                    EdgeEnd::new(char_len(k.to()), to.map(|i| i as usize)),
                    char_len(k.rel()),
                )
            })
            .collect();
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
        drop(positions); // before the incidence lists are allocated: a lower peak
        let incidence = Incidence::of(n, edges.iter().map(|e| [e.from.node(), e.to.node()]));
        let id_chars = (0..n).map(|i| char_len(ids.get(i))).collect();
        Structure {
            stamps,
            edges,
            incidence,
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

    /// The positions of the edges touching node `i` (a self-loop once), in edge order.
    pub fn incident(&self, i: usize) -> &[u32] {
        self.incidence.edges(i)
    }

    /// The other ends of the edges touching node `i`, beside [`Structure::incident`]:
    /// `i` itself for a self-loop, [`NOT_A_NODE`] for an end that names no node here.
    pub fn neighbours(&self, i: usize) -> &[u32] {
        self.incidence.others(i)
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

/// Incidence lists of `n` nodes in one flat list: the edges touching each node, in
/// edge order, and beside each the node at the edge's other end. The one builder of
/// adjacency: a graph's [`Structure`] and search's connection paths both use it.
#[derive(Debug)]
pub(crate) struct Incidence {
    /// Node `i` owns entries `starts[i]..starts[i + 1]`.
    starts: Vec<usize>,
    edges: Vec<u32>,
    others: Vec<u32>,
}

impl Incidence {
    /// The lists of nodes `0..n` for edges given by their two ends in edge order (edge
    /// `k` is the `k`th pair; `None` for an end that names none of the nodes). An edge is
    /// listed under each node it names, a self-loop once, with the other end beside it
    /// ([`NOT_A_NODE`] when that end names no node).
    pub(crate) fn of(
        n: usize,
        ends: impl Iterator<Item = [Option<usize>; 2]> + Clone,
    ) -> Incidence {
        // Under `a` naming `b`, then under `b` naming `a` unless it is a self-loop.
        let listed = |[a, b]: [Option<usize>; 2]| [(a, b), (b.filter(|&b| Some(b) != a), a)];
        let mut starts = vec![0usize; n + 1];
        for pair in ends.clone() {
            for (at, _) in listed(pair) {
                if let Some(i) = at {
                    starts[i + 1] += 1;
                }
            }
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        let mut edges = vec![0u32; starts[n]];
        let mut others = vec![NOT_A_NODE; starts[n]];
        let mut fill = starts.clone();
        // Edge numbers and positions fit 32 bits: they count what a graph in memory holds.
        for (k, pair) in ends.enumerate() {
            for (at, other) in listed(pair) {
                if let Some(i) = at {
                    edges[fill[i]] = k as u32;
                    others[fill[i]] = other.map_or(NOT_A_NODE, |m| m as u32);
                    fill[i] += 1;
                }
            }
        }
        Incidence {
            starts,
            edges,
            others,
        }
    }

    /// The edges touching node `i`, in edge order.
    pub(crate) fn edges(&self, i: usize) -> &[u32] {
        &self.edges[self.starts[i]..self.starts[i + 1]]
    }

    /// The other ends of [`Incidence::edges`], beside them.
    pub(crate) fn others(&self, i: usize) -> &[u32] {
        &self.others[self.starts[i]..self.starts[i + 1]]
    }
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
        assert!(IdList::default().len() == 0 && IdList::default().iter().next().is_none());
    }

    proptest! {
        /// Every id is found at its position, whatever the guess, and nothing else is
        /// found.
        #[test]
        fn positions_find_every_id_and_nothing_else(
            ids in prop::collection::vec("(c|\\x00|é|-){0,4}", 0..40),
            strangers in prop::collection::vec("(c|\\x00|é|-|z){0,5}", 0..20),
            guess in 0usize..45,
        ) {
            let unique: indexmap::IndexSet<String> = ids.into_iter().collect();
            let arena = IdList::of(unique.iter());
            let positions = Positions::of(&arena);
            for id in unique.iter().chain(&strangers) {
                let want = unique.get_index_of(id);
                prop_assert_eq!(positions.get(id), want);
                let mut at = guess;
                prop_assert_eq!(positions.find(id, &mut at), want);
                if let Some(want) = want {
                    prop_assert_eq!(at, want);
                }
            }
        }

        /// Each node lists the edges naming it (a self-loop once) in edge order, with
        /// the other end beside each: what a walk over every edge finds.
        #[test]
        fn incidence_lists_each_edge_under_each_node_it_names(
            n in 0usize..8,
            ends in prop::collection::vec((prop::option::of(0usize..8), prop::option::of(0usize..8)), 0..30),
        ) {
            let ends: Vec<[Option<usize>; 2]> = ends
                .into_iter()
                .map(|(a, b)| [a.filter(|&a| a < n), b.filter(|&b| b < n)])
                .collect();
            let lists = Incidence::of(n, ends.iter().copied());
            for i in 0..n {
                let mut want: Vec<(u32, u32)> = Vec::new();
                for (k, &[a, b]) in ends.iter().enumerate() {
                    let name = |end: Option<usize>| end.map_or(NOT_A_NODE, |m| m as u32);
                    if a == Some(i) {
                        want.push((k as u32, name(b)));
                    } else if b == Some(i) {
                        want.push((k as u32, name(a)));
                    }
                }
                let got: Vec<(u32, u32)> = lists
                    .edges(i)
                    .iter()
                    .copied()
                    .zip(lists.others(i).iter().copied())
                    .collect();
                prop_assert_eq!(got, want);
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
