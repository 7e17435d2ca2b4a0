//! Undo records for one mutation, so that a save that fails leaves memory as it was,
//! a dry run leaves no trace, and a person can take back a step of the graph view.

use crate::graph::Graph;
use crate::model::EdgeKey;
use indexmap::IndexMap;
use serde_json::Value;
use std::hash::Hash;

/// The previous state of every entry a mutation touched, in the order touched.
#[derive(Debug, Default, Clone)]
pub struct Journal {
    steps: Vec<Undo>,
}

/// One entry of a graph and its value, `None` when it does not exist.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) key: EntryKey,
    pub(crate) value: Option<Value>,
}

/// Which entry of a graph.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum EntryKey {
    Node(String),
    Edge(EdgeKey),
    Version(String),
    Progress(String),
}

impl std::fmt::Display for EntryKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryKey::Node(id) => write!(f, "node '{id}'"),
            EntryKey::Edge(key) => write!(f, "edge {key}"),
            EntryKey::Version(key) => write!(f, "the version of {key}"),
            EntryKey::Progress(key) => write!(f, "task '{key}'"),
        }
    }
}

/// One entry as it was: its position and value, or `None` when it did not exist.
type Before<K, V> = (K, Option<(usize, V)>);

#[derive(Debug, Clone)]
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

    /// Every entry the journal remembers, as it is in `g` now (each once, in the order
    /// first remembered): what a later undo checks nobody has changed since.
    pub(crate) fn current_entries(&self, g: &Graph) -> Vec<Entry> {
        let mut seen = std::collections::HashSet::new();
        let mut entries = Vec::new();
        for step in &self.steps {
            let (key, value) = match step {
                Undo::Node((id, _)) => (
                    EntryKey::Node(id.clone()),
                    g.nodes.get(id).map(|n| Value::Object(n.to_object())),
                ),
                Undo::Edge((key, _)) => (
                    EntryKey::Edge(key.clone()),
                    g.edges
                        .get(key)
                        .map(|e| Value::Object(e.as_object().clone())),
                ),
                Undo::Version((key, _)) => (
                    EntryKey::Version(key.clone()),
                    g.versions
                        .get(key)
                        .map(|v| Value::Object(v.as_object().clone())),
                ),
                Undo::Progress((key, _)) => (
                    EntryKey::Progress(key.clone()),
                    g.progress.get(key).cloned(),
                ),
            };
            if seen.insert(key.clone()) {
                entries.push(Entry { key, value });
            }
        }
        entries
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
