//! The messages of `/ws`: live changes, and the connection's own.

use super::*;

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

#[cfg(test)]
mod tests {
    use super::*;
    use kg_core::{Change, ChangeKind, Level};
    use serde_json::json;

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
