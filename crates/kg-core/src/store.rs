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

use crate::catalogue::{Catalogue, CatalogueEntry, InMemory};
use crate::change::{Change, ChangeKind, ChangeLog, TierMoves};
use crate::debt::{Debt, DebtLevel};
use crate::graph::Graph;
use crate::heal::heal;
use crate::journal::Journal;
use crate::limits;
use crate::model::{
    EdgeKey, IdentKind, Level, Node, Object, Tier, Version, WriteStamp, edge_version_key, field,
    float_value, node_version_key, validate_ident,
};
use crate::namespace::{Layout, Namespace, PathError, resolve_path, resolve_project_root};
use crate::persist::{
    FileStamp, GraphFile, GraphWriter, Loaded, PersistError, WriteMode, atomic_write,
    load_graph_file, parse_graph, read_json_object, remove_stale_temps, write_json_object,
};
use crate::plan::Health;
use crate::render::tier_counts;
pub use crate::results::{Likes, NodeRead, PutNode, SyncItem, SyncReport, UnseenWrite};
use crate::search::SearchGraph;
use crate::session::{LIKES_PER_SESSION, SessionRecord, SessionRegistry, View};
pub use crate::stale_touches::StaleTouch;
use crate::stale_touches::{Absent, ResolvedTouches};
use crate::tool_events::ToolEvents;
use crate::tracked::Tracked;
use indexmap::IndexMap;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

mod actions;
mod batch;
mod graphs;
mod guard;
mod incoming;
mod locks;
mod projects;
mod rename;
mod screen;
mod secrets_allowed;
mod sessions;
mod writes;
pub(crate) use sessions::unseen_writes;

pub use actions::{Action, Outcome, UNDO_STEPS, Undone};
pub use batch::{BatchEdge, BatchNode, BatchOutcome};
pub use guard::{NotWritten, StaleReason, WriteCheck};
pub use incoming::{TakenIn, sync_origin, sync_source};
pub use locks::{Actor, LockedOp, REJECTIONS_KEPT, REJECTIONS_TASK};
pub use projects::ProjectChoice;
pub use screen::{HeldBack, MAX_HELD_BACK, StoredCredential, held_back_file, screen_incoming};

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
    /// Our improvements over the reference, or the reference's behaviour exactly
    /// (`KG_POLICY`).
    pub policy: Policy,
    /// Folders besides home under which project folders may lie
    /// (`KG_PROJECT_ROOTS`); resolved, like home.
    pub project_roots: Vec<PathBuf>,
    /// How much each level may hold, and how much a full read and the session-start
    /// preload may show (`KG_LEVEL_BUDGET`, `KG_READ_BUDGET`, `KG_PRELOAD_BUDGET`).
    pub budgets: Budgets,
    /// The storage root syncs with other machines through git. A project graph file
    /// then keeps the project path it records (the first machine's) instead of this
    /// machine's: each machine finds its own folder through its own path map, and a
    /// path rewritten by every machine that saves would make every sync a change.
    pub synced: bool,
}

/// Where our behaviour differs from the reference implementation's on purpose (prompt
/// recall before the first full read, reminders, how far grace shields new nodes from
/// compaction), which to follow. The reference's
/// behaviour replays its pinned outputs byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Ours: the improvements are on.
    #[default]
    Ours,
    /// The reference implementation's behaviour, exactly (`KG_POLICY=reference`).
    Reference,
}

impl Policy {
    /// `ours` or `reference` (case-insensitive); anything else is refused.
    pub fn parse(text: &str) -> Option<Policy> {
        match text.trim().to_ascii_lowercase().as_str() {
            "ours" | "" => Some(Policy::Ours),
            "reference" => Some(Policy::Reference),
            _ => None,
        }
    }

    /// How far the grace period shields new nodes from compaction under this policy.
    pub fn grace_rule(self) -> crate::compact::GraceRule {
        match self {
            Policy::Ours => crate::compact::GraceRule::Shared,
            Policy::Reference => crate::compact::GraceRule::Unlimited,
        }
    }
}

impl StoreConfig {
    /// What compaction goes by on every level: the budget and the grace period.
    pub fn level_rules(&self) -> crate::compact::LevelRules {
        crate::compact::LevelRules {
            budget: self.budgets.level,
            grace_days: self.grace_days,
            grace_rule: self.policy.grace_rule(),
        }
    }

