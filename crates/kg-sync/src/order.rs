//! The order of a merged map's entries.
//!
//! Order is observable (render and search break ties by it), so the merged order must
//! be the same whichever side is "ours", and must be a side's own order whenever the
//! other side left the order alone.

use std::collections::HashSet;
use std::hash::Hash;

/// The keys of a merged map in order: `kept` says which keys the result holds.
///
/// - When one side's key sequence is the base's, the other side's order is taken
///   (so merging with an unchanged side returns the other side as it is).
/// - When both sides have the same sequence, it is taken.
/// - Otherwise the base's order comes first, then each side's additions in that
///   side's order: the side whose additions sort first goes first.
///
/// Keys the result holds that the chosen sequence lacks (a node one side deleted
/// and the merge kept) follow in the base's order.
pub(crate) fn merged_order<K>(
    base: &[K],
    ours: &[K],
    theirs: &[K],
    kept: impl Fn(&K) -> bool,
) -> Vec<K>
where
    K: Clone + Eq + Hash + Ord,
{
    let sequence: Vec<K> = if ours == base || ours == theirs {
        theirs.to_vec()
    } else if theirs == base {
        ours.to_vec()
    } else {
        let in_base: HashSet<&K> = base.iter().collect();
        let added = |side: &[K]| -> Vec<K> {
            side.iter()
                .filter(|k| !in_base.contains(k))
                .cloned()
                .collect()
        };
        let (ours_added, theirs_added) = (added(ours), added(theirs));
        let (first, second) = if ours_added <= theirs_added {
            (ours_added, theirs_added)
        } else {
            (theirs_added, ours_added)
        };
        let mut sequence = base.to_vec();
        let in_first: HashSet<&K> = first.iter().collect();
        let second: Vec<K> = second
            .into_iter()
            .filter(|k| !in_first.contains(k))
            .collect();
        sequence.extend(first);
        sequence.extend(second);
        sequence
    };
    let mut seen: HashSet<K> = HashSet::with_capacity(sequence.len());
    let mut order: Vec<K> = Vec::with_capacity(sequence.len());
    for key in sequence.iter().chain(base) {
        if kept(key) && seen.insert(key.clone()) {
            order.push(key.clone());
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<char> {
        text.chars().collect()
    }

    #[test]
    fn an_unchanged_side_gives_the_other_sides_order() {
        let order = merged_order(&keys("abc"), &keys("abc"), &keys("cab"), |_| true);
        assert_eq!(order, keys("cab"));
        let order = merged_order(&keys("abc"), &keys("cba"), &keys("abc"), |_| true);
        assert_eq!(order, keys("cba"));
    }

    #[test]
    fn both_sides_changed_keep_the_base_order_then_additions_either_way_round() {
        let one = merged_order(&keys("abc"), &keys("acx"), &keys("bay"), |_| true);
        let other = merged_order(&keys("abc"), &keys("bay"), &keys("acx"), |_| true);
        assert_eq!(one, keys("abcxy"));
        assert_eq!(one, other);
    }

    #[test]
    fn kept_keys_missing_from_the_chosen_order_follow_in_base_order() {
        // Ours left the order alone but the merge keeps `b`, which theirs deleted.
        let order = merged_order(&keys("abc"), &keys("abc"), &keys("ca"), |_| true);
        assert_eq!(order, keys("cab"));
        let order = merged_order(&keys("abc"), &keys("abc"), &keys("ca"), |k| *k != 'a');
        assert_eq!(order, keys("cb"));
    }
}
