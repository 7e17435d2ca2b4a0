//! The JSON the graph view reads: the `/api/view/…` answers, the answers of the REST
//! writes it makes, and the `/ws` messages. Each is a serde type here, and ts-rs
//! derives its TypeScript twin into `ui/src/generated/payloads.ts` ([`typescript`]),
//! so the page and the server cannot disagree on a shape unnoticed: a unit test fails
//! when the committed file differs (`KG_UPDATE_TS=1 cargo test -p kg-server --lib
//! payload` rewrites it).
//!
//! Field order is key order on the wire (serde_json keeps insertion order). Rounded
//! numbers are rounded ([`round_to`]) when a payload is built; `f64` fields always
//! print as floats (`1.0`), integer fields as integers. A key that is sometimes absent
//! (rather than `null`) is `skip_serializing_if` plus `#[ts(optional)]`.
//!
//! Stored nodes and edges are kg-core's open-ended objects, passed through as they
//! are; their TypeScript shapes (`StoredNode`, `StoredEdge`) are written by hand in
//! `ui/src/types.ts`.

use kg_core::round_to;
use kg_core::{Change, EdgeKey};
use kg_core::{ChangeKind, TierMoves};
use kg_core::{Level, Node, Object, Tier};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::any::TypeId;
use ts_rs::TS;

/// A payload as the JSON value the wire writer (`pyfmt::to_json`) prints.
pub fn value<T: Serialize>(payload: &T) -> Value {
    // Every payload is maps with string keys over strings, numbers and booleans, which
    // serde_json always converts; `null` is what a failure would send.
    serde_json::to_value(payload).unwrap_or_else(|e| {
        log::error!("cannot convert a payload to JSON: {e}");
        Value::Null
    })
}

/// A kg-core enum as the string its `as_str` writes on the wire, with a TypeScript union
/// of those strings. Serialising goes through kg-core's `as_str`, so the bytes cannot
/// change here; a unit test checks that the TypeScript names agree with it.
macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident = $core:ty { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, TS)]
        pub enum $name {
            $(#[ts(rename = $text)] $variant),+
        }

        impl $name {
            #[cfg(test)]
            const ALL: &[$name] = &[$($name::$variant),+];
        }

        impl From<$core> for $name {
            fn from(x: $core) -> Self {
                match x {
                    $(<$core>::$variant => $name::$variant),+
                }
            }
        }

        impl From<$name> for $core {
            fn from(x: $name) -> Self {
                match x {
                    $($name::$variant => <$core>::$variant),+
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(<$core>::from(*self).as_str())
            }
        }
    };
}

wire_enum! {
    /// One of the two graphs: cross-project knowledge or this codebase's.
    LevelName = Level { User => "user", Project => "project" }
}

wire_enum! {
    /// Where a node stands in the bounded memory.
    TierName = Tier { Active => "active", Archived => "archived", Orphaned => "orphaned" }
}

wire_enum! {
    /// Where a level's rendered size stands against its budget.
    BudgetState = kg_core::BudgetState {
        UnderFill => "under_fill",
        Settled => "settled",
        Over => "over",
    }
}

wire_enum! {
    /// The pool a node was scored in: active nodes only (the archive order) or active
    /// and archived ones (the refill order).
    Pool = kg_core::Pool { Active => "active", Unified => "active+archived" }
}

wire_enum! {
    /// What one item of maintenance debt is.
    DebtKind = kg_core::DebtKind { Oversized => "oversized", Unconnected => "unconnected", StaleTouch => "stale_touch" }
}

wire_enum! {
    /// A graph's maintenance debt verdict.
    DebtLevel = kg_core::DebtLevel { Low => "LOW", Med => "MED", High => "HIGH" }
}

// ----- shared parts -------------------------------------------------------------------

/// How many nodes a level holds in each tier.
#[derive(Debug, Clone, Copy, Serialize, TS)]
pub struct Counts {
    pub active: usize,
    pub archived: usize,
    pub orphaned: usize,
}

impl From<(usize, usize, usize)> for Counts {
    fn from((active, archived, orphaned): (usize, usize, usize)) -> Counts {
        Counts {
            active,
            archived,
            orphaned,
        }
    }
}

/// A level's rendered size, as the compactor charges it, against its budget.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Budget {
    pub chars: usize,
    pub budget: usize,
    pub fill_line: usize,
    /// `fill_line / budget`, two decimals.
    pub fill_ratio: f64,
    pub anchor_chars: usize,
    pub anchor_budget: usize,
    pub state: BudgetState,
    /// Gists longer than this count as maintenance debt (they scan badly).
    pub scan_limit: usize,
    /// Days a new node is protected from archiving (how far: see `grace_share`).
    pub grace_days: f64,
    /// Characters of node lines the new nodes may hold out of compaction's reach, the
    /// newest first (our policy); `None` when grace protects every new node (the
    /// reference's).
    pub grace_share: Option<usize>,
    /// Active nodes still inside that grace period.
    pub active_in_grace: usize,
    /// Days until the first of them leaves its grace period (one decimal), if any.
    pub first_grace_ends_in_days: Option<f64>,
    /// What happens to the level next, in words (the gauge's sentence).
    pub outlook: String,
}