    /// The settings the graph view's explanations of a level depend on.
    pub fn inspect_config(&self) -> crate::inspect::InspectConfig {
        crate::inspect::InspectConfig {
            grace_days: self.grace_days,
            orphan_grace_days: self.orphan_grace_days,
            grace_rule: self.policy.grace_rule(),
            level_budget: self.budgets.level,
        }
    }
}

impl StoreConfig {
    /// Settings for a storage root and a home folder, with the default grace periods (5
    /// days for new nodes, 365 days for orphans).
    pub fn new(storage_root: impl Into<PathBuf>, home: impl Into<PathBuf>) -> StoreConfig {
        StoreConfig {
            storage_root: storage_root.into(),
            home: home.into(),
            grace_days: 5.0,
            orphan_grace_days: 365.0,
            policy: Policy::Ours,
            project_roots: Vec::new(),
            synced: false,
            budgets: Budgets::default(),
        }
    }
}

/// The size targets: of each level, which compaction keeps, and of the two
/// whole-memory renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Rendered characters each level may hold before its lowest-scored nodes are
    /// archived; the fill line, the anchors' share and the grace share follow from it.
    pub level: crate::compact::LevelBudget,
    /// A full `kg_read`, in characters: a target (active gists are never dropped;
    /// what does not fit one reply comes in parts).
    pub read: usize,
    /// The session-start preload, header included: in UTF-16 code units under our
    /// policy (what Claude Code counts in a hook's context), in characters under the
    /// reference's.
    pub preload: usize,
}

impl Default for Budgets {
    fn default() -> Budgets {
        Budgets {
            level: crate::compact::LevelBudget::default(),
            read: crate::render::READ_BUDGET,
            preload: crate::render::PRELOAD_BUDGET,
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
    /// No node of that id in the graph or graphs looked in.
    #[error("Node '{id}' not found in {level} graph")]
    NodeNotFound {
        /// The id asked for.
        id: String,
        /// Where it was looked for: `user`, `project`, or `either` (`both` under the
        /// reference policy) when the call named no level (user graph first, then the
        /// session's project graph).
        level: String,
    },
    /// A well-formed session id the registry does not hold: it expired after 24 hours
    /// idle, or was never started on this storage root.
    #[error(
        "Unknown session: {0}. It has expired (after 24 hours idle) or was never started here; call kg_read(cwd=<your project folder>) to start a new one."
    )]
    UnknownSession(String),
    /// A session id that cannot be one of ours (shown cut to a loggable length).
    #[error(
        "session_id '{0}' is not a KG session id (those are 8 hex digits, such as 3f9a0c1e); call kg_read(cwd=<your project folder>) to get one."
    )]
    MalformedSession(String),
    /// A project path that was refused or cannot be mapped to storage (outside the home
    /// folder, too long, no such project…).
    #[error(transparent)]
    Path(#[from] PathError),
    /// A project-level call without a session id: the project graph is the one the
    /// session is bound to.
    #[error("session_id required for project-level operations")]
    SessionRequired,
    /// A project-level call from a session that was registered without a project path.
    #[error("Session {0} has no project_path registered")]
    SessionWithoutProject(String),
    /// A graph file that exists could not be read, or, not parsing, could not be moved
    /// aside; the graph stays unloaded rather than start empty over it.
    #[error(
        "Cannot load graph from {path}: {cause}. Inspect the file manually or restore from backup."
    )]
    Load {
        /// The graph file.
        path: PathBuf,
        /// What went wrong: the read or quarantine error, as text.
        cause: String,
    },
    /// A graph file could not be written; the change was undone in memory, so nothing
    /// was stored.
    #[error("could not save the change, nothing was stored: {0}")]
    Save(#[from] PersistError),
    /// A text of the write holds what looks like a credential; nothing was stored.
    #[error(
        "Refused: {field} holds what looks like a credential ({kind}). The memory is read by every later session and synced to other machines: record where the secret lives (a vault path, an environment variable's name), never its value. If it is no secret, a person can allow it in the graph view (finding {fingerprint})."
    )]
    Credential {
        /// Which text: "the gist", "note 2", "touch 1", "edge note 1".
        field: String,
        /// What it looks like ("GitHub Personal Access Token").
        kind: String,
        /// The finding's digest (never the secret), by which a person allows it.
        fingerprint: String,
    },
    /// An undo that cannot be done: nothing to undo, or what the step changed has
    /// changed again since (the message names it). Nothing was changed.
    #[error("{0}")]
    CannotUndo(String),
    /// A write built on a stale view of the node (since-0.9.30.md §4): nothing was
    /// changed. The text is the refusal the writer reads, starting `NOT WRITTEN`.
    #[error("{}", .0.message())]
    NotWritten(Box<NotWritten>),
    /// An agent's rewrite, rename or delete of a node a person locked; the refusal
    /// is kept in the graph's `rejections` progress entry. Nothing else changed.
    #[error("{}", crate::wording::locked_refusal(id, *level, op.as_str()))]
    Locked {
        /// The node.
        id: String,
        /// Its graph.
        level: Level,
        /// What the agent tried.
        op: LockedOp,
    },
}

