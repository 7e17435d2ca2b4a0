//! Finding, loading, saving and unloading graphs, and their maintenance.

use super::sessions::known_session;
use super::*;
use crate::persist::sibling_with_extension;

impl Store {
    /// The project graph of an already resolved root, loading it on first use.
    pub fn project_slot(&self, root: &str, now: f64) -> Result<Arc<GraphSlot>, StoreError> {
        // The read guard must be gone before loading: loading reads the map again, and
        // a second read while a writer waits deadlocks (std's RwLock queues readers
        // behind a waiting writer). A guard in an `if let` scrutinee lives to the end
        // of the block, so the lookup is its own statement.
        let known = self
            .projects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(root)
            .cloned();
        if let Some(slot) = known {
            slot.last_used.store(now.to_bits(), Ordering::Relaxed);
            self.ensure_loaded(&slot, now)?;
            return Ok(slot);
        }
        let slot = {
            let mut projects = self.projects.write().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = projects.get(root) {
                slot.clone()
            } else {
                let claimed = |slug: &str| {
                    projects
                        .values()
                        .find(|s| s.slug.as_deref() == Some(slug))
                        .and_then(|s| s.project_root().map(str::to_string))
                };
                let slug = self.layout.slug_for(root, &self.allowed_roots, &claimed)?;
                let slot = Arc::new(GraphSlot {
                    namespace: Namespace::Project(root.to_string()),
                    level: Level::Project,
                    path: self.layout.project_graph(&slug),
                    slug: Some(slug),
                    state: Mutex::new(GraphState::default()),
                    last_used: AtomicU64::new(now.to_bits()),
                });
                projects.insert(root.to_string(), slot.clone());
                slot
            }
        };
        self.ensure_loaded(&slot, now)?;
        if self.loaded_graph_count() > MAX_LOADED_PROJECTS + 1 {
            self.unload_projects(now, MAX_LOADED_PROJECTS, f64::INFINITY);
        }
        Ok(slot)
    }

    /// Save and drop project graphs from memory: the least recently used beyond
    /// `keep_at_most`, and any unused for `idle_secs`. A graph some caller still holds,
    /// or whose save fails, stays. Memory then follows the projects in use, not every
    /// project ever named; an unloaded graph loads again on its next use.
    pub(super) fn unload_projects(&self, now: f64, keep_at_most: usize, idle_secs: f64) {
        let mut slots = self.loaded_projects();
        slots.sort_by(|a, b| last_used(a).total_cmp(&last_used(b)));
        let excess = slots.len().saturating_sub(keep_at_most);
        let victims: Vec<Arc<GraphSlot>> = slots
            .into_iter()
            .enumerate()
            .filter(|(i, slot)| *i < excess || now - last_used(slot) > idle_secs)
            .map(|(_, slot)| slot)
            .collect();
        for slot in victims {
            {
                let mut state = slot.lock();
                if state.dirty {
                    self.save_maintenance(&slot, &mut state);
                }
            }
            let Some(root) = slot.project_root() else {
                continue;
            };
            let mut projects = self.projects.write().unwrap_or_else(|e| e.into_inner());
            // Held only by the registry and this loop: nobody can be using it, and
            // nobody can fetch it while the registry is write-locked.
            let unused = Arc::strong_count(&slot) == 2
                && projects.get(root).is_some_and(|s| Arc::ptr_eq(s, &slot));
            let ids = match slot.state.try_lock() {
                Ok(state) if unused && !state.dirty => {
                    Some(state.graph.nodes.keys().cloned().collect::<Vec<_>>())
                }
                _ => None,
            };
            if let Some(ids) = ids {
                self.unloaded_ids
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(root.to_string(), ids);
                projects.shift_remove(root);
                log::debug!("unloaded idle project graph {}", limits::for_log(root));
            }
        }
    }

    /// The project graph of an already resolved root if it is in memory.
    pub fn loaded_project(&self, root: &str) -> Option<Arc<GraphSlot>> {
        let slot = self
            .projects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(root)
            .cloned()?;
        let loaded = slot.lock().loaded;
        loaded.then_some(slot)
    }

    /// Resolve a client-supplied project path (absolute, realpath, inside home or a
    /// `KG_PROJECT_ROOTS` folder).
    pub fn resolve_root(&self, path: &str) -> Result<String, StoreError> {
        Ok(resolve_project_root(path, &self.allowed_roots)?)
    }