impl Budget {
    /// The budget of an inspected level, with what its grace periods allow.
    pub fn of(inspection: &kg_core::LevelInspection, grace_days: f64) -> Budget {
        let b = &inspection.budget;
        let in_grace = || {
            inspection
                .nodes
                .iter()
                .filter(|why| why.tier == Tier::Active)
                .filter_map(|why| why.grace_left_days)
        };
        Budget {
            chars: b.chars,
            budget: b.budget,
            fill_line: b.fill_line,
            fill_ratio: round_to(b.fill_line as f64 / b.budget as f64, 2),
            anchor_chars: b.anchor_chars,
            anchor_budget: b.anchor_budget,
            state: b.state.into(),
            scan_limit: kg_core::GIST_SCAN_LIMIT,
            grace_days,
            grace_share: inspection.grace_share,
            active_in_grace: in_grace().count(),
            first_grace_ends_in_days: in_grace().reduce(f64::min),
            outlook: inspection.outlook.clone(),
        }
    }
}

/// A graph's maintenance debt, as `Debt::to_object` writes it for the survey (a unit
/// test holds the two together).
#[derive(Debug, Clone, Serialize, TS)]
pub struct Debt {
    /// Two decimals.
    pub score: f64,
    pub level: DebtLevel,
    pub oversized_gists: usize,
    pub unconnected_active: usize,
    pub active_nodes: usize,
    /// One decimal (14 when never maintained).
    pub untended_days: f64,
    pub never_maintained: bool,
    pub active_days_7d: usize,
    /// Merge-conflict notes waiting on the graph's nodes (they make the level at least
    /// MED); absent when there are none, as in the survey.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub merge_conflicts: Option<usize>,
    /// Touches of active nodes whose file is gone (our policy); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub dangling_touches: Option<usize>,
    /// The active nodes holding them (what the deficit weighs); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub dangling_nodes: Option<usize>,
    /// Items a sync held back from the graph (content from a remote that breaks a
    /// write rule; `kg-memory sync status` lists them); absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub held_back: Option<usize>,
}

impl From<&kg_core::Debt> for Debt {
    fn from(d: &kg_core::Debt) -> Debt {
        Debt {
            score: round_to(d.score, 2),
            level: d.level.into(),
            oversized_gists: d.oversized,
            unconnected_active: d.unconnected,
            active_nodes: d.active_nodes,
            untended_days: round_to(d.untended_days, 1),
            never_maintained: d.never_maintained,
            active_days_7d: d.active_days_7d,
            merge_conflicts: (d.merge_conflicts > 0).then_some(d.merge_conflicts),
            dangling_touches: (d.stale_touches > 0).then_some(d.stale_touches),
            dangling_nodes: (d.stale_touches > 0).then_some(d.stale_nodes),
            held_back: (d.held_back > 0).then_some(d.held_back),
        }
    }
}

/// The debt of the level on screen, with the factors its score multiplies.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LevelDebt<'a> {
    #[serde(flatten)]
    pub debt: Debt,
    /// `min(1, untended_days / 14)`, three decimals.
    pub staleness: f64,
    /// `min(1, active_days_7d / 4)`, three decimals.
    pub activity: f64,
    /// `(oversized + 0.5 × unconnected) / active`, before capping at 1; three decimals.
    pub deficit: f64,
    /// The DEBT line `kg_read` prints.
    pub line: &'a str,
    /// How a merge-conflict note begins ([`kg_core::CONFLICT_NOTE_PREFIX`]): the view
    /// lists the nodes holding one, which `merge_conflicts` counts.
    pub conflict_note_prefix: &'static str,
}

impl<'a> From<&'a kg_core::DebtFactors> for LevelDebt<'a> {
    fn from(d: &'a kg_core::DebtFactors) -> LevelDebt<'a> {
        LevelDebt {
            debt: (&d.debt).into(),
            staleness: round_to(d.staleness, 3),
            activity: round_to(d.activity, 3),
            deficit: round_to(d.deficit, 3),
            line: &d.line,
            conflict_note_prefix: kg_core::CONFLICT_NOTE_PREFIX,
        }
    }
}

// ----- GET /api/view/graphs -----------------------------------------------------------

/// `GET /api/view/graphs`: every graph, for the graph selector.
#[derive(Debug, Serialize, TS)]
pub struct GraphList {
    pub graphs: Vec<GraphRow>,
    /// The project of the session used last (a tool call or a hook), which the view
    /// opens on; none while no live session has a project.
    pub recent_project: Option<String>,
}

/// One graph of the catalogue. Loaded graphs report memory, the others their file.
#[derive(Debug, Serialize, TS)]
pub struct GraphRow {
    /// `user`, or the project's storage folder.
    pub graph: String,
    pub level: LevelName,
    pub project_path: Option<String>,
    pub loaded: bool,
    pub counts: Counts,
    pub debt: Debt,
    /// Its file did not parse and was moved aside while this server ran (as in
    /// [`LevelData::damaged`]), so `kg-memory status` and the picker can say so.
    pub damaged: Option<Damaged>,
}

// ----- GET /api/view/level ------------------------------------------------------------

