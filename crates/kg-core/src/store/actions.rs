//! What a person does in the graph view, as one step: previewed by a dry run of the
//! very code that then commits it, and taken back as a whole.
//!
//! A step is a list of actions on one graph. Promoting, writing a node or deleting
//! one can take the level over its budget or leave archived nodes without a route
//! to the active graph, so such a step ends with the maintenance passes, as a tick
//! would run them (a step that only archives does not). A dry run applies all of it under the graph's lock, notes what
//! moved, and rolls the journal back: what the preview names is what the commit
//! moves, unless the graph changes in between. A committed step keeps its journal,
//! so undo restores every entry it touched, the re-balance included.

use super::locks::Actor;
use super::writes::{archive_node_in, check_new_id, delete_node_in, read_node_in};
use super::*;
use crate::journal::{Entry, EntryKey};
use crate::touch_path::path_part;

/// Steps kept for undo per graph; the oldest goes first.
pub const UNDO_STEPS: usize = 20;

/// One change a person asks for in the graph view (the server's step route reads
/// its JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Bring an archived or orphaned node back to the active tier, as a full read
    /// does (its orphaned neighbours come back to the archive with it).
    Promote {
        /// The node.
        id: String,
    },
    /// Move an active node to the archive by hand.
    Archive {
        /// The node.
        id: String,
    },
    /// Create a node, or replace its gist (and notes or touches, when given).
    PutNode {
        /// The node's id (the identifier rules apply).
        id: String,
        /// The new gist; healed and limited as `kg_put_node` does.
        gist: String,
        /// New notes, or `None` to keep them.
        notes: Option<Vec<String>>,
        /// New touches, or `None` to keep them.
        touches: Option<Vec<String>>,
        /// The node's `_written.ts` when the person loaded it (`0` for none, or a
        /// new node): the step is refused when the node has been written since.
        /// `None` writes whatever stands.
        written_ts: Option<f64>,
    },
    /// Delete a node and its edges.
    DeleteNode {
        /// The node.
        id: String,
    },
    /// Lock the node (agents may then not rewrite, rename or delete it, and
    /// compaction never archives it), or unlock it.
    Lock {
        /// The node.
        id: String,
        /// `true` locks, `false` unlocks.
        locked: bool,
    },
    /// Give the node a new id; its edges in every graph follow ([`Store::rename_node`]).
    /// A step of its own; undo renames it back.
    Rename {
        /// The node.
        id: String,
        /// Its new id.
        new_id: String,
    },
    /// Point one of a node's touches at another file: the entry `from` gets the path
    /// `to`, keeping its line range, anchor or symbol (`src/a.rs:12-40 (parser)` with
    /// `src/b.rs` becomes `src/b.rs:12-40 (parser)`). How a stale touch is fixed.
    Retouch {
        /// The node.
        id: String,
        /// The entry as the node stores it.
        from: String,
        /// The new path.
        to: String,
    },
}

impl Action {
    /// The node the action is about.
    pub fn id(&self) -> &str {
        match self {
            Action::Promote { id }
            | Action::Archive { id }
            | Action::PutNode { id, .. }
            | Action::DeleteNode { id }
            | Action::Lock { id, .. }
            | Action::Rename { id, .. }
            | Action::Retouch { id, .. } => id,
        }
    }
}

/// What a step did, or, for a dry run, would do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Nodes the step created.
    pub created: Vec<String>,
    /// Existing nodes whose gist (notes, touches) the step replaced.
    pub updated: Vec<String>,
    /// Archived or orphaned nodes the step promoted.
    pub promoted: Vec<String>,
    /// Orphaned neighbours of promoted nodes, back in the archive.
    pub rescued: Vec<String>,
    /// Active nodes the step archived by hand.
    pub archived: Vec<String>,
    /// Nodes the step deleted, with their edges.
    pub deleted: Vec<String>,
    /// Edges deleted with those nodes.
    pub edges_deleted: usize,
    /// Nodes the step locked.
    pub locked: Vec<String>,
    /// Nodes the step unlocked.
    pub unlocked: Vec<String>,
    /// The rename the step made (old id, new id, edge references moved), if it was
    /// one.
    pub renamed: Option<(String, String, usize)>,
    /// What the maintenance passes at the end of the step moved: nodes archived to
    /// bring the level under its budget, restored by refill, or orphaned.
    pub rebalanced: TierMoves,
    /// Steps that can now be undone on this graph.
    pub undo_steps: usize,
    /// The level's rendered size before the step, in characters.
    pub chars_before: usize,
    /// The level's rendered size after it (what the budget is measured on).
    pub chars_after: usize,
}

