//! The mutations and single-node reads: write-through, journalled, rolled back when
//! the save fails.

use super::guard;
use super::sessions::known_session;
use super::*;

impl Store {
    /// How "not found" names the two levels looked in: "either graph" in our words,
    /// "both graph" in the reference's (a pinned output).
    pub(super) fn both_levels_name(&self) -> &'static str {
        match self.config.policy {
            crate::store::Policy::Ours => "either",
            crate::store::Policy::Reference => "both",
        }
    }

    /// Create or update a node (core.md §4.2), whatever the writer has seen of it.
    pub fn put_node(
        &self,
        target: Target<'_>,
        id: &str,
        gist: &str,
        notes: Option<Vec<String>>,
        touches: Option<Vec<String>>,
        now: f64,
    ) -> Result<PutNode, StoreError> {
        self.put_node_checked(target, id, gist, notes, touches, WriteCheck::Unchecked, now)
    }

    /// Create or update a node (core.md §4.2) unless the write is built on a stale
    /// view of it (`check`, since-0.9.30.md §4): then nothing is written, and the
    /// error ([`StoreError::NotWritten`]) shows the node as it stands.
    #[allow(clippy::too_many_arguments)]
    pub fn put_node_checked(
        &self,
        target: Target<'_>,
        id: &str,
        gist: &str,
        notes: Option<Vec<String>>,
        touches: Option<Vec<String>>,
        check: WriteCheck,
        now: f64,
    ) -> Result<PutNode, StoreError> {
        let edit = self.checked_edit(id, gist, notes, touches)?;
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        if check == WriteCheck::SessionView
            && state.graph.nodes.get(&edit.id).is_some_and(Node::is_locked)
        {
            let op = super::locks::LockedOp::Rewrite;
            return Err(self.refuse_locked(&slot, &mut state, op, &edit.id, target.session, now));
        }
        self.guard(&slot, &state.graph, &edit, target.session, check, now)?;
        if !state.graph.nodes.contains_key(&edit.id) {
            check_new_id(&edit.id)?;
        }
        let mut journal = Journal::default();
        let stamp = self.write_stamp(target.session, now);
        let (created, snapshot) =
            edit.apply(&mut state.graph, &mut journal, target.session, &stamp, now);
        // Compaction joins the same save: one durable write covers the put and the
        // tier moves it caused, and a failed save undoes both.
        let moves = self.maybe_compact(&slot, &mut state, now, Some(&mut journal));
        self.commit(&slot, &mut state, journal, now)?;
        self.record(
            slot.level,
            slot.project_root(),
            target.session,
            ChangeKind::NodeUpdated {
                node: snapshot.clone(),
            },
            now,
        );
        self.record_moves(&slot, moves, "after a write", now);
        drop(state);
        // The writer has seen what it wrote, notes and touches included.
        if let Some(sid) = &stamp.by {
            self.record_views(sid, [id], View::Read, stamp.ts);
        }
        Ok(PutNode {
            level: slot.level,
            created,
            submitted_gist_chars: gist.chars().count(),
            node: snapshot,
        })
    }

    /// Refuse a write built on a stale view (see [`WriteCheck`]); called with the
    /// graph locked, so nothing can change between the judgement and the write. A
    /// refused agent was shown the whole node: that counts as reading it.
    fn guard(
        &self,
        slot: &GraphSlot,
        g: &Graph,
        edit: &NodeEdit,
        session: Option<&str>,
        check: WriteCheck,
        now: f64,
    ) -> Result<(), StoreError> {
        let at = (slot.level, edit.id.as_str());
        let node = g.nodes.get(&edit.id);
        let judged = match (check, node, session) {
            (WriteCheck::Unchecked, ..) => return Ok(()),
            (WriteCheck::Based(loaded), node, _) => guard::judge_based_write(node, loaded, at),
            (WriteCheck::SessionView, Some(node), Some(sid)) => {
                let write = guard::Proposed {
                    notes: edit.notes.as_deref(),
                    touches: edit.touches.as_deref(),
                };
                let policy = self.config.policy;
                let mut sessions = self.lock_sessions();
                let Some(record) = sessions.lookup_mut(sid) else {
                    return Ok(());
                };
                let judged = guard::judge_session_write(node, sid, record, &write, at, policy);
                match &judged {
                    Ok(()) => record.settle_removal(slot.level, &edit.id),
                    Err(refused) => {
                        if refused.reason == StaleReason::DropsNotes
                            && let Some(sent) = write.notes
                        {
                            record.remember_refused_removal(slot.level, &edit.id, sent);
                        }
                        record.record_view([edit.id.as_str()], View::Read, self.event_ts(now));
                    }
                }
                judged
            }
            // A create, or a write without a session: nothing was seen to be stale.
            (WriteCheck::SessionView, ..) => Ok(()),
        };
        judged.map_err(StoreError::NotWritten)
    }

    /// The stamp for a write made now by `session`: `by` names it only when it is a
    /// registered KG session (the graph view tags its writes with a connection id,
    /// which is not one). Take it with the graph locked (see [`Store::event_ts`]).
    pub(super) fn write_stamp(&self, session: Option<&str>, now: f64) -> WriteStamp {
        let by = session
            .filter(|sid| self.lock_sessions().lookup(sid).is_some())
            .map(str::to_string);
        WriteStamp {
            ts: self.event_ts(now),
            by,
        }
    }

    /// Create or update an edge (core.md §4.3). Endpoints are not checked.
    pub fn put_edge(
        &self,
        target: Target<'_>,
        from: &str,
        to: &str,
        rel: &str,
        notes: Option<Vec<String>>,
        now: f64,
    ) -> Result<(Level, Object), StoreError> {
        validate_ident(IdentKind::EdgeRef, from).map_err(StoreError::Invalid)?;
        validate_ident(IdentKind::EdgeRef, to).map_err(StoreError::Invalid)?;
        validate_ident(IdentKind::Rel, rel).map_err(StoreError::Invalid)?;
        let notes = notes
            .map(limits::notes)
            .transpose()
            .map_err(StoreError::Invalid)?;
        if let Some(notes) = &notes {
            self.refuse_credentials(
                notes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (format!("edge note {}", i + 1), n.as_str())),
            )?;
        }
        let slot = self.resolve_target(target, now)?;
        let key = EdgeKey::new(from, to, rel);
        let mut state = slot.lock();
        let mut journal = Journal::default();
        let g = &mut state.graph;
        journal.edge(g, &key);
        let edge = g.edge_entry(&key);
        if let Some(notes) = notes {
            edge.set_notes(notes);
        }
        let snapshot = edge.as_object().clone();
        let vkey = edge_version_key(&key);
        journal.version(g, &vkey);
        g.bump_version(vkey, now, target.session);
        self.commit(&slot, &mut state, journal, now)?;
        self.record(
            slot.level,
            slot.project_root(),
            target.session,
            ChangeKind::EdgeUpdated {
                edge: snapshot.clone(),
            },
            now,
        );
        Ok((slot.level, snapshot))
    }

    /// Delete a node and its edges in that graph, as a person does (a locked node
    /// too). `level = None` looks in the user graph first, then the session's project
    /// graph.
    pub fn delete_node(
        &self,
        level: Option<Target<'_>>,
        session: Option<&str>,
        id: &str,
        now: f64,
    ) -> Result<(Level, usize), StoreError> {
        self.delete_node_by(level, session, id, super::locks::Actor::Person, now)
    }

    /// [`Store::delete_node`] for `actor`: an agent may not delete a locked node.
    pub fn delete_node_by(
        &self,
        level: Option<Target<'_>>,
        session: Option<&str>,
        id: &str,
        actor: super::locks::Actor,
        now: f64,
    ) -> Result<(Level, usize), StoreError> {
        let (slots, level_name) = match level {
            Some(t) => (vec![self.resolve_target(t, now)?], t.level.as_str()),
            None => (self.auto_slots(session, now)?, self.both_levels_name()),
        };
        for slot in slots {
            let mut state = slot.lock();
            let Some(node) = state.graph.nodes.get(id) else {
                continue;
            };
            if actor == super::locks::Actor::Agent && node.is_locked() {
                let op = super::locks::LockedOp::Delete;
                return Err(self.refuse_locked(&slot, &mut state, op, id, session, now));
            }
            let mut journal = Journal::default();
            let removed = delete_node_in(&mut state.graph, &mut journal, id);
            self.commit(&slot, &mut state, journal, now)?;
            self.record(
                slot.level,
                slot.project_root(),
                session,
                ChangeKind::NodeDeleted { id: id.to_string() },
                now,
            );
            return Ok((slot.level, removed));
        }
        Err(StoreError::NodeNotFound {
            id: id.to_string(),
            level: level_name.to_string(),
        })
    }

    /// Delete an edge; `Ok(None)` when it does not exist (not an error).
    pub fn delete_edge(
        &self,
        level: Option<Target<'_>>,
        session: Option<&str>,
        key: &EdgeKey,
        now: f64,
    ) -> Result<Option<Level>, StoreError> {
        let slots = match level {
            Some(t) => vec![self.resolve_target(t, now)?],
            None => self.auto_slots(session, now)?,
        };
        for slot in slots {
            let mut state = slot.lock();
            if !state.graph.edges.contains_key(key) {
                continue;
            }
            let mut journal = Journal::default();
            journal.edge(&state.graph, key);
            state.graph.edges.shift_remove(key);
            self.commit(&slot, &mut state, journal, now)?;
            self.record(
                slot.level,
                slot.project_root(),
                session,
                ChangeKind::EdgeDeleted { key: key.clone() },
                now,
            );
            return Ok(Some(slot.level));
        }
        Ok(None)
    }

    /// Read one node in full (core.md §4.5): stamps the read, promotes an archived or
    /// orphaned node and rescues its orphaned neighbours. `level = None` looks in the
    /// user graph first, then the session's project graph.
    pub fn read_node(
        &self,
        level: Option<Target<'_>>,
        session: Option<&str>,
        id: &str,
        now: f64,
    ) -> Result<NodeRead, StoreError> {
        let (slots, level_name) = match level {
            Some(t) => (vec![self.resolve_target(t, now)?], t.level.as_str()),
            None => (self.auto_slots(session, now)?, self.both_levels_name()),
        };
        for slot in slots {
            let mut state = slot.lock();
            if !state.graph.nodes.contains_key(id) {
                continue;
            }
            return self.read_node_locked(&slot, &mut state, session, id, now);
        }
        Err(StoreError::NodeNotFound {
            id: id.to_string(),
            level: level_name.to_string(),
        })
    }

    pub(super) fn read_node_locked(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        session: Option<&str>,
        id: &str,
        now: f64,
    ) -> Result<NodeRead, StoreError> {
        let mut journal = Journal::default();
        let viewed_at = self.event_ts(now);
        let read = read_node_in(&mut state.graph, &mut journal, id, session, now);
        let (was_archived, rescued) = (read.promoted, read.rescued);
        if was_archived {
            self.commit(slot, state, journal, now)?;
        } else {
            state.dirty = true; // a read stamp is flushed by the tick, not written through
            self.note_debt(slot, state, now);
        }
        let g = &state.graph;
        let node = g.nodes.get(id).map(Node::to_object).unwrap_or_default();
        if was_archived {
            self.record(
                slot.level,
                slot.project_root(),
                session,
                ChangeKind::NodeRecalled {
                    node: node.clone(),
                    rescued: rescued.clone(),
                },
                now,
            );
        }
        let edges = g
            .edges
            .values()
            .filter(|e| e.touches(id))
            .map(|e| e.as_object().clone())
            .collect();
        if let Some(sid) = session {
            self.record_views(sid, [id], View::Read, viewed_at);
        }
        Ok(NodeRead {
            id: id.to_string(),
            level: slot.level,
            node,
            was_archived,
            rescued,
            edges,
        })
    }

    /// Change node `id` in place, write-through (undone if the save fails).
    fn edit_node(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        id: &str,
        now: f64,
        edit: impl FnOnce(&mut Node),
    ) -> Result<(), StoreError> {
        let mut journal = Journal::default();
        journal.node(&state.graph, id);
        if let Some(node) = state.graph.node_mut(id) {
            edit(node);
        }
        self.commit(slot, state, journal, now).map(drop)
    }

    /// Endorse nodes that helped (core.md §9.1).
    pub fn useful(&self, sid: &str, ids: &[String], now: f64) -> Result<Likes, StoreError> {
        let mut liked = {
            let mut sessions = self.lock_sessions();
            known_session(&mut sessions, sid, now)?.liked().to_vec()
        };
        let mut result = Likes::default();
        for id in ids {
            if liked.contains(id) {
                reject(&mut result, id, "already liked this session".into());
                continue;
            }
            if liked.len() >= LIKES_PER_SESSION {
                reject(
                    &mut result,
                    id,
                    format!("session like budget ({LIKES_PER_SESSION}) exhausted"),
                );
                continue;
            }
            let mut found = false;
            for slot in self.auto_slots(Some(sid), now)? {
                let mut state = slot.lock();
                let Some(node) = state.graph.nodes.get(id) else {
                    continue;
                };
                let mut stamps = match node.get(field::USEFUL_TS) {
                    Some(Value::Array(a)) => a.clone(),
                    _ => Vec::new(),
                };
                stamps.push(float_value(now));
                self.edit_node(&slot, &mut state, id, now, |node| {
                    node.set(field::USEFUL_TS, Value::Array(stamps));
                })?;
                self.record(
                    slot.level,
                    slot.project_root(),
                    Some(sid),
                    ChangeKind::NodeLiked { id: id.clone() },
                    now,
                );
                found = true;
                break;
            }
            if found {
                liked.push(id.clone());
                result.accepted.push(id.clone());
            } else {
                reject(&mut result, id, "not found".into());
            }
        }
        if let Some(record) = self.lock_sessions().lookup_mut(sid)
            && (!result.accepted.is_empty() || record.liked_ids.is_some())
        {
            record.liked_ids = Some(liked.clone());
        }
        result.remaining = LIKES_PER_SESSION.saturating_sub(liked.len());
        Ok(result)
    }

    /// The progress slot of a task: the session's project graph for `project`, else the
    /// user graph. The project graph is loaded first, so nothing is lost.
    pub(super) fn progress_slot(
        &self,
        sid: Option<&str>,
        level: Level,
        now: f64,
    ) -> Result<Arc<GraphSlot>, StoreError> {
        match level {
            Level::User => Ok(self.user.clone()),
            Level::Project => {
                let root = self.session_project(sid, now)?;
                self.project_slot(&root, now)
            }
        }
    }

    /// Read a task checkpoint; `None` when missing or empty.
    pub fn progress_get(
        &self,
        sid: Option<&str>,
        task_id: &str,
        level: Level,
        now: f64,
    ) -> Result<Option<Value>, StoreError> {
        let slot = self.progress_slot(sid, level, now)?;
        let state = slot.lock();
        Ok(state
            .graph
            .progress
            .get(task_id)
            .filter(|v| crate::model::truthy(v))
            .cloned())
    }

    /// Replace a task checkpoint.
    pub fn progress_set(
        &self,
        sid: Option<&str>,
        task_id: &str,
        value: Value,
        level: Level,
        now: f64,
    ) -> Result<(), StoreError> {
        limits::task(task_id, &value).map_err(StoreError::Invalid)?;
        if nesting_depth(&value) > MAX_PROGRESS_DEPTH {
            return Err(StoreError::Invalid(format!(
                "Invalid progress state for task '{task_id}': nested deeper than {MAX_PROGRESS_DEPTH} levels"
            )));
        }
        let slot = self.progress_slot(sid, level, now)?;
        let mut state = slot.lock();
        let mut journal = Journal::default();
        journal.progress(&state.graph, task_id);
        if let Some(v) = state.graph.progress.get_mut(task_id) {
            *v = value;
        } else {
            state.graph.progress.insert(task_id.to_string(), value);
        }
        self.commit(&slot, &mut state, journal, now)?;
        self.record(
            slot.level,
            slot.project_root(),
            sid,
            ChangeKind::ProgressSaved {
                task_id: task_id.to_string(),
            },
            now,
        );
        Ok(())
    }

    // ----- sessions --------------------------------------------------------------------
}

