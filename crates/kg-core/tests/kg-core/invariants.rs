//! Property tests of the compaction invariants (core.md §6, §7.3; DESIGN.md "Testing"):
//!
//! - (a) every node is in exactly one tier, the one its flags say, and ids are unique;
//! - (b) after maintenance each level renders within 17,500 characters unless every
//!   remaining active node is still inside its grace period (and nothing in grace was
//!   archived but what our grace rule lets go: beyond the new nodes' share of the
//!   budget, or unread ones to keep nodes in use);
//! - (c) render equals charge: the level body `render_read` prints has exactly the
//!   length the plan charges, for both levels of a full read;
//! - (d) no node is deleted before it has been an orphan for `KG_ORPHAN_GRACE_DAYS`
//!   (365 d), and every orphan past it is deleted by the next tick;
//! - (e) ticks at one `now` without writes reach a fixed point within a few ticks and
//!   then change nothing; a tick that archived never also refilled.
//!
//! Two drivers: bare graphs of 1–2,000 nodes run through `compact_graph` +
//! `prune_orphans` as time advances, and a real `Store` on a temporary root driven by
//! random operation sequences (writes, edges, deletes, promoting reads, likes, time,
//! ticks). Each input type prints compactly so a shrunk counterexample reads as a
//! short list of nodes, edges and steps.

use kg_core::compact::{IN_USE_SECS, LEVEL_BUDGET, LevelBudget, compact_graph, prune_orphans};
use kg_core::model::{Edge, field, float_value, truthy};
use kg_core::plan::{LevelIndex, Mode, Plan};
use kg_core::render::{LevelSource, READ_BUDGET, ReadKind, ReadOptions, level_chars, render_read};
use kg_core::store::GraphSlot;
use kg_core::{
    EdgeKey, Graph, Level, Node, Store, StoreConfig, StoreError, Target, Tier, TierMoves,
};
use kg_test_support::{T, TempHome, open_store};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::fmt;

const DAY: f64 = 86_400.0;
const GRACE_DAYS: f64 = 5.0;
const ORPHAN_GRACE_DAYS: f64 = 365.0;
/// The lines of the default budget, which `compact_graph` and these stores keep.
const FILL_CEILING: usize = LevelBudget::new(LEVEL_BUDGET).fill_ceiling();
const ANCHOR_BUDGET: usize = LevelBudget::new(LEVEL_BUDGET).anchor_budget();
const GRACE_SHARE: usize = LevelBudget::new(LEVEL_BUDGET).grace_share();
/// Ticks at one instant within which maintenance must settle.
const MAX_TICKS: usize = 4;

type Check = Result<(), TestCaseError>;

/// Cases of one property; failures are not persisted to files (this suite owns no
/// regression folder), shrinking still runs.
fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn config() -> StoreConfig {
    StoreConfig::new("/nonexistent/storage", "/nonexistent")
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// A short, escaped preview of a long text for counterexample output.
fn preview(s: &str) -> String {
    let head: String = s.chars().take(16).collect();
    let more = if chars(s) > 16 { "…" } else { "" };
    format!("{head:?}{more}({})", chars(s))
}

// ----- gists, ids, endpoints -----------------------------------------------------------

/// Gists of every shape the memory meets: short, near and over the 300-char scan
/// limit, non-ASCII (RTL, combining, emoji), control characters (newlines, NUL,
/// bidi overrides), empty.
fn gist(long: u32) -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{1,50}",
        2 => "[a-zA-Z0-9 ,.;:()-]{50,300}",
        long => "[a-z ]{301,700}",
        1 => "\\PC{0,60}",
        1 => "[\\x00-\\x1f\\x7f\\x{200f}\\x{202e}\\x{301}a-z]{0,40}",
        1 => Just(String::new()),
        1 => prop::sample::select(vec![
            "שלום עולם — כתיבה מימין לשמאל",
            "مرحبا بالعالم: ملاحظة",
            "日本語のメモ、全角文字",
            "e\u{301}cole cafe\u{301} na\u{303}o",
            "👩‍💻 emoji zwj 🏳️‍🌈 flags",
            "tab\there\tand\u{0}nul",
            "line one\nline two\r\nline three",
            "\u{202e}reversed bidi\u{202c} text",
        ])
        .prop_map(String::from),
    ]
}

/// Edge relation names, short to long.
const RELS: [&str; 6] = [
    "r",
    "uses",
    "depends-on",
    "implemented-in",
    "supersedes",
    "was-decided-together-with-the-older-policy",
];

/// Artifact endpoints (paths are never node ids: ids hold no `/` or `~`).
const ARTIFACTS: [&str; 5] = [
    "src/lib.rs",
    "crates/kg-core/src/compact.rs",
    "~/notes/ideas.md",
    "docs/a/very/deep/path/to/some/file/with/a/rather/long/name.md",
    "/etc/hosts",
];

/// The other end of an edge.
#[derive(Clone, Copy)]
enum End {
    /// A node of this graph, by position (modulo the node count).
    Node(usize),
    /// The edge's own `from`.
    SelfLoop,
    /// A file path.
    Artifact(usize),
    /// An id that is no node of this graph (a cross-level reference).
    Cross(usize),
}

impl fmt::Debug for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Node(i) => write!(f, "#{i}"),
            End::SelfLoop => write!(f, "self"),
            End::Artifact(k) => write!(f, "{}", ARTIFACTS[k % ARTIFACTS.len()]),
            End::Cross(k) => write!(f, "user-pref-{k}"),
        }
    }
}

