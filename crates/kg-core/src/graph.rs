//! [`Graph`]: one level's nodes, edges, versions and progress, with the structure
//! derived from them.

use crate::model::{Edge, EdgeKey, Node, Object, Tier, Version, field};
use crate::structure::Structure;
use crate::tracked::Tracked;
use indexmap::IndexMap;
use serde_json::Value;

/// One graph: a level's nodes, edges, versions and progress, in insertion order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    /// Nodes by id, every tier, in file order. Any mutable access through the map
    /// makes the graph derive its structure (edge ends as positions) again; edit a
    /// node's fields through [`Graph::node_mut`] and its siblings instead.
    pub nodes: Tracked<IndexMap<String, Node>>,
    /// Edges by `(from, to, rel)`, in file order; an end may be a node id (of this or
    /// another level) or an artifact path.
    pub edges: Tracked<IndexMap<EdgeKey, Edge>>,
    /// `_meta.versions`: `node:<id>` / `edge:<from>-><to>:<rel>` → the counter `v`,
    /// time `ts` and `session` of the last client write or promotion; `kg_sync` diffs
    /// on them and recency scoring reads `ts`.
    pub versions: Tracked<IndexMap<String, Version>>,
    /// `_meta.progress`: task id → the state a client stored.
    pub progress: IndexMap<String, Value>,
    structure: StructureCell,
}

/// The memoised [`Structure`] of a graph; never makes two graphs different.
#[derive(Debug, Default)]
struct StructureCell(std::cell::RefCell<Option<std::sync::Arc<Structure>>>);

impl Clone for StructureCell {
    fn clone(&self) -> Self {
        StructureCell(std::cell::RefCell::new(self.get()))
    }
}

impl PartialEq for StructureCell {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl StructureCell {
    fn get(&self) -> Option<std::sync::Arc<Structure>> {
        self.0.borrow().clone()
    }
}

impl Graph {
    /// The node `id`, in any tier.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// A node to change in place. Its id and position stay, so the graph's
    /// derived structure stays current (a node's own derived fields track its changes).
    pub fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        self.nodes.get_mut_in_place(id)
    }

    /// The node at a position, to change in place (see [`Graph::node_mut`]).
    pub fn node_at_mut(&mut self, i: usize) -> Option<&mut Node> {
        self.nodes.get_index_mut_in_place(i)
    }

    /// Every node, to change in place (see [`Graph::node_mut`]).
    pub fn nodes_in_place(&mut self) -> impl Iterator<Item = &mut Node> {
        self.nodes.values_in_place()
    }

    /// Edge ends and version entries as node positions, current for this graph.
    pub(crate) fn structure(&self) -> std::sync::Arc<Structure> {
        let stamps = [
            self.nodes.stamp(),
            self.edges.stamp(),
            self.versions.stamp(),
        ];
        if let Some(s) = self.structure.get().filter(|s| s.is_current(stamps)) {
            return s;
        }
        let fresh = std::sync::Arc::new(Structure::of(
            self.nodes.keys(),
            self.edges.keys(),
            self.versions.keys(),
            stamps,
        ));
        *self.structure.0.borrow_mut() = Some(fresh.clone());
        fresh
    }

    /// Record a write: `v` + 1, `ts` = now, `session` = the acting session.
    pub fn bump_version(&mut self, key: String, now: f64, session: Option<&str>) {
        self.versions
            .get_or_append(&key, || (key.clone(), Version::from_object(Object::new())))
            .bump(now, session);
    }

    /// The node `id`, created as `{"id": id}` at the end when missing.
    pub fn node_entry(&mut self, id: &str) -> &mut Node {
        self.nodes
            .get_or_append(id, || (id.to_string(), Node::new(id)))
    }

    /// The edge `key`, created at the end when missing.
    pub fn edge_entry(&mut self, key: &EdgeKey) -> &mut Edge {
        self.edges
            .get_or_append(key, || (key.clone(), Edge::new(key.clone())))
    }

