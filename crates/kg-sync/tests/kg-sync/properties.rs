//! The merge's properties over random pairs of edit sequences from a common base.
//!
//! The edits are the store's own (puts, notes, deletes, edges added and removed,
//! endorsements, reads, archiving), made with kg-core's graph calls as the store
//! makes them, at times drawn so that both sides sometimes write in the same second.

use super::T0;
use kg_core::{EdgeKey, Graph, Level, field, float_value, serialize_graph};
use kg_sync::{merge, unresolved_conflicts};
use proptest::prelude::*;
use serde_json::Value;

/// One edit, on node `n<node>` (eight ids, so sides often meet on a node).
#[derive(Debug, Clone)]
enum Edit {
    /// `kg_put_node` with a gist (one of four, so sides sometimes agree).
    Put {
        node: u8,
        gist: u8,
    },
    /// `kg_put_node` adding a note to an existing node.
    Note {
        node: u8,
        note: u8,
    },
    Delete {
        node: u8,
    },
    Link {
        from: u8,
        to: u8,
        rel: u8,
        note: Option<u8>,
    },
    Unlink {
        from: u8,
        to: u8,
        rel: u8,
    },
    /// `kg_useful`.
    Like {
        node: u8,
    },
    /// A single-node read.
    Read {
        node: u8,
    },
    /// Maintenance archiving the node.
    Archive {
        node: u8,
    },
}

fn edit() -> impl Strategy<Value = Edit> {
    let node = 0u8..8;
    prop_oneof![
        3 => (node.clone(), 0u8..4).prop_map(|(node, gist)| Edit::Put { node, gist }),
        2 => (node.clone(), 0u8..4).prop_map(|(node, note)| Edit::Note { node, note }),
        1 => node.clone().prop_map(|node| Edit::Delete { node }),
        2 => (node.clone(), node.clone(), 0u8..2, proptest::option::of(0u8..3))
            .prop_map(|(from, to, rel, note)| Edit::Link { from, to, rel, note }),
        1 => (node.clone(), node.clone(), 0u8..2)
            .prop_map(|(from, to, rel)| Edit::Unlink { from, to, rel }),
        1 => node.clone().prop_map(|node| Edit::Like { node }),
        1 => node.clone().prop_map(|node| Edit::Read { node }),
        1 => node.prop_map(|node| Edit::Archive { node }),
    ]
}

/// Edits with the second (of a few) each happens in.
fn edits(max: usize) -> impl Strategy<Value = Vec<(Edit, u8)>> {
    prop::collection::vec((edit(), 0u8..4), 0..max)
}

fn id(node: u8) -> String {
    format!("n{node}")
}

fn edge_key(from: u8, to: u8, rel: u8) -> EdgeKey {
    EdgeKey::new(&id(from), &id(to), ["uses", "explains"][rel as usize])
}