impl StoreError {
    /// Errors reported as `Error: …`, the caller's to fix (the rest are `Internal
    /// error: …`, as the reference words them). A project folder outside the allowed
    /// ones is the caller's too; the reference called it internal.
    pub fn is_domain(&self) -> bool {
        matches!(
            self,
            StoreError::Invalid(_)
                | StoreError::Credential { .. }
                | StoreError::NodeNotFound { .. }
                | StoreError::NotWritten(_)
                | StoreError::Locked { .. }
                | StoreError::UnknownSession(_)
                | StoreError::MalformedSession(_)
                | StoreError::Path(PathError::OutsideHome(_) | PathError::Relative(_))
        )
    }

    /// Errors caused by the request rather than by the server (HTTP 4xx).
    pub fn is_client_error(&self) -> bool {
        !matches!(self, StoreError::Load { .. } | StoreError::Save(_))
    }
}

/// A graph in memory with what the store knows about its file.
#[derive(Debug, Default)]
struct GraphState {
    /// Tracked: every mutable access takes a fresh stamp, which is what a memoised
    /// render of the graph is keyed on (see [`Store::with_graphs_stamped`]).
    graph: Tracked<Graph>,
    /// Changed in memory but not yet saved (read stamps, maintenance results).
    dirty: bool,
    stamp: Option<FileStamp>,
    /// Whether a compaction stall (every active node in grace) was already logged.
    stall_logged: bool,
    loaded: bool,
    /// The maintenance-debt verdict last reported for this graph.
    debt: Option<DebtLevel>,
    /// Tool-event timestamps of the project (debt activity), refreshed each tick.
    activity: Vec<f64>,
    /// Builds the file text, reusing the unchanged parts of the last one.
    writer: GraphWriter,
    /// `_meta.project_path` as the file recorded it when loaded.
    recorded_root: Option<String>,
    /// The graph view's last steps on this graph, newest last, for undo.
    history: std::collections::VecDeque<actions::UndoStep>,
    /// The last time this graph's file did not parse and was moved aside, kept for
    /// the server's lifetime so a view opened later still says why the graph looks
    /// as it does.
    damaged: Option<DamagedFile>,
    /// The stale touches last found (our policy): DEBT is computed on every write and
    /// read, and reading every touch with a `stat` each time would add up. Looked at
    /// again when the touches of active nodes may have changed, and after
    /// [`STALE_RECHECK`].
    stale: Option<StaleLook>,
    /// Which nodes touch which file, rebuilt when the graph's touches change.
    touches: Option<Arc<crate::touch_index::TouchIndex>>,
    /// What DEBT reads of the graph alone, and the graph's change stamp then.
    debt_inputs: Option<(u64, Arc<crate::debt::DebtInputs>)>,
    /// Items that arrived by sync and broke a write rule, kept in the graph's
    /// held-back file (see [`Store::hold_back`]); DEBT counts them.
    held_back: usize,
    /// What the clock and the file said when the graph was loaded: now, and the
    /// newest stamp in the file (see [`Store::deletes_allowed`]).
    clock_at_load: (f64, Option<f64>),
    /// Whether paused permanent deletes were already logged for this graph.
    deletes_pause_logged: bool,
}

