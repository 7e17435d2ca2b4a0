//! kg-sync's tests: each merge rule, the merge's properties over random edits, the
//! driver on real files, and `kg-memory merge-driver` under a real `git merge`.

mod driver;
mod git;
mod layering;
mod properties;
mod rules;

use kg_core::GraphFile;
use kg_sync::{MergeOutcome, merge};
use serde_json::{Value, json};

/// An instant of the fixtures' time line.
pub const T0: f64 = 1_790_000_000.0;

/// A project graph file's text: `nodes` by id, `edges` as a list of objects (keyed in
/// the file as a save keys them), `versions` as `_meta.versions`.
pub fn graph_file(nodes: Value, edges: Value, versions: Value) -> Vec<u8> {
    let mut edge_map = serde_json::Map::new();
    for edge in edges.as_array().expect("edges are a list") {
        let key = format!(
            "{}->{}:{}",
            edge["from"].as_str().expect("from"),
            edge["to"].as_str().expect("to"),
            edge["rel"].as_str().expect("rel")
        );
        edge_map.insert(key, edge.clone());
    }
    let file = json!({
        "nodes": nodes,
        "edges": edge_map,
        "_meta": {
            "versions": versions,
            "project_path": "/home/ana/shop",
            "namespace": {"kind": "project", "owner": null}
        }
    });
    serde_json::to_vec_pretty(&file).expect("serialises")
}

/// A version entry: `v`, `ts`, `session`.
pub fn version(v: i64, ts: f64, session: &str) -> Value {
    json!({"v": v, "ts": ts, "session": session})
}

/// Merge, checking that swapping ours and theirs gives the very same file.
pub fn merge_both_ways(base: &[u8], ours: &[u8], theirs: &[u8]) -> MergeOutcome {
    let one = merge(base, ours, theirs).expect("merges");
    let other = merge(base, theirs, ours).expect("merges the other way round");
    assert_eq!(
        one.text, other.text,
        "the merge depends on which side is ours"
    );
    assert_eq!(one.conflicts, other.conflicts);
    one
}

/// A node of a merged file as JSON, or `None`.
pub fn node(file: &GraphFile, id: &str) -> Option<Value> {
    file.graph
        .nodes
        .get(id)
        .map(|n| Value::Object(n.to_object()))
}

/// The edges of a merged file as `from->to:rel` texts, in file order.
pub fn edge_keys(file: &GraphFile) -> Vec<String> {
    file.graph.edges.keys().map(ToString::to_string).collect()
}
