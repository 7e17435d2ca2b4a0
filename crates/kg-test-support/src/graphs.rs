//! The graphs kg-core's memory benchmarks and its pass-instruction example share.

use kg_core::{Edge, EdgeKey, Graph, Node, field, float_value};
use serde_json::Value;

/// The instant the graphs are built for: the fixtures' frozen clock, [`crate::T`].
pub const NOW: f64 = crate::T;
const DAY: f64 = 86_400.0;

/// `n` active nodes past grace, three edges each, realistic gist lengths.
pub fn graph(n: usize, seed: u64) -> Graph {
    let mut g = Graph::default();
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for i in 0..n {
        let id = format!("component-{i}-topic");
        let mut node = Node::new(&id);
        let gist = format!(
            "Component {i} owns the {} path; retries are idempotent and the cache TTL is {} minutes",
            ["ledger", "payout", "webhook", "refund"][i % 4],
            i % 60
        );
        node.set(field::GIST, Value::String(gist));
        node.set(field::CREATED_TS, float_value(NOW - 40.0 * DAY - i as f64));
        if next() % 5 == 0 {
            node.set(
                field::LAST_READ_TS,
                float_value(NOW - (next() % 30) as f64 * DAY),
            );
        }
        if next() % 11 == 0 {
            node.set(
                field::USEFUL_TS,
                Value::Array(vec![float_value(NOW - (next() % 200) as f64 * DAY)]),
            );
        }
        g.nodes.insert(id.clone(), node);
        g.bump_version(
            format!("node:{id}"),
            NOW - 40.0 * DAY + (next() % 1000) as f64,
            Some("bench"),
        );
    }
    for i in 0..n {
        for _ in 0..3 {
            let j = (next() % n as u64) as usize;
            let key = EdgeKey::new(
                &format!("component-{i}-topic"),
                &format!("component-{j}-topic"),
                "depends-on",
            );
            g.edges.insert(key.clone(), Edge::new(key));
        }
    }
    g
}
