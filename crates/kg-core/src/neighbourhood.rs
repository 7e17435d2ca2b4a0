//! Neighbourhoods: a node and everything within `k` hops of it in one level's graph,
//! for the graph view's neighbourhood mode (and the tray, and tests), so that they all
//! share one answer.
//!
//! The graph is taken as undirected: an edge joins its two ends whichever way it
//! points. Every tier counts (active, archived and orphaned nodes alike). An edge end is
//! one of three things, resolved the way the graph view resolves it:
//!
//! - a node of this graph: a hop may pass through it;
//! - an artifact path (it is no node here and holds `/` or `~`): listed with its
//!   distance, but never passed through (a file many notes touch would otherwise join
//!   them all), so an artifact is at most `k` hops away and no node is reached by way
//!   of one;
//! - anything else (a node of the other level, or a node since deleted): left out, with
//!   its edges; [`Neighbourhood::outside_edges`] counts the edges of the listed nodes
//!   that were left out this way, so a reader knows some exist.

use crate::graph::Graph;
use crate::model::{EdgeKey, Tier, is_artifact_ref};
use petgraph::graph::{NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use rustc_hash::FxHashMap;
use std::ops::RangeInclusive;

/// The hop counts a neighbourhood may reach: 1 to 3.
pub const NEIGHBOURHOOD_HOPS: RangeInclusive<usize> = 1..=3;

/// Why there is no neighbourhood to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NeighbourhoodError {
    /// The centre is no node of this graph (in any tier).
    #[error("Node '{0}' not found")]
    UnknownNode(String),
    /// `k` is outside [`NEIGHBOURHOOD_HOPS`].
    #[error("{}", hops_message(&.0.to_string()))]
    Hops(usize),
}

/// The message for a hop count that is not 1, 2 or 3, given as `k` (its text as the
/// caller sent it, which need not be a number).
pub fn hops_message(k: &str) -> String {
    format!(
        "Invalid k '{k}': a neighbourhood reaches {} to {} hops",
        NEIGHBOURHOOD_HOPS.start(),
        NEIGHBOURHOOD_HOPS.end()
    )
}

/// A node of the neighbourhood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour<'g> {
    /// The node's id.
    pub id: &'g str,
    /// Hops from the centre, ignoring edge direction: 0 for the centre itself.
    pub distance: usize,
    /// The node's tier.
    pub tier: Tier,
}

/// An artifact path one of the neighbourhood's nodes points at (or is pointed at from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighbourArtifact<'g> {
    /// The path, as the edge names it.
    pub path: &'g str,
    /// Hops from the centre: one more than the nearest node touching it, at most `k`.
    pub distance: usize,
}

/// A node and what lies within `k` hops of it: see the module documentation for how
/// edge ends are counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbourhood<'g> {
    /// The centre's id.
    pub centre: &'g str,
    /// The hop count asked for.
    pub k: usize,
    /// The nodes within `k` hops, the centre first: by distance, then id.
    pub nodes: Vec<Neighbour<'g>>,
    /// The artifact paths within `k` hops: by distance, then path.
    pub artifacts: Vec<NeighbourArtifact<'g>>,
    /// The edges whose two ends are both listed (among the nodes or the artifacts), by
    /// `from`, `to`, then `rel`.
    pub edges: Vec<&'g EdgeKey>,
    /// Edges touching a listed node whose other end is neither a node of this graph nor
    /// an artifact path (a node of the other level, or a deleted one): left out.
    pub outside_edges: usize,
}

/// A vertex of the traversal graph.
#[derive(Debug, Clone, Copy)]
enum End<'g> {
    /// A node of the graph, by position.
    Node(usize),
    /// An artifact path: reached, never passed through.
    Artifact(&'g str),
}