/// What an undo put back.
#[derive(Debug, Clone, PartialEq)]
pub struct Undone {
    /// The node ids whose entries were restored (their content, tier and position).
    pub nodes: Vec<String>,
    /// Steps still left to undo on this graph.
    pub undo_steps: usize,
}

/// A committed step, kept so that it can be taken back.
#[derive(Debug)]
pub(super) struct UndoStep {
    journal: Journal,
    /// The entries as the step left them: undo refuses when any changed since.
    after: Vec<Entry>,
    /// A rename step (old id, new id): undone by renaming back, which moves the edges
    /// of the other graphs back too.
    renamed: Option<(String, String)>,
}

impl Store {
    /// What `actions` would do to the graph of `target`, changing nothing.
    pub fn preview(
        &self,
        target: Target<'_>,
        actions: &[Action],
        now: f64,
    ) -> Result<Outcome, StoreError> {
        if let Some((old, new)) = lone_rename(actions)? {
            return self.rename_step(target, old, new, true, now);
        }
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        let (dirty, stall_logged) = (state.dirty, state.stall_logged);
        let (mut outcome, journal) = self.apply_step(&slot, &mut state, actions, target, now)?;
        journal.rollback(&mut state.graph);
        (state.dirty, state.stall_logged) = (dirty, stall_logged);
        outcome.undo_steps = state.history.len();
        Ok(outcome)
    }

    /// Do `actions` to the graph of `target` as one step: saved once, announced like
    /// any change, and kept for [`Store::undo`].
    pub fn perform(
        &self,
        target: Target<'_>,
        actions: &[Action],
        now: f64,
    ) -> Result<Outcome, StoreError> {
        if let Some((old, new)) = lone_rename(actions)? {
            return self.rename_step(target, old, new, false, now);
        }
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        let (mut outcome, journal) = self.apply_step(&slot, &mut state, actions, target, now)?;
        let journal = self.commit(&slot, &mut state, journal, now)?;
        let after = journal.current_entries(&state.graph);
        if state.history.len() == UNDO_STEPS {
            state.history.pop_front();
        }
        state.history.push_back(UndoStep {
            journal,
            after,
            renamed: None,
        });
        outcome.undo_steps = state.history.len();
        self.announce(&slot, &state.graph, &outcome, target.session, now);
        Ok(outcome)
    }