/// The id length rule for a new node or a rename target (since-0.9.30.md §5); an
/// existing id is never refused on length.
pub(super) fn check_new_id(id: &str) -> Result<(), StoreError> {
    let shape = crate::model::IdShape::of(id);
    if shape.too_long() {
        return Err(StoreError::Invalid(crate::wording::id_too_long(
            id,
            shape.words,
        )));
    }
    Ok(())
}

/// How deeply a progress state may nest. The graph file holds a state three levels
/// down and the JSON parser refuses files nested 128 deep, so a deeper state would be
/// saved and then make the whole graph unreadable at the next start.
pub const MAX_PROGRESS_DEPTH: usize = 64;

/// Nesting depth of a value (a scalar is 0, `{}` and `[]` are 1).
pub(super) fn nesting_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(depth + 1);
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    deepest
}

/// Record a rejected like: an id keeps the place of its first rejection and the
/// reason of its last.
pub(super) fn reject(likes: &mut Likes, id: &str, reason: String) {
    *likes.rejected.entry(id.to_string()).or_default() = reason;
}

pub(super) fn string_array(items: Vec<String>) -> Value {
    Value::Array(items.into_iter().map(Value::String).collect())
}

impl Store {
    /// [`NodeEdit::checked`], then refused when a field holds a credential.
    pub(super) fn checked_edit(
        &self,
        id: &str,
        gist: &str,
        notes: Option<Vec<String>>,
        touches: Option<Vec<String>>,
    ) -> Result<NodeEdit, StoreError> {
        let edit = NodeEdit::checked(id, gist, notes, touches)?;
        self.refuse_credentials(super::screen::named_texts(
            &edit.gist,
            edit.notes.as_deref().unwrap_or_default(),
            edit.touches.as_deref().unwrap_or_default(),
        ))?;
        Ok(edit)
    }

