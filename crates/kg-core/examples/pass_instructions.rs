//! One maintenance pass over the benchmark's graphs, run once, for counting its
//! instructions: wall-clock medians on a shared virtual machine swing by 2× within an
//! hour, an instruction count does not, and its growth between sizes is the work's.
//!
//! ```text
//! cargo build --release -p kg-core --example pass_instructions
//! valgrind --tool=callgrind --toggle-collect='pass_instructions::measured_pass' \
//!     target/release/examples/pass_instructions first 10000
//! ```
//! Passes: `first` (a graph of all-active nodes just parsed from its file), `refill`
//! (the file the first pass left, parsed), `tick` (a settled graph). Only the measured
//! pass runs inside `measured_pass`, so callgrind's "Collected" line counts it alone.
//! Run without valgrind, it prints the pass's wall-clock time too.
//!
//! The other hot paths of the `memory` bench, counted the same way with
//! `--toggle-collect='pass_instructions::measured_other'`: `render <count>` (that many
//! full reads of the bench's two 400-node levels) and `search <nodes>` (`ledger retries
//! 42` over a graph of that many nodes).

use kg_core::compact::compact_graph;
use kg_core::model::Level;
use kg_core::persist::{parse_graph, serialize_graph};
use kg_core::render::{LevelSource, READ_BUDGET, ReadKind, ReadOptions, render_read};
use kg_core::search::{SearchGraph, query_terms, search};
use kg_test_support::graphs::{NOW, compacted, graph};
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(pass), Some(n)) = (
        args.first().map(String::as_str),
        args.get(1).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: pass_instructions <first|refill|tick|render|search> <nodes|renders>");
        std::process::exit(2);
    };
    let parsed = |text: &str| {
        parse_graph(text.as_bytes())
            .expect("the bench graph parses")
            .graph
    };
    let text = || serialize_graph(&graph(n, 3), Level::User, None);
    let mut g = match pass {
        "first" => parsed(&text()),
        "refill" => {
            let mut archived = parsed(&text());
            compact_graph(&mut archived, &mut false, "bench", 5.0, NOW, None);
            parsed(&serialize_graph(&archived, Level::User, None))
        }
        "tick" => {
            let mut settled = compacted(n, 3);
            let moves = compact_graph(&mut settled, &mut false, "bench", 5.0, NOW, None);
            assert!(
                moves.is_empty(),
                "the bench graph must be at its fixed point"
            );
            settled
        }
        "render" => {
            let (user, project) = (compacted(400, 7), compacted(400, 11));
            let chars = measured_other(|| renders(&user, &project, n));
            println!("{n} renders: {chars} characters");
            return;
        }
        "search" => {
            let g = graph(n, 5);
            let graphs = [SearchGraph {
                level: Level::Project,
                graph: &g,
            }];
            let terms = query_terms("ledger retries 42");
            let total = measured_other(|| search(&graphs, &terms, None).total);
            println!("search over {n} nodes: {total} records");
            return;
        }
        other => {
            eprintln!("unknown pass {other:?}: first, refill, tick, render or search");
            std::process::exit(2);
        }
    };
    let started = std::time::Instant::now();
    let moves = measured_pass(&mut g);
    let elapsed = started.elapsed();
    println!(
        "{pass} pass over {n} nodes: {} archived, {} restored, {} orphaned, {elapsed:.2?}",
        moves.archived.len(),
        moves.restored.len(),
        moves.orphaned.len()
    );
}

/// The pass counted: the set-up above runs passes of its own.
#[inline(never)]
fn measured_pass(g: &mut kg_core::graph::Graph) -> kg_core::change::TierMoves {
    black_box(compact_graph(g, &mut false, "bench", 5.0, NOW, None))
}

/// A render or a search counted, without its set-up.
#[inline(never)]
fn measured_other(work: impl FnOnce() -> usize) -> usize {
    black_box(work())
}

/// `count` full reads of two levels, as the bench renders them; their total length.
fn renders(user: &kg_core::graph::Graph, project: &kg_core::graph::Graph, count: usize) -> usize {
    let opts = ReadOptions {
        kind: ReadKind::FullRead,
        budget: READ_BUDGET,
        preloaded: None,
        header: None,
        session_id: Some("3f9a0c1e"),
        now: NOW,
        grace_days: 5.0,
    };
    let mut chars = 0;
    for _ in 0..count {
        let levels = [
            LevelSource {
                level: Level::User,
                graph: user,
                debt_line: None,
            },
            LevelSource {
                level: Level::Project,
                graph: project,
                debt_line: None,
            },
        ];
        chars += black_box(render_read(levels, &opts).text.len());
    }
    chars
}