fn end(nodes: usize) -> impl Strategy<Value = End> {
    prop_oneof![
        6 => (0..nodes.max(1)).prop_map(End::Node),
        1 => Just(End::SelfLoop),
        2 => (0..ARTIFACTS.len()).prop_map(End::Artifact),
        1 => (0usize..4).prop_map(End::Cross),
    ]
}

// ----- bare graphs -----------------------------------------------------------------------

/// How a node's `_archived` / `_orphaned_ts` fields are written (any truthy value
/// archives, as in Python; an orphan may lack `_archived`, §12.3 item 18).
#[derive(Clone, Copy, Debug)]
enum Flags {
    Active,
    ActiveFalse,
    ActiveZero,
    ActiveNull,
    Archived,
    ArchivedOne,
    ArchivedText,
    Orphan,
    BareOrphan,
}

fn flags(active: u32) -> impl Strategy<Value = Flags> {
    prop_oneof![
        active => Just(Flags::Active),
        1 => Just(Flags::ActiveFalse),
        1 => Just(Flags::ActiveZero),
        1 => Just(Flags::ActiveNull),
        5 => Just(Flags::Archived),
        1 => Just(Flags::ArchivedOne),
        1 => Just(Flags::ArchivedText),
        3 => Just(Flags::Orphan),
        1 => Just(Flags::BareOrphan),
    ]
}

/// Ages in seconds, dense around the 5-day grace and the 365-day orphan grace.
fn age() -> impl Strategy<Value = u32> {
    let d = DAY as u32;
    prop_oneof![
        3 => prop::sample::select(vec![
            0, 3_600, 4 * d, 5 * d - 1, 5 * d, 5 * d + 1, 6 * d, 30 * d,
            364 * d, 365 * d, 365 * d + 1, 500 * d,
        ]),
        1 => 0..(600 * d),
    ]
}

/// Weights of a graph's make-up: over-limit gists (against 11 parts of shorter ones)
/// and plain active nodes (against 15 parts of other flag shapes). Heavy mixes cross
/// the budgets with few nodes.
#[derive(Clone, Copy, Debug)]
struct Mix {
    long: u32,
    active: u32,
}

const LIGHT: Mix = Mix { long: 1, active: 8 };
const PLAIN: Mix = Mix { long: 2, active: 8 };
const HEAVY: Mix = Mix {
    long: 30,
    active: 30,
};

#[derive(Clone)]
struct NodeSpec {
    /// Extra id characters (ids are `n<i>` plus this many).
    pad: usize,
    gist: String,
    flags: Flags,
    /// Seconds before the start; `None` leaves `_created_ts` out (long past grace).
    created: Option<u32>,
    orphaned: u32,
    written: Option<u32>,
    read: Option<u32>,
    likes: Vec<u32>,
}

impl fmt::Debug for NodeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = |s: u32| format!("{:.2}d", f64::from(s) / DAY);
        write!(
            f,
            "{:?} pad {} gist {}",
            self.flags,
            self.pad,
            preview(&self.gist)
        )?;
        match self.created {
            Some(s) => write!(f, " created -{}", days(s))?,
            None => write!(f, " no-created")?,
        }
        if matches!(self.flags, Flags::Orphan | Flags::BareOrphan) {
            write!(f, " orphaned -{}", days(self.orphaned))?;
        }
        if let Some(s) = self.written {
            write!(f, " written -{}", days(s))?;
        }
        if let Some(s) = self.read {
            write!(f, " read -{}", days(s))?;
        }
        if !self.likes.is_empty() {
            let likes: Vec<String> = self.likes.iter().map(|&s| days(s)).collect();
            write!(f, " likes -{}", likes.join(",-"))?;
        }
        Ok(())
    }
}

fn node_spec(mix: Mix) -> impl Strategy<Value = NodeSpec> {
    (
        prop_oneof![3 => 0usize..4, 1 => 4usize..120],
        gist(mix.long),
        flags(mix.active),
        prop::option::weighted(0.9, age()),
        age(),
        prop::option::of(age()),
        prop::option::of(age()),
        prop::collection::vec(age(), 0..3),
    )
        .prop_map(
            |(pad, gist, flags, created, orphaned, written, read, likes)| NodeSpec {
                pad,
                gist,
                flags,
                created,
                orphaned,
                written,
                read,
                likes,
            },
        )
}

#[derive(Clone, Debug)]
struct EdgeSpec {
    from: usize,
    to: End,
    rel: usize,
}

#[derive(Clone)]
struct GraphSpec {
    nodes: Vec<NodeSpec>,
    edges: Vec<EdgeSpec>,
}

impl fmt::Debug for GraphSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} nodes, {} edges:", self.nodes.len(), self.edges.len())?;
        for (i, n) in self.nodes.iter().enumerate() {
            writeln!(f, "  #{i} {n:?}")?;
        }
        // Edge ends as the graph resolves them (positions modulo the node count).
        let n = self.nodes.len().max(1);
        for e in &self.edges {
            let to = match e.to {
                End::Node(j) => End::Node(j % n),
                other => other,
            };
            writeln!(f, "  #{} -{}-> {:?}", e.from % n, RELS[e.rel], to)?;
        }
        Ok(())
    }
}

