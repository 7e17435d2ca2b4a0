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
    /// their share, 0.3 × the level budget).
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

/// Most changes the log holds.
pub const LOG_CAPACITY: usize = 20_000;
/// Most bytes the log's entries may take, roughly (see [`Change::weight`]); the oldest
/// go first, but never the newest [`LOG_FLOOR`].
pub const LOG_BYTES: usize = 4 << 20;
/// Changes the log always keeps, whatever their size: a session that synced, or a
/// view that read its level, within the last this many changes is answered from the
/// log. One further behind is answered in full and told so.
pub const LOG_FLOOR: usize = 1_000;

impl Change {
    /// The change as the log keeps it. Its readers (`kg_sync`, the activity panel)
    /// need which node or edge changed, not its contents: a node with 50 long notes
    /// written 3,000 times would otherwise keep 3,000 copies of itself in memory.
    /// Listeners still get the whole change when it happens.
    fn thinned(&self) -> Change {
        let keep = |object: &Object, keys: &[&str]| -> Object {
            keys.iter()
                .filter_map(|&k| object.get(k).map(|v| (k.to_string(), v.clone())))
                .collect()
        };
        let kind = match &self.kind {
            ChangeKind::NodeUpdated { node } => ChangeKind::NodeUpdated {
                node: keep(node, &["id"]),
            },
            ChangeKind::NodeRecalled { node, rescued } => ChangeKind::NodeRecalled {
                node: keep(node, &["id"]),
                rescued: rescued.clone(),
            },
            ChangeKind::EdgeUpdated { edge } => ChangeKind::EdgeUpdated {
                edge: keep(edge, &["from", "to", "rel"]),
            },
            ChangeKind::NodeRenamed { old_id, node } => ChangeKind::NodeRenamed {
                old_id: old_id.clone(),
                node: keep(node, &["id"]),
            },
            other => other.clone(),
        };
        Change {
            kind,
            project_path: self.project_path.clone(),
            source_session: self.source_session.clone(),
            ..*self
        }
    }

    /// Roughly the bytes the change takes in memory: its texts and a fixed share for
    /// the entry and each allocation.
    fn weight(&self) -> usize {
        const ENTRY: usize = std::mem::size_of::<Change>() + 32;
        const TEXT: usize = 32;
        let text = |s: &str| TEXT + s.len();
        let texts = |list: &[String]| list.iter().map(|s| text(s)).sum::<usize>();
        let object = |o: &Object| -> usize {
            o.iter()
                .map(|(k, v)| text(k) + TEXT + v.to_string().len())
                .sum()
        };
        let kind = match &self.kind {
            ChangeKind::NodeUpdated { node } => object(node),
            ChangeKind::EdgeUpdated { edge } => object(edge),
            ChangeKind::NodeRecalled { node, rescued } => object(node) + texts(rescued),
            ChangeKind::NodeRenamed { old_id, node } => text(old_id) + object(node),
            ChangeKind::NodeDeleted { id } => text(id),
            ChangeKind::StepUndone { nodes } => texts(nodes),
            ChangeKind::EdgeDeleted { key } => text(key.from()) + text(key.to()) + text(key.rel()),
            ChangeKind::TiersMoved(moves) => {
                texts(&moves.archived)
                    + texts(&moves.restored)
                    + texts(&moves.orphaned)
                    + texts(&moves.deleted)
                    + text(&moves.reason)
            }
            ChangeKind::NodeLiked { id } => text(id),
            ChangeKind::ProgressSaved { task_id } => text(task_id),
            ChangeKind::Quarantined {
                path,
                moved_to,
                cause,
                ..
            } => text(&path.to_string_lossy()) + text(&moved_to.to_string_lossy()) + text(cause),
            ChangeKind::DebtChanged { from, to, .. } => from.as_deref().map_or(0, text) + text(to),
        };
        ENTRY
            + self.project_path.as_deref().map_or(0, text)
            + self.source_session.as_deref().map_or(0, text)
            + kind
    }
}

/// How much a [`ChangeLog`] keeps: at most `capacity` changes, and no more than about
/// `bytes` of them once it holds more than `floor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBounds {
    pub capacity: usize,
    pub bytes: usize,
    pub floor: usize,
}

impl Default for LogBounds {
    fn default() -> LogBounds {
        LogBounds {
            capacity: LOG_CAPACITY,
            bytes: LOG_BYTES,
            floor: LOG_FLOOR,
        }
    }
}

/// A sequence-numbered log bounded in count ([`LOG_CAPACITY`]) and in memory
/// ([`LOG_BYTES`], above a floor of [`LOG_FLOOR`] changes).
#[derive(Debug, Default)]
pub struct ChangeLog {
    /// Each change as the log keeps it ([`Change::thinned`]), with its weight.
    entries: VecDeque<(Change, usize)>,
    next_seq: u64,
    /// The sum of the entries' weights.
    bytes: usize,
    bounds: LogBounds,
}

