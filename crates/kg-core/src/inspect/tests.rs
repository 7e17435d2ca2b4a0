use super::*;
use crate::model::{Edge, EdgeKey, Node, field, float_value};
use crate::render::{LevelSource, ReadKind, ReadOptions, level_chars, render_read};
use serde_json::Value;

const NOW: f64 = 1_795_176_000.0;
const OLD: f64 = NOW - 30.0 * DAY_SECS;

fn node(g: &mut Graph, id: &str, gist: &str, created: f64) {
    let mut n = Node::new(id);
    n.set(field::GIST, Value::String(gist.into()));
    n.set(field::CREATED_TS, float_value(created));
    g.nodes.insert(id.into(), n);
}

fn edge(g: &mut Graph, from: &str, to: &str, rel: &str) {
    let key = EdgeKey::new(from, to, rel);
    g.edges.insert(key.clone(), Edge::new(key));
}

/// The view's debt is `kg_read`'s: under our policy it counts new nodes a burst got
/// archived, under the reference's it does not.
#[test]
fn the_debt_counts_a_burst_as_kg_read_does_under_each_policy() {
    let mut g = sample();
    node(
        &mut g,
        "burst-1",
        "Written yesterday, archived by the share",
        NOW - DAY_SECS,
    );
    if let Some(n) = g.node_mut("burst-1") {
        n.set(field::ARCHIVED, Value::Bool(true));
    }
    let ours = inspect_level(&g, [], InspectConfig::default(), NOW);
    assert_eq!(ours.debt.debt.burst, 1);
    assert!(
        ours.debt.line.contains("1 new node(s) archived in a burst"),
        "{}",
        ours.debt.line
    );
    let reference = InspectConfig {
        grace_rule: GraceRule::Unlimited,
        ..InspectConfig::default()
    };
    let theirs = inspect_level(&g, [], reference, NOW);
    assert_eq!(theirs.debt.debt.burst, 0);
    assert!(!theirs.debt.line.contains("burst"), "{}", theirs.debt.line);
}

fn sample() -> Graph {
    let mut g = Graph::default();
    node(&mut g, "hub", "The hub everyone cites", OLD);
    node(&mut g, "leaf", "A leaf", OLD);
    node(&mut g, "lonely", &"x".repeat(320), OLD);
    node(&mut g, "old", "Archived thought", OLD);
    node(&mut g, "gone", "Orphaned thought", OLD);
    node(&mut g, "fresh", "Brand new", NOW - 3600.0);
    if let Some(n) = g.node_mut("old") {
        n.set(field::ARCHIVED, Value::Bool(true));
    }
    if let Some(n) = g.node_mut("gone") {
        n.set(field::ARCHIVED, Value::Bool(true));
        n.set(field::ORPHANED_TS, float_value(NOW - DAY_SECS));
    }
    edge(&mut g, "leaf", "hub", "depends-on");
    edge(&mut g, "fresh", "hub", "extends");
    edge(&mut g, "old", "hub", "was-about");
    edge(&mut g, "old", "gone", "led-to");
    edge(&mut g, "hub", "src/lib.rs", "lives-in");
    g
}

#[test]
fn budget_is_the_charged_size() {
    let g = sample();
    let i = inspect_level(&g, [], InspectConfig::default(), NOW);
    assert_eq!(i.budget.chars, level_chars(&g));
    assert_eq!(i.budget.state, BudgetState::UnderFill);
    assert_eq!(i.counts, (4, 1, 1));
    // Costs of the rendered nodes and anchors add up to the body minus the heads.
    let heads = "ACTIVE:".len() + 1 + crate::plan::ARCHIVED_HEAD.chars().count() + 1;
    let total: usize = i.nodes.iter().map(|w| w.cost).sum();
    assert_eq!(total + heads, i.budget.chars);
}

#[test]
fn health_matches_the_rendered_line() {
    let g = sample();
    let i = inspect_level(&g, [], InspectConfig::default(), NOW);
    let empty = Graph::default();
    let opts = ReadOptions {
        kind: ReadKind::FullRead,
        budget: 40_000,
        preloaded: None,
        header: None,
        session_id: None,
        now: NOW,
        grace_days: 5.0,
    };
    let out = render_read(
        [
            LevelSource {
                level: crate::model::Level::User,
                graph: &g,
                debt_line: None,
            },
            LevelSource {
                level: crate::model::Level::Project,
                graph: &empty,
                debt_line: None,
            },
        ],
        &opts,
    );
    let line = out
        .text
        .lines()
        .find(|l| l.starts_with("HEALTH:"))
        .unwrap_or_default();
    assert_eq!(i.health.line, line);
}