    /// Refuse a write when one of its texts (named by the first of each pair) holds a
    /// credential a person has not allowed as no secret.
    pub(super) fn refuse_credentials<'a>(
        &self,
        fields: impl Iterator<Item = (String, &'a str)>,
    ) -> Result<(), StoreError> {
        let allowed = |fingerprint: &str| self.secret_allowed(fingerprint);
        for (field, text) in fields {
            if let Some(finding) = crate::secrets::find(text, &allowed) {
                return Err(StoreError::Credential {
                    field,
                    kind: finding.kind,
                    fingerprint: finding.fingerprint,
                });
            }
        }
        Ok(())
    }
}

// The graph edits behind the mutations, each journalled and nothing else: the agents'
// tools and the graph view's actions (`actions.rs`) apply the same ones, and commit,
// record or roll back around them.

/// A node write checked and healed, ready to apply (core.md §4.2).
pub(super) struct NodeEdit {
    pub(super) id: String,
    gist: String,
    pub(super) notes: Option<Vec<String>>,
    pub(super) touches: Option<Vec<String>>,
}

impl NodeEdit {
    /// Check the id, heal the gist (notes and touches may absorb its overflow), and
    /// check the healed parts against their limits.
    pub(super) fn checked(
        id: &str,
        gist: &str,
        notes: Option<Vec<String>>,
        touches: Option<Vec<String>>,
    ) -> Result<NodeEdit, StoreError> {
        validate_ident(IdentKind::NodeId, id).map_err(StoreError::Invalid)?;
        let healed = heal(gist, notes.as_deref(), touches.as_deref());
        let gist = limits::gist(&healed.gist).map_err(StoreError::Invalid)?;
        let notes = healed.notes.map(limits::notes).transpose();
        let touches = healed.touches.map(limits::touches).transpose();
        Ok(NodeEdit {
            id: id.to_string(),
            gist,
            notes: notes.map_err(StoreError::Invalid)?,
            touches: touches.map_err(StoreError::Invalid)?,
        })
    }