/// `GET /api/view/level`: everything the view draws for one level.
#[derive(Debug, Serialize, TS)]
pub struct LevelData<'a> {
    pub level: LevelName,
    pub project_path: Option<&'a str>,
    pub graph: &'a str,
    pub counts: Counts,
    pub budget: Budget,
    pub health: Health<'a>,
    pub debt: LevelDebt<'a>,
    pub debt_items: Vec<DebtItem<'a>>,
    /// The graph's file did not parse and was moved aside while this server ran: the
    /// view says so instead of showing the graph as merely small or empty.
    pub damaged: Option<Damaged>,
    /// The change-log position the level was read at: it holds every change numbered
    /// below this (see [`LiveMessage::Connected`]).
    pub change_head: u64,
    /// In node order.
    pub nodes: Vec<NodeRow<'a>>,
    /// In edge order.
    pub edges: Vec<EdgeRow<'a>>,
}

/// A damaged graph file that was moved aside, and what the level holds instead.
#[derive(Debug, Serialize, TS)]
pub struct Damaged {
    pub path: String,
    pub moved_to: String,
    /// Why it did not parse.
    pub cause: String,
    /// The backup (`.prev`) the level was loaded from, or null when it started empty.
    pub backup: Option<String>,
    /// Seconds since the Unix epoch.
    pub at: f64,
}

impl From<kg_core::DamagedFile> for Damaged {
    fn from(d: kg_core::DamagedFile) -> Self {
        Damaged {
            path: d.path.display().to_string(),
            moved_to: d.moved_to.display().to_string(),
            cause: d.cause,
            backup: d.backup.map(|b| b.display().to_string()),
            at: d.at,
        }
    }
}

/// The HEALTH of the rendered level, with the line `kg_read` prints.
#[derive(Debug, Serialize, TS)]
pub struct Health<'a> {
    pub nodes: usize,
    pub edges: usize,
    pub orphans: usize,
    pub orphan_pct: i64,
    pub avg_edges: f64,
    pub line: &'a str,
}

/// One item of maintenance debt.
#[derive(Debug, Serialize, TS)]
pub struct DebtItem<'a> {
    pub kind: DebtKind,
    pub id: &'a str,
    pub gist_chars: usize,
    /// A stale touch: the entry as the node stores it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub touch: Option<&'a str>,
    /// A stale touch: its path as the entry writes it (the file that is gone).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub file: Option<String>,
    /// A stale touch git saw renamed: the path its file has now, written as the
    /// touch writes paths (what a `retouch` step sets).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub renamed_to: Option<String>,
}

/// A node with its tier and why it is there.
#[derive(Debug, Serialize, TS)]
pub struct NodeRow<'a> {
    #[ts(type = "StoredNode")]
    pub node: &'a Node,
    pub tier: TierName,
    pub why: TierWhy<'a>,
}

/// Why a node is in its tier: its score and the percentiles it is made of (none in
/// the grace period and for orphans), its place in the archive or refill order, what
/// it costs the level.
#[derive(Debug, Serialize, TS)]
pub struct TierWhy<'a> {
    /// Four decimals.
    pub score: Option<f64>,
    pub recency: Option<f64>,
    pub connectedness: Option<f64>,
    pub usefulness: Option<f64>,
    pub pool: Option<Pool>,
    pub rank: Option<usize>,
    pub rank_of: usize,
    /// One decimal.
    pub grace_left_days: Option<f64>,
    pub cost: usize,
    pub traces: usize,
    pub deleted_at: Option<f64>,
    pub reason: &'a str,
}

impl<'a> From<&'a kg_core::TierWhy> for TierWhy<'a> {
    fn from(w: &'a kg_core::TierWhy) -> TierWhy<'a> {
        let part = |f: fn(&kg_core::NodeScore) -> f64| w.score.map(|s| round_to(f(&s), 4));
        TierWhy {
            score: part(|s| s.score),
            recency: part(|s| s.recency),
            connectedness: part(|s| s.connectedness),
            usefulness: part(|s| s.usefulness),
            pool: w.pool.map(Pool::from),
            rank: w.rank,
            rank_of: w.rank_of,
            grace_left_days: w.grace_left_days.map(|d| round_to(d, 1)),
            cost: w.cost,
            traces: w.traces,
            deleted_at: w.deleted_at,
            reason: &w.reason,
        }
    }
}

/// An edge, and whether it is live (rendered, charged, drawn solid).
#[derive(Debug, Serialize, TS)]
pub struct EdgeRow<'a> {
    #[ts(type = "StoredEdge")]
    pub edge: &'a Object,
    pub live: bool,
    /// Whether `from` / `to` name a file or folder rather than a node.
    pub from_artifact: bool,
    pub to_artifact: bool,
}

// ----- GET /api/view/search -----------------------------------------------------------

/// `GET /api/view/search`: the server's ranking over the levels on screen.
#[derive(Debug, Serialize, TS)]
pub struct SearchAnswer<'a> {
    pub query: &'a str,
    /// Every matching (level, id).
    pub total: usize,
    /// The top hits, then the next ones.
    pub hits: Vec<SearchHit<'a>>,
    /// Edges on the connection paths between top hits.
    pub path_edges: Vec<PathEdge<'a>>,
    /// Path endpoints that are no hit.
    pub connectors: Vec<Connector<'a>>,
}

#[derive(Debug, Serialize, TS)]
pub struct SearchHit<'a> {
    pub level: LevelName,
    pub id: &'a str,
    pub gist: &'a str,
    pub tier: TierName,
    /// Four decimals.
    pub score: f64,
    /// Among the top hits (the ones `kg_search` shows in full).
    pub top: bool,
}