#[test]
fn tiers_are_explained_with_scores_from_the_right_pool() {
    let g = sample();
    let i = inspect_level(&g, [], InspectConfig::default(), NOW);
    let by = |id: &str| i.nodes.iter().find(|w| w.id == id).cloned();
    let hub = by("hub").unwrap_or_else(|| panic!("hub"));
    assert_eq!(hub.pool, Some(Pool::Active));
    let s = hub.score.unwrap_or_else(|| panic!("hub is scored"));
    assert!(s.connectedness > 0.5, "{s:?}");
    assert!(hub.reason.contains("archive order"), "{}", hub.reason);
    let fresh = by("fresh").unwrap_or_else(|| panic!("fresh"));
    assert!(fresh.score.is_none() && fresh.grace_left_days.is_some());
    let old = by("old").unwrap_or_else(|| panic!("old"));
    assert_eq!(
        (old.pool, old.rank, old.traces),
        (Some(Pool::Unified), Some(1), 1)
    );
    let gone = by("gone").unwrap_or_else(|| panic!("gone"));
    assert!(gone.score.is_none() && gone.cost == 0);
    assert_eq!(gone.deleted_at, Some(NOW - DAY_SECS + 365.0 * DAY_SECS));
    // Ranks follow the archive walk: ascending score.
    let mut active: Vec<_> = i
        .nodes
        .iter()
        .filter(|w| w.rank.is_some() && w.tier == Tier::Active)
        .collect();
    active.sort_by_key(|w| w.rank);
    let scores: Vec<f64> = active
        .iter()
        .filter_map(|w| w.score.map(|s| s.score))
        .collect();
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
}

#[test]
fn debt_items_follow_the_debt_counts() {
    let g = sample();
    let i = inspect_level(&g, [], InspectConfig::default(), NOW);
    let oversized = i
        .debt_items
        .iter()
        .filter(|d| d.kind == DebtKind::Oversized)
        .count();
    let unconnected: Vec<&str> = i
        .debt_items
        .iter()
        .filter(|d| d.kind == DebtKind::Unconnected)
        .map(|d| d.id.as_str())
        .collect();
    assert_eq!(oversized, i.debt.debt.oversized);
    assert_eq!(unconnected, ["lonely"]);
    assert_eq!(unconnected.len(), i.debt.debt.unconnected);
    assert!(i.debt.line.starts_with("DEBT: "));
    assert!((0.0..=1.0).contains(&i.debt.staleness));
}

#[test]
fn live_edges_follow_the_render_predicate() {
    let g = sample();
    let i = inspect_level(&g, [], InspectConfig::default(), NOW);
    // leaf→hub, fresh→hub, old→hub (trace), old→gone (dead: orphan), hub→artifact.
    assert_eq!(i.live_edges, [true, true, true, false, true]);
}

const REFERENCE: InspectConfig = InspectConfig {
    grace_days: 5.0,
    orphan_grace_days: 365.0,
    grace_rule: GraceRule::Unlimited,
    level_budget: LevelBudget::new(crate::compact::LEVEL_BUDGET),
};

fn reason_of<'a>(i: &'a LevelInspection, id: &str) -> &'a TierWhy {
    i.nodes
        .iter()
        .find(|w| w.id == id)
        .unwrap_or_else(|| panic!("{id} is inspected"))
}

/// A level written in one burst: `count` unread nodes of about 250 characters, the
/// first written an hour ago, each next one a second earlier; about 20,000
/// characters, over the budget.
fn burst(count: usize) -> Graph {
    let mut g = Graph::default();
    for k in 0..count {
        let id = format!("burst-{k:02}");
        let gist = format!("{id}: an agent's long note written in one burst ");
        node(
            &mut g,
            &id,
            &format!("{gist:x<240}"),
            NOW - 3600.0 - k as f64,
        );
    }
    g
}

