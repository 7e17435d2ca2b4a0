//! The reverse index over `touches`: which nodes of a graph name a file. File recall
//! asks it on every file an agent reads or edits, so it is built once per change of
//! the graph's touches and kept by the store beside the graph.

use crate::graph::Graph;
use crate::model::touches_epoch;
use crate::touch_path;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// File key → the positions of the nodes touching it, in node order.
#[derive(Debug, Default)]
pub struct TouchIndex {
    keys: FxHashMap<String, Vec<usize>>,
    /// What the index was built from: the node map's stamp, the touches epoch and the
    /// project folder relative entries were placed in.
    built_from: (u64, u64, Option<PathBuf>),
}

impl TouchIndex {
    /// Index `graph`'s touches; relative entries are placed in `root` (the project
    /// folder; `None` for the user graph, which then indexes absolute entries only).
    pub fn build(graph: &Graph, home: &Path, root: Option<&Path>) -> TouchIndex {
        let epoch = touches_epoch();
        let mut keys: FxHashMap<String, Vec<usize>> = FxHashMap::default();
        for (i, node) in graph.nodes.values().enumerate() {
            for entry in node.touches() {
                for key in touch_path::touch_keys(&entry, home, root) {
                    let ids = keys.entry(key).or_default();
                    if ids.last() != Some(&i) {
                        ids.push(i);
                    }
                }
            }
        }
        TouchIndex {
            keys,
            built_from: (graph.nodes.stamp(), epoch, root.map(Path::to_path_buf)),
        }
    }

    /// Whether the index still describes `graph` with relative entries in `root`.
    pub fn is_current(&self, graph: &Graph, root: Option<&Path>) -> bool {
        let (stamp, epoch, built_root) = &self.built_from;
        *stamp == graph.nodes.stamp() && *epoch == touches_epoch() && built_root.as_deref() == root
    }

    /// Positions of the nodes touching a file known under any of `keys`, each once,
    /// in node order.
    pub fn nodes_touching(&self, keys: &[String]) -> Vec<usize> {
        let mut found: Vec<usize> = keys
            .iter()
            .filter_map(|k| self.keys.get(k))
            .flatten()
            .copied()
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, field};
    use serde_json::json;

    fn node(id: &str, touches: serde_json::Value) -> Node {
        let mut n = Node::new(id);
        n.set(field::GIST, json!("g"));
        n.set(field::TOUCHES, touches);
        n
    }

    #[test]
    fn the_index_follows_touch_changes() {
        let root = Path::new("/kg-core-nonexistent/p");
        let mut g = Graph::default();
        g.nodes
            .insert("a".into(), node("a", json!(["src/a.rs:1-9", "/abs/x.md"])));
        g.nodes
            .insert("b".into(), node("b", json!(["./src/a.rs (fn main)"])));
        let index = TouchIndex::build(&g, Path::new("/h"), Some(root));
        assert_eq!(index.nodes_touching(&["src/a.rs".into()]), [0, 1]);
        assert_eq!(index.nodes_touching(&["/abs/x.md".into()]), [0]);
        assert!(index.is_current(&g, Some(root)));
        g.node_mut("b")
            .expect("b")
            .set(field::TOUCHES, json!(["docs/b.md"]));
        assert!(!index.is_current(&g, Some(root)), "an in-place touch edit");
        let index = TouchIndex::build(&g, Path::new("/h"), Some(root));
        assert_eq!(index.nodes_touching(&["src/a.rs".into()]), [0]);
        g.nodes.insert("c".into(), node("c", json!([])));
        assert!(!index.is_current(&g, Some(root)), "a node added");
        assert!(!index.is_current(&g, None), "another root");
    }
}
