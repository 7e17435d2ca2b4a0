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

mod bare;
mod checks;
mod store;

use checks::*;

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