impl ChangeLog {
    /// The sequence number the next change will get; a reader that has seen
    /// everything so far stores `head()`.
    pub fn head(&self) -> u64 {
        self.next_seq
    }

    /// Number `change` and keep it (thinned); the oldest changes go when the log is
    /// over its bounds. Returns the whole change, numbered, for the listeners.
    pub fn append(&mut self, mut change: Change) -> Change {
        change.seq = self.next_seq;
        self.next_seq += 1;
        let kept = change.thinned();
        let weight = kept.weight();
        self.bytes += weight;
        self.entries.push_back((kept, weight));
        self.trim();
        change
    }

    /// Drop the oldest changes until the log is within its bounds.
    fn trim(&mut self) {
        let b = self.bounds;
        while self.entries.len() > b.capacity
            || (self.bytes > b.bytes && self.entries.len() > b.floor)
        {
            if let Some((_, w)) = self.entries.pop_front() {
                self.bytes -= w;
            }
        }
    }

    /// Keep within other bounds from now on (tests reach a log's end this way
    /// without writing 20,000 changes).
    #[cfg(any(test, feature = "internals"))]
    pub fn set_bounds(&mut self, bounds: LogBounds) {
        self.bounds = bounds;
        self.trim();
    }

    /// The changes still held, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &Change> {
        self.entries.iter().rev().map(|(c, _)| c)
    }

    /// The sequence number of the oldest change still held (`head()` when none is).
    pub fn oldest(&self) -> u64 {
        self.entries.front().map_or(self.next_seq, |(c, _)| c.seq)
    }

    /// Changes with `seq >= from`, or `None` when some of them were already dropped.
    pub fn since(&self, from: u64) -> Option<impl Iterator<Item = &Change>> {
        if from < self.oldest() {
            return None;
        }
        let skip = (from - self.oldest()) as usize;
        Some(self.entries.iter().skip(skip).map(|(c, _)| c))
    }

    /// Roughly the bytes the log's entries take.
    #[cfg(any(test, feature = "internals"))]
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Changes held.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no change is held.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
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

    fn big_node(id: &str) -> Change {
        let notes: Vec<serde_json::Value> = (0..50)
            .map(|i| serde_json::Value::String(format!("{i}").repeat(2_000)))
            .collect();
        let mut node = Object::new();
        node.insert("id".into(), id.into());
        node.insert("gist".into(), "a node with long notes".into());
        node.insert("notes".into(), notes.into());
        Change {
            kind: ChangeKind::NodeUpdated { node },
            ..change("unused")
        }
    }

    #[test]
    fn the_log_keeps_which_node_changed_not_its_contents() {
        let mut log = ChangeLog::default();
        let told = log.append(big_node("heavy"));
        // Listeners get the whole change …
        let ChangeKind::NodeUpdated { node } = &told.kind else {
            panic!("{told:?}")
        };
        assert_eq!(node.len(), 3);
        // … the log keeps what its readers use: the id, hence the version key.
        let kept = log
            .since(0)
            .and_then(|mut it| it.next().cloned())
            .expect("kept");
        assert_eq!(kept.version_key().as_deref(), Some("node:heavy"));
        let ChangeKind::NodeUpdated { node } = &kept.kind else {
            panic!("{kept:?}")
        };
        assert_eq!(node.keys().collect::<Vec<_>>(), ["id"]);
        assert!(log.bytes() < 1_000, "{} bytes", log.bytes());
    }

    #[test]
    fn heavy_changes_go_first_but_never_the_newest_floor() {
        let mut log = ChangeLog::default();
        let rescued: Vec<String> = (0..200).map(|i| format!("neighbour-{i:05}")).collect();
        let heavy = |i: usize| Change {
            kind: ChangeKind::TiersMoved(TierMoves {
                archived: rescued.clone(),
                reason: format!("pass {i}"),
                ..TierMoves::default()
            }),
            ..change("unused")
        };
        for i in 0..LOG_FLOOR * 2 {
            log.append(heavy(i));
        }
        // Each weighs ~10 KB: the byte bound holds the log to its floor.
        assert_eq!(log.len(), LOG_FLOOR);
        assert_eq!(log.oldest(), LOG_FLOOR as u64);
        assert!(log.since(LOG_FLOOR as u64 - 1).is_none());
        assert_eq!(
            log.since(LOG_FLOOR as u64).map(Iterator::count),
            Some(LOG_FLOOR)
        );
        // Light changes fill the log again, up to its byte bound, the heavy ones
        // leaving first.
        for i in 0..LOG_CAPACITY {
            log.append(change(&i.to_string()));
        }
        assert!(log.len() > 10 * LOG_FLOOR, "{} changes", log.len());
        assert!(log.bytes() <= LOG_BYTES, "{} bytes", log.bytes());
        assert!(
            log.newest_first()
                .all(|c| matches!(c.kind, ChangeKind::NodeDeleted { .. }))
        );
    }
}
