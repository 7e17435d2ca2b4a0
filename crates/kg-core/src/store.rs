//! The one `Store`: every read and mutation of the memory goes through here.
//!
//! Each graph sits behind its own lock, so a read of one graph never waits on another
//! graph's disk write. Lock order, to rule out deadlocks: the graph registry (only
//! ever held briefly, never while waiting on a graph), then the user graph, then
//! project graphs by file path; the session registry and the change log are leaves —
//! nothing else is locked while holding them (the sessions-file lock is taken only
//! before the session registry, to save it). Only [`Store::with_graphs`] holds more
//! than one graph lock, and it is what keeps that order.
//!
//! Mutations are write-through: the graph file is saved before the call returns, and a
//! save that fails undoes the mutation in memory, so what a caller was told is always
//! what is on disk.

use crate::change::{Change, ChangeKind, ChangeLog, TierMoves};
use crate::debt::{DebtLevel, compute_debt};
use crate::graph::Graph;
use crate::heal::heal;
use crate::journal::Journal;
use crate::limits;
use crate::model::{
    EdgeKey, IdentKind, Level, Node, Object, Tier, Version, edge_version_key, field, float_value,
    node_version_key, validate_ident,
};
use crate::namespace::{Layout, Namespace, PathError, resolve_path, resolve_project_root};
use crate::persist::{
    FileStamp, GraphFile, GraphWriter, Loaded, PersistError, WriteMode, atomic_write,
    load_graph_file, parse_graph, read_json_object, remove_stale_temps, write_json_object,
};
pub use crate::results::{Likes, NodeRead, PutNode, SyncItem, SyncReport};
use crate::search::SearchGraph;
use crate::session::{LIKES_PER_SESSION, SessionRecord, SessionRegistry};
use crate::tool_events::ToolEvents;
use indexmap::IndexMap;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// Settings the store needs; the binary reads them from the environment.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Where the graphs live (`KG_STORAGE_ROOT`, default `~/.knowledge-graph`).
    pub storage_root: PathBuf,
    /// The home folder project paths must lie in.
    pub home: PathBuf,
    /// Days a new node is protected from archiving (`KG_GRACE_PERIOD_DAYS`).
    pub grace_days: f64,
    /// Days an orphaned node is kept before deletion (`KG_ORPHAN_GRACE_DAYS`).
    pub orphan_grace_days: f64,
}

impl StoreConfig {
    pub fn new(storage_root: impl Into<PathBuf>, home: impl Into<PathBuf>) -> StoreConfig {
        StoreConfig {
            storage_root: storage_root.into(),
            home: home.into(),
            grace_days: 5.0,
            orphan_grace_days: 365.0,
        }
    }
}

/// Everything that can go wrong in a store call. The `Display` text is what clients
/// see, so it says what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A rejected identifier or level (the message says what is allowed).
    #[error("{0}")]
    Invalid(String),
    #[error("Node '{id}' not found in {level} graph")]
    NodeNotFound { id: String, level: String },
    #[error(
        "Unknown session: {0}. It has expired (after 24 hours idle) or was never started here; call kg_read(cwd=<your project folder>) to start a new one."
    )]
    UnknownSession(String),
    /// A session id that cannot be one of ours (shown cut to a loggable length).
    #[error(
        "session_id '{0}' is not a KG session id (those are 8 hex digits, such as 3f9a0c1e); call kg_read(cwd=<your project folder>) to get one."
    )]
    MalformedSession(String),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("session_id required for project-level operations")]
    SessionRequired,
    #[error("Session {0} has no project_path registered")]
    SessionWithoutProject(String),
    #[error(
        "Cannot load graph from {path}: {cause}. Inspect the file manually or restore from backup."
    )]
    Load { path: PathBuf, cause: String },
    #[error("could not save the change, nothing was stored: {0}")]
    Save(#[from] PersistError),
}

impl StoreError {
    /// Errors the reference reports as `Error: …` (the rest are `Internal error: …`).
    pub fn is_domain(&self) -> bool {
        matches!(
            self,
            StoreError::Invalid(_)
                | StoreError::NodeNotFound { .. }
                | StoreError::UnknownSession(_)
                | StoreError::MalformedSession(_)
        )
    }