#[derive(Debug, Serialize, TS)]
pub struct PathEdge<'a> {
    pub from: &'a str,
    pub to: &'a str,
    pub rel: &'a str,
}

impl<'a> From<&'a EdgeKey> for PathEdge<'a> {
    fn from(k: &'a EdgeKey) -> PathEdge<'a> {
        PathEdge {
            from: k.from(),
            to: k.to(),
            rel: k.rel(),
        }
    }
}

#[derive(Debug, Serialize, TS)]
pub struct Connector<'a> {
    pub level: LevelName,
    pub id: &'a str,
    pub gist: &'a str,
}

// ----- GET /api/view/neighbourhood ----------------------------------------------------

/// `GET /api/view/neighbourhood`: a node and what lies within `k` hops of it in its
/// level, edge direction ignored, every tier. Artifact paths are listed but never
/// passed through; ends that are no node of this level (the other level's nodes,
/// deleted ones) are left out with their edges, and counted.
#[derive(Debug, Serialize, TS)]
pub struct NeighbourhoodAnswer<'a> {
    pub level: LevelName,
    pub project_path: Option<&'a str>,
    /// The centre.
    pub id: &'a str,
    pub k: usize,
    /// The centre first (distance 0), then by distance, then id.
    pub nodes: Vec<NeighbourRow<'a>>,
    /// By distance, then path.
    pub artifacts: Vec<ArtifactRow<'a>>,
    /// The edges between listed nodes and artifacts, by from, to, rel.
    pub edges: Vec<PathEdge<'a>>,
    /// Edges of the listed nodes left out because their other end is no node of this
    /// level (a node of the other level, or a deleted one).
    pub outside_edges: usize,
}

#[derive(Debug, Serialize, TS)]
pub struct NeighbourRow<'a> {
    pub id: &'a str,
    /// Hops from the centre.
    pub distance: usize,
    pub tier: TierName,
}

#[derive(Debug, Serialize, TS)]
pub struct ArtifactRow<'a> {
    pub path: &'a str,
    /// Hops from the centre.
    pub distance: usize,
}

// ----- POST /api/view/step and /api/view/undo -----------------------------------------

/// `POST /api/view/step`: what a step did or, for a dry run, would do. The dry run is
/// the same code as the commit, rolled back, so its lists are what the commit moves.
#[derive(Debug, Serialize, TS)]
pub struct StepAnswer {
    pub level: LevelName,
    pub dry_run: bool,
    pub created: Vec<String>,
    /// Existing nodes whose gist the step replaced.
    pub updated: Vec<String>,
    /// Archived or orphaned nodes brought back to the active tier.
    pub promoted: Vec<String>,
    /// Orphaned neighbours of promoted nodes, back in the archive.
    pub rescued: Vec<String>,
    /// Active nodes archived by hand.
    pub archived: Vec<String>,
    pub deleted: Vec<String>,
    pub edges_deleted: usize,
    /// Nodes the step locked, and unlocked.
    pub locked: Vec<String>,
    pub unlocked: Vec<String>,
    /// The rename the step was, if it was one.
    pub renamed: Option<StepRename>,
    /// What the maintenance passes at the end of the step moved.
    pub rebalanced: StepMoves,
    /// Steps that can be undone on this level now.
    pub undo_steps: usize,
    /// The level's rendered size before and after the step, in characters.
    pub chars_before: usize,
    pub chars_after: usize,
}

/// A rename done (or checked) by a step.
#[derive(Debug, Serialize, TS)]
pub struct StepRename {
    pub from: String,
    pub to: String,
    /// Edge ends that named the old id and name the new one now, in every graph (0
    /// for a dry run).
    pub edges_rewired: usize,
}

/// Nodes the maintenance passes moved between tiers.
#[derive(Debug, Serialize, TS)]
pub struct StepMoves {
    /// Archived to bring the level under its budget.
    pub archived: Vec<String>,
    /// Brought back by refill, below the fill line.
    pub restored: Vec<String>,
    /// Archived nodes that stopped rendering at all.
    pub orphaned: Vec<String>,
}

impl StepAnswer {
    /// The answer for `outcome`.
    pub fn new(level: Level, dry_run: bool, outcome: &kg_core::Outcome) -> StepAnswer {
        let moves = &outcome.rebalanced;
        StepAnswer {
            level: level.into(),
            dry_run,
            created: outcome.created.clone(),
            updated: outcome.updated.clone(),
            promoted: outcome.promoted.clone(),
            rescued: outcome.rescued.clone(),
            archived: outcome.archived.clone(),
            deleted: outcome.deleted.clone(),
            edges_deleted: outcome.edges_deleted,
            locked: outcome.locked.clone(),
            unlocked: outcome.unlocked.clone(),
            renamed: outcome
                .renamed
                .as_ref()
                .map(|(from, to, edges)| StepRename {
                    from: from.clone(),
                    to: to.clone(),
                    edges_rewired: *edges,
                }),
            rebalanced: StepMoves {
                archived: moves.archived.clone(),
                restored: moves.restored.clone(),
                orphaned: moves.orphaned.clone(),
            },
            undo_steps: outcome.undo_steps,
            chars_before: outcome.chars_before,
            chars_after: outcome.chars_after,
        }
    }
}