    /// Node ids of every loaded graph except `except`, for the load-time edge cleanup.
    pub(super) fn foreign_node_ids(&self, except: &GraphSlot) -> HashSet<String> {
        let mut ids = HashSet::new();
        let mut slots = vec![self.user.clone()];
        slots.extend(self.loaded_projects());
        for slot in slots {
            if std::ptr::eq(slot.as_ref(), except) {
                continue;
            }
            let state = slot.lock();
            if state.loaded {
                ids.extend(state.graph.nodes.keys().cloned());
            }
        }
        let unloaded = self.unloaded_ids.lock().unwrap_or_else(|e| e.into_inner());
        for (root, nodes) in unloaded.iter() {
            if except.project_root() != Some(root.as_str()) {
                ids.extend(nodes.iter().cloned());
            }
        }
        ids
    }

    pub(super) fn ensure_loaded(&self, slot: &GraphSlot, now: f64) -> Result<(), StoreError> {
        if slot.lock().loaded {
            return Ok(());
        }
        // Collected before taking this slot's lock, keeping the lock order.
        let foreign = self.foreign_node_ids(slot);
        let mut state = slot.lock();
        if state.loaded {
            return Ok(());
        }
        self.load_into(slot, &mut state, &foreign, now)
    }

    pub(super) fn load_into(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        foreign: &HashSet<String>,
        now: f64,
    ) -> Result<(), StoreError> {
        remove_stale_temps(&slot.path);
        if let Some(slug) = &slot.slug {
            remove_stale_temps(&self.layout.tool_events(slug));
        }
        let loaded = load_graph_file(&slot.path, now).map_err(|e| StoreError::Load {
            path: slot.path.clone(),
            cause: e.to_string(),
        })?;
        let quarantined = matches!(loaded, Loaded::Quarantined { .. });
        let file = match loaded {
            Loaded::Missing => GraphFile::default(),
            Loaded::Fine(file) => file,
            Loaded::Quarantined {
                moved_to,
                cause,
                recovered,
            } => {
                state.damaged = Some(DamagedFile {
                    path: slot.path.clone(),
                    moved_to: moved_to.clone(),
                    cause: cause.clone(),
                    backup: recovered
                        .is_some()
                        .then(|| sibling_with_extension(&slot.path, "prev")),
                    at: now,
                });
                self.record(
                    slot.level,
                    slot.project_root(),
                    None,
                    ChangeKind::Quarantined {
                        path: slot.path.clone(),
                        moved_to,
                        cause,
                        recovered_from_prev: recovered.is_some(),
                    },
                    now,
                );
                recovered.unwrap_or_default()
            }
        };
        if let Some(root) = slot.project_root() {
            self.unloaded_ids
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .shift_remove(root);
        }
        state.graph = Tracked::new(file.graph);
        state.stale = None;
        state.recorded_root = file.project_path;
        // Undo steps describe the graph they were taken on, not this one.
        state.history.clear();
        state.stamp = FileStamp::of(&slot.path);
        state.dirty = false;
        state.loaded = true;
        state.held_back = super::screen::held_back_count(&slot.path);
        state.clock_at_load = (now, crate::compact::newest_stamp(&state.graph, now));
        state.deletes_pause_logged = false;
        remove_dangling_edges(&mut state.graph, foreign, &slot.namespace);
        // Healed gists, and a graph whose damaged file was moved aside, go to disk at
        // once: a server stopped before its next write would otherwise come back to a
        // missing file, and the backup is read only for a damaged one.
        let healed = state.graph.heal_gists();
        if (healed || quarantined)
            && let Err(e) = self.save_locked(slot, state)
        {
            log::warn!(
                "the graph of {} stays in memory until its next save: {e}",
                slot.path.display()
            );
            state.dirty = true;
        }
        self.refresh_activity(slot, state);
        self.note_debt(slot, state, now);
        Ok(())
    }

    pub(super) fn refresh_activity(&self, slot: &GraphSlot, state: &mut GraphState) {
        if let Some(slug) = &slot.slug {
            state.activity = ToolEvents::load(&self.layout.tool_events(slug))
                .last_seen()
                .collect();
        }
    }

    /// Tell the change log when a graph's debt verdict changes, so a tray or a view can
    /// react without polling. A graph first seen at LOW is not news.
    pub(super) fn note_debt(&self, slot: &GraphSlot, state: &mut GraphState, now: f64) {
        let debt = self.debt_of(slot, state, now);
        if state.debt == Some(debt.level) {
            return;
        }
        let from = state.debt.replace(debt.level);
        if from.is_none() && debt.level == DebtLevel::Low {
            return;
        }
        self.record(
            slot.level,
            slot.project_root(),
            None,
            ChangeKind::DebtChanged {
                from: from.map(|l| l.as_str().to_string()),
                to: debt.level.as_str().to_string(),
                score: debt.score,
            },
            now,
        );
    }

