use super::*;
use crate::model::Node;

const FILL_CEILING: usize = LevelBudget::new(LEVEL_BUDGET).fill_ceiling();
const GRACE_SHARE: usize = LevelBudget::new(LEVEL_BUDGET).grace_share();
use proptest::prelude::*;

const NOW: f64 = 1_795_176_000.0;

/// Refill exactly as core.md §6.4 words it: every round scores the whole graph and
/// charges `newly_live` over every edge. The oracle for the pooled refill.
fn refill_as_specified(pass: &mut Pass<'_, '_>) {
    if pass.meter.exact() >= FILL_CEILING {
        return;
    }
    let n = pass.index.len();
    let mut size = pass.meter.exact();
    let mut set_aside = vec![false; n];
    for _round in 0..=n {
        let waiting: Vec<usize> = (0..n)
            .filter(|&i| pass.tiers()[i] == Tier::Archived && !set_aside[i])
            .collect();
        if waiting.is_empty() {
            break;
        }
        let scores = whole_graph_scores(pass);
        let ranked = score::by_score(
            &waiting,
            |i| scores[i].unwrap_or(0.0),
            ScoreOrder::Descending,
        );
        let mut newly_live = vec![0usize; n];
        for edge in pass.index.edges() {
            if let (Some(f), Some(t)) = (edge.from.node(), edge.to.node())
                && pass.tiers()[f] == Tier::Archived
                && pass.tiers()[t] == Tier::Archived
            {
                let cost = 9 + edge.rel_chars() + edge.to.chars() + 1;
                newly_live[f] += cost;
                if t != f {
                    newly_live[t] += cost;
                }
            }
        }
        let mut accepted = false;
        for x in ranked {
            let delta = pass.index.node_line_cost(x) - pass.index.anchor_cost(x) + newly_live[x];
            if size + delta > FILL_CEILING {
                set_aside[x] = true;
                continue;
            }
            pass.set_archived(x, false);
            if pass.meter.exceeds(FILL_CEILING) {
                pass.set_archived(x, true);
                set_aside[x] = true;
                continue;
            }
            size = pass.meter.exact();
            accepted = true;
            break;
        }
        if !accepted {
            break;
        }
    }
}

/// The unified pool's scores straight from core.md §5: connectedness from one pass
/// over every edge, all three columns ranked afresh.
fn whole_graph_scores(pass: &Pass<'_, '_>) -> Vec<Option<f64>> {
    let (raw, tiers) = (pass.raw(), pass.tiers());
    let pool: Vec<usize> = (0..tiers.len())
        .filter(|&i| tiers[i] != Tier::Orphaned)
        .filter(|&i| NOW - raw.created[i] >= 5.0 * DAY_SECS)
        .collect();
    let column =
        |values: &[f64]| score::percentiles(&pool.iter().map(|&i| values[i]).collect::<Vec<_>>());
    let (rec, con, use_) = (
        column(&raw.recency),
        column(&score::connectedness(pass.index, tiers)),
        column(&raw.usefulness),
    );
    let mut scores = vec![None; tiers.len()];
    for (k, &i) in pool.iter().enumerate() {
        scores[i] = Some(
            score::WEIGHT_RECENCY * rec[k]
                + score::WEIGHT_CONNECTEDNESS * con[k]
                + score::WEIGHT_USEFULNESS * use_[k],
        );
    }
    scores
}

/// Random levels below the fill ceiling with archived nodes to bring back: gists
/// up to 900 characters (so candidates are set aside), nodes in grace, read stamps
/// and likes (so scores differ), edges between nodes, self-loops and artifacts.
fn level() -> impl Strategy<Value = Graph> {
    levels(0..3, 2..60)
}

/// Random levels of `count` nodes whose tiers are drawn from `tiers` (0 active,
/// 1 archived, 2 orphaned), otherwise as [`level`].
fn levels(
    tiers: std::ops::Range<u8>,
    count: std::ops::Range<usize>,
) -> impl Strategy<Value = Graph> {
    let node = (tiers, 1usize..900, 0u8..4, 0u32..60, 0u8..3);
    (
        prop::collection::vec(node, count),
        prop::collection::vec((0usize..60, 0usize..60, 0u8..5), 0..150),
    )
        .prop_map(|(nodes, edges)| {
            let mut g = Graph::default();
            for (i, (tier, gist, age, read, likes)) in nodes.into_iter().enumerate() {
                let id = format!("n{i}{}", "x".repeat(i % 5));
                let mut node = Node::new(&id);
                node.set(field::GIST, Value::String("g".repeat(gist)));
                let created = if age == 0 {
                    NOW - 3_600.0
                } else {
                    NOW - 30.0 * DAY_SECS
                };
                node.set(field::CREATED_TS, float_value(created));
                if read > 0 {
                    node.set(
                        field::LAST_READ_TS,
                        float_value(NOW - read as f64 * DAY_SECS),
                    );
                }
                if likes > 0 {
                    let stamps = (0..likes).map(|k| float_value(NOW - k as f64 * 40.0 * DAY_SECS));
                    node.set(field::USEFUL_TS, Value::Array(stamps.collect()));
                }
                if tier >= 1 {
                    node.set(field::ARCHIVED, Value::Bool(true));
                }
                if tier == 2 {
                    node.set(field::ORPHANED_TS, float_value(NOW - DAY_SECS));
                }
                g.nodes.insert(id, node);
            }
            crate::graph::add_test_edges(&mut g, edges);
            g
        })
}