/// `POST /api/view/undo`: the last step taken back.
#[derive(Debug, Serialize, TS)]
pub struct UndoAnswer {
    pub level: LevelName,
    /// Nodes restored as they were before the step (or removed, if it created them).
    pub nodes: Vec<String>,
    /// Steps still left to undo on this level.
    pub undo_steps: usize,
}

// ----- the REST writes the view makes ---------------------------------------------------

/// `POST /api/nodes`.
#[derive(Debug, Serialize, TS)]
pub struct NodePutAnswer {
    #[ts(type = "StoredNode")]
    pub node: Object,
    pub level: LevelName,
}

/// `POST /api/nodes/rename`.
#[derive(Debug, Serialize, TS)]
pub struct NodeRenameAnswer {
    pub renamed: Renaming,
    pub level: LevelName,
    /// Edge ends that named the old id and name the new one now, in every graph.
    pub edges_rewired: usize,
    /// Project graphs whose edges were left alone, and why (`local-node`,
    /// `collision`, `unwritable`).
    pub skipped_graphs: Vec<SkippedGraphAnswer>,
    #[ts(type = "StoredNode")]
    pub node: Object,
}

/// The old and the new id of a rename.
#[derive(Debug, Serialize, TS)]
pub struct Renaming {
    pub from: String,
    pub to: String,
}

/// A project graph a rename left alone.
#[derive(Debug, Serialize, TS)]
pub struct SkippedGraphAnswer {
    pub graph: String,
    pub reason: &'static str,
}

/// `DELETE /api/nodes/{level}/{id}`.
#[derive(Debug, Serialize, TS)]
pub struct NodeDeleteAnswer {
    /// The id.
    pub deleted: String,
    pub level: LevelName,
    pub edges_deleted: usize,
}

/// `POST /api/edges`.
#[derive(Debug, Serialize, TS)]
pub struct EdgePutAnswer {
    #[ts(type = "StoredEdge")]
    pub edge: Object,
    pub level: LevelName,
}

/// `DELETE /api/edges/{level}/{from}/{to}/{rel}`.
#[derive(Debug, Serialize, TS)]
pub struct EdgeDeleteAnswer {
    /// Whether the edge was there.
    pub deleted: bool,
    pub level: LevelName,
}

// ----- GET /api/view/activity -----------------------------------------------------------

/// `GET /api/view/activity`: the newest changes of the levels on screen, newest first.
#[derive(Debug, Serialize, TS)]
pub struct ActivityAnswer<'a> {
    pub entries: Vec<ActivityEntry<'a>>,
}

/// One change of the store's change log, as the activity panel lists it.
#[derive(Debug, Serialize, TS)]
pub struct ActivityEntry<'a> {
    /// Its place in the change log.
    pub seq: u64,
    /// Seconds since the Unix epoch.
    pub ts: f64,
    pub level: LevelName,
    pub project_path: Option<&'a str>,
    pub author: Author,
    /// The KG session that made it, when one did (a view's is its connection's).
    pub session: Option<&'a str>,
    /// For a change that arrived through sync: the remote it came from, as
    /// `origin (url)`.
    pub origin: Option<&'a str>,
    pub kind: ActivityKind,
    /// The nodes it concerns, the main one first.
    pub ids: Vec<String>,
    /// What happened, in one plain line.
    pub summary: String,
}

/// Who made a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Author {
    /// An agent's KG session (MCP tools, hooks).
    Agent,
    /// A person in a graph view.
    View,
    /// The server itself: tier moves, debt verdicts, damaged files.
    Maintenance,
    /// A REST call without a session.
    Client,
    /// Another machine: the change arrived through git sync (its remote in `origin`).
    Sync,
}

/// What kind of change an activity entry is: the `type` of the matching `/ws` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    NodeUpdated,
    NodeRenamed,
    EdgeUpdated,
    NodeDeleted,
    EdgeDeleted,
    NodeRecalled,
    TiersMoved,
    NodeLiked,
    ProgressSaved,
    StepUndone,
    DebtChanged,
    Quarantined,
}

// ----- /ws ------------------------------------------------------------------------------