    /// The node's id.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// Create or update the node, active, with a new version; a write that changes
    /// its content (creates it, or changes its gist, notes or touches) also stamps
    /// `_written` with `stamp`. Returns whether it was created, and the node as
    /// written.
    pub(super) fn apply(
        self,
        g: &mut Graph,
        journal: &mut Journal,
        session: Option<&str>,
        stamp: &WriteStamp,
        now: f64,
    ) -> (bool, Object) {
        let id = self.id.as_str();
        journal.node(g, id);
        let created = !g.nodes.contains_key(id);
        let node = g.node_entry(id);
        let content = |node: &Node| {
            [field::GIST, field::NOTES, field::TOUCHES].map(|key| node.get(key).cloned())
        };
        let before = content(node);
        node.set(field::GIST, Value::String(self.gist));
        if let Some(notes) = self.notes {
            node.set(field::NOTES, string_array(notes));
        }
        if let Some(touches) = self.touches {
            node.set(field::TOUCHES, string_array(touches));
        }
        if created {
            node.set(field::CREATED_TS, float_value(now));
        }
        if created || content(node) != before {
            node.set(field::WRITTEN, stamp.to_value());
        }
        node.remove(field::ARCHIVED);
        node.remove(field::ORPHANED_TS);
        let snapshot = node.to_object();
        let vkey = node_version_key(id);
        journal.version(g, &vkey);
        g.bump_version(vkey, now, session);
        (created, snapshot)
    }
}