fn pass_over<'a, 'g>(graph: &'g Graph, index: &'a LevelIndex<'g>) -> Pass<'a, 'g> {
    Pass {
        graph,
        index,
        meter: Meter::new(index, &index.tiers),
        raw: std::cell::OnceCell::new(),
        flag: vec![None; index.len()],
        now: NOW,
        budget: LevelBudget::default(),
        grace_days: 5.0,
        rule: GraceRule::Unlimited,
        overflow: Vec::new(),
        walk_orphans: Vec::new(),
    }
}

/// `curated` short nodes past grace, unread and unliked, linked in a chain, and a
/// burst of `burst` long new nodes nobody has read, written a minute apart.
fn burst_level(curated: usize, burst: usize) -> Graph {
    let mut g = Graph::default();
    for i in 0..curated {
        let mut node = Node::new(&format!("curated-{i:02}"));
        let gist = format!("Curated finding {i}: {}", "why and how ".repeat(8));
        node.set(field::GIST, Value::String(gist));
        node.set(field::CREATED_TS, float_value(NOW - 30.0 * DAY_SECS));
        g.nodes.insert(format!("curated-{i:02}"), node);
    }
    for k in 0..burst {
        let mut node = Node::new(&format!("burst-{k:02}"));
        node.set(field::GIST, Value::String("long dump ".repeat(95)));
        node.set(field::CREATED_TS, float_value(NOW - 60.0 * k as f64));
        g.nodes.insert(format!("burst-{k:02}"), node);
    }
    let chain = (1..curated).map(|i| (i - 1, i, 2)).collect();
    crate::graph::add_test_edges(&mut g, chain);
    g
}

fn active_in_grace(g: &Graph) -> Vec<String> {
    g.nodes
        .iter()
        .filter(|(_, n)| n.tier() == Tier::Active && NOW - n.created_ts() < 5.0 * DAY_SECS)
        .map(|(id, _)| id.clone())
        .collect()
}

/// Ours: past the grace share, a burst competes and the level gets back within
/// budget; the reference's grace keeps the whole burst and stalls over budget.
#[test]
fn the_grace_share_keeps_a_burst_from_stalling_the_level_over_budget() {
    let mut ours = burst_level(60, 30);
    let rules = LevelRules::default();
    compact_graph_with(&mut ours, &mut false, "t", rules, NOW, None);
    let size = crate::render::level_chars(&ours);
    assert!(size <= LEVEL_BUDGET, "ours: {size} chars");
    assert!(active_in_grace(&ours).len() < 30);

    let mut reference = burst_level(60, 30);
    let mut stall_logged = false;
    let rules = LevelRules {
        grace_rule: GraceRule::Unlimited,
        ..LevelRules::default()
    };
    compact_graph_with(&mut reference, &mut stall_logged, "t", rules, NOW, None);
    assert_eq!(
        active_in_grace(&reference).len(),
        30,
        "grace keeps every new node"
    );
    assert!(crate::render::level_chars(&reference) > LEVEL_BUDGET);
}

/// A configured budget moves every line with it: a level that fits the default
/// budget is archived to within a smaller one, with anchors within its share.
#[test]
fn a_smaller_budget_archives_sooner() {
    let level = burst_level(60, 0);
    let size = crate::render::level_chars(&level);
    assert!(size > 8_000 && size < LEVEL_BUDGET, "{size}");

    let mut default = level.clone();
    let moves = compact_graph_with(
        &mut default,
        &mut false,
        "t",
        LevelRules::default(),
        NOW,
        None,
    );
    assert!(moves.is_empty(), "{moves:?}");

    let small = LevelBudget::new(6_000);
    let rules = LevelRules {
        budget: small,
        ..LevelRules::default()
    };
    let mut archived = level;
    let moves = compact_graph_with(&mut archived, &mut false, "t", rules, NOW, None);
    assert!(!moves.archived.is_empty());
    let after = crate::render::level_chars(&archived);
    assert!(after <= small.chars(), "{after}");
    let index = LevelIndex::of(&archived);
    let anchors: usize = (0..index.len())
        .filter(|&i| index.tiers[i] == Tier::Archived)
        .map(|i| index.anchor_cost(i))
        .sum();
    assert!(anchors <= small.anchor_budget(), "{anchors}");
}

