//! Renaming a node (since-0.9.30.md §5): the node keeps everything it has (creation
//! time, endorsements, tier, lock, write stamp) under its new id, its version entry
//! moves with it, and every edge naming it follows, in its own graph and, for a user
//! node, in every project graph: loaded ones in memory, the others in their files.

use super::locks::{Actor, LockedOp};
use super::writes::check_new_id;
use super::*;
use crate::model::Edge;
use crate::results::{Renamed, SkipReason, SkippedGraph};

/// A project graph not in memory, read from its file for a rename of a user node.
struct OnDisk {
    slug: String,
    path: PathBuf,
    file: GraphFile,
}

impl Store {
    /// Rename node `old` to `new`. `level = None` looks in the user graph first, then
    /// the session's project graph. Refused (nothing changes) when `new` breaks the
    /// identifier or id length rules, is `old`, already exists in that graph, or would
    /// make an edge reach a different node; an agent may not rename a locked node.
    pub fn rename_node(
        &self,
        level: Option<Target<'_>>,
        session: Option<&str>,
        old: &str,
        new: &str,
        actor: Actor,
        now: f64,
    ) -> Result<Renamed, StoreError> {
        validate_ident(IdentKind::NodeId, new).map_err(StoreError::Invalid)?;
        check_new_id(new)?;
        if old == new {
            return Err(StoreError::Invalid(crate::wording::rename_onto_itself(old)));
        }
        let (slots, level_name) = match level {
            Some(t) => (vec![self.resolve_target(t, now)?], t.level.as_str()),
            None => (self.auto_slots(session, now)?, self.both_levels_name()),
        };
        let Some(slot) = slots
            .into_iter()
            .find(|slot| slot.lock().graph.nodes.contains_key(old))
        else {
            return Err(StoreError::NodeNotFound {
                id: old.to_string(),
                level: level_name.to_string(),
            });
        };
        let renamed = match slot.level {
            Level::Project => self.rename_project_node(&slot, session, old, new, actor, now)?,
            Level::User => self.rename_user_node(session, old, new, actor, now)?,
        };
        self.lock_sessions().rename_id(old, new);
        self.save_sessions();
        Ok(renamed)
    }

    /// The checks every rename makes on the node's own graph.
    fn check_rename(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        (old, new): (&str, &str),
        session: Option<&str>,
        actor: Actor,
        now: f64,
    ) -> Result<(), StoreError> {
        let Some(node) = state.graph.nodes.get(old) else {
            return Err(StoreError::NodeNotFound {
                id: old.to_string(),
                level: slot.level.as_str().to_string(),
            });
        };
        if actor == Actor::Agent && node.is_locked() {
            return Err(self.refuse_locked(slot, state, LockedOp::Rename, old, session, now));
        }
        if state.graph.nodes.contains_key(new) {
            return Err(StoreError::Invalid(crate::wording::rename_target_exists(
                old, new, slot.level,
            )));
        }
        Ok(())
    }

    fn rename_project_node(
        &self,
        slot: &GraphSlot,
        session: Option<&str>,
        old: &str,
        new: &str,
        actor: Actor,
        now: f64,
    ) -> Result<Renamed, StoreError> {
        // The store's lock order: the user graph, then the project graph.
        let user = self.user.lock();
        let mut state = slot.lock();
        self.check_rename(slot, &mut state, (old, new), session, actor, now)?;
        // Edges of this project naming `new` reach the user node of that id today;
        // after the rename they would reach this node instead.
        if user.graph.nodes.contains_key(new) {
            let captured = state.graph.edges.keys().filter(|k| names(k, new)).count();
            if captured > 0 {
                return Err(StoreError::Invalid(
                    crate::wording::rename_captures_user_node(old, new, captured),
                ));
            }
        }
        drop(user);
        let mut journal = Journal::default();
        let rewired = rename_in(&mut state.graph, &mut journal, (old, new), session, now);
        self.commit(slot, &mut state, journal, now)?;
        let node = state
            .graph
            .nodes
            .get(new)
            .map(Node::to_object)
            .unwrap_or_default();
        self.record_renamed(slot, session, old, &node, now);
        Ok(Renamed {
            level: Level::Project,
            from: old.to_string(),
            to: new.to_string(),
            edges_rewired: rewired,
            skipped: Vec::new(),
            node,
        })
    }