/// The nodes and artifact paths within `k` hops of node `id` (any tier) in `graph`,
/// edge direction ignored, with the edges among them. `k` must be in
/// [`NEIGHBOURHOOD_HOPS`].
pub fn neighbourhood<'g>(
    graph: &'g Graph,
    id: &str,
    k: usize,
) -> Result<Neighbourhood<'g>, NeighbourhoodError> {
    if !NEIGHBOURHOOD_HOPS.contains(&k) {
        return Err(NeighbourhoodError::Hops(k));
    }
    let Some((centre, centre_id, _)) = graph.nodes.get_full(id) else {
        return Err(NeighbourhoodError::UnknownNode(id.to_string()));
    };
    let structure = graph.structure();

    // Vertices: the nodes at their positions, then each artifact path once. Edge
    // weights: positions among the graph's edges.
    let mut net: UnGraph<End<'g>, usize> =
        UnGraph::with_capacity(graph.nodes.len(), graph.edges.len());
    for i in 0..graph.nodes.len() {
        net.add_node(End::Node(i));
    }
    let mut artifacts: FxHashMap<&'g str, NodeIndex> = FxHashMap::default();
    let mut outside: Vec<usize> = Vec::new(); // per edge with a foreign end: its node
    for (e, (key, ends)) in graph.edges.keys().zip(&structure.edges).enumerate() {
        let mut vertex = |reference: &'g str, node: Option<usize>| match node {
            Some(i) => Some(NodeIndex::new(i)),
            None if is_artifact_ref(reference) => Some(
                *artifacts
                    .entry(reference)
                    .or_insert_with(|| net.add_node(End::Artifact(reference))),
            ),
            None => None,
        };
        let from = vertex(key.from(), ends.from.node());
        let to = vertex(key.to(), ends.to.node());
        match (from, to, ends.from.node(), ends.to.node()) {
            (Some(a), Some(b), _, _) => {
                net.add_edge(a, b, e);
            }
            (None, _, _, Some(node)) | (_, None, Some(node), _) => outside.push(node),
            _ => {} // an edge between two ends that are no node here: nothing to follow
        }
    }

    // Breadth first, one layer per hop, expanding nodes only.
    let mut distance: Vec<Option<usize>> = vec![None; net.node_count()];
    distance[centre] = Some(0);
    let mut frontier = vec![NodeIndex::new(centre)];
    for hop in 1..=k {
        let mut next = Vec::new();
        for v in frontier {
            if matches!(net[v], End::Artifact(_)) {
                continue;
            }
            for w in net.neighbors(v) {
                if distance[w.index()].is_none() {
                    distance[w.index()] = Some(hop);
                    next.push(w);
                }
            }
        }
        frontier = next;
    }

    let mut nodes = Vec::new();
    let mut found_artifacts = Vec::new();
    for v in net.node_indices() {
        let Some(d) = distance[v.index()] else {
            continue;
        };
        match net[v] {
            End::Node(i) => {
                if let Some((id, node)) = graph.nodes.get_index(i) {
                    nodes.push(Neighbour {
                        id: id.as_str(),
                        distance: d,
                        tier: node.tier(),
                    });
                }
            }
            End::Artifact(path) => found_artifacts.push(NeighbourArtifact { path, distance: d }),
        }
    }
    nodes.sort_by(|a, b| (a.distance, a.id).cmp(&(b.distance, b.id)));
    found_artifacts.sort_by(|a, b| (a.distance, a.path).cmp(&(b.distance, b.path)));

    let keys: Vec<&'g EdgeKey> = graph.edges.keys().collect();
    let mut edges: Vec<&'g EdgeKey> = net
        .edge_references()
        .filter(|e| {
            distance[e.source().index()].is_some() && distance[e.target().index()].is_some()
        })
        .map(|e| keys[*e.weight()])
        .collect();
    edges.sort();
    let outside_edges = outside
        .iter()
        .filter(|&&node| distance[node].is_some())
        .count();

    Ok(Neighbourhood {
        centre: centre_id.as_str(),
        k,
        nodes,
        artifacts: found_artifacts,
        edges,
        outside_edges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Edge, Node, field};
    use proptest::prelude::*;
    use serde_json::Value;
    use std::collections::{BTreeMap, BTreeSet, VecDeque};

    fn graph(nodes: &[&str], edges: &[(&str, &str, &str)]) -> Graph {
        let mut g = Graph::default();
        for id in nodes {
            g.nodes.insert((*id).to_string(), Node::new(id));
        }
        for (from, to, rel) in edges {
            let key = EdgeKey::new(from, to, rel);
            g.edges.insert(key.clone(), Edge::new(key));
        }
        g
    }

    /// `(id, distance)` of the nodes, in the answer's order.
    fn ids<'a>(n: &'a Neighbourhood<'_>) -> Vec<(&'a str, usize)> {
        n.nodes.iter().map(|x| (x.id, x.distance)).collect()
    }

    fn edge_texts(n: &Neighbourhood<'_>) -> Vec<String> {
        n.edges.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn hops_ignore_direction_and_stop_at_k() {
        // a → b ← c → d → e, and z alone.
        let g = graph(
            &["e", "d", "c", "b", "a", "z"],
            &[
                ("a", "b", "r"),
                ("c", "b", "r"),
                ("c", "d", "r"),
                ("d", "e", "r"),
            ],
        );
        let one = neighbourhood(&g, "b", 1).unwrap();
        assert_eq!(one.centre, "b");
        assert_eq!(ids(&one), [("b", 0), ("a", 1), ("c", 1)]);
        assert_eq!(edge_texts(&one), ["a->b:r", "c->b:r"]);
        let three = neighbourhood(&g, "b", 3).unwrap();
        assert_eq!(
            ids(&three),
            [("b", 0), ("a", 1), ("c", 1), ("d", 2), ("e", 3)]
        );
        assert_eq!(three.edges.len(), 4);
        assert_eq!(ids(&neighbourhood(&g, "z", 3).unwrap()), [("z", 0)]);
    }

    #[test]
    fn every_tier_counts_and_is_reported() {
        let mut g = graph(&["a", "b", "c"], &[("a", "b", "r"), ("b", "c", "r")]);
        g.node_mut("b")
            .unwrap()
            .set(field::ARCHIVED, Value::Bool(true));
        g.node_mut("c")
            .unwrap()
            .set(field::ORPHANED_TS, Value::from(1.0));
        let n = neighbourhood(&g, "a", 2).unwrap();
        let tiers: Vec<(&str, Tier)> = n.nodes.iter().map(|x| (x.id, x.tier)).collect();
        assert_eq!(
            tiers,
            [
                ("a", Tier::Active),
                ("b", Tier::Archived),
                ("c", Tier::Orphaned)
            ]
        );
    }

    #[test]
    fn artifacts_are_listed_but_not_passed_through_and_foreign_ends_are_counted() {
        let g = graph(
            &["a", "b", "c"],
            &[
                ("a", "src/x.rs", "in"),
                ("b", "src/x.rs", "in"),
                ("a", "~/notes.md", "in"),
                ("c", "src/y.rs", "in"),
                ("a", "user-pref", "follows"), // a node of the other level
                ("b", "gone", "uses"),         // a deleted node
                ("a", "c", "r"),
            ],
        );
        let n = neighbourhood(&g, "a", 2).unwrap();
        // b shares a file with a, but a file is no path between notes.
        assert_eq!(ids(&n), [("a", 0), ("c", 1)]);
        let paths: Vec<(&str, usize)> = n.artifacts.iter().map(|x| (x.path, x.distance)).collect();
        assert_eq!(paths, [("src/x.rs", 1), ("~/notes.md", 1), ("src/y.rs", 2)]);
        assert_eq!(
            edge_texts(&n),
            [
                "a->c:r",
                "a->src/x.rs:in",
                "a->~/notes.md:in",
                "c->src/y.rs:in"
            ]
        );
        assert_eq!(n.outside_edges, 1);
        // At k = 1 the file c points at is two hops away.
        let n = neighbourhood(&g, "a", 1).unwrap();
        assert_eq!(n.artifacts.len(), 2);
        assert_eq!(n.edges.len(), 3);
    }

    #[test]
    fn self_loops_and_parallel_edges_are_single_hops() {
        let g = graph(
            &["a", "b"],
            &[("a", "a", "r"), ("a", "b", "r"), ("b", "a", "s")],
        );
        let n = neighbourhood(&g, "a", 1).unwrap();
        assert_eq!(ids(&n), [("a", 0), ("b", 1)]);
        assert_eq!(edge_texts(&n), ["a->a:r", "a->b:r", "b->a:s"]);
    }

    #[test]
    fn bad_requests_are_refused() {
        let g = graph(&["a"], &[]);
        assert_eq!(
            neighbourhood(&g, "nope", 1),
            Err(NeighbourhoodError::UnknownNode("nope".into()))
        );
        for k in [0, 4, usize::MAX] {
            assert_eq!(neighbourhood(&g, "a", k), Err(NeighbourhoodError::Hops(k)));
        }
        assert_eq!(
            NeighbourhoodError::Hops(4).to_string(),
            "Invalid k '4': a neighbourhood reaches 1 to 3 hops"
        );
        // An artifact is no node to centre on.
        let g = graph(&["a"], &[("a", "src/x.rs", "in")]);
        assert!(neighbourhood(&g, "src/x.rs", 1).is_err());
    }

    /// A plain breadth-first search over the edge list, as the module documents it:
    /// (node distances, artifact distances).
    fn plain_bfs(
        g: &Graph,
        centre: &str,
        k: usize,
    ) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
        let is_node = |s: &str| g.nodes.contains_key(s);
        let mut nodes = BTreeMap::from([(centre.to_string(), 0)]);
        let mut artifacts = BTreeMap::new();
        let mut queue = VecDeque::from([(centre.to_string(), 0)]);
        while let Some((v, d)) = queue.pop_front() {
            if d == k {
                continue;
            }
            for key in g.edges.keys() {
                let other = if key.from() == v {
                    key.to()
                } else if key.to() == v {
                    key.from()
                } else {
                    continue;
                };
                if is_node(other) {
                    if !nodes.contains_key(other) {
                        nodes.insert(other.to_string(), d + 1);
                        queue.push_back((other.to_string(), d + 1));
                    }
                } else if is_artifact_ref(other) {
                    artifacts.entry(other.to_string()).or_insert(d + 1);
                }
            }
        }
        (nodes, artifacts)
    }

    proptest! {
        /// The petgraph traversal agrees with a plain BFS on distances, and lists
        /// exactly the edges between listed ends, in a deterministic order.
        #[test]
        fn agrees_with_a_plain_bfs(
            n in 1usize..12,
            picks in prop::collection::vec((0usize..40, 0usize..40, 0u8..6), 0..30),
            foreign in prop::collection::vec((0usize..40, 0usize..3), 0..4),
            centre in 0usize..40,
            k in 1usize..=3,
        ) {
            let ids: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let mut g = graph(&refs, &[]);
            crate::graph::add_test_edges(&mut g, picks);
            for (a, b) in foreign {
                let key = EdgeKey::new(&format!("x{b}"), &ids[a % n], "r");
                g.edges.insert(key.clone(), Edge::new(key));
            }
            let centre = &ids[centre % n];
            let got = neighbourhood(&g, centre, k).unwrap();
            let (nodes, artifacts) = plain_bfs(&g, centre, k);

            let got_nodes: BTreeMap<String, usize> =
                got.nodes.iter().map(|x| (x.id.to_string(), x.distance)).collect();
            prop_assert_eq!(&got_nodes, &nodes);
            let got_artifacts: BTreeMap<String, usize> =
                got.artifacts.iter().map(|x| (x.path.to_string(), x.distance)).collect();
            prop_assert_eq!(&got_artifacts, &artifacts);

            let order: Vec<(usize, &str)> = got.nodes.iter().map(|x| (x.distance, x.id)).collect();
            prop_assert!(order.windows(2).all(|w| w[0] < w[1]), "{:?}", order);
            prop_assert_eq!(got.nodes[0].id, centre.as_str());
            let order: Vec<(usize, &str)> =
                got.artifacts.iter().map(|x| (x.distance, x.path)).collect();
            prop_assert!(order.windows(2).all(|w| w[0] < w[1]), "{:?}", order);

            let listed = |s: &str| nodes.contains_key(s) || artifacts.contains_key(s);
            let expected: BTreeSet<&EdgeKey> = g
                .edges
                .keys()
                .filter(|key| listed(key.from()) && listed(key.to()))
                .collect();
            prop_assert!(got.edges.windows(2).all(|w| w[0] < w[1]));
            prop_assert_eq!(got.edges.iter().copied().collect::<BTreeSet<_>>(), expected);
            let outside = g
                .edges
                .keys()
                .filter(|key| {
                    let foreign = |s: &str| !g.nodes.contains_key(s) && !is_artifact_ref(s);
                    (nodes.contains_key(key.from()) && foreign(key.to()))
                        || (nodes.contains_key(key.to()) && foreign(key.from()))
                })
                .count();
            prop_assert_eq!(got.outside_edges, outside);
        }
    }
}
