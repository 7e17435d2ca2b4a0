//! The properties over bare graphs run through compaction and orphan pruning.

use super::*;

/// Time steps between maintenance rounds, around both grace periods.
fn steps() -> impl Strategy<Value = Vec<u32>> {
    let d = DAY as u32;
    prop::collection::vec(
        prop::sample::select(vec![0, 3_600, 4 * d, 6 * d, 100 * d, 365 * d, 365 * d + 1]),
        0..5,
    )
}

/// The whole life of one graph: check it as loaded, settle it, advance time and settle
/// again, then check the read of it beside a second graph.
fn maintain(spec: &GraphSpec, other: &GraphSpec, steps: &[u32]) -> Check {
    let mut now = T;
    let mut g = build(spec, now);
    let other = build(other, now);
    check_tiers(&g)?;
    check_render([(&g, Some(DEBT_LINE)), (&other, None)], now)?;
    let mut stall = false;
    settle(&mut g, &mut stall, now)?;
    for &step in steps {
        now += f64::from(step);
        settle(&mut g, &mut stall, now)?;
    }
    check_render([(&other, None), (&g, Some(DEBT_LINE))], now)?;
    check_render([(&g, None), (&g, Some(DEBT_LINE))], now)?;
    Ok(())
}

proptest! {
    #![proptest_config(cases(160))]
    /// Up to 80 nodes with mostly long gists: archive, resurrection and refill at small scale.
    #[test]
    fn small_graphs_keep_the_invariants(
        spec in graph_spec(HEAVY, 1..=80, 0..=160),
        other in graph_spec(PLAIN, 0..=6, 0..=10),
        steps in steps(),
    ) {
        maintain(&spec, &other, &steps)?;
    }
}

proptest! {
    #![proptest_config(cases(24))]
    /// 40–400 nodes of every shape: archiving, orphaning, pruning, grace stalls.
    #[test]
    fn medium_graphs_keep_the_invariants(
        spec in graph_spec(PLAIN, 40..=400, 0..=800),
        other in graph_spec(PLAIN, 0..=20, 0..=30),
        steps in steps(),
    ) {
        maintain(&spec, &other, &steps)?;
    }
}

proptest! {
    #![proptest_config(cases(6))]
    /// 400–2,000 nodes and up to 4,000 edges: the same invariants at full scale.
    #[test]
    fn large_graphs_keep_the_invariants(
        spec in graph_spec(LIGHT, 400..=2_000, 0..=4_000),
        other in graph_spec(PLAIN, 0..=20, 0..=30),
        steps in steps(),
    ) {
        maintain(&spec, &other, &steps)?;
    }
}