    /// Take back the last step [`Store::perform`] did on the graph of `target`, if
    /// nothing it touched has changed since.
    pub fn undo(&self, target: Target<'_>, now: f64) -> Result<Undone, StoreError> {
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        let Some(step) = state.history.pop_back() else {
            return Err(StoreError::CannotUndo(format!(
                "Nothing to undo in the {} graph.",
                slot.level.as_str()
            )));
        };
        if let Some((old, new)) = step.renamed {
            let left = state.history.len();
            drop(state);
            let back = Target {
                session: None,
                ..target
            };
            self.rename_node(Some(back), None, &new, &old, Actor::Person, now)
                .map_err(|e| {
                    StoreError::CannotUndo(format!(
                        "Cannot undo the rename of {old} to {new}: {e} Nothing was changed."
                    ))
                })?;
            let undone = Undone {
                nodes: vec![old],
                undo_steps: left,
            };
            self.record(
                slot.level,
                slot.project_root(),
                None,
                ChangeKind::StepUndone {
                    nodes: undone.nodes.clone(),
                },
                now,
            );
            return Ok(undone);
        }
        let now_entries = step.journal.current_entries(&state.graph);
        let changed: Vec<String> = now_entries
            .iter()
            .zip(&step.after)
            .filter(|(now, then)| now != then)
            .map(|(now, _)| now.key.to_string())
            .collect();
        if !changed.is_empty() {
            let error = StoreError::CannotUndo(format!(
                "Cannot undo: {} changed since (an agent, a read or maintenance wrote it), and undo would overwrite that. Nothing was changed.",
                changed.join(", ")
            ));
            // Older steps lie under this one; they cannot be taken back either.
            state.history.clear();
            return Err(error);
        }
        // Undo is rare and by hand: a copy is the simplest way back if the save fails.
        let before_undo = state.graph.clone();
        step.journal.clone().rollback(&mut state.graph);
        // The nodes a person sees change: their tier, or a field of their own (`_`
        // fields are bookkeeping: a compaction marks the nodes it weighed and kept).
        let seen = |g: &Graph, id: &str| {
            g.nodes.get(id).map(|node| {
                let mut own = node.to_object();
                own.retain(|key, _| !key.starts_with('_'));
                (node.tier(), own)
            })
        };
        let nodes: Vec<String> = step
            .after
            .iter()
            .filter_map(|e| match &e.key {
                EntryKey::Node(id) => Some(id.clone()),
                _ => None,
            })
            .filter(|id| seen(&before_undo, id) != seen(&state.graph, id))
            .collect();
        if let Err(e) = self.save_locked(&slot, &mut state) {
            state.graph = before_undo;
            state.history.push_back(step);
            return Err(StoreError::Save(e));
        }
        self.note_debt(&slot, &mut state, now);
        let undone = Undone {
            nodes,
            undo_steps: state.history.len(),
        };
        self.record(
            slot.level,
            slot.project_root(),
            None,
            ChangeKind::StepUndone {
                nodes: undone.nodes.clone(),
            },
            now,
        );
        Ok(undone)
    }

    /// Apply `actions` and the maintenance passes, journalled. On an error the graph
    /// is as it was.
    fn apply_step(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        actions: &[Action],
        target: Target<'_>,
        now: f64,
    ) -> Result<(Outcome, Journal), StoreError> {
        // Check every action before changing anything.
        let mut edits = Vec::with_capacity(actions.len());
        for action in actions {
            let edit = match action {
                Action::PutNode {
                    id,
                    gist,
                    notes,
                    touches,
                    written_ts,
                } => {
                    if let Some(loaded) = written_ts {
                        let node = state.graph.nodes.get(id);
                        super::guard::judge_based_write(node, *loaded, (slot.level, id))
                            .map_err(StoreError::NotWritten)?;
                    }
                    if !state.graph.nodes.contains_key(id) {
                        check_new_id(id)?;
                    }
                    Some(self.checked_edit(id, gist, notes.clone(), touches.clone())?)
                }
                Action::Retouch { id, from, to } => {
                    let touches = retouched_touches(&state.graph, slot.level, id, from, to)?;
                    let gist = state
                        .graph
                        .nodes
                        .get(id)
                        .map_or("", |n| n.gist())
                        .to_string();
                    Some(self.checked_edit(id, &gist, None, Some(touches))?)
                }
                other if !state.graph.nodes.contains_key(other.id()) => {
                    return Err(StoreError::NodeNotFound {
                        id: other.id().to_string(),
                        level: slot.level.as_str().to_string(),
                    });
                }
                _ => None,
            };
            edits.push(edit);
        }
        let mut journal = Journal::default();
        let mut outcome = Outcome {
            chars_before: crate::render::level_chars(&state.graph),
            ..Outcome::default()
        };
        let stamp = self.write_stamp(target.session, now);
        let g = &mut state.graph;
        for (action, edit) in actions.iter().zip(edits) {
            let id = action.id().to_string();
            match (action, edit) {
                (Action::PutNode { .. } | Action::Retouch { .. }, Some(edit)) => {
                    let (created, _) = edit.apply(g, &mut journal, target.session, &stamp, now);
                    if created {
                        outcome.created.push(id);
                    } else {
                        outcome.updated.push(id);
                    }
                }
                (Action::Promote { .. }, _) => {
                    if !g.nodes.contains_key(&id) {
                        continue; // deleted by an earlier action of the step
                    }
                    let read = read_node_in(g, &mut journal, &id, target.session, now);
                    if read.promoted {
                        outcome.promoted.push(id);
                    }
                    outcome.rescued.extend(read.rescued);
                }
                (Action::Archive { .. }, _) => {
                    if archive_node_in(g, &mut journal, &id) {
                        outcome.archived.push(id);
                    }
                }
                (Action::DeleteNode { .. }, _) => {
                    if g.nodes.contains_key(&id) {
                        outcome.edges_deleted += delete_node_in(g, &mut journal, &id);
                        outcome.deleted.push(id);
                    }
                }
                (Action::Lock { locked, .. }, _) => {
                    if super::locks::set_lock_in(g, &mut journal, &id, *locked) {
                        if *locked {
                            outcome.locked.push(id);
                        } else {
                            outcome.unlocked.push(id);
                        }
                    }
                }
                (Action::PutNode { .. } | Action::Retouch { .. }, None)
                | (Action::Rename { .. }, _) => {}
            }
        }
        // Archiving by hand only frees room; the passes would refill it at once, maybe
        // with the very node just archived. The next tick does that, visibly.
        if actions.iter().any(|a| !matches!(a, Action::Archive { .. })) {
            outcome.rebalanced = self.maybe_compact(slot, state, now, Some(&mut journal));
        }
        outcome.chars_after = crate::render::level_chars(&state.graph);
        Ok((outcome, journal))
    }