    fn rename_user_node(
        &self,
        session: Option<&str>,
        old: &str,
        new: &str,
        actor: Actor,
        now: f64,
    ) -> Result<Renamed, StoreError> {
        let mut projects = self.loaded_projects();
        projects.sort_by(|a, b| a.path.cmp(&b.path));
        let mut user = self.user.lock();
        self.check_rename(&self.user, &mut user, (old, new), session, actor, now)?;
        let mut guards: Vec<MutexGuard<'_, GraphState>> =
            projects.iter().map(|slot| slot.lock()).collect();
        let loaded_slugs: HashSet<&str> =
            projects.iter().filter_map(|s| s.slug.as_deref()).collect();
        let on_disk = self.project_files_except(&loaded_slugs)?;

        // Capture: a project whose edges name `old` and that owns a node `new` would
        // see those edges reach its own node after the rename.
        let mut captured: Vec<String> = Vec::new();
        let graphs = projects
            .iter()
            .zip(guards.iter())
            .map(|(slot, state)| (slot.slug.clone().unwrap_or_default(), &*state.graph))
            .chain(on_disk.iter().map(|d| (d.slug.clone(), &d.file.graph)));
        for (slug, g) in graphs {
            if g.nodes.contains_key(new) && g.edges.keys().any(|k| names(k, old)) {
                captured.push(slug);
            }
        }
        if !captured.is_empty() {
            return Err(StoreError::Invalid(
                crate::wording::rename_captured_by_projects(old, new, &captured),
            ));
        }

        let mut journal = Journal::default();
        let mut rewired = rename_in(&mut user.graph, &mut journal, (old, new), session, now);
        self.commit(&self.user, &mut user, journal, now)?;
        let node = user
            .graph
            .nodes
            .get(new)
            .map(Node::to_object)
            .unwrap_or_default();
        self.record_renamed(&self.user, session, old, &node, now);

        let mut skipped = Vec::new();
        for (slot, state) in projects.iter().zip(guards.iter_mut()) {
            let slug = slot.slug.clone().unwrap_or_default();
            match project_side(&state.graph, old, new) {
                Side::Untouched => continue,
                Side::Skip(reason) => {
                    skipped.push(SkippedGraph {
                        graph: slug,
                        reason,
                    });
                    continue;
                }
                Side::Rewire => {}
            }
            let mut journal = Journal::default();
            let keys = rewire_edges_in(&mut state.graph, &mut journal, (old, new), session, now);
            match self.commit(slot, state, journal, now) {
                Ok(_) => {
                    rewired += keys.iter().map(|r| r.ends).sum::<usize>();
                    self.record_rewired(slot, &state.graph, session, &keys, now);
                }
                Err(e) => {
                    log::error!(
                        "rename {old} → {new}: the edges of project {slug} kept the old id: {e}"
                    );
                    skipped.push(SkippedGraph {
                        graph: slug,
                        reason: SkipReason::Unwritable,
                    });
                }
            }
        }
        drop(guards);
        drop(user);
        for mut disk in on_disk {
            match project_side(&disk.file.graph, old, new) {
                Side::Untouched => {}
                Side::Skip(reason) => skipped.push(SkippedGraph {
                    graph: disk.slug,
                    reason,
                }),
                Side::Rewire => {
                    let mut journal = Journal::default();
                    let keys = rewire_edges_in(
                        &mut disk.file.graph,
                        &mut journal,
                        (old, new),
                        session,
                        now,
                    );
                    match self.rewrite_project_file(&disk) {
                        Ok(()) => rewired += keys.iter().map(|r| r.ends).sum::<usize>(),
                        Err(e) => {
                            log::error!(
                                "rename {old} → {new}: {} kept the old id: {e}",
                                disk.path.display()
                            );
                            skipped.push(SkippedGraph {
                                graph: disk.slug,
                                reason: SkipReason::Unwritable,
                            });
                        }
                    }
                }
            }
        }
        Ok(Renamed {
            level: Level::User,
            from: old.to_string(),
            to: new.to_string(),
            edges_rewired: rewired,
            skipped,
            node,
        })
    }