/// Nodes and edges are drawn independently (edge ends are positions taken modulo the
/// node count), so both lists shrink on their own.
fn graph_spec(
    mix: Mix,
    nodes: std::ops::RangeInclusive<usize>,
    edges: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = GraphSpec> {
    let edge = (0usize..4_000, end(4_000), 0..RELS.len()).prop_map(|(from, to, rel)| EdgeSpec {
        from,
        to,
        rel,
    });
    (
        prop::collection::vec(node_spec(mix), nodes),
        prop::collection::vec(edge, edges),
    )
        .prop_map(|(nodes, edges)| GraphSpec { nodes, edges })
}

fn node_id(i: usize, pad: usize) -> String {
    let tail: String = "abcdefghijklmnopqrstuvwxyz-._0123456789"
        .chars()
        .cycle()
        .take(pad)
        .collect();
    format!("n{i}{tail}")
}

fn build(spec: &GraphSpec, now: f64) -> Graph {
    let mut g = Graph::default();
    let ago = |s: u32| now - f64::from(s);
    for (i, s) in spec.nodes.iter().enumerate() {
        let id = node_id(i, s.pad);
        let mut node = Node::new(&id);
        node.set(field::GIST, Value::String(s.gist.clone()));
        if let Some(c) = s.created {
            node.set(field::CREATED_TS, float_value(ago(c)));
        }
        if let Some(r) = s.read {
            node.set(field::LAST_READ_TS, float_value(ago(r)));
        }
        if !s.likes.is_empty() {
            let likes = s.likes.iter().map(|&l| float_value(ago(l))).collect();
            node.set(field::USEFUL_TS, Value::Array(likes));
        }
        let archived = match s.flags {
            Flags::Active => None,
            Flags::ActiveFalse => Some(json!(false)),
            Flags::ActiveZero => Some(json!(0)),
            Flags::ActiveNull => Some(Value::Null),
            Flags::Archived | Flags::Orphan => Some(json!(true)),
            Flags::ArchivedOne => Some(json!(1)),
            Flags::ArchivedText => Some(json!("yes")),
            Flags::BareOrphan => None,
        };
        if let Some(v) = archived {
            node.set(field::ARCHIVED, v);
        }
        if matches!(s.flags, Flags::Orphan | Flags::BareOrphan) {
            node.set(field::ORPHANED_TS, float_value(ago(s.orphaned)));
        }
        if let Some(w) = s.written {
            g.bump_version(format!("node:{id}"), ago(w), None);
        }
        g.nodes.insert(id, node);
    }
    let ids: Vec<String> = g.nodes.keys().cloned().collect();
    if ids.is_empty() {
        return g;
    }
    for e in &spec.edges {
        let from = ids[e.from % ids.len()].clone();
        let to = match e.to {
            End::Node(j) => ids[j % ids.len()].clone(),
            End::SelfLoop => from.clone(),
            End::Artifact(k) => ARTIFACTS[k % ARTIFACTS.len()].to_string(),
            End::Cross(k) => format!("user-pref-{k}"),
        };
        let key = EdgeKey::new(&from, &to, RELS[e.rel]);
        g.edges.entry(key.clone()).or_insert_with(|| Edge::new(key));
    }
    g
}

// ----- checks ------------------------------------------------------------------------------

/// The tier core.md §1.1 derives from the raw fields.
fn spec_tier(node: &Node) -> Tier {
    if node.get(field::ORPHANED_TS).is_some() {
        Tier::Orphaned
    } else if node.get(field::ARCHIVED).is_some_and(truthy) {
        Tier::Archived
    } else {
        Tier::Active
    }
}

/// (a) Exactly one tier per node, the one its flags give; the tier lists partition
/// the nodes; ids are unique and match the stored `id` field.
fn check_tiers(g: &Graph) -> Check {
    let mut seen = HashSet::new();
    for (id, node) in &g.nodes {
        prop_assert!(seen.insert(id.as_str()), "duplicate id {id}");
        prop_assert_eq!(node.id_field(), Some(id.as_str()), "id field of {}", id);
        prop_assert_eq!(node.tier(), spec_tier(node), "tier of {}", id);
    }
    let lists = [Tier::Active, Tier::Archived, Tier::Orphaned].map(|t| g.ids_in_tier(t));
    let mut all: Vec<&str> = lists.iter().flatten().copied().collect();
    prop_assert_eq!(all.len(), g.nodes.len(), "tier lists cover each node once");
    all.sort_unstable();
    all.dedup();
    prop_assert_eq!(all.len(), g.nodes.len(), "tier lists are disjoint");
    Ok(())
}

fn in_grace(node: &Node, now: f64) -> bool {
    now - node.created_ts() < GRACE_DAYS * DAY
}

/// Read in full or liked within the week before `now` (stamps from beyond tomorrow
/// are not believed).
fn in_use(node: &Node, now: f64) -> bool {
    let recent = |ts: f64| ts >= now - IN_USE_SECS && ts <= now + DAY;
    node.last_read_ts().is_some_and(recent) || node.useful_ts().iter().any(|&ts| recent(ts))
}

/// (b) Within budget, or stalled with every active node inside its grace period.
fn check_budget(g: &Graph, now: f64, what: &str) -> Check {
    let size = level_chars(g);
    if size > LEVEL_BUDGET {
        let ripe: Vec<&str> = g
            .nodes
            .iter()
            .filter(|(_, n)| n.tier() == Tier::Active && !in_grace(n, now))
            .map(|(id, _)| id.as_str())
            .collect();
        prop_assert!(
            ripe.is_empty(),
            "{}: level is {} chars > {} with active nodes past grace: {:?}",
            what,
            size,
            LEVEL_BUDGET,
            ripe
        );
    }
    Ok(())
}

fn tiers(g: &Graph) -> HashMap<String, Tier> {
    g.nodes
        .iter()
        .map(|(id, n)| (id.clone(), n.tier()))
        .collect()
}

fn orphan_stamps(g: &Graph) -> HashMap<String, f64> {
    g.nodes
        .iter()
        .filter_map(|(id, n)| n.orphaned_ts().map(|ts| (id.clone(), ts)))
        .collect()
}

/// (d) Deletions between two states of a graph at `now`: a node may only vanish as an
/// orphan past the orphan grace (strictly), unless `explicit` says a client deleted it.
fn check_deletions(
    before: &HashMap<String, f64>,
    before_ids: &HashSet<String>,
    after: &Graph,
    explicit: &HashSet<String>,
    now: f64,
) -> Check {
    let limit = ORPHAN_GRACE_DAYS * DAY;
    for id in before_ids {
        if after.nodes.contains_key(id) || explicit.contains(id) {
            continue;
        }
        let ts = before.get(id);
        prop_assert!(
            ts.is_some_and(|&ts| now - ts > limit),
            "{} was deleted at {} but was {}",
            id,
            now,
            match ts {
                Some(ts) => format!("orphaned only {:.3} days before", (now - ts) / DAY),
                None => "no orphan".to_string(),
            }
        );
    }
    Ok(())
}

fn check_no_expired_orphans(g: &Graph, now: f64) -> Check {
    for (id, n) in &g.nodes {
        if let Some(ts) = n.orphaned_ts() {
            prop_assert!(
                now - ts <= ORPHAN_GRACE_DAYS * DAY,
                "orphan {} survived a tick {:.3} days after it was orphaned",
                id,
                (now - ts) / DAY
            );
        }
    }
    Ok(())
}

/// Every check of one maintenance tick (§2.8: compaction, then pruning), from the
/// graph before and after it and the moves it reported (`deleted` = pruned).
fn check_tick(before: &Graph, after: &Graph, moves: &TierMoves, now: f64) -> Check {
    let tiers_before = tiers(before);
    let stamps_before = orphan_stamps(before);
    let ids_before: HashSet<String> = before.nodes.keys().cloned().collect();
    let size_before = level_chars(before);
    // Tiers right after compaction: pruned nodes were orphans.
    let tier_after = |id: &str| after.nodes.get(id).map_or(Tier::Orphaned, Node::tier);
    let size_after = level_chars(after);

    // (a)
    check_tiers(after)?;
    // The moves report is the tier diff of the compaction.
    let moved = |from: &dyn Fn(Tier) -> bool, to: Tier| -> Vec<String> {
        let mut ids: Vec<String> = tiers_before
            .iter()
            .filter(|(id, t)| from(**t) && tier_after(id) == to)
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    };
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    prop_assert_eq!(
        sorted(&moves.archived),
        moved(&|t| t == Tier::Active, Tier::Archived)
    );
    prop_assert_eq!(
        sorted(&moves.restored),
        moved(&|t| t != Tier::Active, Tier::Active)
    );
    prop_assert_eq!(
        sorted(&moves.orphaned),
        moved(&|t| t != Tier::Orphaned, Tier::Orphaned)
    );
    // Compaction never revives an orphan, and what it orphans stays archived (§6.5).
    for (id, t) in &tiers_before {
        if *t == Tier::Orphaned {
            prop_assert_eq!(tier_after(id), Tier::Orphaned, "{} left the orphans", id);
        } else if tier_after(id) == Tier::Orphaned {
            let archived = after.nodes.get(id).and_then(|n| n.get(field::ARCHIVED));
            prop_assert!(
                archived.is_some_and(truthy),
                "new orphan {} not archived",
                id
            );
        }
    }
    // (b) Under our grace rule (the default), a node inside its grace period is
    // archived only by a tick that starts over budget, and only when the new nodes'
    // lines exceed their share, or, for a new node nobody has read, to keep nodes in
    // use active. The level ends within budget.
    let left_active: Vec<&String> = tiers_before
        .iter()
        .filter(|(id, t)| **t == Tier::Active && tier_after(id) != Tier::Active)
        .map(|(id, _)| id)
        .collect();
    let active_before = || {
        before
            .nodes
            .iter()
            .filter(|(_, n)| n.tier() == Tier::Active)
    };
    let grace_lines: usize = active_before()
        .filter(|(_, n)| in_grace(n, now))
        .map(|(id, n)| 2 + chars(id) + 2 + chars(n.gist()) + 1)
        .sum();
    let some_in_use = active_before().any(|(_, n)| in_use(n, now));
    for id in &left_active {
        let node = after.nodes.get(*id);
        prop_assert!(node.is_some(), "active {} deleted by a tick", id);
        if let Some(n) = node.filter(|n| in_grace(n, now)) {
            let unread = n.last_read_ts().is_none_or(|r| r < n.created_ts()) && !in_use(n, now);
            prop_assert!(
                size_before > LEVEL_BUDGET
                    && (grace_lines > GRACE_SHARE || (unread && some_in_use)),
                "{} archived inside its grace (new nodes' lines {}, level {})",
                id,
                grace_lines,
                size_before
            );
        }
    }
    check_budget(after, now, "after a tick")?;
    // (d) Only orphans past their grace are deleted, all of them, and reported.
    check_deletions(&stamps_before, &ids_before, after, &HashSet::new(), now)?;
    let mut gone: Vec<String> = ids_before
        .iter()
        .filter(|id| !after.nodes.contains_key(*id))
        .cloned()
        .collect();
    gone.sort();
    prop_assert_eq!(
        sorted(&moves.deleted),
        gone,
        "pruning reports what it deleted"
    );
    // At most MAX_DELETES_PER_PASS go in one tick (longest orphaned first); the rest
    // in the ticks after.
    if moves.deleted.len() < kg_core::compact::MAX_DELETES_PER_PASS {
        check_no_expired_orphans(after, now)?;
    }
    for (id, ts) in orphan_stamps(after) {
        match stamps_before.get(&id) {
            Some(&old) => prop_assert_eq!(ts, old, "orphan stamp of {} moved", id),
            None => prop_assert_eq!(ts, now, "new orphan {} stamped", id),
        }
    }
    // Anchors above their share are orphaned down to it (§6.5).
    let index = LevelIndex::of(after);
    let anchors: usize = (0..index.tiers.len())
        .filter(|&i| index.tiers[i] == Tier::Archived)
        .map(|i| index.anchor_cost(i))
        .sum();
    prop_assert!(anchors <= ANCHOR_BUDGET, "anchors take {} chars", anchors);
    // (e) An archiving tick only archives over budget and never refills: whatever it
    // restored is resurrection, one for one with what it archived. A refill happens
    // only under the fill ceiling and stays under it.
    if !left_active.is_empty() {
        prop_assert!(
            size_before > LEVEL_BUDGET,
            "archived at {} chars, within budget",
            size_before
        );
        prop_assert!(
            moves.restored.len() <= left_active.len(),
            "archived {:?} but restored more: {:?}",
            left_active,
            moves.restored
        );
    } else if !moves.restored.is_empty() {
        prop_assert!(
            size_before < FILL_CEILING,
            "refilled from {} chars",
            size_before
        );
        prop_assert!(
            size_after <= FILL_CEILING,
            "refill ended at {} chars",
            size_after
        );
    }
    Ok(())
}

/// One maintenance tick on a bare graph, checked. Returns whether anything moved.
fn tick(g: &mut Graph, stall: &mut bool, now: f64) -> Result<bool, TestCaseError> {
    let before = g.clone();
    let mut moves = compact_graph(g, stall, "project:prop", GRACE_DAYS, now, None);
    moves.deleted = prune_orphans(g, config().orphan_grace_days, now);
    check_tick(&before, g, &moves, now)?;
    Ok(!moves.is_empty())
}

/// (e) Tick at one instant until nothing moves (within [`MAX_TICKS`]); a further tick
/// then leaves the graph exactly as it is.
fn settle(g: &mut Graph, stall: &mut bool, now: f64) -> Result<usize, TestCaseError> {
    // Permanent deletes are capped per pass: a graph with many expired orphans takes
    // a tick per batch of them.
    let ticks = MAX_TICKS + g.nodes.len() / kg_core::compact::MAX_DELETES_PER_PASS;
    for n in 1..=ticks {
        if !tick(g, stall, now)? {
            let before = g.clone();
            prop_assert!(!tick(g, stall, now)?, "a stable graph moved");
            prop_assert!(*g == before, "a stable graph changed");
            return Ok(n);
        }
    }
    Err(TestCaseError::fail(format!(
        "no fixed point within {ticks} ticks at {now}"
    )))
}

// ----- render equals charge ------------------------------------------------------------------

fn head(level: Level, plan: &Plan) -> String {
    let name = match level {
        Level::User => "USER",
        Level::Project => "PROJECT",
    };
    format!(
        "=== {name} GRAPH — {} active, {} archived ===",
        plan.order.len(),
        plan.anchors.len()
    )
}

/// One level's body as printed: the text between its `===` line and its `HEALTH`
/// line, with the HEALTH line. `rest` starts at the level's `===` line; `after` is the
/// exact text that follows the HEALTH line.
fn cut_level<'t>(rest: &'t str, head: &str, after: &str) -> Result<(&'t str, &'t str), String> {
    let rest = rest
        .strip_prefix(head)
        .and_then(|r| r.strip_prefix('\n'))
        .ok_or_else(|| format!("level does not start with {head:?}"))?;
    let at = rest
        .find(after)
        .ok_or_else(|| format!("{after:?} not found"))?;
    let before = &rest[..at];
    // The HEALTH line holds no newline; a gist may.
    let (body, health) = match before.rfind('\n') {
        Some(p) => (&before[..=p], &before[p + 1..]),
        None => ("", before),
    };
    if !health.starts_with("HEALTH: ") {
        return Err(format!("no HEALTH line before {after:?}: {health:?}"));
    }
    Ok((body, health))
}

