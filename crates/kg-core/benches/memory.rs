//! The bounded-memory hot paths: rendering a full read, one maintenance pass, search.
//! Run: `cargo bench -p kg-core --bench memory` (results in BENCHMARKS.md).

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use kg_core::model::{Edge, EdgeKey, Graph, Level, Node, field, float_value};
use kg_core::render::{LevelSource, READ_BUDGET, ReadKind, ReadOptions, render_read};
use kg_core::search::{SearchGraph, query_terms, search};
use serde_json::Value;
use std::hint::black_box;

const NOW: f64 = 1_795_176_000.0;
const DAY: f64 = 86_400.0;

/// `n` active nodes past grace, three edges each, realistic gist lengths.
fn graph(n: usize, seed: u64) -> Graph {
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

/// A graph after maintenance: the shape a full read renders every session.
fn compacted(n: usize, seed: u64) -> Graph {
    let mut g = graph(n, seed);
    let mut stall = false;
    for _ in 0..3 {
        kg_core::compact::compact_graph(&mut g, &mut stall, "bench", 5.0, NOW, None);
    }
    g
}

fn render(c: &mut Criterion) {
    let user = compacted(400, 7);
    let project = compacted(400, 11);
    let opts = ReadOptions {
        kind: ReadKind::FullRead,
        budget: READ_BUDGET,
        preloaded: None,
        header: None,
        session_id: Some("3f9a0c1e"),
        now: NOW,
        grace_days: 5.0,
    };
    c.bench_function("render/full_read_two_full_levels", |b| {
        b.iter(|| {
            let levels = [
                LevelSource {
                    level: Level::User,
                    graph: &user,
                    debt_line: None,
                },
                LevelSource {
                    level: Level::Project,
                    graph: &project,
                    debt_line: None,
                },
            ];
            black_box(render_read(levels, &opts).text.len())
        })
    });
}

fn maintenance(c: &mut Criterion) {
    let mut group = c.benchmark_group("maintenance");
    group.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        let fresh = graph(n, 3);
        group.bench_with_input(BenchmarkId::new("first_pass_all_active", n), &n, |b, _| {
            b.iter_batched(
                || fresh.clone(),
                |mut g| {
                    let mut stall = false;
                    black_box(kg_core::compact::compact_graph(
                        &mut g, &mut stall, "bench", 5.0, NOW, None,
                    ))
                },
                BatchSize::LargeInput,
            )
        });
        let settled = compacted(n, 3);
        group.bench_with_input(BenchmarkId::new("tick_at_fixed_point", n), &n, |b, _| {
            b.iter_batched(
                || settled.clone(),
                |mut g| {
                    let mut stall = false;
                    black_box(kg_core::compact::compact_graph(
                        &mut g, &mut stall, "bench", 5.0, NOW, None,
                    ))
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn searching(c: &mut Criterion) {
    let g = graph(10_000, 5);
    let graphs = [SearchGraph {
        level: Level::Project,
        graph: &g,
    }];
    for query in ["ledger retries 42", "zebra"] {
        let terms = query_terms(query);
        c.bench_function(&format!("search/10k_nodes/{query}"), |b| {
            b.iter(|| black_box(search(&graphs, &terms, None).total))
        });
    }
}

criterion_group!(benches, render, maintenance, searching);
criterion_main!(benches);
