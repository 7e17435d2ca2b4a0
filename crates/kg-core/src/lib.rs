//! KG Memory's core: the knowledge graphs, their files, sessions, scoring,
//! compaction, rendering and search. No async runtime, no HTTP: front ends (the
//! server, the tray app) call the [`Store`] and the functions re-exported here.
//!
//! The modules are private. What the front ends use is re-exported below, and
//! nothing else, so a graph can only change through [`Store`] (which journals,
//! saves and announces every change). The `internals` feature opens the modules
//! for this crate's own tests, benchmarks and `kg-test-support`; it is not an API.
#![cfg_attr(not(feature = "internals"), deny(missing_docs, unnameable_types))]

/// Declares the crate's modules: private, or public under the `internals` feature.
macro_rules! modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[allow(missing_docs)]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        mod $name;
    )*};
}

modules!(
    ambient,
    catalogue,
    change,
    compact,
    debt,
    graph,
    heal,
    inspect,
    journal,
    limits,
    model,
    namespace,
    near_duplicate,
    neighbourhood,
    persist,
    plan,
    push,
    pyfmt,
    recall_log,
    relevance,
    render,
    results,
    score,
    search,
    secrets,
    session,
    stale_touches,
    store,
    stranger,
    structure,
    tool_events,
    tools,
    touch_index,
    touch_path,
    tracked,
    wording,
);

#[cfg(test)]
mod layering;

// The store: the one door to the graphs, and what its calls answer.
pub use change::{Change, ChangeKind, TierMoves};
pub use graph::Graph;
pub use model::{
    Edge, EdgeKey, IdShape, IdentKind, Level, MAX_ID_WORDS, Node, Object, Tier, Version,
    WriteStamp, edge_version_key, field, float_value, is_artifact_ref, node_version_key,
    validate_ident,
};
pub use namespace::{Alternative, AlternativeKind, Layout, Namespace, PathError};
pub use persist::PersistError;
pub use results::{
    Likes, NodeRead, PutNode, Renamed, SkipReason, SkippedGraph, SyncItem, SyncReport, UnseenWrite,
};
pub use session::{Page, Pages, SessionRecord, SessionRegistry, View};
pub use store::{
    Action, Actor, BatchEdge, BatchNode, BatchOutcome, Budgets, DamagedFile, GraphSlot, HeldBack,
    LockedOp, MAX_HELD_BACK, NotWritten, Outcome, Policy, ProjectChoice, REJECTIONS_KEPT,
    REJECTIONS_TASK, StaleReason, StaleTouch, Store, StoreConfig, StoreError, StoredCredential,
    TakenIn, Target, UNDO_STEPS, Undone, WriteCheck, held_back_file, screen_incoming, sync_origin,
    sync_source,
};

// Files the memory does not own (a project's `.git`, transcripts, imports), opened as
// strangers: regular files only, never blocking, read up to a cap.
pub use stranger::{open_regular, read_regular, read_regular_tail, read_regular_text};
pub use tracked::Tracked;

// What a session id and a touch entry look like, for front ends that read them out of
// text (an answer's `Session:` footer, a node's touches).
pub use session::is_session_id;
pub use touch_path::{PathPart, TouchPath, path_part};

// The MCP tools' answers, and the hooks'.
pub use ambient::{
    Bootstrap, BootstrapRequest, FileRecall, FileTouch, PreloadHeader, PreloadStats, PromptEvent,
    PromptReply, ToolUse, file_recall, hook_news, prompt_context, prompt_reply, session_bootstrap,
    tool_event,
};
pub use push::session_news;
pub use stale_touches::{Renames, renamed_path};
pub use tools::pages::{Client, Unit};
pub use tools::touches::{FixTouchArgs, RenameLookup, kg_fix_touch, with_renames};
pub use tools::{
    PutEdgeArgs, PutNodeArgs, ReadArgs, ToolText, kg_delete_edge, kg_delete_node, kg_progress,
    kg_put_edge, kg_put_node, kg_read, kg_rename_node, kg_search, kg_sync, kg_useful,
};
pub use wording::{
    LOCK_IS_A_PERSONS, NOT_WRITTEN, Reminder, ReminderFits, preload_header, reminder_pool,
    server_warming_up, session_start_notice,
};

// What the graph view, the tray and `kg-memory status` show.
pub use catalogue::{Catalogue, CatalogueEntry, neediest_first};
pub use compact::{GraceRule, LEVEL_BUDGET, LevelBudget, LevelRules};
pub use debt::{CONFLICT_NOTE_PREFIX, Debt, DebtLevel, GIST_SCAN_LIMIT, unresolved_conflicts};
pub use inspect::{
    Budget, BudgetState, DebtFactors, DebtItem, DebtKind, InspectConfig, LevelInspection, Pool,
    TierWhy, inspect_level, level_budget,
};
pub use limits::{
    MAX_GIST_CHARS, MAX_GRAPH_BYTES, MAX_NOTE_CHARS, MAX_NOTES, MAX_PATH_BYTES, MAX_QUERY_CHARS,
    MAX_TASK_ID_CHARS, MAX_TOUCHES, query as check_query, stored_chars,
};
// The bounds on what the memory keeps (SECURITY.md): sessions, loaded projects, counted
// tool-event targets.
pub use neighbourhood::{
    NEIGHBOURHOOD_HOPS, Neighbour, NeighbourArtifact, Neighbourhood, NeighbourhoodError,
    hops_message, neighbourhood,
};
pub use plan::Health;
pub use recall_log::{
    Decision as RecallDecision, FileNode as RecallFileNode, Trigger as RecallTrigger,
    Weighed as RecallWeighed,
};
pub use score::{CLOCK_SKEW_SECS, NodeScore};
pub use search::{Connector, Hit, SearchGraph, SearchResult, query_terms, search};
pub use session::MAX_SESSIONS;
pub use store::MAX_LOADED_PROJECTS;
pub use tool_events::MAX_EVENT_KEYS;

// Python-compatible text, so our files and answers match the reference byte for byte.
pub use persist::{FileStamp, WriteMode, atomic_write};

// Graph files as text, for tools that work on files rather than on a store (the git
// merge driver in kg-sync): the same parser, healer (`Graph::heal_gists`) and writer
// a load and a save use.
pub use persist::{GraphFile, parse_graph, serialize_graph};
pub use pyfmt::{JsonStyle, float_repr, repr_str, round_to, to_json};
