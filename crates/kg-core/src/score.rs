//! Scoring (core.md §5): how much a node is worth keeping in the active tier.
//!
//! Three signals, each turned into a tie-aware percentile over the eligible nodes:
//! recency (last write or read), connectedness (weighted live neighbours, in-edges
//! counting twice as much as out-edges) and usefulness (decaying endorsements).
//! Percentiles group *exactly* equal raw values, so the float evaluation order below
//! follows the reference's to the last bit.

use crate::graph::Graph;
use crate::model::Tier;
use crate::plan::LevelIndex;

pub const WEIGHT_RECENCY: f64 = 0.25;
pub const WEIGHT_CONNECTEDNESS: f64 = 0.40;
pub const WEIGHT_USEFULNESS: f64 = 0.35;
/// In-edges mark a node others depend on.
pub const IN_WEIGHT: f64 = 0.66;
pub const OUT_WEIGHT: f64 = 0.33;
/// An edge to an archived neighbour still counts a little, so a cluster that archived
/// together can lead itself back.
pub const ARCHIVED_NEIGHBOUR_WEIGHT: f64 = 0.2;
pub const USEFUL_HALF_LIFE_SECS: f64 = 90.0 * 86_400.0;
pub const DAY_SECS: f64 = 86_400.0;
/// How far ahead of our clock a stamp may be and still be believed (clocks of two
/// machines sharing a storage root disagree a little).
pub const CLOCK_SKEW_SECS: f64 = DAY_SECS;

/// A stamp, unless it lies further in the future than clock skew explains (a wrong
/// clock or a hand edit). Such a stamp is no stamp: a creation time in 2099 must not
/// keep a node in its grace period, out of compaction's reach, for seventy years.
pub fn credible_ts(ts: f64, now: f64) -> Option<f64> {
    (ts <= now + CLOCK_SKEW_SECS).then_some(ts)
}

/// A node's score and the percentiles it is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeScore {
    /// The weighted sum 0.25·recency + 0.40·connectedness + 0.35·usefulness, from 0 to 1.
    /// Compaction archives the lowest-scored active nodes first.
    pub score: f64,
    /// Percentile (0 to 1) of the node's last write or read among the eligible nodes.
    pub recency: f64,
    /// Percentile (0 to 1) of the node's weighted neighbours: in-edges count twice as
    /// much as out-edges, an archived neighbour a fifth of an active one, an orphaned one
    /// nothing.
    pub connectedness: f64,
    /// Percentile (0 to 1) of the node's `kg_useful` endorsements, each worth half as
    /// much every 90 days.
    pub usefulness: f64,
}

/// Raw signals of every node, independent of tiers except connectedness.
#[derive(Debug, Clone)]
pub struct RawSignals {
    pub recency: Vec<f64>,
    pub usefulness: Vec<f64>,
    pub created: Vec<f64>,
}

impl RawSignals {
    pub fn of(graph: &Graph, index: &LevelIndex<'_>, now: f64) -> RawSignals {
        let structure = graph.structure();
        let mut recency = Vec::with_capacity(index.len());
        let mut usefulness = Vec::with_capacity(index.len());
        let mut created = Vec::with_capacity(index.len());
        for (node, version) in graph.nodes.values().zip(&structure.node_versions) {
            let written = version
                .and_then(|v| graph.versions.get_index(v as usize))
                .map_or(0.0, |(_, version)| version.ts());
            recency.push(match node.last_read_ts() {
                Some(read) => written.max(read),
                None => written,
            });
            usefulness.push(usefulness_at(node.useful_ts(), now));
            created.push(created_at(node.created_ts(), now));
        }
        RawSignals {
            recency,
            usefulness,
            created,
        }
    }
}

/// Usefulness before ranking: each endorsement counts one, halving every
/// [`USEFUL_HALF_LIFE_SECS`].
pub(crate) fn usefulness_at(useful_ts: &[f64], now: f64) -> f64 {
    let mut u = 0.0;
    for ts in useful_ts {
        u += 0.5f64.powf((now - ts).max(0.0) / USEFUL_HALF_LIFE_SECS);
    }
    u
}