/// Under our policy a new node the share archived is explained by that rule, and
/// the DEBT it weighs in is named; under the reference's the text is as before.
#[test]
fn a_new_node_the_share_archived_names_that_rule_under_ours_only() {
    let mut g = sample();
    node(&mut g, "burst-1", "Written yesterday", NOW - DAY_SECS);
    if let Some(n) = g.node_mut("burst-1") {
        n.set(field::ARCHIVED, Value::Bool(true));
    }
    let ours = inspect_level(&g, [], InspectConfig::default(), NOW);
    let why = &reason_of(&ours, "burst-1").reason;
    assert!(
            why.starts_with(
                "Archived although new: a burst of writes went past the 35% share of the level's budget that new nodes get"
            ),
            "{why}"
        );
    assert!(why.contains("(4 days left)"), "{why}");
    assert!(why.contains("DEBT counts it as part of a burst"), "{why}");
    let theirs = inspect_level(&g, [], REFERENCE, NOW);
    assert_eq!(
        reason_of(&theirs, "burst-1").reason,
        "Archived (inside its grace period, so not yet scored); reading it promotes it."
    );
}

/// The reference's explanations of older nodes are worded as they always were;
/// ours say which end of the archive order goes first, and that new nodes nobody
/// had read give up their anchors first.
#[test]
fn older_nodes_are_explained_as_before_under_the_reference_policy() {
    let mut g = sample();
    node(
        &mut g,
        "burst-2",
        "Written yesterday, orphaned",
        NOW - DAY_SECS,
    );
    if let Some(n) = g.node_mut("burst-2") {
        n.set(field::ARCHIVED, Value::Bool(true));
        n.set(field::ORPHANED_TS, float_value(NOW - 3600.0));
    }
    let theirs = inspect_level(&g, [], REFERENCE, NOW);
    let hub = &reason_of(&theirs, "hub").reason;
    assert!(
            hub.ends_with(
                "in the archive order (1 = archived first). When the level exceeds 17,500 characters, compaction archives from the bottom of this order until it is under 14,000."
            ),
            "{hub}"
        );
    assert!(
            reason_of(&theirs, "gone").reason.starts_with(
                "Orphaned: archived anchors exceeded their 5,250-character share and this one had the fewest links to non-archived nodes, so it left"
            )
        );
    assert_eq!(
        reason_of(&theirs, "burst-2").reason,
        reason_of(&theirs, "gone").reason
    );
    let ours = inspect_level(&g, [], InspectConfig::default(), NOW);
    let hub = &reason_of(&ours, "hub").reason;
    assert!(
            hub.ends_with(
                "When the level exceeds 17,500 characters, compaction archives nodes in this order, from place 1, until it is under 14,000."
            ),
            "{hub}"
        );
    assert!(reason_of(&ours, "gone").reason.contains(
        "fewest links to non-archived nodes (new archived nodes nobody had read go first)"
    ));
    let burst = &reason_of(&ours, "burst-2").reason;
    assert!(
            burst.starts_with(
                "Orphaned although new: a burst of writes went past the 35% share of the level's budget that new nodes get"
            ) && burst.contains("DEBT counts it as part of a burst"),
            "{burst}"
        );
}

/// A new node the share no longer covers is scored with the older ones under our
/// policy; under the reference's every new node is out of compaction's reach.
#[test]
fn new_nodes_beyond_the_share_are_ranked_under_ours_only() {
    let g = burst(80);
    let ours = inspect_level(&g, [], InspectConfig::default(), NOW);
    assert_eq!(ours.budget.state, BudgetState::Over);
    let (held, ranked): (Vec<&TierWhy>, Vec<&TierWhy>) =
        ours.nodes.iter().partition(|w| w.score.is_none());
    // The newest hold their place: the share covers ~24 lines of ~250 characters.
    assert!((20..30).contains(&held.len()), "{}", held.len());
    assert!(held.iter().all(|w| w.id < ranked[0].id));
    assert!(
        held[0]
            .reason
            .contains("fit in a 35% share of the level's budget (6,125 characters)"),
        "{}",
        held[0].reason
    );
    assert!(
        held[0]
            .reason
            .ends_with("so compaction does not archive it.")
    );
    let first = &ranked[0];
    assert_eq!(first.rank_of, ranked.len());
    assert!(
            first.reason.starts_with("Active: new (")
                && first
                    .reason
                    .contains("newer nodes already fill the 35% of the level's budget (6,125 characters) that protects new nodes, so it is scored like an older node")
                && first.reason.contains("in the archive order"),
            "{}",
            first.reason
        );
    let theirs = inspect_level(&g, [], REFERENCE, NOW);
    assert!(theirs.nodes.iter().all(|w| w.score.is_none()));
    for w in &theirs.nodes {
        assert!(
            w.reason
                .starts_with("Active: new, inside its 5-day grace period (")
                && w.reason
                    .ends_with(" days left), so compaction never archives it."),
            "{}",
            w.reason
        );
    }
}

