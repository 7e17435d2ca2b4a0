//! What the store's calls answer, for the tool texts and the REST handlers to present.

use crate::model::{EdgeKey, Level, Object, Tier, WriteStamp};
use indexmap::IndexMap;

/// Result of `put_node`.
#[derive(Debug, Clone, PartialEq)]
pub struct PutNode {
    /// The graph the node was written to.
    pub level: Level,
    /// The id was new to that graph: the write created the node (and stamped its
    /// `_created_ts`) rather than updating it.
    pub created: bool,
    /// Length of the gist as submitted (before healing), for the scan-limit advice.
    pub submitted_gist_chars: usize,
    /// The node's stored fields right after the write (healed gist, notes, touches, the
    /// archive flags cleared), before any compaction the write set off.
    pub node: Object,
}

/// Result of a single-node read.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRead {
    /// The id that was read, as the caller gave it.
    pub id: String,
    /// The graph the node was found in.
    pub level: Level,
    /// The node's stored fields after the read: gist, notes, touches and the internal `_`
    /// fields, the new read stamp included.
    pub node: Object,
    /// Whether the node was archived or orphaned before this read, which promoted it back
    /// to active.
    pub was_archived: bool,
    /// Orphaned neighbours the promotion brought back to the archived tier, in edge
    /// order.
    pub rescued: Vec<String>,
    /// Every edge of the node's graph touching it, in edge order.
    pub edges: Vec<Object>,
}

/// Result of `kg_useful`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Likes {
    /// Ids endorsed by this call, in request order; each node got a `_useful_ts` stamp.
    pub accepted: Vec<String>,
    /// Rejected ids in first-rejection order, each with its last reason.
    pub rejected: IndexMap<String, String>,
    /// Likes the session has left of its 5.
    pub remaining: usize,
}

/// One line of a `kg_sync` report.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncItem {
    /// A node another session wrote, or promoted back to active by reading it.
    Node {
        /// The node's id in that level's graph.
        id: String,
        /// The node's `_archived` flag is set (an orphan may carry it too); the report
        /// marks it `[archived]`.
        archived: bool,
        /// The first 100 characters of its current gist.
        gist: String,
    },
    /// An edge another session wrote, by its `from`, `to` and `rel`.
    Edge(EdgeKey),
    /// A node another session (or another machine, through sync) deleted, by its id.
    /// Reported under our policy only; the reference reports no deletions.
    Deleted(String),
}

/// What other sessions changed, per level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncReport {
    /// Changes in the user graph: nodes, then edges, each in `_meta.versions` order,
    /// then (our policy) the nodes deleted since, in the order they went.
    pub user: Vec<SyncItem>,
    /// Changes in the session's project graph, in the same order; empty for a session
    /// without a project.
    pub project: Vec<SyncItem>,
    /// (Our policy.) The session last synced further back than the server's change
    /// log reaches: the lists go by the versions' timestamps, which name no deletions,
    /// and the answer says so and suggests reading the memory again.
    pub behind: bool,
}