    /// A rename from the graph view: checked (a dry run) or done, and kept for undo.
    fn rename_step(
        &self,
        target: Target<'_>,
        old: &str,
        new: &str,
        dry_run: bool,
        now: f64,
    ) -> Result<Outcome, StoreError> {
        let slot = self.resolve_target(target, now)?;
        let chars_before = {
            let state = slot.lock();
            crate::render::level_chars(&state.graph)
        };
        let renamed = if dry_run {
            validate_ident(IdentKind::NodeId, new).map_err(StoreError::Invalid)?;
            check_new_id(new)?;
            let state = slot.lock();
            if old == new {
                return Err(StoreError::Invalid(crate::wording::rename_onto_itself(old)));
            }
            if !state.graph.nodes.contains_key(old) {
                return Err(StoreError::NodeNotFound {
                    id: old.to_string(),
                    level: slot.level.as_str().to_string(),
                });
            }
            if state.graph.nodes.contains_key(new) {
                return Err(StoreError::Invalid(crate::wording::rename_target_exists(
                    old, new, slot.level,
                )));
            }
            (old.to_string(), new.to_string(), 0)
        } else {
            let r = self.rename_node(Some(target), target.session, old, new, Actor::Person, now)?;
            (r.from, r.to, r.edges_rewired)
        };
        let mut state = slot.lock();
        if !dry_run {
            if state.history.len() == UNDO_STEPS {
                state.history.pop_front();
            }
            state.history.push_back(UndoStep {
                journal: Journal::default(),
                after: Vec::new(),
                renamed: Some((old.to_string(), new.to_string())),
            });
        }
        let chars_after = crate::render::level_chars(&state.graph);
        Ok(Outcome {
            renamed: Some(renamed),
            undo_steps: state.history.len(),
            chars_before,
            chars_after: if dry_run {
                // The id's line changes by the difference of the two ids' lengths.
                (chars_before + new.chars().count()).saturating_sub(old.chars().count())
            } else {
                chars_after
            },
            ..Outcome::default()
        })
    }