/// A message on `/ws`. A change's `source_session` is the KG session that made it
/// (`null`: REST without a session, or maintenance); `project_path` is there for
/// project-level changes only.
#[derive(Debug, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LiveMessage<'a> {
    /// The first message: the session this connection's writes are tagged with, and
    /// the change-log position from which every change comes over this connection.
    /// A level read at an earlier position ([`LevelData::change_head`]) may miss
    /// changes made in between: the view reads it again.
    Connected {
        session_id: &'a str,
        change_head: u64,
    },
    /// The answer to the text `ping`.
    Pong,
    /// The connection fell behind the change log: reload.
    Resync { missed: u64 },
    NodeUpdated {
        level: LevelName,
        #[ts(type = "StoredNode")]
        node: &'a Object,
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    /// A node got a new id (`node.id`); its edges followed.
    NodeRenamed {
        level: LevelName,
        old_id: &'a str,
        #[ts(type = "StoredNode")]
        node: &'a Object,
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    EdgeUpdated {
        level: LevelName,
        #[ts(type = "StoredEdge")]
        edge: &'a Object,
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    NodeDeleted {
        level: LevelName,
        node_id: &'a str,
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    EdgeDeleted {
        level: LevelName,
        from: &'a str,
        to: &'a str,
        rel: &'a str,
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    /// An archived or orphaned node was read, so promoted.
    NodeRecalled {
        level: LevelName,
        #[ts(type = "StoredNode")]
        node: &'a Object,
        rescued_from_orphan: &'a [String],
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    /// Maintenance or a hand edit moved nodes between tiers.
    TiersMoved {
        level: LevelName,
        archived: &'a [String],
        restored: &'a [String],
        orphaned: &'a [String],
        deleted: &'a [String],
        reason: &'a str,
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    NodeLiked {
        level: LevelName,
        node_id: &'a str,
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    ProgressSaved {
        level: LevelName,
        task_id: &'a str,
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    /// A person took back a step of the graph view (ours; the reference has no undo).
    StepUndone {
        level: LevelName,
        nodes: &'a [String],
        source_session: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    /// A level's debt verdict changed (`from` is null the first time).
    DebtChanged {
        level: LevelName,
        from: Option<&'a str>,
        to: &'a str,
        score: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
    /// A graph file did not parse and was moved aside.
    Quarantined {
        level: LevelName,
        path: String,
        moved_to: String,
        cause: &'a str,
        recovered_from_prev: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        project_path: Option<&'a str>,
    },
}

impl<'a> LiveMessage<'a> {
    /// The message for a change of the log.
    pub fn change(change: &'a Change) -> LiveMessage<'a> {
        let level = change.level.into();
        let source_session = change.source_session.as_deref();
        let project_path = change.project_path.as_deref();
        match &change.kind {
            ChangeKind::NodeUpdated { node } => LiveMessage::NodeUpdated {
                level,
                node,
                source_session,
                project_path,
            },
            ChangeKind::NodeRenamed { old_id, node } => LiveMessage::NodeRenamed {
                level,
                old_id,
                node,
                source_session,
                project_path,
            },
            ChangeKind::EdgeUpdated { edge } => LiveMessage::EdgeUpdated {
                level,
                edge,
                source_session,
                project_path,
            },
            ChangeKind::NodeDeleted { id } => LiveMessage::NodeDeleted {
                level,
                node_id: id,
                source_session,
                project_path,
            },
            ChangeKind::EdgeDeleted { key } => LiveMessage::EdgeDeleted {
                level,
                from: key.from(),
                to: key.to(),
                rel: key.rel(),
                source_session,
                project_path,
            },
            ChangeKind::StepUndone { nodes } => LiveMessage::StepUndone {
                level,
                nodes,
                source_session,
                project_path,
            },
            ChangeKind::NodeRecalled { node, rescued } => LiveMessage::NodeRecalled {
                level,
                node,
                rescued_from_orphan: rescued,
                source_session,
                project_path,
            },
            ChangeKind::TiersMoved(TierMoves {
                archived,
                restored,
                orphaned,
                deleted,
                reason,
            }) => LiveMessage::TiersMoved {
                level,
                archived,
                restored,
                orphaned,
                deleted,
                reason,
                source_session,
                project_path,
            },
            ChangeKind::NodeLiked { id } => LiveMessage::NodeLiked {
                level,
                node_id: id,
                source_session,
                project_path,
            },
            ChangeKind::ProgressSaved { task_id } => LiveMessage::ProgressSaved {
                level,
                task_id,
                source_session,
                project_path,
            },
            ChangeKind::DebtChanged { from, to, score } => LiveMessage::DebtChanged {
                level,
                from: from.as_deref(),
                to,
                score: *score,
                project_path,
            },
            ChangeKind::Quarantined {
                path,
                moved_to,
                cause,
                recovered_from_prev,
            } => LiveMessage::Quarantined {
                level,
                path: path.display().to_string(),
                moved_to: moved_to.display().to_string(),
                cause,
                recovered_from_prev: *recovered_from_prev,
                project_path,
            },
        }
    }
}

// ----- GET /api/view/recall -------------------------------------------------------------

/// `GET /api/view/recall`: why the memory spoke or stayed silent, newest first.
#[derive(Debug, Serialize, TS)]
pub struct RecallAnswer {
    pub decisions: Vec<RecallEntry>,
}

/// One recall decision: a prompt's, a file's, or another session's write pushed.
#[derive(Debug, Serialize, TS)]
pub struct RecallEntry {
    /// Seconds since the Unix epoch.
    pub ts: f64,
    /// `prompt`, `file` or `push`.
    pub trigger: String,
    /// The decision's fixed word: `injected`, `no_hits`, `all_seen`, `throttled`, ...
    pub outcome: String,
    /// Why, in one plain sentence.
    pub why: String,
    /// The KG session it was for.
    pub session: Option<String>,
    /// Ids shown to the model, in order.
    pub injected: Vec<String>,
    /// What came close: the best-scored nodes weighed (prompts) or every node naming
    /// the file (files), shown or not.
    pub weighed: Vec<RecallWeighed>,
    /// The words searched on (prompts; never the prompt itself).
    pub terms: Vec<String>,
    /// The file keys (files).
    pub files: Vec<String>,
    /// The tool (files).
    pub tool: Option<String>,
}

/// A node a decision weighed.
#[derive(Debug, Serialize, TS)]
pub struct RecallWeighed {
    pub id: String,
    pub level: LevelName,
    /// Its score in the ranking's own unit (prompts); `null` for a file's nodes.
    pub score: Option<f64>,
    /// The session had it in context already.
    pub seen: bool,
    pub injected: bool,
}

impl From<&kg_core::RecallDecision> for RecallEntry {
    fn from(d: &kg_core::RecallDecision) -> RecallEntry {
        let shown = |id: &str| d.injected.iter().any(|i| i == id);
        let mut weighed: Vec<RecallWeighed> = d
            .weighed
            .iter()
            .map(|w| RecallWeighed {
                id: w.id.clone(),
                level: w.level.into(),
                // A push weighs by what the write bears on, not by a score.
                score: (d.trigger != kg_core::RecallTrigger::Push).then(|| round_to(w.score, 4)),
                seen: w.seen,
                injected: shown(&w.id),
            })
            .collect();
        weighed.extend(d.nodes.iter().map(|n| RecallWeighed {
            id: n.id.clone(),
            level: n.level.into(),
            score: None,
            seen: n.seen,
            injected: shown(&n.id),
        }));
        RecallEntry {
            ts: d.ts,
            trigger: d.trigger.as_str().to_string(),
            outcome: d.reason.to_string(),
            why: d.why(),
            session: d.kg_session.clone(),
            injected: d.injected.clone(),
            weighed,
            terms: d.terms.clone(),
            files: d.files.clone(),
            tool: d.tool.clone(),
        }
    }
}

// ----- the TypeScript -------------------------------------------------------------------

/// The payloads the page reads; every type they use comes along.
fn roots(cfg: &ts_rs::Config, out: &mut Declarations) {
    out.add::<GraphList>(cfg);
    out.add::<LevelData<'static>>(cfg);
    out.add::<SearchAnswer<'static>>(cfg);
    out.add::<NeighbourhoodAnswer<'static>>(cfg);
    out.add::<StepAnswer>(cfg);
    out.add::<ActivityAnswer<'static>>(cfg);
    out.add::<RecallAnswer>(cfg);
    out.add::<UndoAnswer>(cfg);
    out.add::<NodePutAnswer>(cfg);
    out.add::<NodeDeleteAnswer>(cfg);
    out.add::<EdgePutAnswer>(cfg);
    out.add::<EdgeDeleteAnswer>(cfg);
    out.add::<LiveMessage<'static>>(cfg);
}

/// Declarations by name (so the file's order is stable), each type once.
#[derive(Debug, Default)]
struct Declarations(std::collections::BTreeMap<String, (TypeId, String)>);

impl Declarations {
    fn add<T: TS + 'static + ?Sized>(&mut self, cfg: &ts_rs::Config) {
        let name = T::ident(cfg);
        if let Some((id, _)) = self.0.get(&name) {
            // One TypeScript name for two Rust types would drop one of them.
            assert!(
                *id == TypeId::of::<T>(),
                "two payload types are named {name}"
            );
            return;
        }
        let docs = T::docs().unwrap_or_default();
        let decl = layout(&T::decl(cfg));
        let text = format!("{docs}export {decl}\n");
        self.0.insert(name, (TypeId::of::<T>(), text));
        T::visit_dependencies(&mut Visit { cfg, out: self });
    }
}

struct Visit<'a> {
    cfg: &'a ts_rs::Config,
    out: &'a mut Declarations,
}

impl ts_rs::TypeVisitor for Visit<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        // Primitives and containers have no declaration of their own.
        if T::output_path().is_some() {
            self.out.add::<T>(self.cfg);
        }
    }
}

/// Lays a ts-rs declaration out one member per line, as a person would write it:
/// ts-rs writes an object on one line, with its field docs wedged in between.
fn layout(decl: &str) -> String {
    // A union of objects (`LiveMessage`) puts each member on its own `| ` line.
    let union = decl.contains("} | {");
    let base = usize::from(union);
    let mut out = String::with_capacity(decl.len() * 2);
    let newline = |out: &mut String, depth: usize| {
        out.truncate(out.trim_end().len());
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    let (mut depth, mut angle) = (0usize, 0usize);
    let mut rest = decl;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '"' => {
                let end = rest.find('"').map_or(rest.len(), |i| i + 1);
                out.push('"');
                out.push_str(&rest[..end]);
                rest = &rest[end..];
            }
            '/' if rest.starts_with("**") => {
                let end = rest.find("*/").map_or(rest.len(), |i| i + 2);
                let comment = &rest[..end];
                rest = &rest[end..];
                newline(&mut out, depth + base);
                out.push('/');
                for (i, line) in comment.lines().map(str::trim).enumerate() {
                    if i > 0 {
                        newline(&mut out, depth + base);
                        out.push(' ');
                    }
                    out.push_str(line);
                }
                newline(&mut out, depth + base);
            }
            '{' => {
                depth += 1;
                out.push('{');
                newline(&mut out, depth + base);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                out.truncate(out.trim_end().len());
                if !out.ends_with(',') {
                    out.push(',');
                }
                newline(&mut out, depth + base);
                out.push('}');
            }
            '<' | '>' => {
                angle = if c == '<' {
                    angle + 1
                } else {
                    angle.saturating_sub(1)
                };
                out.push(c);
            }
            ',' if depth > 0 && angle == 0 => {
                out.push(',');
                newline(&mut out, depth + base);
            }
            '|' if union && depth == 0 => {
                newline(&mut out, base);
                out.push('|');
            }
            '=' if union && depth == 0 => {
                out.push('=');
                newline(&mut out, base);
                out.push_str("| ");
                rest = rest.trim_start();
            }
            '\n' => {}
            ' ' if out.ends_with([' ', '\n']) => {}
            _ => out.push(c),
        }
    }
    out
}

/// The text of `ui/src/generated/payloads.ts`.
pub fn typescript() -> String {
    // Every integer here fits a JavaScript number.
    let cfg = ts_rs::Config::new().with_large_int("number");
    let mut declarations = Declarations::default();
    roots(&cfg, &mut declarations);
    let mut text = String::from(
        "// Generated from crates/kg-server/src/payload.rs by ts-rs: do not edit.\n\
         // Regenerate: KG_UPDATE_TS=1 cargo test -p kg-server --lib payload\n\n\
         import type { StoredEdge, StoredNode } from '../stored';\n",
    );
    for (_, declaration) in declarations.0.values() {
        text.push('\n');
        text.push_str(declaration);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    /// The generated file, from the workspace root.
    const TYPESCRIPT_FILE: &str = "ui/src/generated/payloads.ts";

    #[test]
    fn the_committed_typescript_matches_the_payload_types() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(TYPESCRIPT_FILE);
        let generated = typescript();
        if std::env::var_os("KG_UPDATE_TS").is_some_and(|v| v == "1") {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != generated {
            // The fresh text goes to a temporary file, for a diff against the committed one.
            let fresh = std::env::temp_dir().join("kg-payloads.ts");
            let _ = std::fs::write(&fresh, &generated);
            let line = committed
                .lines()
                .zip(generated.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()))
                + 1;
            panic!(
                "{TYPESCRIPT_FILE} is out of date with crates/kg-server/src/payload.rs \
                 (first difference at line {line}; the fresh text is in {}).\n\
                 Run `KG_UPDATE_TS=1 cargo test -p kg-server --lib payload` to update it, \
                 then `cd ui && npm run build`.",
                fresh.display()
            );
        }
    }

    /// The string unions in the TypeScript name exactly what kg-core's `as_str` writes.
    #[test]
    fn wire_enums_name_what_kg_core_writes() {
        fn check<T: TS + Serialize>(all: &[T]) {
            let cfg = ts_rs::Config::new();
            let written: Vec<String> = all
                .iter()
                .map(|v| serde_json::to_string(v).unwrap())
                .collect();
            assert_eq!(T::inline(&cfg), written.join(" | "), "{}", T::ident(&cfg));
        }
        check(LevelName::ALL);
        check(TierName::ALL);
        check(BudgetState::ALL);
        check(Pool::ALL);
        check(DebtKind::ALL);
        check(DebtLevel::ALL);
    }

    /// The catalogue's debt and the survey's (`Debt::to_object`) are one shape.
    #[test]
    fn debt_is_written_as_the_survey_writes_it() {
        let d = kg_core::Debt {
            score: 0.123_456,
            level: kg_core::DebtLevel::Med,
            oversized: 2,
            unconnected: 3,
            active_nodes: 40,
            untended_days: 14.0,
            never_maintained: true,
            active_days_7d: 5,
            burst: 0,
            merge_conflicts: 0,
            stale_touches: 0,
            stale_nodes: 0,
            held_back: 0,
        };
        assert_eq!(value(&Debt::from(&d)), Value::Object(d.to_object()));
        let d = kg_core::Debt {
            untended_days: 3.25,
            never_maintained: false,
            level: kg_core::DebtLevel::Low,
            ..d
        };
        assert_eq!(value(&Debt::from(&d)), Value::Object(d.to_object()));
        let d = kg_core::Debt {
            merge_conflicts: 2,
            held_back: 0,
            ..d
        };
        let written = value(&Debt::from(&d));
        assert_eq!(written, Value::Object(d.to_object()));
        assert_eq!(written["merge_conflicts"], 2, "{written}");
        let d = d.with_stale_touches(5, 3);
        let written = value(&Debt::from(&d));
        assert_eq!(written, Value::Object(d.to_object()));
        assert_eq!(
            (
                written["dangling_touches"].as_u64(),
                written["dangling_nodes"].as_u64()
            ),
            (Some(5), Some(3))
        );
    }

    #[test]
    fn a_live_change_keeps_its_key_order_and_leaves_out_a_missing_project() {
        let change = |project_path: Option<&str>| Change {
            seq: 1,
            ts: 0.0,
            level: Level::User,
            project_path: project_path.map(str::to_string),
            source_session: None,
            kind: ChangeKind::NodeDeleted { id: "a".into() },
        };
        let text = |c: &Change| serde_json::to_string(&value(&LiveMessage::change(c))).unwrap();
        assert_eq!(
            text(&change(None)),
            r#"{"type":"node_deleted","level":"user","node_id":"a","source_session":null}"#
        );
        assert_eq!(
            text(&change(Some("/p"))),
            r#"{"type":"node_deleted","level":"user","node_id":"a","source_session":null,"project_path":"/p"}"#
        );
        assert_eq!(value(&LiveMessage::Pong), json!({"type": "pong"}));
    }
}