/// How long the stale touches found for a graph are trusted while the graph does not
/// change: files come and go without the store hearing of it.
const STALE_RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// The stale touches found for a graph, when, and from which nodes and touches.
#[derive(Debug)]
struct StaleLook {
    at: std::time::Instant,
    /// The node map's stamp and the touches epoch (`model::touches_epoch`) then: while
    /// both stay, the active nodes and their touches are those that were looked at.
    built_from: (u64, u64),
    found: Arc<Vec<StaleTouch>>,
    /// The path-shaped touches of the active nodes, resolved, and the graph's change
    /// stamp they were read under: a look made afresh stats the files again, but
    /// reads and resolves the touches only when the graph changed.
    entries: Arc<ResolvedTouches>,
    entries_from: u64,
    /// Which of `entries`' files that look found missing.
    absent: Absent,
}

/// A graph file that did not parse and was moved aside when it was loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct DamagedFile {
    /// The graph file that did not parse.
    pub path: PathBuf,
    /// Where the damaged bytes now lie: `<file>.corrupt-<unix seconds>`.
    pub moved_to: PathBuf,
    /// Why it did not parse, as the parser said it.
    pub cause: String,
    /// The backup the graph was loaded from instead (`.prev`), or `None` when there
    /// was no valid backup and the graph started empty.
    pub backup: Option<PathBuf>,
    /// When it was moved aside, in seconds since the Unix epoch.
    pub at: f64,
}

/// One graph and where it lives.
#[derive(Debug)]
pub struct GraphSlot {
    /// The key the store holds the graph under: `user` or `project:<resolved root>`.
    pub namespace: Namespace,
    /// Whether this is the user graph or a project graph.
    pub level: Level,
    /// The graph file: `user.json` or `projects/<slug>/graph.json` under the storage
    /// root.
    pub path: PathBuf,
    /// The storage folder name of a project graph.
    pub slug: Option<String>,
    state: Mutex<GraphState>,
    /// When the store last handed this graph out (`f64` bits), for unloading idle
    /// project graphs.
    last_used: AtomicU64,
}

impl GraphSlot {
    /// The resolved project root of a project graph; `None` for the user graph.
    pub fn project_root(&self) -> Option<&str> {
        self.namespace.project_root()
    }