/// (c) A full read of two levels (no preload, no degradation): each level body has
/// exactly the plan's `body_chars`, HEALTH counts the plan, and the text is the sum of
/// its parts. When both levels are within budget, the real 40,000-char read is the
/// same text (2 × 17,500 + wrapper fits by construction, §7.3).
fn check_render(levels: [(&Graph, Option<&str>); 2], now: f64) -> Check {
    let sid = "5e55a0c1";
    let read = |budget: usize| {
        render_read(
            [
                LevelSource {
                    level: Level::User,
                    graph: levels[0].0,
                    debt_line: levels[0].1,
                },
                LevelSource {
                    level: Level::Project,
                    graph: levels[1].0,
                    debt_line: levels[1].1,
                },
            ],
            &ReadOptions {
                kind: ReadKind::FullRead,
                budget,
                preloaded: None,
                header: None,
                session_id: Some(sid),
                now,
                grace_days: GRACE_DAYS,
            },
        )
    };
    let whole = read(usize::MAX);
    let text = whole.text.as_str();
    prop_assert_eq!(whole.body(), &whole.text, "no prefix without a preload");
    let mut rest = text;
    let mut total = 0;
    for (k, level) in [Level::User, Level::Project].into_iter().enumerate() {
        let (g, debt) = levels[k];
        let index = LevelIndex::of(g);
        let plan = Plan::build(&index, &index.tiers, Mode::Active);
        let charged = plan.body_chars(&index);
        prop_assert_eq!(charged, level_chars(g));
        let h = head(level, &plan);
        let mut after = String::new();
        if let Some(d) = debt {
            after.push('\n');
            after.push_str(d);
        }
        after.push_str(match level {
            Level::User => "\n=== PROJECT GRAPH — ",
            Level::Project => "\n\nSession: ",
        });
        let (body, health) = cut_level(rest, &h, &after).map_err(TestCaseError::fail)?;
        prop_assert_eq!(chars(body), charged, "{} body: render ≠ charge", level);
        let counts = format!(
            "HEALTH: {} nodes, {} edges, {} orphans (",
            plan.order.len(),
            plan.cited_edges(),
            plan.unlinked_nodes(&index)
        );
        prop_assert!(health.starts_with(&counts), "{} ≠ {}", health, counts);
        prop_assert_eq!(
            body.starts_with("ACTIVE:\n"),
            !plan.order.is_empty(),
            "ACTIVE head"
        );
        prop_assert_eq!(
            body.contains("\nARCHIVED (use kg_read with id to view full content):\n")
                || body.starts_with("ARCHIVED ("),
            !plan.anchors.is_empty(),
            "ARCHIVED head"
        );
        total += chars(&h) + 1 + charged + chars(health) + debt.map_or(0, |d| 1 + chars(d));
        let skip = h.len() + 1 + body.len() + health.len() + debt.map_or(0, |d| 1 + d.len()) + 1;
        rest = rest.get(skip..).unwrap_or("");
    }
    prop_assert_eq!(rest, format!("\nSession: {sid}"), "footer");
    // The newline between the levels, then the footer.
    total += 1 + chars("\n\nSession: ") + chars(sid);
    prop_assert_eq!(chars(text), total, "the read is the sum of its parts");
    if levels.iter().all(|(g, _)| level_chars(g) <= LEVEL_BUDGET) {
        let budgeted = read(READ_BUDGET);
        prop_assert!(chars(&budgeted.text) <= READ_BUDGET);
        prop_assert!(
            budgeted.text == whole.text,
            "a maintained graph read degraded"
        );
    }
    Ok(())
}