    /// Point touch `from` of node `id` at the path `to` (see [`Action::Retouch`]),
    /// write-through, as an agent's write: recorded for `kg_sync`, not kept for the
    /// graph view's undo, refused on a locked node. Returns the entry as now stored.
    pub fn retouch(
        &self,
        target: Target<'_>,
        id: &str,
        from: &str,
        to: &str,
        now: f64,
    ) -> Result<String, StoreError> {
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        // A fix of a touch rewrites the node: a person's lock keeps agents out of it.
        if state.graph.nodes.get(id).is_some_and(Node::is_locked) {
            let op = super::locks::LockedOp::Rewrite;
            return Err(self.refuse_locked(&slot, &mut state, op, id, target.session, now));
        }
        let action = Action::Retouch {
            id: id.to_string(),
            from: from.to_string(),
            to: to.to_string(),
        };
        let (outcome, journal) = self.apply_step(
            &slot,
            &mut state,
            std::slice::from_ref(&action),
            target,
            now,
        )?;
        self.commit(&slot, &mut state, journal, now)?;
        self.announce(&slot, &state.graph, &outcome, target.session, now);
        Ok(retouched(from, to))
    }

    /// Record a committed step in the change log, as the tools' own writes are.
    fn announce(
        &self,
        slot: &GraphSlot,
        g: &Graph,
        outcome: &Outcome,
        session: Option<&str>,
        now: f64,
    ) {
        let record = |kind| self.record(slot.level, slot.project_root(), session, kind, now);
        let written = outcome.created.iter().chain(&outcome.updated);
        for id in written.chain(&outcome.locked).chain(&outcome.unlocked) {
            if let Some(node) = g.nodes.get(id) {
                record(ChangeKind::NodeUpdated {
                    node: node.to_object(),
                });
            }
        }
        for id in &outcome.promoted {
            if let Some(node) = g.nodes.get(id) {
                record(ChangeKind::NodeRecalled {
                    node: node.to_object(),
                    rescued: outcome.rescued.clone(),
                });
            }
        }
        if !outcome.archived.is_empty() {
            record(ChangeKind::TiersMoved(TierMoves {
                archived: outcome.archived.clone(),
                reason: "archived by hand".into(),
                ..TierMoves::default()
            }));
        }
        for id in &outcome.deleted {
            record(ChangeKind::NodeDeleted { id: id.clone() });
        }
        let why = "the level re-balanced after a step in the graph view";
        self.record_moves(slot, outcome.rebalanced.clone(), why, now);
    }
}

/// The rename a step is, when it is one: a rename must be the step's only action.
fn lone_rename(actions: &[Action]) -> Result<Option<(&str, &str)>, StoreError> {
    match actions {
        [Action::Rename { id, new_id }] => Ok(Some((id, new_id))),
        _ if actions.iter().any(|a| matches!(a, Action::Rename { .. })) => Err(
            StoreError::Invalid("A rename is a step of its own: send it alone.".to_string()),
        ),
        _ => Ok(None),
    }
}

/// Touch `from` with its path replaced by `to` (the rest of the entry kept).
fn retouched(from: &str, to: &str) -> String {
    path_part(from).map_or_else(|| to.to_string(), |p| p.with_path(to))
}

/// The touches of node `id` with entry `from` pointed at `to` (or dropped, when the
/// node already has the new entry): what a retouch writes, with the node's own gist
/// and notes.
fn retouched_touches(
    g: &Graph,
    level: Level,
    id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<String>, StoreError> {
    let node = g.nodes.get(id).ok_or_else(|| StoreError::NodeNotFound {
        id: id.to_string(),
        level: level.as_str().to_string(),
    })?;
    let to = to.trim();
    if to.is_empty() || to.contains(char::is_whitespace) || to.contains('#') || to.contains("://") {
        return Err(StoreError::Invalid(crate::wording::bad_retouch_path(to)));
    }
    let mut touches = node.touches();
    let at = touches
        .iter()
        .position(|t| t == from)
        .filter(|_| path_part(from).is_some())
        .ok_or_else(|| StoreError::Invalid(crate::wording::no_such_touch(id, from)))?;
    let entry = retouched(from, to);
    if touches.contains(&entry) {
        touches.remove(at);
    } else {
        touches[at] = entry;
    }
    Ok(touches)
}