/// The creation time scoring goes by: none (long past grace) unless credible.
pub(crate) fn created_at(created_ts: f64, now: f64) -> f64 {
    credible_ts(created_ts, now).unwrap_or(0.0)
}

/// Whether a node created at `created` (see [`created_at`]) is past its grace period.
pub(crate) fn past_grace(created: f64, now: f64, grace_days: f64) -> bool {
    now - created >= grace_days * DAY_SECS
}

/// Weight of an edge endpoint in connectedness.
fn neighbour_weight(end: Option<usize>, tiers: &[Tier]) -> f64 {
    match end.map(|i| tiers[i]) {
        Some(Tier::Active) => 1.0,
        Some(Tier::Archived) => ARCHIVED_NEIGHBOUR_WEIGHT,
        _ => 0.0,
    }
}

/// Connectedness raw value of node `i` alone, bit for bit what [`connectedness`] gives
/// it: its edges are visited in edge order, summing `in` and `out` apart.
pub fn connectedness_of(index: &LevelIndex<'_>, tiers: &[Tier], i: usize) -> f64 {
    let (mut inbound, mut outbound) = (0.0f64, 0.0f64);
    for &k in index.incident(i) {
        let edge = &index.edges()[k as usize];
        if edge.to.node() == Some(i) {
            inbound += neighbour_weight(edge.from.node(), tiers);
        }
        if edge.from.node() == Some(i) {
            outbound += neighbour_weight(edge.to.node(), tiers);
        }
    }
    IN_WEIGHT * inbound + OUT_WEIGHT * outbound
}

/// Connectedness raw values for every node under the given tiers.
pub fn connectedness(index: &LevelIndex<'_>, tiers: &[Tier]) -> Vec<f64> {
    let mut inbound = vec![0.0f64; index.len()];
    let mut outbound = vec![0.0f64; index.len()];
    for edge in index.edges() {
        if let Some(to) = edge.to.node() {
            inbound[to] += neighbour_weight(edge.from.node(), tiers);
        }
        if let Some(from) = edge.from.node() {
            outbound[from] += neighbour_weight(edge.to.node(), tiers);
        }
    }
    inbound
        .iter()
        .zip(&outbound)
        .map(|(i, o)| IN_WEIGHT * i + OUT_WEIGHT * o)
        .collect()
}

/// The eligible set (core.md §5): nodes past grace that are active, or archived too
/// when `include_archived`, in node order.
pub fn eligible(
    raw: &RawSignals,
    tiers: &[Tier],
    include_archived: bool,
    now: f64,
    grace_days: f64,
) -> Vec<usize> {
    (0..tiers.len())
        .filter(|&i| match tiers[i] {
            Tier::Active => true,
            Tier::Archived => include_archived,
            Tier::Orphaned => false,
        })
        .filter(|&i| past_grace(raw.created[i], now, grace_days))
        .collect()
}

/// Scores of the eligible nodes (past grace; active, plus archived when
/// `include_archived`). `None` for nodes outside the eligible set.
pub fn score_all(
    index: &LevelIndex<'_>,
    raw: &RawSignals,
    tiers: &[Tier],
    include_archived: bool,
    now: f64,
    grace_days: f64,
) -> Vec<Option<NodeScore>> {
    let pool = eligible(raw, tiers, include_archived, now, grace_days);
    score_pool(index, raw, tiers, &pool)
}

/// Scores of the nodes of `pool` (node order), ranked among themselves: `None` for
/// nodes outside it.
pub fn score_pool(
    index: &LevelIndex<'_>,
    raw: &RawSignals,
    tiers: &[Tier],
    pool: &[usize],
) -> Vec<Option<NodeScore>> {
    let mut out = vec![None; index.len()];
    let scores = PoolScorer::new(index, raw, pool).scores(index, tiers);
    for (&i, score) in pool.iter().zip(scores) {
        out[i] = Some(score);
    }
    out
}