/// A DEBT line of the usual shape, to be carried through as wrapper text.
const DEBT_LINE: &str =
    "DEBT: LOW (0.14) — 0 oversized gist(s), 0 unconnected, never maintained, active 1/7d";

// ----- properties over bare graphs -----------------------------------------------------------

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

// ----- properties over a real store ------------------------------------------------------------

/// Ids of fresh nodes that operations create: short, medium and near the 128-char
/// limit (long ids make anchors expensive, which drives the orphan pass), in few
/// words, as the id length rule wants of new ids.
fn fresh_id(i: usize) -> String {
    let pad = [0, 3, 120, 10, 60, 1, 90, 25][i % 8];
    let tail: String = "fresh.memory.node.".chars().cycle().take(pad).collect();
    format!("f{i}{tail}")
}
const FRESH: usize = 24;

/// Archived nodes with 100-char ids added to the seeded project graph, linked to the
/// seeded nodes: enough of them overflow the anchor budget.
fn bulk_id(k: usize) -> String {
    let id = format!("bulk{k}-");
    let pad: String = "archived".chars().cycle().take(100 - id.len()).collect();
    format!("{id}{pad}")
}

#[derive(Clone)]
enum Op {
    Put {
        project: bool,
        node: usize,
        gist: String,
        notes: bool,
    },
    Edge {
        project: bool,
        from: usize,
        to: End,
        rel: usize,
    },
    Unedge {
        project: bool,
        nth: usize,
    },
    Delete {
        project: bool,
        node: usize,
    },
    /// A single-node read: promotes an archived or orphaned node.
    Read {
        project: bool,
        node: usize,
    },
    Like {
        node: usize,
    },
    Wait(u32),
    /// Maintenance ticks at one instant until nothing moves.
    Tick,
}

