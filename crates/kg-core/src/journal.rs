//! Undo records for one mutation, so that a save that fails leaves memory as it was.

use crate::graph::Graph;
use crate::model::EdgeKey;
use indexmap::IndexMap;
use serde_json::Value;
use std::hash::Hash;

/// The previous state of every entry a mutation touched, in the order touched.
#[derive(Debug, Default)]
pub struct Journal {
    steps: Vec<Undo>,
}

/// One entry as it was: its position and value, or `None` when it did not exist.
type Before<K, V> = (K, Option<(usize, V)>);

#[derive(Debug)]
enum Undo {
    Node(Before<String, crate::model::Node>),
    Edge(Before<EdgeKey, crate::model::Edge>),
    Version(Before<String, crate::model::Version>),
    Progress(Before<String, Value>),
}

/// `map[key]` as it was, for [`restore`].
fn before<K: Hash + Eq + Clone, V: Clone>(map: &IndexMap<K, V>, key: &K) -> Before<K, V> {
    let prev = map.get_full(key).map(|(i, _, v)| (i, v.clone()));
    (key.clone(), prev)
}

/// Put `map[key]` back as [`before`] saw it, at its old position.
fn restore<K: Hash + Eq, V>(map: &mut IndexMap<K, V>, (key, prev): Before<K, V>) {
    map.shift_remove(&key);
    if let Some((i, value)) = prev {
        let at = i.min(map.len());
        map.shift_insert(at, key, value);
    }
}

impl Journal {
    /// Remember node `id` of `g` before it changes.
    pub(crate) fn node(&mut self, g: &Graph, id: &str) {
        self.steps
            .push(Undo::Node(before(&g.nodes, &id.to_string())));
    }

    /// Remember edge `key` of `g` before it changes.
    pub(crate) fn edge(&mut self, g: &Graph, key: &EdgeKey) {
        self.steps.push(Undo::Edge(before(&g.edges, key)));
    }

    /// Remember version entry `key` of `g` before it changes.
    pub(crate) fn version(&mut self, g: &Graph, key: &str) {
        self.steps
            .push(Undo::Version(before(&g.versions, &key.to_string())));
    }

    /// Remember progress entry `key` of `g` before it changes.
    pub(crate) fn progress(&mut self, g: &Graph, key: &str) {
        self.steps
            .push(Undo::Progress(before(&g.progress, &key.to_string())));
    }

    /// Undo every remembered change, newest first.
    pub(crate) fn rollback(self, g: &mut Graph) {
        for step in self.steps.into_iter().rev() {
            match step {
                Undo::Node(entry) => restore(&mut g.nodes, entry),
                Undo::Edge(entry) => restore(&mut g.edges, entry),
                Undo::Version(entry) => restore(&mut g.versions, entry),
                Undo::Progress(entry) => restore(&mut g.progress, entry),
            }
        }
    }
}