/// The gauge's sentence over budget: under the reference's policy a level of new
/// nodes cannot shrink yet; under ours the share lets the older new nodes go.
#[test]
fn the_gauge_says_what_grace_protects_under_each_policy() {
    let g = burst(80);
    let theirs = inspect_level(&g, [], REFERENCE, NOW);
    assert_eq!(theirs.grace_share, None);
    assert_eq!(
        theirs.outlook,
        "over the budget, but nothing can be archived yet: every active node is newer than 5 days, and a node that new is never archived (it has not had time to prove useful). The first leaves it in 5 days; the level shrinks from then on. Archive by hand to make room now"
    );
    let ours = inspect_level(&g, [], InspectConfig::default(), NOW);
    assert_eq!(ours.grace_share, Some(6_125));
    let held = ours.nodes.iter().filter(|w| w.score.is_none()).count();
    assert_eq!(
        ours.outlook,
        format!(
            "over the budget: the next write or tick archives the lowest-scored of {} active nodes, and spares the {held} newest: nodes written in the last 5 days are protected while their lines fit in 35% of the budget (6,125 characters), newest first",
            80 - held
        )
    );
    // With older nodes beside the new ones, the reference's gauge names them.
    let mut mixed = burst(80);
    node(&mut mixed, "old-1", "An old node", OLD);
    let theirs = inspect_level(&mixed, [], REFERENCE, NOW);
    assert_eq!(
        theirs.outlook,
        "over the budget: the next write or tick archives the lowest-scored nodes among the 1 active nodes older than 5 days (the 80 newer ones are protected)"
    );
    let settled = inspect_level(&sample(), [], InspectConfig::default(), NOW);
    assert_eq!(
        settled.outlook,
        "under the fill line: refill may bring archived nodes back"
    );
}

/// The archive order the view shows is the one compaction walks under our rule: new
/// nodes beyond the share are in it, and nodes read this week come last while a
/// burst is in the level. What compaction then archives is the head of that order.
#[test]
fn the_view_shows_the_order_compaction_archives_in_under_ours() {
    let mut g = burst(60);
    for k in 0..30 {
        let id = format!("old-{k:02}");
        let gist = format!("{id}: a note from last month ");
        node(&mut g, &id, &format!("{gist:y<200}"), OLD + k as f64);
        if k % 3 == 0 {
            // Read yesterday: in use.
            if let Some(n) = g.node_mut(&id) {
                n.set(field::LAST_READ_TS, float_value(NOW - DAY_SECS));
            }
        }
    }
    let view = inspect_level(&g, [], InspectConfig::default(), NOW);
    assert_eq!(view.budget.state, BudgetState::Over);
    let mut walk: Vec<&TierWhy> = view.nodes.iter().filter(|w| w.rank.is_some()).collect();
    walk.sort_by_key(|w| w.rank);
    let used =
        |id: &str| id.starts_with("old-") && id[4..].parse::<usize>().is_ok_and(|k| k % 3 == 0);
    let first_used = walk
        .iter()
        .position(|w| used(&w.id))
        .unwrap_or_else(|| panic!("the nodes in use are walked"));
    assert!(
        walk[first_used..].iter().all(|w| used(&w.id)),
        "nodes in use go last"
    );
    let why = &walk[first_used].reason;
    assert!(why.contains("read or liked in the last 7 days"), "{why}");

    let mut compacted = g.clone();
    let moves = crate::compact::compact_graph_with(
        &mut compacted,
        &mut false,
        "test",
        crate::compact::LevelRules::default(),
        NOW,
        None,
    );
    let mut archived: Vec<&str> = moves
        .archived
        .iter()
        .chain(&moves.orphaned)
        .map(String::as_str)
        .collect();
    archived.sort_unstable();
    let mut head: Vec<&str> = walk[..archived.len()]
        .iter()
        .map(|w| w.id.as_str())
        .collect();
    head.sort_unstable();
    assert_eq!(archived, head);
    assert!(
        archived.iter().any(|id| id.starts_with("burst-")),
        "{archived:?}"
    );

    // The reference's reasons say nothing of nodes in use.
    let theirs = inspect_level(&g, [], REFERENCE, NOW);
    assert!(
        theirs
            .nodes
            .iter()
            .all(|w| !w.reason.contains("read or liked"))
    );
}

#[test]
fn thousands_are_grouped() {
    assert_eq!(thousands(6_125), "6,125");
    assert_eq!(thousands(17_500), "17,500");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1_234_567), "1,234,567");
}