fn level_name(project: bool) -> &'static str {
    if project { "project" } else { "user" }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Put {
                project,
                node,
                gist,
                notes,
            } => write!(
                f,
                "put {} @{node} gist {}{}",
                level_name(*project),
                preview(gist),
                if *notes { " +notes" } else { "" }
            ),
            Op::Edge {
                project,
                from,
                to,
                rel,
            } => write!(
                f,
                "edge {} @{from} -{}-> {to:?}",
                level_name(*project),
                RELS[*rel]
            ),
            Op::Unedge { project, nth } => write!(f, "unedge {} #{nth}", level_name(*project)),
            Op::Delete { project, node } => write!(f, "delete {} @{node}", level_name(*project)),
            Op::Read { project, node } => write!(f, "read {} @{node}", level_name(*project)),
            Op::Like { node } => write!(f, "like @{node}"),
            Op::Wait(s) => write!(f, "wait {:.2}d", f64::from(*s) / DAY),
            Op::Tick => write!(f, "tick"),
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    let d = DAY as u32;
    let node = 0usize..400;
    prop_oneof![
        6 => (any::<bool>(), node.clone(), gist(20), prop::bool::weighted(0.2))
            .prop_map(|(project, node, gist, notes)| Op::Put { project, node, gist, notes }),
        4 => (any::<bool>(), node.clone(), end(400), 0..RELS.len())
            .prop_map(|(project, from, to, rel)| Op::Edge { project, from, to, rel }),
        1 => (any::<bool>(), 0usize..100).prop_map(|(project, nth)| Op::Unedge { project, nth }),
        1 => (any::<bool>(), node.clone()).prop_map(|(project, node)| Op::Delete { project, node }),
        3 => (any::<bool>(), node.clone()).prop_map(|(project, node)| Op::Read { project, node }),
        1 => node.prop_map(|node| Op::Like { node }),
        2 => prop::sample::select(vec![60, 3_600, 2 * d, 6 * d, 100 * d, 365 * d, 366 * d])
            .prop_map(Op::Wait),
        2 => Just(Op::Tick),
    ]
}