    /// Ids of every node by tier, in node order.
    pub fn ids_in_tier(&self, tier: Tier) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.tier() == tier)
            .map(|(id, _)| id.as_str())
            .collect()
    }

    /// Heal every malformed gist in place (core.md §2.7b), as a load does; true when
    /// anything changed. Leaked tool-call markup is cut from the gist, and the notes
    /// and touches it carried are recovered when the node had none.
    pub fn heal_gists(&mut self) -> bool {
        let strings =
            |items: Vec<String>| Value::Array(items.into_iter().map(Value::String).collect());
        let mut changed = false;
        for node in self.nodes_in_place() {
            let gist = node.gist().to_string();
            if !crate::heal::is_malformed(&gist) {
                continue;
            }
            let notes = node.get(field::NOTES).map(|_| node.notes());
            let touches = node.get(field::TOUCHES).map(|_| node.touches());
            let healed = crate::heal::heal(&gist, notes.as_deref(), touches.as_deref());
            if healed.changed {
                node.set(field::GIST, Value::String(healed.gist));
                if let Some(n) = healed.notes {
                    node.set(field::NOTES, strings(n));
                }
                if let Some(t) = healed.touches {
                    node.set(field::TOUCHES, strings(t));
                }
                changed = true;
            }
        }
        changed
    }

    /// Remove a node and every edge of this graph touching it; returns the edge count.
    pub fn remove_node(&mut self, id: &str) -> Option<(Node, usize)> {
        let node = self.nodes.shift_remove(id)?;
        let before = self.edges.len();
        self.edges.retain(|k, _| k.from() != id && k.to() != id);
        Some((node, before - self.edges.len()))
    }
}

/// Edges for random test graphs, from `(from, to, kind)` picks among the nodes: kind 0
/// points at an artifact path, kind 1 is a self-loop, any other joins two nodes.
/// Relation names take 1 to 9 characters.
#[cfg(test)]
pub(crate) fn add_test_edges(g: &mut Graph, picks: Vec<(usize, usize, u8)>) {
    let ids: Vec<String> = g.nodes.keys().cloned().collect();
    for (a, b, kind) in picks {
        let from = ids[a % ids.len()].clone();
        let to = match kind {
            0 => format!("src/file{b}.rs"),
            1 => from.clone(),
            _ => ids[b % ids.len()].clone(),
        };
        let key = EdgeKey::new(&from, &to, &"r".repeat(1 + (a + b) % 9));
        g.edges.insert(key.clone(), Edge::new(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::field;

    fn ends(g: &Graph) -> Vec<[Option<usize>; 2]> {
        g.structure()
            .edges
            .iter()
            .map(|e| [e.from.node(), e.to.node()])
            .collect()
    }

    #[test]
    fn the_structure_follows_every_change_of_keys_and_survives_in_place_edits() {
        let mut g = Graph::default();
        g.nodes.insert("a".into(), Node::new("a"));
        g.nodes.insert("b".into(), Node::new("b"));
        let ab = EdgeKey::new("a", "b", "uses");
        g.edges.insert(ab.clone(), Edge::new(ab));
        g.bump_version("node:a".into(), 1.0, None); // a new key: a new structure
        assert_eq!(ends(&g), [[Some(0), Some(1)]]);
        assert_eq!(g.structure().node_versions, [Some(0), None]);
        let before = g.structure();

        // In-place edits keep the derivation; key changes replace it.
        g.node_entry("a")
            .set(field::GIST, Value::String("x".into()));
        if let Some(b) = g.node_mut("b") {
            b.set(field::ARCHIVED, Value::Bool(true));
        }
        g.bump_version("node:a".into(), 2.0, None);
        assert!(std::sync::Arc::ptr_eq(&before, &g.structure()));
        assert_eq!(g.versions["node:a"].ts(), 2.0);

        g.nodes.shift_remove("a");
        assert_eq!(ends(&g), [[None, Some(0)]]);
        let mut copy = g.clone();
        copy.nodes.insert("a".into(), Node::new("a"));
        assert_eq!(ends(&copy), [[Some(1), Some(0)]]);
        assert_eq!(ends(&g), [[None, Some(0)]]);
        // A whole new map never inherits the old derivation.
        copy.nodes = Tracked::new(IndexMap::new());
        assert_eq!(ends(&copy), [[None, None]]);
        assert_eq!(copy.structure().id_rank(), [] as [u32; 0]);
    }
}