/// Scores one eligible pool (as [`eligible`] gives it) under changing tiers. Refill
/// re-scores the same pool round after round, and only connectedness depends on tiers:
/// recency and usefulness ranks are computed once, and each round costs the pool's own
/// nodes and edges.
#[derive(Debug)]
pub struct PoolScorer<'p> {
    pool: &'p [usize],
    recency: Vec<f64>,
    usefulness: Vec<f64>,
    /// Sum connectedness from the pool's own edges (fewer visits than one sequential
    /// pass over every edge) rather than over the whole graph.
    by_node: bool,
}

impl<'p> PoolScorer<'p> {
    pub fn new(index: &LevelIndex<'_>, raw: &RawSignals, pool: &'p [usize]) -> PoolScorer<'p> {
        let pick = |values: &[f64]| -> Vec<f64> { pool.iter().map(|&i| values[i]).collect() };
        let visits: usize = pool.iter().map(|&i| index.incident(i).len()).sum();
        PoolScorer {
            pool,
            recency: percentiles(&pick(&raw.recency)),
            usefulness: percentiles(&pick(&raw.usefulness)),
            // Scattered visits cost about twice a sequential one.
            by_node: 2 * visits < index.edges().len() + index.len(),
        }
    }

    /// The pool's scores under `tiers`, beside the pool.
    pub fn scores(&self, index: &LevelIndex<'_>, tiers: &[Tier]) -> Vec<NodeScore> {
        let pool = self.pool;
        let conn: Vec<f64> = if self.by_node {
            pool.iter()
                .map(|&i| connectedness_of(index, tiers, i))
                .collect()
        } else {
            let all = connectedness(index, tiers);
            pool.iter().map(|&i| all[i]).collect()
        };
        let con = percentiles(&conn);
        (0..pool.len())
            .map(|k| {
                let (rec, use_) = (self.recency[k], self.usefulness[k]);
                NodeScore {
                    score: WEIGHT_RECENCY * rec
                        + WEIGHT_CONNECTEDNESS * con[k]
                        + WEIGHT_USEFULNESS * use_,
                    recency: rec,
                    connectedness: con[k],
                    usefulness: use_,
                }
            })
            .collect()
    }
}

/// Tie-aware percentile ranks: a run of equal values at sorted positions `i..=j`
/// gets `((i + j) / 2) / (n − 1)`; a single value gets 0.5.
pub fn percentiles(values: &[f64]) -> Vec<f64> {
    let n = values.len();
    if n == 0 {
        return Vec::new();
    }
    if n == 1 {
        return vec![0.5];
    }
    // Values as integers that order as `total_cmp` orders them, beside their
    // positions, sorted in one block (stable: columns hold many ties, which a stable
    // sort passes over cheaply).
    let mut sorted: Vec<(u64, u32)> = values
        .iter()
        .map(|&v| total_order_key(v))
        .zip(0..)
        .collect();
    sorted.sort_by_key(|&(key, _)| key);
    let mut out = vec![0.0; n];
    let mut i = 0;
    while i < n {
        // Runs are of equal values (`==`: both zeros are one value).
        let value = values[sorted[i].1 as usize];
        let mut j = i;
        while j + 1 < n && values[sorted[j + 1].1 as usize] == value {
            j += 1;
        }
        let pct = ((i + j) as f64 / 2.0) / (n - 1) as f64;
        for &(_, k) in &sorted[i..=j] {
            out[k as usize] = pct;
        }
        i = j + 1;
    }
    out
}

/// Which way [`by_score`] orders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreOrder {
    Ascending,
    Descending,
}

/// `items` ordered by `score(item)` as [`f64::total_cmp`] orders them, ties kept in
/// their order in `items`. Each score is read once and sorted as an integer beside its
/// item: comparing floats fetched through the items made the sorts of a pass over a
/// large graph a seventh of its work.
pub fn by_score(items: &[usize], score: impl Fn(usize) -> f64, order: ScoreOrder) -> Vec<usize> {
    let mut keyed: Vec<(u64, usize)> = items
        .iter()
        .map(|&item| {
            let key = total_order_key(score(item));
            match order {
                ScoreOrder::Ascending => (key, item),
                ScoreOrder::Descending => (!key, item),
            }
        })
        .collect();
    keyed.sort_by_key(|&(key, _)| key);
    keyed.into_iter().map(|(_, item)| item).collect()
}