/// A storage root: a seeded project graph (plus `bulk` archived long-id nodes), an
/// empty user graph, and one session for the project.
struct World {
    home: TempHome,
    store: Store,
    project: String,
    sid: String,
    /// Every id operations address: seeded, bulk, fresh.
    ids: Vec<String>,
}

impl World {
    fn new(seed: &GraphSpec, bulk: usize) -> World {
        let home = TempHome::new();
        let project_dir = home.path.join("proj");
        std::fs::create_dir_all(&project_dir).expect("project folder");
        let project = project_dir.to_string_lossy().into_owned();
        let mut graph = build(seed, T);
        let seeded: Vec<String> = graph.nodes.keys().cloned().collect();
        for k in 0..bulk {
            let id = bulk_id(k);
            let mut node = Node::new(&id);
            node.set(field::GIST, Value::String(format!("bulk memory {k}")));
            node.set(field::CREATED_TS, float_value(T - 90.0 * DAY));
            node.set(field::ARCHIVED, json!(true));
            graph.nodes.insert(id.clone(), node);
            if k % 3 == 0 && !seeded.is_empty() {
                let key = EdgeKey::new(&id, &seeded[(k * 7) % seeded.len()], "r");
                graph.edges.insert(key.clone(), Edge::new(key));
            }
        }
        let file = home.storage().join("projects/proj/graph.json");
        std::fs::create_dir_all(file.parent().expect("folder")).expect("storage folder");
        let text = kg_core::persist::serialize_graph(&graph, Level::Project, Some(&project));
        std::fs::write(&file, text).expect("seed graph");
        let store = open_store(&home, T);
        let sid = store
            .register_session(Some(&project), None, T)
            .expect("session");
        let mut ids: Vec<String> = graph.nodes.keys().cloned().collect();
        ids.extend((0..FRESH).map(fresh_id));
        World {
            home,
            store,
            project,
            sid,
            ids,
        }
    }

    fn target(&self, project: bool) -> Target<'_> {
        Target {
            level: if project { Level::Project } else { Level::User },
            session: Some(&self.sid),
            project_path: project.then_some(self.project.as_str()),
        }
    }

    fn slot(&self, project: bool, now: f64) -> std::sync::Arc<GraphSlot> {
        self.store
            .resolve_target(self.target(project), now)
            .expect("graph")
    }

    fn graphs(&self, now: f64) -> [Graph; 2] {
        [false, true].map(|p| self.store.with_graph(&self.slot(p, now), Graph::clone))
    }

    fn id(&self, node: usize) -> &str {
        &self.ids[node % self.ids.len()]
    }
}

/// Only a not-found answer is an acceptable failure of an operation.
fn expect_found<T>(result: Result<T, StoreError>) -> Check {
    match result {
        Ok(_) | Err(StoreError::NodeNotFound { .. }) => Ok(()),
        Err(e) => Err(TestCaseError::fail(format!("store error: {e}"))),
    }
}

/// Run one operation; returns the ids a client deleted, per level.
fn apply(w: &World, op: &Op, now: &mut f64) -> Result<[HashSet<String>; 2], TestCaseError> {
    let mut deleted: [HashSet<String>; 2] = Default::default();
    let sid = Some(w.sid.as_str());
    match op {
        Op::Put {
            project,
            node,
            gist,
            notes,
        } => {
            let notes = notes.then(|| vec!["a note".to_string(), "שני".to_string()]);
            let id = w.id(*node);
            let put = w
                .store
                .put_node(w.target(*project), id, gist, notes, None, *now);
            // Exactly the gists the size rules refuse (empty, blank, too long) are
            // refused; a refusal changes nothing, which the next checks see.
            let healed = kg_core::heal::heal(gist, None, None).gist;
            if kg_core::limits::gist(&healed).is_err() {
                prop_assert!(
                    matches!(put, Err(kg_core::StoreError::Invalid(_))),
                    "put {id} of a refused gist: {put:?}"
                );
                return Ok(deleted);
            }
            prop_assert!(put.is_ok(), "put {}: {:?}", id, put.err());
            // The write ran maintenance on its level (§4.2 step 6).
            let g = w.store.with_graph(&w.slot(*project, *now), Graph::clone);
            check_budget(&g, *now, "after a write")?;
        }
        Op::Edge {
            project,
            from,
            to,
            rel,
        } => {
            let from = w.id(*from).to_string();
            let to = match to {
                End::Node(j) => w.id(*j).to_string(),
                End::SelfLoop => from.clone(),
                End::Artifact(k) => ARTIFACTS[k % ARTIFACTS.len()].to_string(),
                End::Cross(k) => format!("user-pref-{k}"),
            };
            let put = w
                .store
                .put_edge(w.target(*project), &from, &to, RELS[*rel], None, *now);
            prop_assert!(put.is_ok(), "edge: {:?}", put.err());
        }
        Op::Unedge { project, nth } => {
            let keys: Vec<EdgeKey> = w.store.with_graph(&w.slot(*project, *now), |g| {
                g.edges.keys().cloned().collect()
            });
            if !keys.is_empty() {
                let key = &keys[nth % keys.len()];
                let gone = w
                    .store
                    .delete_edge(Some(w.target(*project)), sid, key, *now);
                prop_assert!(matches!(gone, Ok(Some(_))), "unedge {}: {:?}", key, gone);
            }
        }
        Op::Delete { project, node } => {
            let id = w.id(*node);
            expect_found(w.store.delete_node(Some(w.target(*project)), sid, id, *now))?;
            deleted[usize::from(*project)].insert(id.to_string());
        }
        Op::Read { project, node } => {
            let id = w.id(*node);
            let read = w.store.read_node(Some(w.target(*project)), sid, id, *now);
            if let Ok(read) = &read {
                let n = Node::from_object(read.node.clone());
                prop_assert_eq!(n.tier(), Tier::Active, "a read node is active");
            }
            expect_found(read)?;
        }
        Op::Like { node } => {
            let liker = w
                .store
                .register_session(Some(&w.project), None, *now)
                .expect("session");
            let likes = w.store.useful(&liker, &[w.id(*node).to_string()], *now);
            prop_assert!(likes.is_ok(), "like: {:?}", likes.err());
        }
        Op::Wait(secs) => *now += f64::from(*secs),
        Op::Tick => settle_store(w, *now)?,
    }
    Ok(deleted)
}

