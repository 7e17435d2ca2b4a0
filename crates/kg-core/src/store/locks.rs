//! Locked nodes (since-0.9.30.md §9): a person protects a node they curated. Agents
//! may not rewrite, rename or delete it (each refusal is kept in the graph's
//! `rejections` progress entry, a ring of the last 50); reads, search, likes and edges
//! still work; compaction never archives it. Only a person sets or clears the lock:
//! REST, or the graph view.

use super::*;

/// Who asks for a change: an agent (the MCP tools) or a person (REST, the graph
/// view), who may do to a locked node what an agent may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// An agent's tool call.
    Agent,
    /// A person's edit.
    Person,
}

/// What an agent tried on a locked node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockedOp {
    /// `kg_put_node` of an existing node.
    Rewrite,
    /// `kg_delete_node`.
    Delete,
    /// `kg_rename_node`.
    Rename,
}

impl LockedOp {
    /// `rewrite`, `delete` or `rename`, as the rejections log names it.
    pub fn as_str(self) -> &'static str {
        match self {
            LockedOp::Rewrite => "rewrite",
            LockedOp::Delete => "delete",
            LockedOp::Rename => "rename",
        }
    }
}

/// The progress entry refusals of locked nodes are kept in.
pub const REJECTIONS_TASK: &str = "rejections";
/// How many refusals it keeps, the newest last.
pub const REJECTIONS_KEPT: usize = 50;

impl Store {
    /// Refuse an agent's `op` on the locked node `id`: keep the refusal in the graph's
    /// `rejections` entry (saved) and answer the error to give the agent.
    pub(super) fn refuse_locked(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        op: LockedOp,
        id: &str,
        session: Option<&str>,
        now: f64,
    ) -> StoreError {
        let mut journal = Journal::default();
        journal.progress(&state.graph, REJECTIONS_TASK);
        let entry = serde_json::json!({
            "ts": float_value(now),
            "op": op.as_str(),
            "id": id,
            "session": session,
        });
        let log = state
            .graph
            .progress
            .entry(REJECTIONS_TASK.to_string())
            .or_insert_with(|| serde_json::json!({}));
        if !log.is_object() {
            *log = serde_json::json!({});
        }
        if let Some(obj) = log.as_object_mut() {
            let entries = obj
                .entry("entries")
                .or_insert_with(|| Value::Array(Vec::new()));
            if !entries.is_array() {
                *entries = Value::Array(Vec::new());
            }
            if let Some(list) = entries.as_array_mut() {
                list.push(entry);
                let excess = list.len().saturating_sub(REJECTIONS_KEPT);
                list.drain(..excess);
            }
        }
        if let Err(e) = self.commit(slot, state, journal, now) {
            log::warn!(
                "the refusal of a {} of locked node {id} was not kept: {e}",
                op.as_str()
            );
        }
        StoreError::Locked {
            id: id.to_string(),
            level: slot.level,
            op,
        }
    }

    /// Lock or unlock node `id` (a person's act): `locked: true`, or the field
    /// removed. Answers the node as stored; nothing changes (and nothing is saved)
    /// when it already was so.
    pub fn set_locked(
        &self,
        target: Target<'_>,
        id: &str,
        locked: bool,
        now: f64,
    ) -> Result<Object, StoreError> {
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        let Some(node) = state.graph.nodes.get(id) else {
            return Err(StoreError::NodeNotFound {
                id: id.to_string(),
                level: slot.level.as_str().to_string(),
            });
        };
        if node.is_locked() != locked {
            let mut journal = Journal::default();
            set_lock_in(&mut state.graph, &mut journal, id, locked);
            self.commit(&slot, &mut state, journal, now)?;
            let node = state
                .graph
                .nodes
                .get(id)
                .map(Node::to_object)
                .unwrap_or_default();
            self.record(
                slot.level,
                slot.project_root(),
                target.session,
                ChangeKind::NodeUpdated { node },
                now,
            );
        }
        Ok(state
            .graph
            .nodes
            .get(id)
            .map(Node::to_object)
            .unwrap_or_default())
    }
}

/// Set or clear the lock of node `id` of `g`, journalled; a locked node found out of
/// the active tier comes back to it (compaction never archives one).
pub(super) fn set_lock_in(g: &mut Graph, journal: &mut Journal, id: &str, locked: bool) -> bool {
    let Some(node) = g.nodes.get(id) else {
        return false;
    };
    if node.is_locked() == locked {
        return false;
    }
    journal.node(g, id);
    if let Some(node) = g.node_mut(id) {
        if locked {
            node.set(field::LOCKED, Value::Bool(true));
            node.remove(field::ARCHIVED);
            node.remove(field::ORPHANED_TS);
        } else {
            node.remove(field::LOCKED);
        }
    }
    true
}