    /// Write a graph to disk now.
    pub(super) fn save_locked(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
    ) -> Result<(), PersistError> {
        self.save_within(slot, state, false)
    }

    /// [`Store::save_locked`]; with `bounded`, a graph that would grow past
    /// [`limits::MAX_GRAPH_BYTES`] is not written (a graph already that large may still
    /// shrink, and maintenance saves are never refused).
    pub(super) fn save_within(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        bounded: bool,
    ) -> Result<(), PersistError> {
        let before = state.stamp.map_or(0, |stamp| stamp.file_len());
        let text = state.writer.write(
            &state.graph,
            slot.level,
            slot.recorded_root(&state.recorded_root, self.config.synced),
        );
        if bounded && text.len() > limits::MAX_GRAPH_BYTES && text.len() as u64 > before {
            return Err(PersistError::TooLarge {
                path: slot.path.clone(),
                bytes: text.len(),
                limit: limits::MAX_GRAPH_BYTES,
            });
        }
        let validate = |bytes: &[u8]| parse_graph(bytes).is_ok();
        let first_file = state.stamp.is_none();
        state.stamp = atomic_write(
            &slot.path,
            text.as_bytes(),
            WriteMode::GRAPH,
            state.stamp,
            Some(&validate),
        )?;
        state.dirty = false;
        if first_file && slot.level == Level::Project {
            // Folders inside this project may now belong to it.
            self.recent_choices.forget();
        }
        Ok(())
    }

    /// Save a mutation or undo it: memory never holds what the disk refused. Hands the
    /// journal back on success, for the undo history.
    pub(super) fn commit(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        journal: Journal,
        now: f64,
    ) -> Result<Journal, StoreError> {
        match self.save_within(slot, state, true) {
            Ok(()) => {
                self.note_debt(slot, state, now);
                Ok(journal)
            }
            Err(e @ PersistError::TooLarge { .. }) => {
                journal.rollback(&mut state.graph);
                Err(StoreError::Invalid(format!("Refused: {e}.")))
            }
            Err(e) => {
                journal.rollback(&mut state.graph);
                log::error!("{e}; the change was undone");
                Err(StoreError::Save(e))
            }
        }
    }

    /// Run the passes of core.md §6.1 on one graph: archive (with resurrection), refill
    /// only when nothing was archived, then the orphan pass. Returns what moved; the
    /// graph is marked dirty when anything did, for the caller to save.
    pub(super) fn maybe_compact(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        now: f64,
        journal: Option<&mut Journal>,
    ) -> TierMoves {
        let moves = crate::compact::compact_graph_with(
            &mut state.graph,
            &mut state.stall_logged,
            &slot.namespace.key(),
            self.config.level_rules(),
            now,
            journal,
        );
        if !moves.is_empty() {
            state.dirty = true;
        }
        moves
    }

    /// Write a graph to disk now, whether or not it changed.
    pub fn save(&self, slot: &GraphSlot) -> Result<(), StoreError> {
        let mut state = slot.lock();
        self.save_locked(slot, &mut state)?;
        Ok(())
    }

    /// Save a graph that maintenance changed; a failure keeps it dirty for the next tick.
    pub(super) fn save_maintenance(&self, slot: &GraphSlot, state: &mut GraphState) {
        if let Err(e) = self.save_locked(slot, state) {
            log::error!("{e}; maintenance results stay in memory until the next save");
            state.dirty = true;
        }
    }

    /// Which graph a target addresses (loading a project graph on first use).
    pub fn resolve_target(
        &self,
        target: Target<'_>,
        now: f64,
    ) -> Result<Arc<GraphSlot>, StoreError> {
        match target.level {
            Level::User => Ok(self.user.clone()),
            Level::Project => match target.project_path {
                Some(path) => self.existing_project_slot(path, now),
                None => {
                    let root = self.session_project(target.session, now)?;
                    self.project_slot(&root, now)
                }
            },
        }
    }