/// The moves each level's tick reported on the change log.
fn logged_moves(store: &Store, from: u64) -> [TierMoves; 2] {
    let mut moves: [TierMoves; 2] = Default::default();
    for change in store.changes_since(from).unwrap_or_default() {
        if let kg_core::ChangeKind::TiersMoved(m) = change.kind {
            moves[usize::from(change.level == Level::Project)] = m;
        }
    }
    moves
}

/// (e) on the store: `Store::tick` until nothing moves, each tick checked, then one
/// more that changes nothing; then (b) and (c) on what a full read shows.
fn settle_store(w: &World, now: f64) -> Check {
    // Keep the session alive across long waits (ticks expire idle sessions).
    w.store.count_op(&w.sid, now).expect("registered session");
    let nodes: usize = w.graphs(now).iter().map(|g| g.nodes.len()).sum();
    let ticks = MAX_TICKS + nodes / kg_core::compact::MAX_DELETES_PER_PASS;
    for _ in 0..ticks {
        let before = w.graphs(now);
        let head = w.store.change_head();
        w.store.tick(now);
        let after = w.graphs(now);
        let moves = logged_moves(&w.store, head);
        for k in 0..2 {
            check_tick(&before[k], &after[k], &moves[k], now)?;
        }
        if moves.iter().all(TierMoves::is_empty) {
            w.store.tick(now);
            let again = w.graphs(now);
            prop_assert!(again == after, "a stable store changed on another tick");
            return check_store_read(w, &after, now);
        }
    }
    Err(TestCaseError::fail(format!(
        "store found no fixed point within {ticks} ticks at {now}"
    )))
}

/// (c) end to end: the read the `kg_read` tool renders for the session is the one
/// whose level bodies equal the plans' charge.
fn check_store_read(w: &World, graphs: &[Graph; 2], now: f64) -> Check {
    let debts = [false, true].map(|p| w.store.level_debt(&w.slot(p, now), now).line());
    check_render(
        [
            (&graphs[0], Some(debts[0].as_str())),
            (&graphs[1], Some(debts[1].as_str())),
        ],
        now,
    )?;
    if graphs.iter().all(|g| level_chars(g) <= LEVEL_BUDGET) {
        let (tool, _) = kg_core::tools::render_session(
            &w.store,
            &w.sid,
            ReadKind::FullRead,
            kg_core::tools::pages::Client::ClaudeCode,
            None,
            None,
            now,
        );
        let ours = render_read(
            [
                LevelSource {
                    level: Level::User,
                    graph: &graphs[0],
                    debt_line: Some(&debts[0]),
                },
                LevelSource {
                    level: Level::Project,
                    graph: &graphs[1],
                    debt_line: Some(&debts[1]),
                },
            ],
            &ReadOptions {
                kind: ReadKind::FullRead,
                budget: usize::MAX,
                preloaded: None,
                header: None,
                session_id: Some(&w.sid),
                now,
                grace_days: GRACE_DAYS,
            },
        );
        prop_assert!(
            tool.text == ours.text,
            "the tool's read differs from the plan's"
        );
    }
    Ok(())
}

/// A store driven by random operations keeps every invariant after every step.
fn drive(seed: &GraphSpec, bulk: usize, ops: &[Op]) -> Check {
    let w = World::new(seed, bulk);
    let mut now = T;
    for op in ops {
        let before = w.graphs(now);
        let stamps = before.clone().map(|g| orphan_stamps(&g));
        let deleted = apply(&w, op, &mut now)?;
        let after = w.graphs(now);
        for k in 0..2 {
            // (a) after every operation.
            check_tiers(&after[k])?;
            // (d) a write, read or like never deletes a node; a tick only expired orphans.
            let ids: HashSet<String> = before[k].nodes.keys().cloned().collect();
            check_deletions(&stamps[k], &ids, &after[k], &deleted[k], now)?;
        }
    }
    settle_store(&w, now)?;
    drop(w.home);
    Ok(())
}

proptest! {
    #![proptest_config(cases(48))]
    /// A seeded store under up to 80 random operations, checked after every one.
    #[test]
    fn a_store_under_random_operations_keeps_the_invariants(
        seed in graph_spec(HEAVY, 0..=80, 0..=160),
        bulk in prop_oneof![1 => Just(0usize), 2 => 0usize..=90],
        ops in prop::collection::vec(op(), 1..=80),
    ) {
        drive(&seed, bulk, &ops)?;
    }
}