    /// The project graph files of the storage root whose folders are not in `except`,
    /// read. A file that cannot be read or parsed refuses the rename: its edges cannot
    /// be checked.
    fn project_files_except(&self, except: &HashSet<&str>) -> Result<Vec<OnDisk>, StoreError> {
        let Ok(entries) = std::fs::read_dir(self.layout.projects_dir()) else {
            return Ok(Vec::new());
        };
        let mut slugs: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|slug| !except.contains(slug.as_str()))
            .collect();
        slugs.sort();
        let mut files = Vec::new();
        for slug in slugs {
            let path = self.layout.project_graph(&slug);
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(StoreError::Invalid(
                        crate::wording::rename_unreadable_project(&slug, &e.to_string()),
                    ));
                }
            };
            let file = parse_graph(&bytes).map_err(|cause| {
                StoreError::Invalid(crate::wording::rename_unreadable_project(&slug, &cause))
            })?;
            files.push(OnDisk { slug, path, file });
        }
        Ok(files)
    }

    /// Write back a project graph file read for a rename, as a save does (atomically,
    /// the last version kept as `.prev`).
    fn rewrite_project_file(&self, disk: &OnDisk) -> Result<(), PersistError> {
        let level = disk.file.level.unwrap_or(Level::Project);
        let text = crate::persist::serialize_file(&disk.file, level);
        let validate = |bytes: &[u8]| parse_graph(bytes).is_ok();
        let stamp = FileStamp::of(&disk.path);
        atomic_write(
            &disk.path,
            text.as_bytes(),
            WriteMode::GRAPH,
            stamp,
            Some(&validate),
        )
        .map(drop)
    }

    fn record_renamed(
        &self,
        slot: &GraphSlot,
        session: Option<&str>,
        old: &str,
        node: &Object,
        now: f64,
    ) {
        self.record(
            slot.level,
            slot.project_root(),
            session,
            ChangeKind::NodeRenamed {
                old_id: old.to_string(),
                node: node.clone(),
            },
            now,
        );
    }

    /// Announce the edges of another graph a rename re-keyed.
    fn record_rewired(
        &self,
        slot: &GraphSlot,
        g: &Graph,
        session: Option<&str>,
        keys: &[Rewired],
        now: f64,
    ) {
        let record = |kind| self.record(slot.level, slot.project_root(), session, kind, now);
        for rewired in keys {
            record(ChangeKind::EdgeDeleted {
                key: rewired.from.clone(),
            });
            if let Some(edge) = g.edges.get(&rewired.to) {
                record(ChangeKind::EdgeUpdated {
                    edge: edge.as_object().clone(),
                });
            }
        }
    }
}

/// What a rename of a user node does to a project graph.
enum Side {
    /// No edge of it names the old id.
    Untouched,
    /// Its edges naming the old id are left alone.
    Skip(SkipReason),
    /// Its edges naming the old id are re-keyed.
    Rewire,
}

fn project_side(g: &Graph, old: &str, new: &str) -> Side {
    let edges_name_old = g.edges.keys().any(|k| names(k, old));
    if g.nodes.contains_key(old) {
        if edges_name_old {
            Side::Skip(SkipReason::LocalNode)
        } else {
            Side::Untouched
        }
    } else if g.nodes.contains_key(new) {
        Side::Skip(SkipReason::Collision)
    } else if edges_name_old {
        Side::Rewire
    } else {
        Side::Untouched
    }
}

