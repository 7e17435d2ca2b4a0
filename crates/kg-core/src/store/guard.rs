//! The stale-write guard (since-0.9.30.md §4): a write built on a view of a node that
//! is no longer current is refused, so two writers of one node cannot silently
//! overwrite each other. The judgement is taken under the graph's lock, in the same
//! step as the write it lets through.

use super::*;
pub use crate::results::{NotWritten, StaleReason};

/// What a write has to have seen of the node it replaces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WriteCheck {
    /// Nothing: a write that names no view (a REST client, an import, a test).
    Unchecked,
    /// An agent's write through `kg_put_node`: the session's view times must cover
    /// the node's current content.
    SessionView,
    /// A person's write from the graph view (or a REST client that says what it
    /// loaded): the node's content stamp (`_written.ts`) must still be the one the
    /// writer loaded, `0` when the node had none or did not exist yet.
    Based(f64),
}

/// What the guard needs of the write.
pub(super) struct Proposed<'a> {
    pub(super) notes: Option<&'a [String]>,
    pub(super) touches: Option<&'a [String]>,
}

/// Judge an agent's write of `id` by session `sid` (whose record is `record`)
/// against the stored node, in the order of since-0.9.30.md §4. A create always
/// passes. `policy` decides one case the reference lets through: a session that never
/// saw a node someone else wrote, sending only a gist.
pub(super) fn judge_session_write(
    node: &Node,
    sid: &str,
    record: &SessionRecord,
    write: &Proposed<'_>,
    (level, id): (Level, &str),
    policy: Policy,
) -> Result<(), Box<NotWritten>> {
    let written = node.written();
    let other = written.as_ref().filter(|w| w.by_other_than(sid));
    let refuse = |reason: StaleReason, dropped_notes: Vec<String>| {
        Box::new(NotWritten {
            level,
            id: id.to_string(),
            reason,
            node: node.to_object(),
            dropped_notes,
        })
    };
    if let Some(w) = other {
        let seen = record.seen_at(id);
        let stale = match seen {
            Some(at) => at < w.ts,
            // The reference has nothing to compare and lets the write through; ours
            // counts "never seen" as "seen before the write".
            None => policy == Policy::Ours,
        };
        if stale {
            let reason = StaleReason::ChangedSinceSeen {
                by: w.by.clone(),
                written_ts: w.ts,
                seen_ts: seen,
            };
            return Err(refuse(reason, Vec::new()));
        }
    }
    let unread = |field: &'static str, sent: Option<&[String]>, stored: Vec<String>| {
        let sent = sent?;
        if stored.is_empty() || sent == stored.as_slice() {
            return None;
        }
        let read_after_write = match (record.read_at(id), other) {
            (None, _) => false,
            (Some(at), Some(w)) => at >= w.ts,
            (Some(_), None) => true,
        };
        (!read_after_write).then_some(StaleReason::UnreadList { field })
    };
    let stored_notes = node.notes();
    let unread_list = unread("notes", write.notes, stored_notes.clone())
        .or_else(|| unread("touches", write.touches, node.touches()));
    if let Some(reason) = unread_list {
        return Err(refuse(reason, Vec::new()));
    }
    if let Some(sent) = write.notes {
        let dropped: Vec<String> = stored_notes
            .iter()
            .filter(|n| !sent.contains(n))
            .cloned()
            .collect();
        if !dropped.is_empty() && !record.confirms_removal(level, id, sent) {
            return Err(refuse(StaleReason::DropsNotes, dropped));
        }
    }
    Ok(())
}