    /// Errors caused by the request rather than by the server (HTTP 4xx).
    pub fn is_client_error(&self) -> bool {
        !matches!(self, StoreError::Load { .. } | StoreError::Save(_))
    }
}

/// A graph in memory with what the store knows about its file.
#[derive(Debug, Default)]
pub struct GraphState {
    pub graph: Graph,
    /// Changed in memory but not yet saved (read stamps, maintenance results).
    pub dirty: bool,
    stamp: Option<FileStamp>,
    /// Whether a compaction stall (every active node in grace) was already logged.
    pub stall_logged: bool,
    loaded: bool,
    /// The maintenance-debt verdict last reported for this graph.
    pub debt: Option<DebtLevel>,
    /// Tool-event timestamps of the project (debt activity), refreshed each tick.
    activity: Vec<f64>,
    /// Builds the file text, reusing the unchanged parts of the last one.
    writer: GraphWriter,
}

/// One graph and where it lives.
#[derive(Debug)]
pub struct GraphSlot {
    pub namespace: Namespace,
    pub level: Level,
    pub path: PathBuf,
    /// The storage folder name of a project graph.
    pub slug: Option<String>,
    state: Mutex<GraphState>,
    /// When the store last handed this graph out (`f64` bits), for unloading idle
    /// project graphs.
    last_used: AtomicU64,
}