/// Apply edits as `session` would through the store, starting at `start`.
fn apply(graph: &mut Graph, edits: &[(Edit, u8)], start: f64, session: &str) {
    for (step, (edit, second)) in edits.iter().enumerate() {
        let now = start + step as f64 + f64::from(*second);
        match *edit {
            Edit::Put { node, gist } => {
                let created = !graph.nodes.contains_key(&id(node));
                let n = graph.node_entry(&id(node));
                n.set(field::GIST, Value::String(format!("gist {gist}")));
                if created {
                    n.set(field::CREATED_TS, float_value(now));
                }
                n.remove(field::ARCHIVED);
                n.remove(field::ORPHANED_TS);
                graph.bump_version(format!("node:{}", id(node)), now, Some(session));
            }
            Edit::Note { node, note } => {
                let Some(n) = graph.node_mut(&id(node)) else {
                    continue;
                };
                let mut notes = n.notes();
                notes.push(format!("note {note} by {session}"));
                n.set(
                    field::NOTES,
                    Value::Array(notes.into_iter().map(Value::String).collect()),
                );
                n.remove(field::ARCHIVED);
                n.remove(field::ORPHANED_TS);
                graph.bump_version(format!("node:{}", id(node)), now, Some(session));
            }
            Edit::Delete { node } => {
                graph.remove_node(&id(node));
            }
            Edit::Link {
                from,
                to,
                rel,
                note,
            } => {
                let key = edge_key(from, to, rel);
                let edge = graph.edge_entry(&key);
                if let Some(note) = note {
                    edge.set_notes(vec![format!("edge note {note}")]);
                }
                graph.bump_version(format!("edge:{key}"), now, Some(session));
            }
            Edit::Unlink { from, to, rel } => {
                graph.edges.shift_remove(&edge_key(from, to, rel));
            }
            Edit::Like { node } => {
                if let Some(n) = graph.node_mut(&id(node)) {
                    let mut likes = match n.get(field::USEFUL_TS) {
                        Some(Value::Array(likes)) => likes.clone(),
                        _ => Vec::new(),
                    };
                    likes.push(float_value(now));
                    n.set(field::USEFUL_TS, Value::Array(likes));
                }
            }
            Edit::Read { node } => {
                if let Some(n) = graph.node_mut(&id(node)) {
                    n.set(field::LAST_READ_TS, float_value(now));
                }
            }
            Edit::Archive { node } => {
                if let Some(n) = graph.node_mut(&id(node)) {
                    n.set(field::ARCHIVED, Value::Bool(true));
                }
            }
        }
    }
}

fn text(graph: &Graph) -> String {
    serialize_graph(graph, Level::Project, Some("/home/ana/shop"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn merging_is_symmetric_and_an_unchanged_side_returns_the_other(
        base_edits in edits(20),
        a_edits in edits(15),
        b_edits in edits(15),
    ) {
        let mut base = Graph::default();
        apply(&mut base, &base_edits, T0, "s0");
        let (mut a, mut b) = (base.clone(), base.clone());
        // Both sides write in the same seconds, so ties in write time happen.
        apply(&mut a, &a_edits, T0 + 100.0, "laptop");
        apply(&mut b, &b_edits, T0 + 100.0, "desktop");
        let (base_text, a_text, b_text) = (text(&base), text(&a), text(&b));
        let (base_text, a_text, b_text) = (base_text.as_bytes(), a_text.as_bytes(), b_text.as_bytes());

        let ab = merge(base_text, a_text, b_text).expect("merges");
        let ba = merge(base_text, b_text, a_text).expect("merges");
        prop_assert_eq!(&ab.text, &ba.text);

        prop_assert_eq!(&merge(base_text, base_text, b_text).expect("merges").text, &text(&b));
        prop_assert_eq!(&merge(base_text, a_text, base_text).expect("merges").text, &text(&a));
        prop_assert_eq!(&merge(base_text, a_text, a_text).expect("merges").text, &text(&a));

        // What both sides hold, and what one side added, is in the result.
        let merged = &ab.file.graph;
        for id in a.nodes.keys().chain(b.nodes.keys()) {
            let in_both = a.nodes.contains_key(id) && b.nodes.contains_key(id);
            let added = !base.nodes.contains_key(id);
            if in_both || added {
                prop_assert!(merged.nodes.contains_key(id), "{} is lost", id);
            }
        }
        // A node one side deleted and the other left exactly as it was is gone.
        for (id, node) in base.nodes.iter() {
            let untouched_on = |side: &Graph| side.nodes.get(id) == Some(node)
                && side.edges.iter().filter(|(k, _)| k.from() == id || k.to() == id)
                    .all(|(k, e)| base.edges.get(k) == Some(e));
            if (!a.nodes.contains_key(id) && untouched_on(&b))
                || (!b.nodes.contains_key(id) && untouched_on(&a))
            {
                prop_assert!(!merged.nodes.contains_key(id), "{} outlived its delete", id);
            }
        }
        // Every conflict this merge found is a note in the file, and nothing else is.
        prop_assert_eq!(unresolved_conflicts(merged), ab.conflicts.len());
    }
}