/// Judge a person's write of `id` (the node as stored, if any) against the content
/// stamp their editor loaded.
pub(super) fn judge_based_write(
    node: Option<&Node>,
    loaded_ts: f64,
    (level, id): (Level, &str),
) -> Result<(), Box<NotWritten>> {
    let written = node.and_then(Node::written);
    let current = match (node, &written) {
        (None, _) => 0.0,
        (Some(_), Some(w)) => w.ts,
        (Some(_), None) => 0.0,
    };
    // Stamps are compared as the JSON numbers the editor was given.
    if current.to_bits() == loaded_ts.to_bits() || current == loaded_ts {
        return Ok(());
    }
    Err(Box::new(NotWritten {
        level,
        id: id.to_string(),
        reason: StaleReason::ChangedSinceLoaded {
            by: written.as_ref().and_then(|w| w.by.clone()),
            written_ts: written.map(|w| w.ts),
        },
        node: node.map(Node::to_object).unwrap_or_default(),
        dropped_notes: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(written: Option<(f64, Option<&str>)>, notes: &[&str]) -> Node {
        let mut n = Node::new("n");
        n.set(field::GIST, json!("g"));
        n.set(field::NOTES, json!(notes));
        n.set(field::TOUCHES, json!(["src/a.rs"]));
        if let Some((ts, by)) = written {
            let stamp = WriteStamp {
                ts,
                by: by.map(str::to_string),
            };
            n.set(field::WRITTEN, stamp.to_value());
        }
        n
    }

    fn judge(node: &Node, record: &SessionRecord, notes: Option<&[String]>) -> Option<StaleReason> {
        let write = Proposed {
            notes,
            touches: None,
        };
        judge_session_write(
            node,
            "aaaa0001",
            record,
            &write,
            (Level::User, "n"),
            Policy::Ours,
        )
        .err()
        .map(|e| e.reason)
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_write_after_someone_elses_unseen_write_is_refused() {
        let n = node(Some((100.0, Some("bbbb0002"))), &["n1"]);
        let mut record = SessionRecord::new(1.0, None);
        // Never seen: ours refuses, the reference lets a gist-only write through.
        assert!(matches!(
            judge(&n, &record, None),
            Some(StaleReason::ChangedSinceSeen { seen_ts: None, .. })
        ));
        let write = Proposed {
            notes: None,
            touches: None,
        };
        let reference = judge_session_write(
            &n,
            "aaaa0001",
            &record,
            &write,
            (Level::User, "n"),
            Policy::Reference,
        );
        assert!(reference.is_ok());
        record.record_view(["n"], View::Seen, 99.0);
        assert!(matches!(
            judge(&n, &record, None),
            Some(StaleReason::ChangedSinceSeen {
                seen_ts: Some(99.0),
                ..
            })
        ));
        record.record_view(["n"], View::Seen, 101.0);
        assert_eq!(judge(&n, &record, None), None);
        // Seen, not read: replacing its notes is still refused.
        let mine = strings(&["n1", "mine"]);
        assert_eq!(
            judge(&n, &record, Some(&mine)),
            Some(StaleReason::UnreadList { field: "notes" })
        );
        record.record_view(["n"], View::Read, 102.0);
        assert_eq!(judge(&n, &record, Some(&mine)), None);
    }

    #[test]
    fn the_sessions_own_last_write_needs_no_view() {
        let n = node(Some((100.0, Some("aaaa0001"))), &["n1"]);
        let record = SessionRecord::new(1.0, None);
        assert_eq!(judge(&n, &record, None), None);
        // Its own notes it has not read back (a restart, say) are still guarded.
        let other = strings(&["x"]);
        assert_eq!(
            judge(&n, &record, Some(&other)),
            Some(StaleReason::UnreadList { field: "notes" })
        );
    }

    #[test]
    fn dropping_notes_is_refused_once_per_list() {
        let n = node(None, &["n1", "n2"]);
        let mut record = SessionRecord::new(1.0, None);
        record.record_view(["n"], View::Read, 5.0);
        let fewer = strings(&["n1"]);
        let refused = judge_session_write(
            &n,
            "aaaa0001",
            &record,
            &Proposed {
                notes: Some(&fewer),
                touches: None,
            },
            (Level::User, "n"),
            Policy::Ours,
        )
        .expect_err("drops n2");
        assert_eq!(refused.dropped_notes, ["n2"]);
        record.remember_refused_removal(Level::User, "n", &fewer);
        assert_eq!(judge(&n, &record, Some(&fewer)), None);
        let other = strings(&["n2"]);
        assert_eq!(
            judge(&n, &record, Some(&other)),
            Some(StaleReason::DropsNotes)
        );
        // Keeping every stored note, or sending none, never counts as dropping.
        let more = strings(&["n1", "n2", "n3"]);
        assert_eq!(judge(&n, &record, Some(&more)), None);
        assert_eq!(judge(&n, &record, None), None);
    }

    #[test]
    fn a_person_must_have_loaded_the_current_content() {
        let n = node(Some((100.0, None)), &[]);
        assert!(judge_based_write(Some(&n), 100.0, (Level::User, "n")).is_ok());
        let late = judge_based_write(Some(&n), 90.0, (Level::User, "n")).expect_err("stale");
        assert_eq!(late.node.get("gist"), Some(&json!("g")));
        assert!(judge_based_write(None, 0.0, (Level::User, "n")).is_ok());
        assert!(judge_based_write(Some(&node(None, &[])), 0.0, (Level::User, "n")).is_ok());
        assert!(judge_based_write(Some(&n), 0.0, (Level::User, "n")).is_err());
    }
}
