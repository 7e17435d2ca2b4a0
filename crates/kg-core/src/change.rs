//! The change log: every mutation of the store, in order, with a sequence number.
//!
//! Three readers consume it: `kg_sync` (the diff a session has not seen yet), the
//! WebSocket broadcast, and the tray's badges. Keeping one log means no mutation path
//! can forget to tell one of them.

use crate::model::{EdgeKey, Level, Object};
use std::collections::VecDeque;
use std::path::PathBuf;

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeKind {
    /// A node was created or updated by a client (version bumped).
    NodeUpdated {
        /// The node as stored after the write, all its fields in order.
        node: Object,
    },
    /// An edge was created or updated by a client (version bumped).
    EdgeUpdated {
        /// The edge as stored after the write (`from`, `to`, `rel`, then its other fields).
        edge: Object,
    },
    /// A node was renamed: it keeps its fields under the new id (version bumped),
    /// and the edges naming it follow (announced as edge changes in other graphs).
    NodeRenamed {
        /// Its id before.
        old_id: String,
        /// The node as stored after the rename, its new id in `id`.
        node: Object,
    },
    /// A client deleted a node, and with it every edge of this graph touching it.
    NodeDeleted {
        /// The deleted node's id.
        id: String,
    },
    /// A person took back a step of the graph view: these nodes are as they were
    /// before it (content, tier and position), and so are the edges and versions it
    /// touched.
    StepUndone {
        /// Ids of the nodes the undo restored, or removed again when the step had
        /// created them.
        nodes: Vec<String>,
    },
    /// A client deleted an edge.
    EdgeDeleted {
        /// The deleted edge's `from`, `to` and `rel`.
        key: EdgeKey,
    },
    /// An archived or orphaned node was read and so promoted (version bumped); its
    /// orphaned neighbours were rescued back to archived.
    NodeRecalled {
        /// The node as stored after the promotion, now active.
        node: Object,
        /// Ids of the orphaned neighbours moved back to archived, in edge order.
        rescued: Vec<String>,
    },
    /// Maintenance or a hand edit moved nodes between tiers (no version bump).
    TiersMoved(TierMoves),
    /// A like was recorded.
    NodeLiked {
        /// The endorsed node's id (`kg_useful` stamps its `_useful_ts`).
        id: String,
    },
    /// A task checkpoint was written.
    ProgressSaved {
        /// The task whose `_meta.progress` entry was replaced.
        task_id: String,
    },
    /// A graph file did not parse and was moved aside.
    Quarantined {
        /// The graph file that did not parse.
        path: PathBuf,
        /// Where it now lies: `<file>.corrupt-<unix seconds>`.
        moved_to: PathBuf,
        /// Why it did not parse, as the parser said it.
        cause: String,
        /// The graph was loaded from its `.prev` backup; false means it starts empty.
        recovered_from_prev: bool,
    },
    /// A level's maintenance debt verdict changed (`LOW`/`MED`/`HIGH`).
    DebtChanged {
        /// The previous verdict; `None` the first time a level is judged (a first
        /// verdict of `LOW` is not logged at all).
        from: Option<String>,
        /// The new verdict.
        to: String,
        /// The unrounded debt score the verdict was decided on (0 to 1).
        score: f64,
    },
}

/// Nodes that changed tier in one maintenance step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TierMoves {
    /// Ids moved from active to archived (over budget, or by hand).
    pub archived: Vec<String>,
    /// Ids moved back to active by refill or resurrection.
    pub restored: Vec<String>,
    /// Ids that left the rendered graph for the orphaned tier (archived anchors over
    /// their 5,250-character share).
    pub orphaned: Vec<String>,
    /// Orphans deleted for good, with their edges, after the orphan grace period
    /// (the maintenance tick only).
    pub deleted: Vec<String>,
    /// Why, in a few words (`over budget`, `refill`, `hand edit`, …).
    pub reason: String,
}

impl TierMoves {
    /// Whether no node moved (the `reason` alone does not count); an empty set of
    /// moves is not logged.
    pub fn is_empty(&self) -> bool {
        self.archived.is_empty()
            && self.restored.is_empty()
            && self.orphaned.is_empty()
            && self.deleted.is_empty()
    }
}

/// One entry of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Its place in the log, from 0 up with no gaps; readers resume from it.
    pub seq: u64,
    /// When it happened, in seconds since the Unix epoch (the store's clock).
    pub ts: f64,
    /// The level of the graph that changed: user or project.
    pub level: Level,
    /// The project root for project-level changes.
    pub project_path: Option<String>,
    /// The KG session that caused it (`None` for REST without a session and for
    /// background maintenance).
    pub source_session: Option<String>,
    /// What happened, with what a reader needs to apply it.
    pub kind: ChangeKind,
}

impl Change {
    /// The `_meta.versions` key this change bumped, if it bumped one.
    pub fn version_key(&self) -> Option<String> {
        match &self.kind {
            ChangeKind::NodeUpdated { node }
            | ChangeKind::NodeRecalled { node, .. }
            | ChangeKind::NodeRenamed { node, .. } => node
                .get("id")
                .and_then(|v| v.as_str())
                .map(crate::model::node_version_key),
            ChangeKind::EdgeUpdated { edge } => {
                let text = |k: &str| edge.get(k).and_then(|v| v.as_str()).unwrap_or("");
                Some(crate::model::edge_version_key(&EdgeKey::new(
                    text("from"),
                    text("to"),
                    text("rel"),
                )))
            }
            _ => None,
        }
    }
}

/// How many changes stay in memory; a reader further behind falls back to timestamps.
pub const LOG_CAPACITY: usize = 20_000;

/// A bounded, sequence-numbered log.
#[derive(Debug, Default)]
pub struct ChangeLog {
    entries: VecDeque<Change>,
    next_seq: u64,
}

impl ChangeLog {
    /// The sequence number the next change will get; a reader that has seen
    /// everything so far stores `head()`.
    pub fn head(&self) -> u64 {
        self.next_seq
    }

    pub fn append(&mut self, mut change: Change) -> Change {
        change.seq = self.next_seq;
        self.next_seq += 1;
        if self.entries.len() == LOG_CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back(change.clone());
        change
    }

    /// The changes still held, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &Change> {
        self.entries.iter().rev()
    }

    /// Changes with `seq >= from`, or `None` when some of them were already dropped.
    pub fn since(&self, from: u64) -> Option<impl Iterator<Item = &Change>> {
        let oldest = self.entries.front().map_or(self.next_seq, |c| c.seq);
        if from < oldest {
            return None;
        }
        Some(self.entries.iter().filter(move |c| c.seq >= from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(id: &str) -> Change {
        Change {
            seq: 0,
            ts: 0.0,
            level: Level::User,
            project_path: None,
            source_session: None,
            kind: ChangeKind::NodeDeleted { id: id.into() },
        }
    }

    #[test]
    fn sequence_numbers_are_monotonic_and_bounded() {
        let mut log = ChangeLog::default();
        for i in 0..LOG_CAPACITY + 5 {
            assert_eq!(log.append(change(&i.to_string())).seq, i as u64);
        }
        assert!(log.since(0).is_none(), "the oldest entries were dropped");
        let tail: Vec<u64> = log
            .since(LOG_CAPACITY as u64 + 3)
            .map(|it| it.map(|c| c.seq).collect())
            .unwrap_or_default();
        assert_eq!(tail, [LOG_CAPACITY as u64 + 3, LOG_CAPACITY as u64 + 4]);
    }
}