/// The grace share keeps the newest: what it shields fits in [`GRACE_SHARE`], and
/// every shielded node is newer than every overflowing one.
#[test]
fn the_grace_share_shields_the_newest_nodes_up_to_its_size() {
    let g = burst_level(10, 30);
    let index = LevelIndex::of(&g);
    let pass = pass_over(&g, &index);
    let overflow = grace_overflow(&pass);
    let shielded: Vec<usize> = (10..40).filter(|i| !overflow.contains(i)).collect();
    let held: usize = shielded.iter().map(|&i| index.node_line_cost(i)).sum();
    assert!(!shielded.is_empty() && held <= GRACE_SHARE, "{held}");
    assert!(held + index.node_line_cost(overflow[0]) > GRACE_SHARE);
    let created = &pass.raw().created;
    let oldest_shielded = shielded
        .iter()
        .map(|&i| created[i])
        .fold(f64::MAX, f64::min);
    assert!(overflow.iter().all(|&i| created[i] < oldest_shielded));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    /// The pooled refill ends with the same tiers and flags as the refill that
    /// re-scores the whole graph every round.
    #[test]
    fn pooled_refill_matches_the_specified_one(g in level()) {
        let index = LevelIndex::of(&g);
        let mut specified = pass_over(&g, &index);
        refill_as_specified(&mut specified);
        let mut pooled = pass_over(&g, &index);
        refill(&mut pooled);
        prop_assert_eq!(pooled.tiers(), specified.tiers());
        prop_assert_eq!(pooled.flag, specified.flag);
    }

    /// The archive walk, bulk move first, archives what archiving one node at a
    /// time does, whatever the order (the scores only choose the order).
    #[test]
    fn archive_walk_matches_one_node_at_a_time(g in levels(0..2, 20..80), seed in any::<u64>()) {
        let index = LevelIndex::of(&g);
        let mut order: Vec<usize> =
            (0..index.len()).filter(|&i| index.tiers[i] == Tier::Active).collect();
        // A pseudo-random order: the walk must hold for any order scores give.
        order.sort_by_key(|&i| (i as u64 ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut stepwise = pass_over(&g, &index);
        let mut one_by_one = Vec::new();
        for &i in &order {
            if !stepwise.meter.exceeds(FILL_CEILING) {
                break;
            }
            stepwise.set_archived(i, true);
            one_by_one.push(i);
        }
        let mut walked = pass_over(&g, &index);
        prop_assert_eq!(archive_walk(&mut walked, &order), one_by_one);
        prop_assert_eq!(walked.tiers(), stepwise.tiers());
        prop_assert_eq!(walked.flag, stepwise.flag);
        prop_assert_eq!(walked.meter.exact(), stepwise.meter.exact());
    }

    /// After the archive walk, resurrection's scores of the unified pool are those
    /// the spec computes afresh, whether or not archived nodes were eligible before.
    #[test]
    fn unified_scores_after_the_walk_match_a_fresh_scoring(
        g in prop_oneof![levels(0..1, 20..80), levels(0..2, 20..80)],
    ) {
        let index = LevelIndex::of(&g);
        let mut pass = pass_over(&g, &index);
        let pool = pass.active_pool();
        let scorer = PoolScorer::new(&index, pass.raw(), &pool);
        let scores = pass.scores_of(&pool, &scorer);
        let mut order = pool.clone();
        order.sort_by(|&a, &b| scores[a].unwrap_or(0.0).total_cmp(&scores[b].unwrap_or(0.0)));
        archive_walk(&mut pass, &order);
        let bits = |scores: Vec<Option<f64>>| -> Vec<Option<u64>> {
            scores.into_iter().map(|s| s.map(f64::to_bits)).collect()
        };
        prop_assert_eq!(
            bits(unified_scores(&pass, (&pool, &scorer))),
            bits(whole_graph_scores(&pass))
        );
    }

    /// One node's connectedness, summed from its own edges, is bit for bit the
    /// value the whole-graph pass gives it.
    #[test]
    fn connectedness_of_one_node_matches_the_whole_graph_pass(g in level()) {
        let index = LevelIndex::of(&g);
        let all = score::connectedness(&index, &index.tiers);
        for (i, value) in all.iter().enumerate() {
            prop_assert_eq!(
                score::connectedness_of(&index, &index.tiers, i).to_bits(),
                value.to_bits()
            );
        }
    }
}