    /// The project path the graph's file records: this machine's root, or, in a
    /// synced storage root, the path the file already recorded (see
    /// [`StoreConfig::synced`]).
    fn recorded_root<'a>(&'a self, recorded: &'a Option<String>, synced: bool) -> Option<&'a str> {
        let root = self.project_root()?;
        match recorded {
            Some(recorded) if synced => Some(recorded),
            _ => Some(root),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GraphState> {
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
    /// Whether the call works on the user graph or on a project graph.
    pub level: Level,
    /// The calling session: its project picks the project graph (unless `project_path` is
    /// given), and it is recorded as the change's author, so its own `kg_sync` skips the
    /// change.
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
    /// Where project folders may lie: home first, then `config.project_roots`, resolved.
    allowed_roots: Vec<PathBuf>,
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
    /// What the graphs not in memory look like, for [`Store::catalogue`].
    catalogue: Catalogue,
    /// The last time [`Store::event_ts`] handed out (`f64` bits).
    last_event: AtomicU64,
    /// The projects client folders were found to belong to lately (a leaf lock).
    recent_choices: projects::RecentChoices,
    /// Why recall spoke or stayed silent (`recall.jsonl`), our policy only.
    recall_log: crate::recall_log::RecallLog,
    /// Why the clock is not trusted for permanent deletes in this run (a jump the
    /// server saw, or a graph whose stamps the clock disagrees with); shown by
    /// `/health` and `kg-memory status`. A leaf lock.
    clock_doubt: Mutex<Option<String>>,
    /// Findings a person allowed as no secret (see [`Store::allow_secret`]), kept in
    /// the machine-local `secrets-allowed.json`. A leaf lock.
    secrets_allowed: RwLock<HashSet<String>>,
    /// The last full reads and preloads rendered, by everything they were rendered
    /// from (a leaf lock).
    renders: crate::render::RenderMemo,
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
        let layout_recall_log = layout.recall_log();
        let allowed_roots = std::iter::once(home.clone())
            .chain(config.project_roots.iter().map(|r| resolve_path(r)))
            .collect();
        let store = Store {
            config,
            home,
            allowed_roots,
            layout,
            user,
            projects: RwLock::new(IndexMap::new()),
            sessions: Mutex::new(sessions),
            sessions_file: Mutex::new(0),
            session_save_requests: AtomicU64::new(0),
            changes: Mutex::new(ChangeLog::default()),
            listeners: RwLock::new(Vec::new()),
            unloaded_ids: Mutex::new(IndexMap::new()),
            catalogue: Catalogue::default(),
            last_event: AtomicU64::new(0),
            recent_choices: projects::RecentChoices::default(),
            recall_log: crate::recall_log::RecallLog::open(layout_recall_log),
            clock_doubt: Mutex::new(None),
            secrets_allowed: RwLock::new(HashSet::new()),
            renders: crate::render::RenderMemo::default(),
        };
        store.load_allowed_secrets();
        store.ensure_loaded(&store.user, now)?;
        Ok(store)
    }

    /// The settings the store was opened with.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Where the files of the storage root live: the user graph, the sessions file, the
    /// project folders.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The resolved home folder.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Keep a recall decision (`recall.jsonl`, the view's Activity). The reference
    /// kept no such log, so under its policy nothing is written.
    pub(crate) fn log_recall(&self, decision: crate::recall_log::Decision) {
        if self.config.policy == Policy::Ours {
            self.recall_log.record(decision);
        }
    }

    /// The latest recall decisions of a project (its resolved root) or of every
    /// session (`None`), newest last, at most `limit`.
    pub fn recall_decisions(
        &self,
        project_root: Option<&str>,
        limit: usize,
    ) -> Vec<crate::recall_log::Decision> {
        self.recall_log.recent(limit, |d| {
            project_root.is_none_or(|root| d.project_root.as_deref() == Some(root))
        })
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

    /// Changes from `seq` on (for readers that keep their own cursor), as the log
    /// keeps them: a written node or edge by its id or ends, not its contents. `None`
    /// when the log no longer reaches back to `seq`.
    pub fn changes_since(&self, seq: u64) -> Option<Vec<Change>> {
        let log = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        log.since(seq).map(|it| it.cloned().collect())
    }

    /// Bound the change log differently (tests: a log's end without 20,000 writes).
    #[cfg(feature = "internals")]
    pub fn bound_changes(&self, bounds: crate::change::LogBounds) {
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set_bounds(bounds);
    }

    /// Up to `limit` of the newest changes that `keep` accepts, newest first, as the
    /// log keeps them (see [`Store::changes_since`]; it holds up to the last 20,000
    /// changes of this server's lifetime, fewer when they are large).
    pub fn recent_changes(&self, limit: usize, keep: impl Fn(&Change) -> bool) -> Vec<Change> {
        let log = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        log.newest_first()
            .filter(|c| keep(c))
            .take(limit)
            .cloned()
            .collect()
    }

    // ----- graph slots ---------------------------------------------------------------

    /// The user graph, loaded when the store opens and never unloaded.
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

    /// The debt of a graph, from the graph and the project's tool-event stamps the
    /// store keeps (no graph file is read); its stale touches as last looked up, when
    /// that was lately.
    pub fn level_debt(&self, slot: &GraphSlot, now: f64) -> Debt {
        let mut state = slot.lock();
        self.debt_of(slot, &mut state, now)
    }

    /// [`Store::level_debt`] with the stale touches looked up now rather than
    /// remembered: what a full read or a preload prints.
    pub fn level_debt_now(&self, slot: &GraphSlot, now: f64) -> Debt {
        let mut state = slot.lock();
        self.debt_looked_up(slot, &mut state, now, true)
    }

    /// A graph's debt under this store's policy: ours also counts the new nodes a
    /// burst got archived and the touches whose file is gone (the reference's DEBT has
    /// neither).
    fn debt_of(&self, slot: &GraphSlot, state: &mut GraphState, now: f64) -> Debt {
        self.debt_looked_up(slot, state, now, false)
    }

    /// [`Store::debt_of`], the stale touches looked up now when `fresh_touches`.
    fn debt_looked_up(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        now: f64,
        fresh_touches: bool,
    ) -> Debt {
        let stale = self.stale_of(slot, state, fresh_touches);
        let (entries, nodes) = crate::stale_touches::stale_counts(&stale);
        // What DEBT reads of the graph alone, once per change of it (every full read
        // prints DEBT).
        let stamp = state.graph.stamp();
        let inputs = match &state.debt_inputs {
            Some((from, inputs)) if *from == stamp => inputs.clone(),
            _ => {
                let fresh = Arc::new(crate::debt::DebtInputs::of(&state.graph, false));
                state.debt_inputs = Some((stamp, fresh.clone()));
                fresh
            }
        };
        crate::debt::level_debt_of(
            &inputs,
            &state.graph,
            state.activity.iter().copied(),
            self.config.grace_days,
            self.config.policy == Policy::Ours,
            now,
        )
        .with_stale_touches(entries, nodes)
        .with_held_back(state.held_back)
    }

    /// The touches of a graph's active nodes whose file is gone, looked up now (our
    /// policy; none under the reference's): `~` against home, relative paths against
    /// the project root. For the maintenance survey, the graph view and the agent's
    /// fix; DEBT uses the last answer while it is recent.
    pub fn stale_touches(&self, slot: &GraphSlot) -> Vec<StaleTouch> {
        let mut state = slot.lock();
        self.stale_of(slot, &mut state, true).as_ref().clone()
    }

    fn stale_of(
        &self,
        slot: &GraphSlot,
        state: &mut GraphState,
        fresh: bool,
    ) -> Arc<Vec<StaleTouch>> {
        if self.config.policy == Policy::Reference {
            return Arc::default();
        }
        let built_from = (state.graph.nodes.stamp(), crate::model::touches_epoch());
        if !fresh
            && let Some(look) = &state.stale
            && look.built_from == built_from
            && look.at.elapsed() < STALE_RECHECK
        {
            return look.found.clone();
        }
        let entries_from = state.graph.stamp();
        let entries = match &state.stale {
            Some(look) if look.entries_from == entries_from => look.entries.clone(),
            _ => {
                let root = slot.project_root().map(Path::new);
                let touches = crate::stale_touches::path_touches(&state.graph);
                Arc::new(ResolvedTouches::new(&touches, &self.home, root))
            }
        };
        let absent = entries.absent();
        // The same files missing from the same touches: the list made last time (a
        // full read looks every time, and most looks find what the last one found).
        // An equal list, too, keeps last time's allocation.
        let last = state.stale.as_ref();
        let found = match last {
            Some(look) if Arc::ptr_eq(&look.entries, &entries) && look.absent == absent => {
                look.found.clone()
            }
            _ => {
                let fresh = entries.stale(&absent);
                match last {
                    Some(look) if *look.found == fresh => look.found.clone(),
                    _ => Arc::new(fresh),
                }
            }
        };
        state.stale = Some(StaleLook {
            at: std::time::Instant::now(),
            built_from,
            found: found.clone(),
            entries,
            entries_from,
            absent,
        });
        found
    }

    /// The clock jumped (the server saw its wall clock move unlike its monotonic one):
    /// `why`, in words, is logged and shown, and permanent deletes wait until the
    /// next start. Time-based logic never reads the clock itself, so the caller tells.
    pub fn doubt_clock(&self, why: String) {
        log::warn!("{why}; permanent deletes of orphaned nodes are paused until the next start");
        let mut doubt = self.clock_doubt.lock().unwrap_or_else(|e| e.into_inner());
        doubt.get_or_insert(why);
    }

    /// Why the clock is not trusted for permanent deletes, when it is not.
    pub fn clock_doubt(&self) -> Option<String> {
        self.clock_doubt
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the tick may delete orphans of a graph for good at `now`: only while
    /// the clock agrees with the graph's own stamps. When the graph was loaded, its
    /// newest stamp was at most [`CLOCK_AGREEMENT_DAYS`] old (a clock that jumped a
    /// year ahead reads a year past every stamp), the clock has not gone back behind
    /// it, and no jump was seen since.
    fn deletes_allowed(&self, slot: &GraphSlot, state: &mut GraphState, now: f64) -> bool {
        let (loaded_at, newest) = state.clock_at_load;
        let why = if let Some(doubt) = self.clock_doubt() {
            Some(doubt)
        } else {
            newest.and_then(|newest| {
                let days = (loaded_at - newest) / crate::score::DAY_SECS;
                if days > CLOCK_AGREEMENT_DAYS {
                    Some(format!(
                        "the clock read {days:.0} days past the newest stamp in {} when it was loaded",
                        slot.path.display()
                    ))
                } else if now + crate::score::CLOCK_SKEW_SECS < newest {
                    Some(format!(
                        "the clock reads earlier than the newest stamp in {}",
                        slot.path.display()
                    ))
                } else {
                    None
                }
            })
        };
        match why {
            None => true,
            Some(why) => {
                if !state.deletes_pause_logged {
                    state.deletes_pause_logged = true;
                    log::warn!(
                        "{why}: orphaned nodes there are not deleted for good until the clock and the memory agree"
                    );
                    self.clock_doubt
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(why);
                }
                false
            }
        }
    }

    /// The last damaged file of a graph that was moved aside while this store ran.
    pub fn damaged_file(&self, slot: &GraphSlot) -> Option<DamagedFile> {
        slot.lock().damaged.clone()
    }

    /// Run `f` with a graph locked and its project's tool-event stamps (debt activity).
    pub fn with_graph_activity<R>(
        &self,
        slot: &GraphSlot,
        f: impl FnOnce(&Graph, &[f64]) -> R,
    ) -> R {
        let state = slot.lock();
        f(&state.graph, &state.activity)
    }

    /// Replace the tool-event stamps of a project graph after its tool events were
    /// written, so that its debt counts them at once.
    pub(crate) fn note_activity(&self, slot: &GraphSlot, stamps: Vec<f64>) {
        slot.lock().activity = stamps;
    }

    /// Every graph of the storage root with its counts, debt and HEALTH (see
    /// the catalogue module): graphs in memory as they are there, the others from
    /// their files. Locks one graph at a time.
    pub fn catalogue(&self, now: f64) -> Vec<CatalogueEntry> {
        self.catalogue_checked(now, false)
    }

    /// [`Store::catalogue`], every graph's stale touches looked up now when
    /// `fresh_touches` (someone asked: the survey, the view's list), else as found
    /// lately.
    pub fn catalogue_checked(&self, now: f64, fresh_touches: bool) -> Vec<CatalogueEntry> {
        let mut slots = vec![self.user.clone()];
        slots.extend(self.loaded_projects());
        let in_memory = slots
            .iter()
            .filter_map(|slot| {
                let name = match slot.level {
                    Level::User => "user".to_string(),
                    Level::Project => slot.slug.clone()?,
                };
                let mut state = slot.lock();
                if !state.loaded {
                    return None;
                }
                if fresh_touches {
                    state.stale = None;
                }
                let debt = self.debt_of(slot, &mut state, now);
                let graph = &state.graph;
                Some(InMemory {
                    name,
                    level: slot.level,
                    project_path: slot.project_root().map(str::to_string),
                    counts: tier_counts(graph),
                    debt,
                    health: Health::of_graph(graph),
                })
            })
            .collect();
        let stale = (self.config.policy == Policy::Ours).then(|| crate::catalogue::StaleCheck {
            home: &self.home,
            fresh: fresh_touches,
        });
        self.catalogue.list(&self.layout, in_memory, stale, now)
    }

    /// Run `f` with a graph locked (read access for renderers and search).
    pub fn with_graph<R>(&self, slot: &GraphSlot, f: impl FnOnce(&Graph) -> R) -> R {
        f(&slot.lock().graph)
    }

    /// A time for a write stamp or a view time: `now`, or just after the last time
    /// handed out when that is not earlier. Strictly increasing, so, taken while the
    /// graph is locked, a write's stamp and a view of the same graph never tie, and
    /// their order is the order in which they held the graph: a view time before a
    /// write's stamp means the view did not show that write. (Request times alone
    /// cannot say that: a request that started first may take the lock second.)
    pub fn event_ts(&self, now: f64) -> f64 {
        let mut last = self.last_event.load(Ordering::SeqCst);
        loop {
            let before = f64::from_bits(last);
            let next = if now > before { now } else { before.next_up() };
            match self.last_event.compare_exchange_weak(
                last,
                next.to_bits(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return next,
                Err(actual) => last = actual,
            }
        }
    }

    /// [`Store::with_graphs`], and a view time for what `f` shows of them (see
    /// [`Store::event_ts`]), taken while they are locked: record it with
    /// [`Store::record_views`] once the session has been shown the nodes.
    pub fn with_graphs_viewed<R>(
        &self,
        slots: &[Arc<GraphSlot>],
        now: f64,
        f: impl FnOnce(&[SearchGraph<'_>], f64) -> R,
    ) -> R {
        self.with_graphs(slots, |graphs| f(graphs, self.event_ts(now)))
    }

    /// Run `f` with a graph locked and the positions of its nodes whose touches name
    /// a file known under any of `keys` (see [`crate::touch_path::file_keys`]). The
    /// reverse index behind it is built on first use and again after touches change.
    pub(crate) fn with_nodes_touching<R>(
        &self,
        slot: &GraphSlot,
        keys: &[String],
        f: impl FnOnce(&Graph, &[usize]) -> R,
    ) -> R {
        use crate::touch_index::TouchIndex;
        let mut state = slot.lock();
        let root = slot.project_root().map(Path::new);
        let index = match &state.touches {
            Some(index) if index.is_current(&state.graph, root) => index.clone(),
            _ => {
                let fresh = Arc::new(TouchIndex::build(&state.graph, self.home(), root));
                state.touches = Some(fresh.clone());
                fresh
            }
        };
        f(&state.graph, &index.nodes_touching(keys))
    }

    /// The existing node of `target`'s graph that the node `id` nearly repeats (see
    /// [`crate::near_duplicate`]), if any.
    pub(crate) fn repeat_of(
        &self,
        target: Target<'_>,
        id: &str,
        now: f64,
    ) -> Option<crate::near_duplicate::Similar> {
        let slot = self.resolve_target(target, now).ok()?;
        self.with_graph(&slot, |graph| crate::near_duplicate::similar_to(graph, id))
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
        self.with_graphs_stamped(slots, |graphs, _| f(graphs))
    }

    /// [`Store::with_graphs`], with each graph's change stamp beside it: a stamp
    /// no other state of any graph has had, so what is derived from a graph under
    /// one stamp may be reused while the stamp stays.
    pub(crate) fn with_graphs_stamped<R>(
        &self,
        slots: &[Arc<GraphSlot>],
        f: impl FnOnce(&[SearchGraph<'_>], &[u64]) -> R,
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
        let (graphs, stamps): (Vec<SearchGraph<'_>>, Vec<u64>) = distinct
            .iter()
            .zip(&guards)
            .filter_map(|(slot, guard)| {
                guard.as_ref().map(|state| {
                    let graph: &Graph = &state.graph;
                    (
                        SearchGraph {
                            level: slot.level,
                            graph,
                        },
                        state.graph.stamp(),
                    )
                })
            })
            .unzip();
        f(&graphs, &stamps)
    }

    /// The memo of rendered reads.
    pub(crate) fn renders(&self) -> &crate::render::RenderMemo {
        &self.renders
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

/// How far behind the clock a graph's newest stamp may be, when it loads, for the
/// clock to count as agreeing with it: a memory in use is stamped every few days; one
/// that reads a year behind was idle that long, or the clock jumped. Permanent
/// deletes wait for agreement either way (an orphan kept longer loses nothing).
pub const CLOCK_AGREEMENT_DAYS: f64 = 30.0;

/// Project graphs kept in memory at most; beyond it, the least recently used are
/// saved and unloaded as new ones load.
pub const MAX_LOADED_PROJECTS: usize = 32;
/// A project graph unused this long is saved and unloaded by the tick.
pub const IDLE_UNLOAD_SECS: f64 = 30.0 * 60.0;

/// Where a graph's lock comes in the store's lock order (see the module comment).
fn lock_rank(slot: &GraphSlot) -> (bool, &Path) {
    (slot.level == Level::Project, &slot.path)
}