/// What reading a node in full did to the graph.
pub(super) struct ReadEffect {
    /// It was archived or orphaned, and is active now.
    pub(super) promoted: bool,
    /// Orphaned neighbours it brought back to the archive (chain rescue).
    pub(super) rescued: Vec<String>,
}

/// Stamp the read of node `id` (which exists); an archived or orphaned node is promoted
/// with a new version, and its orphaned neighbours are rescued to the archive.
pub(super) fn read_node_in(
    g: &mut Graph,
    journal: &mut Journal,
    id: &str,
    session: Option<&str>,
    now: f64,
) -> ReadEffect {
    journal.node(g, id);
    let promoted = g.nodes.get(id).is_some_and(|n| n.tier() != Tier::Active);
    if let Some(node) = g.node_mut(id) {
        node.set(field::LAST_READ_TS, float_value(now));
    }
    let mut rescued = Vec::new();
    if !promoted {
        return ReadEffect { promoted, rescued };
    }
    if let Some(node) = g.node_mut(id) {
        node.remove(field::ARCHIVED);
        node.remove(field::ORPHANED_TS);
    }
    let vkey = node_version_key(id);
    journal.version(g, &vkey);
    g.bump_version(vkey, now, session);
    let neighbours: Vec<String> = g
        .edges
        .keys()
        .filter_map(|k| {
            if k.from() == id {
                Some(k.to().to_string())
            } else if k.to() == id {
                Some(k.from().to_string())
            } else {
                None
            }
        })
        .collect();
    for other in neighbours {
        if rescued.contains(&other) {
            continue;
        }
        if g.nodes.get(&other).is_some_and(Node::is_orphaned) {
            journal.node(g, &other);
            if let Some(n) = g.node_mut(&other) {
                n.remove(field::ORPHANED_TS);
            }
            rescued.push(other);
        }
    }
    ReadEffect { promoted, rescued }
}