/// A node whose content someone other than a session wrote after a given time, and
/// which the session has not been shown since that write
/// ([`Store::writes_unseen_by`](crate::Store::writes_unseen_by)).
#[derive(Debug, Clone, PartialEq)]
pub struct UnseenWrite {
    /// The graph it is in: the user graph, or the session's project graph.
    pub level: Level,
    /// The node's id.
    pub id: String,
    /// Its current gist.
    pub gist: String,
    /// Who wrote it and when: another session, or `by: None` for a person (REST, the
    /// graph view).
    pub written: WriteStamp,
    /// Its tier now (an archived or orphaned node may not be worth announcing).
    pub tier: Tier,
    /// The session had been shown the node before (it has a view time for it, older
    /// than the write): the write updated something it knew, rather than creating
    /// something new to it.
    pub known: bool,
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum StaleReason {
    /// Someone else wrote the node after this session last saw it, or before it ever
    /// did (`seen_ts` is `None`).
    ChangedSinceSeen {
        /// Who wrote it: another session, or `None` for a person.
        by: Option<String>,
        /// When.
        written_ts: f64,
        /// When this session last saw it, if ever.
        seen_ts: Option<f64>,
    },
    /// The write replaces a stored list (`notes` or `touches`) this session has not
    /// read since it was last written.
    UnreadList {
        /// `notes` or `touches`.
        field: &'static str,
    },
    /// The write leaves out stored notes (named in [`NotWritten::dropped_notes`]);
    /// the same write sent again goes through.
    DropsNotes,
    /// The node's content is no longer the one the person's editor loaded.
    ChangedSinceLoaded {
        /// Who wrote the current content, when known.
        by: Option<String>,
        /// When, or `None` for a node without a stamp.
        written_ts: Option<f64>,
    },
}

/// A write refused because it was built on a stale view: nothing was changed.
#[derive(Debug, Clone, PartialEq)]
pub struct NotWritten {
    /// The graph the node is in.
    pub level: Level,
    /// The node.
    pub id: String,
    /// Why.
    pub reason: StaleReason,
    /// The node as it stands (every stored field), for the writer to merge with;
    /// empty when it does not exist (a create that lost a race).
    pub node: Object,
    /// Stored notes the write would have removed, in stored order.
    pub dropped_notes: Vec<String>,
}

impl NotWritten {
    /// What the refused writer is told: the marker first, then why, the node as it
    /// stands and how to proceed ([`crate::wording::not_written`]).
    pub fn message(&self) -> String {
        use crate::wording::{self, NotWrittenNext};
        let (reason, next) = match &self.reason {
            StaleReason::ChangedSinceSeen { by, seen_ts, .. } => (
                wording::stale_since_seen(by.as_deref(), seen_ts.is_some()),
                NotWrittenNext::MergeAndRewrite,
            ),
            StaleReason::UnreadList { field } => (
                wording::stale_unread_list(field),
                NotWrittenNext::MergeAndRewrite,
            ),
            StaleReason::DropsNotes => (
                wording::stale_drops_notes(self.dropped_notes.len()),
                NotWrittenNext::ResendIfMeant,
            ),
            StaleReason::ChangedSinceLoaded { by, .. } => (
                wording::stale_since_loaded(by.as_deref()),
                NotWrittenNext::MergeEdit,
            ),
        };
        let node = crate::model::Node::from_object(self.node.clone());
        let (notes, touches) = (node.notes(), node.touches());
        let stands = (!node.is_empty()).then_some((node.gist(), &notes[..], &touches[..]));
        wording::not_written(
            &self.id,
            self.level,
            &reason,
            stands,
            &self.dropped_notes,
            next,
        )
    }
}

/// What renaming a node did ([`Store::rename_node`](crate::Store::rename_node)).
#[derive(Debug, Clone, PartialEq)]
pub struct Renamed {
    /// The graph the node is in.
    pub level: Level,
    /// Its old id.
    pub from: String,
    /// Its new id.
    pub to: String,
    /// Edge ends that named the old id and name the new one now, in every graph.
    pub edges_rewired: usize,
    /// Project graphs whose edges naming the old id were left alone, and why.
    pub skipped: Vec<SkippedGraph>,
    /// The node as stored after the rename.
    pub node: Object,
}

/// A project graph a rename of a user node left alone.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedGraph {
    /// The project's storage folder name (`projects/<slug>`).
    pub graph: String,
    /// Why.
    pub reason: SkipReason,
}

/// Why a rename left a project graph alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// The project has its own node of the old id: its edges name that one.
    LocalNode,
    /// The project has its own node of the new id: there the new id means that node.
    Collision,
    /// Its file could not be written; its edges still name the old id.
    Unwritable,
}

impl SkipReason {
    /// `local-node` or `collision`, as the REST answer names it.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::LocalNode => "local-node",
            SkipReason::Collision => "collision",
            SkipReason::Unwritable => "unwritable",
        }
    }
}

/// What a render's budget left out, over both levels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Active gists not shown (the preload only).
    pub gists: usize,
    /// Edge citations not shown.
    pub edges: usize,
    /// Archived anchors not shown.
    pub anchors: usize,
}

impl LeftOut {
    /// Nothing was left out: the render holds every active gist, edge and anchor.
    pub fn is_nothing(&self) -> bool {
        *self == LeftOut::default()
    }

    /// Active gists, edges and archived anchors left out, in that order.
    pub fn counts(&self) -> [usize; 3] {
        [self.gists, self.edges, self.anchors]
    }
}