/// `v`'s bits, turned so that integers compare as [`f64::total_cmp`] compares floats.
fn total_order_key(v: f64) -> u64 {
    let bits = v.to_bits();
    // Negative: flip all bits (larger magnitudes sort first); positive: set the sign.
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_share_ranks_on_ties() {
        assert_eq!(percentiles(&[10.0, 20.0, 20.0, 30.0]), [0.0, 0.5, 0.5, 1.0]);
        assert_eq!(percentiles(&[7.0]), [0.5]);
        assert_eq!(percentiles(&[3.0, 3.0, 3.0]), [0.5, 0.5, 0.5]);
    }

    proptest::proptest! {
        /// A value's percentile is the middle of the sorted positions its equals take:
        /// counted directly, with many ties and both zeros.
        #[test]
        fn percentiles_count_the_values_below_and_equal(
            values in proptest::collection::vec(proptest::sample::select(vec![-0.0, 0.0, 0.2, 0.66, 1.0, 3.5]), 2..40),
        ) {
            let n = values.len();
            let got = percentiles(&values);
            for (k, &v) in values.iter().enumerate() {
                let below = values.iter().filter(|&&w| w < v).count();
                let equal = values.iter().filter(|&&w| w == v).count();
                let want = ((below + below + equal - 1) as f64 / 2.0) / (n - 1) as f64;
                proptest::prop_assert_eq!(got[k].to_bits(), want.to_bits());
            }
        }
    }

    proptest::proptest! {
        /// The sort keys order any two floats (every bit pattern: NaNs, infinities,
        /// both zeros, subnormals) exactly as `total_cmp` does.
        #[test]
        fn total_order_keys_compare_as_total_cmp(a in proptest::num::u64::ANY, b in proptest::num::u64::ANY) {
            let (a, b) = (f64::from_bits(a), f64::from_bits(b));
            proptest::prop_assert_eq!(total_order_key(a).cmp(&total_order_key(b)), a.total_cmp(&b));
        }
    }

    proptest::proptest! {
        /// Ordering by score is the stable sort comparing the floats themselves, either
        /// way, with many ties, both zeros and NaNs.
        #[test]
        fn ordering_by_score_is_the_stable_float_sort(
            scores in proptest::collection::vec(
                proptest::sample::select(vec![-0.0, 0.0, 0.25, 0.5, 1.0, f64::NAN, -1.0]),
                0..60,
            ),
            items in proptest::collection::vec(0usize..60, 0..80),
        ) {
            let items: Vec<usize> = items.into_iter().filter(|&i| i < scores.len()).collect();
            let mut ascending = items.clone();
            ascending.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
            proptest::prop_assert_eq!(by_score(&items, |i| scores[i], ScoreOrder::Ascending), ascending);
            let mut descending = items.clone();
            descending.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
            proptest::prop_assert_eq!(by_score(&items, |i| scores[i], ScoreOrder::Descending), descending);
        }
    }

    #[test]
    fn stamps_far_in_the_future_are_not_believed() {
        let now = 1_795_176_000.0;
        assert_eq!(credible_ts(now + 3_600.0, now), Some(now + 3_600.0));
        assert_eq!(credible_ts(4_070_908_800.0, now), None);
    }

    #[test]
    fn weights_are_ordered_sensibly() {
        const { assert!(0.0 < ARCHIVED_NEIGHBOUR_WEIGHT && ARCHIVED_NEIGHBOUR_WEIGHT < 1.0) };
        let old = 0.5f64.powf(400.0 * DAY_SECS / USEFUL_HALF_LIFE_SECS);
        let fresh = 0.5f64.powf(3600.0 / USEFUL_HALF_LIFE_SECS);
        assert!(fresh > 5.0 * old);
    }
}