/// Archive node `id` by hand. Returns whether it was active (else nothing changes).
pub(super) fn archive_node_in(g: &mut Graph, journal: &mut Journal, id: &str) -> bool {
    if g.nodes.get(id).map(Node::tier) != Some(Tier::Active) {
        return false;
    }
    journal.node(g, id);
    if let Some(node) = g.node_mut(id) {
        node.set(field::ARCHIVED, Value::Bool(true));
    }
    true
}

/// Delete node `id` and the edges that touch it. Returns how many edges went.
pub(super) fn delete_node_in(g: &mut Graph, journal: &mut Journal, id: &str) -> usize {
    let touching: Vec<EdgeKey> = g
        .edges
        .keys()
        .filter(|k| k.from() == id || k.to() == id)
        .cloned()
        .collect();
    journal.node(g, id);
    // The edges go all at once, so each is remembered at its index in the full list.
    // Rollback restores the newest remembered first; remembering the last edge first
    // makes it restore the first edge first, so each goes back where it was.
    for key in touching.iter().rev() {
        journal.edge(g, key);
    }
    g.remove_node(id).map_or(0, |(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_depth_counts_containers() {
        assert_eq!(nesting_depth(&serde_json::json!(1)), 0);
        assert_eq!(nesting_depth(&serde_json::json!({})), 1);
        assert_eq!(nesting_depth(&serde_json::json!({"a": [1, {"b": []}]})), 4);
        let deep: Value = serde_json::from_str(&format!(
            "{}{}",
            "[".repeat(MAX_PROGRESS_DEPTH + 1),
            "]".repeat(MAX_PROGRESS_DEPTH + 1)
        ))
        .expect("json");
        assert_eq!(nesting_depth(&deep), MAX_PROGRESS_DEPTH + 1);
    }
}