impl GraphSlot {
    pub fn project_root(&self) -> Option<&str> {
        self.namespace.project_root()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, GraphState> {
        // A panic while holding the lock leaves a consistent graph (mutations are
        // journalled), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A listener on the change log (the server's broadcast, the tray's badges).
pub type ChangeListener = Arc<dyn Fn(&Change) + Send + Sync>;

/// How a call names the graph it works on.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub level: Level,
    pub session: Option<&'a str>,
    /// An explicit project root (graph view, REST); wins over the session's.
    pub project_path: Option<&'a str>,
}

impl<'a> Target<'a> {
    /// The graph of `level` as a session sees it (the project it is bound to).
    pub fn session(level: Level, session: &'a str) -> Self {
        Target {
            level,
            session: Some(session),
            project_path: None,
        }
    }
}

/// The memory store.
pub struct Store {
    config: StoreConfig,
    home: PathBuf,
    layout: Layout,
    user: Arc<GraphSlot>,
    /// Project graphs in load order, keyed by resolved root.
    projects: RwLock<IndexMap<String, Arc<GraphSlot>>>,
    sessions: Mutex<SessionRegistry>,
    /// Held while `sessions.json` is snapshotted and written, so writes land in
    /// snapshot order (an older snapshot never overwrites a newer one). Holds the
    /// number of the last save request whose changes are on disk.
    sessions_file: Mutex<u64>,
    /// Save requests of the session registry so far (see `save_sessions`).
    session_save_requests: AtomicU64,
    changes: Mutex<ChangeLog>,
    listeners: RwLock<Vec<ChangeListener>>,
    /// Node ids of project graphs unloaded while idle, by root: a graph loading
    /// later keeps its edges to them as it would to a loaded graph's nodes (a leaf
    /// lock).
    unloaded_ids: Mutex<IndexMap<String, Vec<String>>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("storage_root", &self.config.storage_root)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Open a storage root: load the user graph and the session registry.
    pub fn open(config: StoreConfig, now: f64) -> Result<Store, StoreError> {
        let home = resolve_path(&config.home);
        let layout = Layout {
            root: config.storage_root.clone(),
        };
        // Temp files of saves a killed process never finished (graph files are swept
        // when each graph loads).
        remove_stale_temps(&layout.sessions());
        remove_stale_temps(&layout.aliases());
        let sessions = match read_json_object(&layout.sessions()) {
            Ok(Some(obj)) => SessionRegistry::from_object(obj, now),
            Ok(None) => SessionRegistry::default(),
            Err(e) => {
                log::warn!("cannot read sessions ({e}); starting with none");
                SessionRegistry::default()
            }
        };
        let user = Arc::new(GraphSlot {
            namespace: Namespace::User,
            level: Level::User,
            path: layout.user_graph(),
            slug: None,
            state: Mutex::new(GraphState::default()),
            last_used: AtomicU64::new(now.to_bits()),
        });
        let store = Store {
            config,
            home,
            layout,
            user,
            projects: RwLock::new(IndexMap::new()),
            sessions: Mutex::new(sessions),
            sessions_file: Mutex::new(0),
            session_save_requests: AtomicU64::new(0),
            changes: Mutex::new(ChangeLog::default()),
            listeners: RwLock::new(Vec::new()),
            unloaded_ids: Mutex::new(IndexMap::new()),
        };
        store.ensure_loaded(&store.user, now)?;
        Ok(store)
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The resolved home folder.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Register a listener called for every change, in order, while the change's graph
    /// is still locked (so listeners see changes of one graph in mutation order).
    /// Listeners must not block and must not call back into the store.
    pub fn subscribe(&self, listener: ChangeListener) {
        self.listeners
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(listener);
    }

    fn record(
        &self,
        level: Level,
        project_path: Option<&str>,
        source: Option<&str>,
        kind: ChangeKind,
        now: f64,
    ) {
        let change = self
            .changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .append(Change {
                seq: 0,
                ts: now,
                level,
                project_path: project_path.map(str::to_string),
                source_session: source.map(str::to_string),
                kind,
            });
        for listener in self
            .listeners
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            listener(&change);
        }
    }

    /// The next change-log sequence number.
    pub fn change_head(&self) -> u64 {
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .head()
    }

    /// Changes from `seq` on (for readers that keep their own cursor).
    pub fn changes_since(&self, seq: u64) -> Option<Vec<Change>> {
        let log = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        log.since(seq).map(|it| it.cloned().collect())
    }

    // ----- graph slots ---------------------------------------------------------------

    pub fn user_slot(&self) -> &Arc<GraphSlot> {
        &self.user
    }

    /// Loaded project graphs in load order.
    pub fn loaded_projects(&self) -> Vec<Arc<GraphSlot>> {
        self.projects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Number of graphs in memory, the user graph included.
    pub fn loaded_graph_count(&self) -> usize {
        1 + self
            .projects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

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
                let slug = self.layout.slug_for(root, &claimed)?;
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
    fn unload_projects(&self, now: f64, keep_at_most: usize, idle_secs: f64) {
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

    /// Resolve a client-supplied project path (realpath, inside home).
    pub fn resolve_root(&self, path: &str) -> Result<String, StoreError> {
        Ok(resolve_project_root(path, &self.home)?)
    }

    /// Node ids of every loaded graph except `except`, for the load-time edge cleanup.
    fn foreign_node_ids(&self, except: &GraphSlot) -> HashSet<String> {
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

    fn ensure_loaded(&self, slot: &GraphSlot, now: f64) -> Result<(), StoreError> {
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

    fn load_into(
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
        let file = match loaded {
            Loaded::Missing => GraphFile::default(),
            Loaded::Fine(file) => file,
            Loaded::Quarantined {
                moved_to,
                recovered,
                ..
            } => {
                self.record(
                    slot.level,
                    slot.project_root(),
                    None,
                    ChangeKind::Quarantined {
                        path: slot.path.clone(),
                        moved_to,
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
        state.graph = file.graph;
        state.stamp = FileStamp::of(&slot.path);
        state.dirty = false;
        state.loaded = true;
        remove_dangling_edges(&mut state.graph, foreign, &slot.namespace);
        if heal_gists(&mut state.graph)
            && let Err(e) = self.save_locked(slot, state)
        {
            log::warn!(
                "healed gists of {} stay in memory: {e}",
                slot.path.display()
            );
            state.dirty = true;
        }
        self.refresh_activity(slot, state);
        self.note_debt(slot, state, now);
        Ok(())
    }

    fn refresh_activity(&self, slot: &GraphSlot, state: &mut GraphState) {
        if let Some(slug) = &slot.slug {
            state.activity = ToolEvents::load(&self.layout.tool_events(slug))
                .last_seen()
                .collect();
        }
    }

    /// Tell the change log when a graph's debt verdict changes, so a tray or a view can
    /// react without polling. A graph first seen at LOW is not news.
    fn note_debt(&self, slot: &GraphSlot, state: &mut GraphState, now: f64) {
        let debt = compute_debt(&state.graph, false, state.activity.iter().copied(), now);
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
    fn save_locked(&self, slot: &GraphSlot, state: &mut GraphState) -> Result<(), PersistError> {
        let text = state
            .writer
            .write(&state.graph, slot.level, slot.project_root());
        let validate = |bytes: &[u8]| parse_graph(bytes).is_ok();
        state.stamp = atomic_write(
            &slot.path,
            text.as_bytes(),
            WriteMode::GRAPH,
            state.stamp,
            Some(&validate),
        )?;
        state.dirty = false;
        Ok(())
    }

    /// Save a mutation or undo it: memory never holds what the disk refused.
    fn commit(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        journal: Journal,
        now: f64,
    ) -> Result<(), StoreError> {
        match self.save_locked(slot, state) {
            Ok(()) => {
                self.note_debt(slot, state, now);
                Ok(())
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
    fn maybe_compact(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        now: f64,
        journal: Option<&mut Journal>,
    ) -> TierMoves {
        let moves = crate::compact::compact_graph(
            &mut state.graph,
            &mut state.stall_logged,
            &slot.namespace.key(),
            self.config.grace_days,
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
    pub(crate) fn save_maintenance(&self, slot: &GraphSlot, state: &mut GraphState) {
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
    fn auto_slots(
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

    /// Create or update a node (core.md §4.2).
    pub fn put_node(
        &self,
        target: Target<'_>,
        id: &str,
        gist: &str,
        notes: Option<Vec<String>>,
        touches: Option<Vec<String>>,
        now: f64,
    ) -> Result<PutNode, StoreError> {
        validate_ident(IdentKind::NodeId, id).map_err(StoreError::Invalid)?;
        let healed = heal(gist, notes.as_deref(), touches.as_deref());
        let new_gist = limits::gist(&healed.gist).map_err(StoreError::Invalid)?;
        let notes = healed.notes.map(limits::notes).transpose();
        let touches = healed.touches.map(limits::touches).transpose();
        let (notes, touches) = (
            notes.map_err(StoreError::Invalid)?,
            touches.map_err(StoreError::Invalid)?,
        );
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        let mut journal = Journal::default();
        let g = &mut state.graph;
        journal.node(g, id);
        let created = !g.nodes.contains_key(id);
        let node = g.node_entry(id);
        node.set(field::GIST, Value::String(new_gist));
        if let Some(notes) = notes {
            node.set(field::NOTES, string_array(notes));
        }
        if let Some(touches) = touches {
            node.set(field::TOUCHES, string_array(touches));
        }
        if created {
            node.set(field::CREATED_TS, float_value(now));
        }
        node.remove(field::ARCHIVED);
        node.remove(field::ORPHANED_TS);
        let snapshot = node.to_object();
        let vkey = node_version_key(id);
        journal.version(g, &vkey);
        g.bump_version(vkey, now, target.session);
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
        Ok(PutNode {
            level: slot.level,
            created,
            submitted_gist_chars: gist.chars().count(),
            node: snapshot,
        })
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

    /// Delete a node and its edges in that graph. `level = None` looks in the user
    /// graph first, then the session's project graph.
    pub fn delete_node(
        &self,
        level: Option<Target<'_>>,
        session: Option<&str>,
        id: &str,
        now: f64,
    ) -> Result<(Level, usize), StoreError> {
        let (slots, level_name) = match level {
            Some(t) => (vec![self.resolve_target(t, now)?], t.level.as_str()),
            None => (self.auto_slots(session, now)?, "both"),
        };
        for slot in slots {
            let mut state = slot.lock();
            if !state.graph.nodes.contains_key(id) {
                continue;
            }
            let mut journal = Journal::default();
            let g = &mut state.graph;
            let touching: Vec<EdgeKey> = g
                .edges
                .keys()
                .filter(|k| k.from() == id || k.to() == id)
                .cloned()
                .collect();
            journal.node(g, id);
            for key in &touching {
                journal.edge(g, key);
            }
            let removed = g.remove_node(id).map_or(0, |(_, n)| n);
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
            None => (self.auto_slots(session, now)?, "both"),
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

    fn read_node_locked(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        session: Option<&str>,
        id: &str,
        now: f64,
    ) -> Result<NodeRead, StoreError> {
        let mut journal = Journal::default();
        let g = &mut state.graph;
        journal.node(g, id);
        let was_archived = g.nodes.get(id).is_some_and(|n| n.tier() != Tier::Active);
        if let Some(node) = g.node_mut(id) {
            node.set(field::LAST_READ_TS, float_value(now));
        }
        let mut rescued = Vec::new();
        if was_archived {
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
        Ok(NodeRead {
            id: id.to_string(),
            level: slot.level,
            node,
            was_archived,
            rescued,
            edges,
        })
    }

    /// Move a node between tiers by hand (graph view): `Active` promotes like a read
    /// (chain rescue included), `Archived` archives it. Returns the node after the move.
    pub fn set_tier(
        &self,
        target: Target<'_>,
        id: &str,
        tier: Tier,
        now: f64,
    ) -> Result<NodeRead, StoreError> {
        let slot = self.resolve_target(target, now)?;
        let mut state = slot.lock();
        let current =
            state
                .graph
                .nodes
                .get(id)
                .map(Node::tier)
                .ok_or_else(|| StoreError::NodeNotFound {
                    id: id.to_string(),
                    level: slot.level.as_str().to_string(),
                })?;
        match tier {
            Tier::Active => self.read_node_locked(&slot, &mut state, target.session, id, now),
            Tier::Archived | Tier::Orphaned => {
                if current == Tier::Active {
                    let mut journal = Journal::default();
                    journal.node(&state.graph, id);
                    if let Some(n) = state.graph.node_mut(id) {
                        n.set(field::ARCHIVED, Value::Bool(true));
                    }
                    self.commit(&slot, &mut state, journal, now)?;
                    self.record(
                        slot.level,
                        slot.project_root(),
                        target.session,
                        ChangeKind::TiersMoved(TierMoves {
                            archived: vec![id.to_string()],
                            reason: "archived by hand".into(),
                            ..TierMoves::default()
                        }),
                        now,
                    );
                }
                let g = &state.graph;
                Ok(NodeRead {
                    id: id.to_string(),
                    level: slot.level,
                    node: g.nodes.get(id).map(Node::to_object).unwrap_or_default(),
                    was_archived: false,
                    rescued: Vec::new(),
                    edges: g
                        .edges
                        .values()
                        .filter(|e| e.touches(id))
                        .map(|e| e.as_object().clone())
                        .collect(),
                })
            }
        }
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
                let mut journal = Journal::default();
                journal.node(&state.graph, id);
                if let Some(node) = state.graph.node_mut(id) {
                    node.set(field::USEFUL_TS, Value::Array(stamps));
                }
                self.commit(&slot, &mut state, journal, now)?;
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
    fn progress_slot(
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

    pub(crate) fn lock_sessions(&self) -> MutexGuard<'_, SessionRegistry> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on the session registry (a leaf lock: `f` must not call the store).
    pub fn with_sessions<R>(&self, f: impl FnOnce(&mut SessionRegistry) -> R) -> R {
        f(&mut self.lock_sessions())
    }

    /// A copy of one session record, without creating it.
    pub fn session(&self, sid: &str) -> Option<SessionRecord> {
        self.lock_sessions().lookup(sid).cloned()
    }

    pub fn session_count(&self) -> usize {
        self.lock_sessions().len()
    }

    /// Register a session for an optional project path; saved at once.
    pub fn register_session(
        &self,
        project_path: Option<&str>,
        claude_sid: Option<&str>,
        now: f64,
    ) -> Result<String, StoreError> {
        let root = project_path.map(|p| self.resolve_root(p)).transpose()?;
        let head = self.change_head();
        let sid = self.lock_sessions().register(root, claude_sid, now, head);
        self.save_sessions();
        Ok(sid)
    }

    /// An id in the shape of a session id that no session holds, for a connection
    /// that needs to tag its writes without being a session (the graph view's
    /// WebSocket). Nothing is registered.
    pub fn connection_id(&self) -> String {
        self.lock_sessions().mint_id()
    }

    /// Count one tool operation for a session; an id that is malformed or unknown is
    /// refused, with a message saying how to get a session.
    pub fn count_op(&self, sid: &str, now: f64) -> Result<(), StoreError> {
        if sid.is_empty() {
            return Ok(()); // clients send "" for "no session"
        }
        known_session(&mut self.lock_sessions(), sid, now)?.op_count += 1;
        Ok(())
    }

    /// Refresh a session's activity and return a copy of its record, without
    /// creating one (session stats).
    pub fn touch_session(&self, sid: &str, now: f64) -> Result<SessionRecord, StoreError> {
        Ok(known_session(&mut self.lock_sessions(), sid, now)?.clone())
    }

    /// Bind a Claude session id to a KG session and save the registry.
    pub fn bind_claude(&self, sid: &str, claude_sid: &str) {
        self.lock_sessions().bind_claude(sid, claude_sid);
        self.save_sessions();
    }

    /// Mark node ids as shown to a session (no-op for an unknown session).
    pub fn mark_seen<'a>(&self, sid: &str, ids: impl IntoIterator<Item = &'a str>) {
        if let Some(r) = self.lock_sessions().lookup_mut(sid) {
            r.mark_seen(ids);
        }
    }

    /// The newest session for a client path; `None` when none or outside home.
    pub fn find_by_project_path(&self, path: &str) -> Option<String> {
        let root = self.resolve_root(path).ok()?;
        self.lock_sessions()
            .find_by_project_path(&root)
            .map(str::to_string)
    }

    /// Persist the session registry.
    ///
    /// Saves are committed in groups: a caller whose change an already finished
    /// snapshot covers returns at once, so a flood of registrations costs a few
    /// file writes, not one fsync'd rewrite of the whole registry each.
    pub fn save_sessions(&self) {
        // Taken after the caller's change, so any snapshot begun after this number was
        // handed out contains that change.
        let request = self.session_save_requests.fetch_add(1, Ordering::SeqCst) + 1;
        // Two saves that overlap must not land out of order: a registration
        // acknowledged after the later snapshot would vanish from disk.
        let mut saved = self.sessions_file.lock().unwrap_or_else(|e| e.into_inner());
        if *saved >= request {
            return;
        }
        let covers = self.session_save_requests.load(Ordering::SeqCst);
        let obj = self.lock_sessions().to_object();
        match write_json_object(&self.layout.sessions(), &obj, 2, WriteMode::DURABLE) {
            Ok(()) => *saved = covers,
            Err(e) => log::error!("cannot save sessions: {e}"),
        }
    }

    /// What other sessions changed since this session last synced (core.md §3.7).
    ///
    /// A session registered in this process reads the change log from its cursor, so
    /// every change by someone else is reported however close in time to its own
    /// writes; a session from before a restart falls back to the version timestamps.
    pub fn sync(&self, sid: &str, now: f64) -> Result<SyncReport, StoreError> {
        let head = self.change_head();
        let (cursor, watermark, project_root) = {
            let mut sessions = self.lock_sessions();
            let record = known_session(&mut sessions, sid, now)?;
            (
                record.sync_seq,
                record.sync_watermark(),
                record.project_path.clone(),
            )
        };
        let from_log: Option<HashSet<(Option<String>, String)>> = cursor.and_then(|c| {
            let log = self.changes.lock().unwrap_or_else(|e| e.into_inner());
            log.since(c).map(|it| {
                it.filter(|ch| ch.source_session.as_deref() != Some(sid))
                    .filter_map(|ch| ch.version_key().map(|k| (ch.project_path.clone(), k)))
                    .collect()
            })
        });
        let select = |slot: &GraphSlot| -> Vec<SyncItem> {
            let state = slot.lock();
            let g = &state.graph;
            let wanted = |key: &str, v: &Version| -> bool {
                if v.session() == Some(sid) {
                    return false;
                }
                match &from_log {
                    Some(set) => {
                        set.contains(&(slot.project_root().map(str::to_string), key.to_string()))
                    }
                    None => v.ts() > watermark,
                }
            };
            let mut nodes = Vec::new();
            let mut edges = Vec::new();
            let edge_text: IndexMap<String, &EdgeKey> =
                g.edges.keys().map(|k| (edge_version_key(k), k)).collect();
            for (key, v) in &g.versions {
                if !wanted(key, v) {
                    continue;
                }
                if let Some(id) = key.strip_prefix("node:") {
                    if let Some(n) = g.nodes.get(id) {
                        nodes.push(SyncItem::Node {
                            id: id.to_string(),
                            archived: n.is_archived_flag(),
                            gist: n.gist().chars().take(100).collect(),
                        });
                    }
                } else if let Some(k) = edge_text.get(key) {
                    edges.push(SyncItem::Edge((*k).clone()));
                }
            }
            nodes.extend(edges);
            nodes
        };
        let mut report = SyncReport {
            user: select(&self.user),
            project: Vec::new(),
        };
        // Loaded again if it was unloaded while idle; a project whose folder and
        // graph are both gone has nothing to report.
        if let Some(root) = project_root
            && let Ok(slot) = self.existing_project_slot(&root, now)
        {
            report.project = select(&slot);
        }
        if let Some(r) = self.lock_sessions().lookup_mut(sid) {
            r.last_synced_ts = Some(now);
            r.sync_seq = Some(head);
        }
        Ok(report)
    }

    // ----- snapshots -------------------------------------------------------------------

    /// Raw node and edge objects of a graph, internal fields included.
    pub fn snapshot(&self, slot: &GraphSlot) -> (Vec<Object>, Vec<Object>) {
        let state = slot.lock();
        (
            state.graph.nodes.values().map(Node::to_object).collect(),
            state
                .graph
                .edges
                .values()
                .map(|e| e.as_object().clone())
                .collect(),
        )
    }

    /// Whether a graph holds changes not yet saved (read stamps, maintenance results).
    pub fn is_dirty(&self, slot: &GraphSlot) -> bool {
        slot.lock().dirty
    }

    /// Run `f` with a graph locked (read access for renderers and search).
    pub fn with_graph<R>(&self, slot: &GraphSlot, f: impl FnOnce(&Graph) -> R) -> R {
        f(&slot.lock().graph)
    }

    /// Run `f` with several graphs locked at once — the only place that holds more
    /// than one graph lock. Duplicates are dropped (a mutex taken twice on one thread
    /// never returns) and the locks are taken in the store's order: the user graph,
    /// then project graphs by file path. `f` gets the distinct graphs in the caller's
    /// order, so rankings that care about order see the list they asked for.
    pub fn with_graphs<R>(
        &self,
        slots: &[Arc<GraphSlot>],
        f: impl FnOnce(&[SearchGraph<'_>]) -> R,
    ) -> R {
        let mut distinct: Vec<&GraphSlot> = Vec::with_capacity(slots.len());
        for slot in slots {
            if !distinct.iter().any(|d| std::ptr::eq(*d, slot.as_ref())) {
                distinct.push(slot);
            }
        }
        let mut lock_order: Vec<usize> = (0..distinct.len()).collect();
        lock_order.sort_by_key(|&i| lock_rank(distinct[i]));
        let mut guards: Vec<Option<MutexGuard<'_, GraphState>>> =
            distinct.iter().map(|_| None).collect();
        for i in lock_order {
            guards[i] = Some(distinct[i].lock());
        }
        let graphs: Vec<SearchGraph<'_>> = distinct
            .iter()
            .zip(&guards)
            .filter_map(|(slot, guard)| {
                guard.as_ref().map(|state| SearchGraph {
                    level: slot.level,
                    graph: &state.graph,
                })
            })
            .collect();
        f(&graphs)
    }

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

    /// Run maintenance on one graph now — after a hand move in the graph view took a
    /// level over its budget — and report what moved.
    pub fn maintain(&self, slot: &GraphSlot, why: &str, now: f64) -> TierMoves {
        let mut state = slot.lock();
        let moves = self.maybe_compact(slot, &mut state, now, None);
        if !moves.is_empty() {
            self.save_maintenance(slot, &mut state);
            self.note_debt(slot, &mut state, now);
        }
        self.record_moves(slot, moves.clone(), why, now);
        moves
    }

    fn record_moves(&self, slot: &GraphSlot, mut moves: TierMoves, why: &str, now: f64) {
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
            let pruned =
                crate::compact::prune_orphans(&mut state.graph, self.config.orphan_grace_days, now);
            if !pruned.is_empty() {
                state.dirty = true;
                moves.deleted = pruned;
            }
            if !moves.is_empty() {
                state.dirty = true;
                moves.reason = "maintenance tick".into();
                self.record(
                    slot.level,
                    slot.project_root(),
                    None,
                    ChangeKind::TiersMoved(moves),
                    now,
                );
            }
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

    /// Save everything that is only in memory (shutdown). Idempotent.
    pub fn flush(&self) {
        let mut slots = vec![self.user.clone()];
        slots.extend(self.loaded_projects());
        for slot in slots {
            let mut state = slot.lock();
            if state.loaded && state.dirty {
                self.save_maintenance(&slot, &mut state);
            }
        }
        self.save_sessions();
    }
}

/// The record of a client-supplied session id, its activity refreshed. Unknown and
/// malformed ids are refused rather than created: a made-up id (of any length) must
/// neither grow the registry nor evict a real session.
fn known_session<'r>(
    sessions: &'r mut SessionRegistry,
    sid: &str,
    now: f64,
) -> Result<&'r mut SessionRecord, StoreError> {
    if !crate::session::is_session_id(sid) {
        return Err(StoreError::MalformedSession(
            limits::for_log(sid).into_owned(),
        ));
    }
    let record = sessions
        .lookup_mut(sid)
        .ok_or_else(|| StoreError::UnknownSession(sid.to_string()))?;
    record.last_activity = now;
    Ok(record)
}

/// Project graphs kept in memory at most; beyond it, the least recently used are
/// saved and unloaded as new ones load.
pub const MAX_LOADED_PROJECTS: usize = 32;
/// A project graph unused this long is saved and unloaded by the tick.
pub const IDLE_UNLOAD_SECS: f64 = 30.0 * 60.0;

fn last_used(slot: &GraphSlot) -> f64 {
    f64::from_bits(slot.last_used.load(Ordering::Relaxed))
}

/// Where a graph's lock comes in the store's lock order (see the module comment).
fn lock_rank(slot: &GraphSlot) -> (bool, &Path) {
    (slot.level == Level::Project, &slot.path)
}

/// How deeply a progress state may nest. The graph file holds a state three levels
/// down and the JSON parser refuses files nested 128 deep, so a deeper state would be
/// saved and then make the whole graph unreadable at the next start.
pub const MAX_PROGRESS_DEPTH: usize = 64;

/// Nesting depth of a value (a scalar is 0, `{}` and `[]` are 1).
fn nesting_depth(value: &Value) -> usize {
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
fn reject(likes: &mut Likes, id: &str, reason: String) {
    *likes.rejected.entry(id.to_string()).or_default() = reason;
}

fn string_array(items: Vec<String>) -> Value {
    Value::Array(items.into_iter().map(Value::String).collect())
}

/// Load-time cleanup (core.md §2.7a): drop edges whose endpoint is no node here, no
/// artifact path and no node of another loaded graph. Not saved by itself.
fn remove_dangling_edges(graph: &mut Graph, foreign: &HashSet<String>, ns: &Namespace) {
    let nodes = &graph.nodes;
    let known = |x: &str| {
        nodes.contains_key(x) || x.contains('/') || x.contains('~') || foreign.contains(x)
    };
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

/// Heal every malformed gist in place; true when anything changed.
fn heal_gists(graph: &mut Graph) -> bool {
    let mut changed = false;
    for node in graph.nodes_in_place() {
        let gist = node.gist().to_string();
        if !crate::heal::is_malformed(&gist) {
            continue;
        }
        let notes = node.get(field::NOTES).map(|_| node.notes());
        let touches = node.get(field::TOUCHES).map(|_| node.touches());
        let healed = heal(&gist, notes.as_deref(), touches.as_deref());
        if healed.changed {
            node.set(field::GIST, Value::String(healed.gist));
            if let Some(n) = healed.notes {
                node.set(field::NOTES, string_array(n));
            }
            if let Some(t) = healed.touches {
                node.set(field::TOUCHES, string_array(t));
            }
            changed = true;
        }
    }
    changed
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
