//! One maintenance pass, repeated, for instruction counts (`scripts/count-instructions-core.sh`):
//! criterion's wall-clock rows move a few per cent between runs on a shared machine,
//! and instructions do not.
//!
//!     maintenance_pass <first-pass|tick> <nodes> <passes> <copies>
//!
//! `first-pass`: `copies` graphs of `nodes` nodes are parsed from one file, and the
//! first `passes` of them get their first pass. `tick`: a graph at its fixed point
//! gets `passes` more passes, which change nothing. Run with 0 passes (and the same
//! copies) to count the set-up alone.

use kg_core::Level;
use kg_core::graph::Graph;
use kg_test_support::graphs::{NOW, graph};
use std::hint::black_box;

fn pass(g: &mut Graph) {
    let mut stall = false;
    black_box(kg_core::compact::compact_graph(
        g, &mut stall, "bench", 5.0, NOW, None,
    ));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, nodes, passes, copies] = args.as_slice() else {
        eprintln!("usage: maintenance_pass <first-pass|tick> <nodes> <passes> <copies>");
        std::process::exit(2);
    };
    let count = |arg: &str| {
        arg.parse::<usize>().unwrap_or_else(|_| {
            eprintln!("nodes, passes and copies are counts, not {arg:?}");
            std::process::exit(2)
        })
    };
    let (nodes, passes, copies) = (count(nodes), count(passes), count(copies));
    match mode.as_str() {
        "first-pass" => {
            let text = kg_core::persist::serialize_graph(&graph(nodes, 3), Level::User, None);
            let loaded = || {
                kg_core::persist::parse_graph(text.as_bytes())
                    .expect("the graph parses")
                    .graph
            };
            let mut parsed: Vec<Graph> = (0..copies.max(passes)).map(|_| loaded()).collect();
            for g in parsed.iter_mut().take(passes) {
                pass(g);
            }
            black_box(&parsed);
        }
        "tick" => {
            let mut g = graph(nodes, 3);
            for _ in 0..4 {
                pass(&mut g);
            }
            for _ in 0..passes {
                pass(&mut g);
            }
            black_box(&g);
        }
        other => {
            eprintln!("unknown mode {other}: first-pass or tick");
            std::process::exit(2);
        }
    }
}
