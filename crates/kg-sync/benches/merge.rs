//! The 3-way merge of graph files (issue 23): a 2,000-node graph with 100 changes on
//! each side, ten of them to the same nodes (so both sides wrote their gists: field
//! by field merges and conflict notes).
//!
//! `cargo bench -p kg-sync --bench merge`
//!
//! - `merge/…`: parse the three files, merge, heal, serialise and parse the result
//!   back (what `kg_sync::merge` does);
//! - `merge_driver/…`: the same from files on disk, with the atomic, fsynced write of
//!   the result over ours (what git runs).

use criterion::{Criterion, criterion_group, criterion_main};
use kg_core::{EdgeKey, Graph, Level, field, float_value, serialize_graph};
use kg_test_support::graphs::{NOW, graph};
use serde_json::Value;
use std::hint::black_box;

const NODES: usize = 2_000;
const CHANGES: usize = 100;
/// Changes of each side that edit the gists of the same nodes as the other side.
const SHARED: usize = 10;

fn node_id(i: usize) -> String {
    format!("component-{i}-topic")
}

/// 100 changes as a session on one machine makes them: gist edits, new nodes with an
/// edge, deletes, notes, likes and removed edges, spread over the graph by `side`.
fn changed(base: &Graph, side: usize) -> Graph {
    let mut g = base.clone();
    let session = ["laptop", "desktop"][side];
    // Each side works on its own stretch of the graph, except the shared nodes.
    let own = |k: usize| SHARED + side * 700 + k * 6;
    for k in 0..CHANGES {
        let now = NOW + 60.0 * (k as f64) + side as f64;
        let id = if k < SHARED {
            node_id(k)
        } else {
            node_id(own(k))
        };
        match k % 5 {
            _ if k < SHARED => put_gist(&mut g, &id, &format!("{session} says {k}"), now, session),
            0 => put_gist(
                &mut g,
                &id,
                &format!("Rewritten on the {session}"),
                now,
                session,
            ),
            1 => {
                let new = format!("{session}-note-{k}");
                put_gist(
                    &mut g,
                    &new,
                    "A new finding, linked to a component",
                    now,
                    session,
                );
                let key = EdgeKey::new(&new, &id, "explains");
                g.edge_entry(&key);
                g.bump_version(format!("edge:{key}"), now, Some(session));
            }
            2 => {
                g.remove_node(&id);
            }
            3 => {
                if let Some(node) = g.node_mut(&id) {
                    node.set(
                        field::NOTES,
                        Value::Array(vec![Value::String(format!("seen on the {session}"))]),
                    );
                }
                g.bump_version(format!("node:{id}"), now, Some(session));
            }
            _ => {
                if let Some(node) = g.node_mut(&id) {
                    node.set(field::USEFUL_TS, Value::Array(vec![float_value(now)]));
                }
                let first_edge = g.edges.keys().find(|key| key.from() == id).cloned();
                if let Some(key) = first_edge {
                    g.edges.shift_remove(&key);
                }
            }
        }
    }
    g
}

fn put_gist(g: &mut Graph, id: &str, gist: &str, now: f64, session: &str) {
    let created = !g.nodes.contains_key(id);
    let node = g.node_entry(id);
    node.set(field::GIST, Value::String(gist.to_string()));
    if created {
        node.set(field::CREATED_TS, float_value(now));
    }
    node.remove(field::ARCHIVED);
    g.bump_version(format!("node:{id}"), now, Some(session));
}

fn text(g: &Graph) -> Vec<u8> {
    serialize_graph(g, Level::Project, Some("/home/ana/shop")).into_bytes()
}

fn bench_merge(c: &mut Criterion) {
    let base = graph(NODES, 23);
    let (ours, theirs) = (changed(&base, 0), changed(&base, 1));
    let (base, ours, theirs) = (text(&base), text(&ours), text(&theirs));
    let outcome = kg_sync::merge(&base, &ours, &theirs).expect("merges");
    assert_eq!(outcome.conflicts.len(), SHARED, "the shared nodes conflict");

    let name = format!("{NODES} nodes, {CHANGES} changes a side");
    c.bench_function(&format!("merge/{name}"), |b| {
        b.iter(|| kg_sync::merge(black_box(&base), black_box(&ours), black_box(&theirs)))
    });

    // On the build disk, as git runs the driver in a work tree.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let paths = ["base", "ours", "theirs"].map(|n| dir.path().join(format!("{n}.json")));
    std::fs::write(&paths[0], &base).expect("write");
    std::fs::write(&paths[2], &theirs).expect("write");
    c.bench_function(&format!("merge_driver/{name}"), |b| {
        b.iter(|| {
            std::fs::write(&paths[1], &ours).expect("write");
            kg_sync::merge_driver(&paths[0], &paths[1], &paths[2], "graph.json").expect("merges")
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench_merge
}
criterion_main!(benches);
