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

use kg_core::compact::compact_graph;
use kg_core::model::Level;
use kg_core::persist::{parse_graph, serialize_graph};
use std::hint::black_box;
use support::{NOW, compacted, graph};

#[path = "../benches/support/mod.rs"]
mod support;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(pass), Some(n)) = (
        args.first().map(String::as_str),
        args.get(1).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: pass_instructions <first|refill|tick> <nodes>");
        std::process::exit(2);
    };
    let parsed = |text: &str| {
        parse_graph(text.as_bytes())
            .expect("the bench graph parses")
            .graph
    };
    let text = serialize_graph(&graph(n, 3), Level::User, None);
    let mut g = match pass {
        "first" => parsed(&text),
        "refill" => {
            let mut archived = parsed(&text);
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
        other => {
            eprintln!("unknown pass {other:?}: first, refill or tick");
            std::process::exit(2);
        }
    };
    let moves = measured_pass(&mut g);
    println!(
        "{pass} pass over {n} nodes: {} archived, {} restored, {} orphaned",
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