fn names(key: &EdgeKey, id: &str) -> bool {
    key.from() == id || key.to() == id
}

/// One edge a rename re-keyed.
pub(super) struct Rewired {
    /// Its key before.
    pub(super) from: EdgeKey,
    /// Its key now (an edge that was there already, when they merged).
    pub(super) to: EdgeKey,
    /// How many of its ends named the old id.
    pub(super) ends: usize,
}

fn renamed_key(key: &EdgeKey, (old, new): (&str, &str)) -> Option<EdgeKey> {
    if !names(key, old) {
        return None;
    }
    let end = |e| if e == old { new } else { e };
    let (from, to) = (end(key.from()), end(key.to()));
    Some(EdgeKey::new(from, to, key.rel()))
}

/// Move node `old` of `g` to the key `new`, journalled: its fields ride along, its
/// version entry is re-keyed and bumped, and the edges naming it follow. Returns the
/// edge ends re-pointed.
pub(super) fn rename_in(
    g: &mut Graph,
    journal: &mut Journal,
    (old, new): (&str, &str),
    session: Option<&str>,
    now: f64,
) -> usize {
    journal.node(g, old);
    journal.node(g, new);
    if let Some((at, _, mut node)) = g.nodes.shift_remove_full(old) {
        node.set(field::ID, Value::String(new.to_string()));
        g.nodes.shift_insert(at, new.to_string(), node);
    }
    let (old_v, new_v) = (node_version_key(old), node_version_key(new));
    journal.version(g, &old_v);
    journal.version(g, &new_v);
    if let Some((at, _, version)) = g.versions.shift_remove_full(&old_v) {
        g.versions.shift_insert(at, new_v.clone(), version);
    }
    g.bump_version(new_v, now, session);
    rewire_edges_in(g, journal, (old, new), session, now)
        .iter()
        .map(|r| r.ends)
        .sum()
}

/// Re-key every edge of `g` naming `old` so that it names `new`, journalled: the old
/// edge's version entry goes, the new one is bumped; an edge that lands on an
/// existing one merges into it (the existing one is kept, with the union of their
/// notes).
pub(super) fn rewire_edges_in(
    g: &mut Graph,
    journal: &mut Journal,
    (old, new): (&str, &str),
    session: Option<&str>,
    now: f64,
) -> Vec<Rewired> {
    let keys: Vec<EdgeKey> = g.edges.keys().filter(|k| names(k, old)).cloned().collect();
    let mut done = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(new_key) = renamed_key(&key, (old, new)) else {
            continue;
        };
        let ends = usize::from(key.from() == old) + usize::from(key.to() == old);
        journal.edge(g, &key);
        journal.edge(g, &new_key);
        let (old_v, new_v) = (edge_version_key(&key), edge_version_key(&new_key));
        journal.version(g, &old_v);
        journal.version(g, &new_v);
        let Some((at, _, edge)) = g.edges.shift_remove_full(&key) else {
            continue;
        };
        let mut obj = edge.as_object().clone();
        obj.insert("from".into(), Value::String(new_key.from().to_string()));
        obj.insert("to".into(), Value::String(new_key.to().to_string()));
        let notes = edge.notes();
        match g.edges.get_mut(&new_key) {
            Some(existing) => {
                let mut union = existing.notes();
                for note in notes {
                    if !union.contains(&note) {
                        union.push(note);
                    }
                }
                if !union.is_empty() {
                    existing.set_notes(union);
                }
            }
            None => {
                if let Some(moved) = Edge::from_object(obj) {
                    g.edges.shift_insert(at, new_key.clone(), moved);
                }
            }
        }
        g.versions.shift_remove(&old_v);
        g.bump_version(new_v, now, session);
        done.push(Rewired {
            from: key,
            to: new_key,
            ends,
        });
    }
    done
}