    /// The project graph of a path a client names, loaded on demand — but only for a
    /// folder that exists or a project storage holds a graph of: a made-up path must
    /// not load (and keep) a graph.
    pub fn existing_project_slot(
        &self,
        path: &str,
        now: f64,
    ) -> Result<Arc<GraphSlot>, StoreError> {
        let root = self.resolve_root(path)?;
        let known = self
            .projects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&root);
        if !known && !Path::new(&root).is_dir() && self.layout.stored_slug(&root).is_none() {
            return Err(PathError::NoSuchProject(limits::for_log(&root).into_owned()).into());
        }
        self.project_slot(&root, now)
    }

    /// The project root of a session (auto-recovering lookup, refreshes activity).
    pub fn session_project(&self, session: Option<&str>, now: f64) -> Result<String, StoreError> {
        // An empty id is no session (clients send "" for "none").
        let sid = session
            .filter(|s| !s.is_empty())
            .ok_or(StoreError::SessionRequired)?;
        let mut sessions = self.lock_sessions();
        known_session(&mut sessions, sid, now)?
            .project_path
            .clone()
            .ok_or_else(|| StoreError::SessionWithoutProject(sid.to_string()))
    }

    /// The session's project graph when it has one; `None` for path-less sessions.
    pub fn session_project_slot(
        &self,
        session: Option<&str>,
        now: f64,
    ) -> Result<Option<Arc<GraphSlot>>, StoreError> {
        match self.session_project(session, now) {
            Ok(root) => self.project_slot(&root, now).map(Some),
            Err(StoreError::SessionRequired | StoreError::SessionWithoutProject(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Graphs to search for an id: user first, then the session's project graph.
    pub(super) fn auto_slots(
        &self,
        session: Option<&str>,
        now: f64,
    ) -> Result<Vec<Arc<GraphSlot>>, StoreError> {
        let mut slots = vec![self.user.clone()];
        if let Some(p) = self.session_project_slot(session, now)? {
            slots.push(p);
        }
        Ok(slots)
    }

    // ----- mutations -------------------------------------------------------------------

    /// Re-read a graph from disk, dropping unsaved state. Dirty state is saved first so
    /// read stamps and maintenance results are not lost.
    pub fn reload(&self, slot: &GraphSlot, now: f64) -> Result<(), StoreError> {
        {
            let mut state = slot.lock();
            if state.dirty {
                self.save_maintenance(slot, &mut state);
            }
        }
        let foreign = self.foreign_node_ids(slot);
        let mut state = slot.lock();
        state.loaded = false;
        self.load_into(slot, &mut state, &foreign, now)
    }

    // ----- background work -------------------------------------------------------------

    pub(super) fn record_moves(&self, slot: &GraphSlot, mut moves: TierMoves, why: &str, now: f64) {
        if !moves.is_empty() {
            moves.reason = why.to_string();
            self.record(
                slot.level,
                slot.project_root(),
                None,
                ChangeKind::TiersMoved(moves),
                now,
            );
        }
    }

    /// The periodic tick (core.md §2.8): maintenance and pruning of every loaded graph,
    /// flushing dirty graphs, expiring sessions and saving the registry.
    pub fn tick(&self, now: f64) {
        let mut slots = vec![self.user.clone()];
        slots.extend(self.loaded_projects());
        for slot in slots {
            let mut state = slot.lock();
            if !state.loaded {
                continue;
            }
            let mut moves = self.maybe_compact(&slot, &mut state, now, None);
            let pruned = if self.deletes_allowed(&slot, &mut state, now) {
                crate::compact::prune_orphans(&mut state.graph, self.config.orphan_grace_days, now)
            } else {
                Vec::new()
            };
            if !pruned.is_empty() {
                state.dirty = true;
                moves.deleted = pruned;
            }
            if !moves.is_empty() {
                state.dirty = true;
            }
            self.record_moves(&slot, moves, "maintenance tick", now);
            if state.dirty {
                self.save_maintenance(&slot, &mut state);
            }
            self.refresh_activity(&slot, &mut state);
            self.note_debt(&slot, &mut state, now);
        }
        self.unload_projects(now, MAX_LOADED_PROJECTS, IDLE_UNLOAD_SECS);
        let expired = self.lock_sessions().expire(now);
        if expired > 0 {
            log::info!("expired {expired} idle session(s)");
        }
        self.save_sessions();
    }
}

pub(super) fn last_used(slot: &GraphSlot) -> f64 {
    f64::from_bits(slot.last_used.load(Ordering::Relaxed))
}

/// Load-time cleanup (core.md §2.7a): drop edges whose endpoint is no node here, no
/// artifact path and no node of another loaded graph. Not saved by itself.
pub(super) fn remove_dangling_edges(graph: &mut Graph, foreign: &HashSet<String>, ns: &Namespace) {
    let nodes = &graph.nodes;
    let known =
        |x: &str| nodes.contains_key(x) || crate::model::is_artifact_ref(x) || foreign.contains(x);
    let before = graph.edges.len();
    let mut dropped = Vec::new();
    graph.edges.retain(|k, _| {
        let keep = known(k.from()) && known(k.to());
        if !keep {
            dropped.push(k.to_string());
        }
        keep
    });
    for key in &dropped {
        log::info!("{}: dropped dangling edge {key}", ns.key());
    }
    debug_assert_eq!(before - graph.edges.len(), dropped.len());
}
