//! `GET /api/view/activity`: the change log as the activity panel lists it.

use super::*;

/// `GET /api/view/activity`: the newest changes of the levels on screen, newest first.
#[derive(Debug, Serialize, TS)]
pub struct ActivityAnswer<'a> {
    pub entries: Vec<ActivityEntry<'a>>,
}

/// One change of the store's change log, as the activity panel lists it.
#[derive(Debug, Serialize, TS)]
pub struct ActivityEntry<'a> {
    /// Its place in the change log.
    pub seq: u64,
    /// Seconds since the Unix epoch.
    pub ts: f64,
    pub level: LevelName,
    pub project_path: Option<&'a str>,
    pub author: Author,
    /// The KG session that made it, when one did (a view's is its connection's).
    pub session: Option<&'a str>,
    /// For a change that arrived through sync: the remote it came from, as
    /// `origin (url)`.
    pub origin: Option<&'a str>,
    pub kind: ActivityKind,
    /// The nodes it concerns, the main one first.
    pub ids: Vec<String>,
    /// What happened, in one plain line.
    pub summary: String,
}

/// Who made a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Author {
    /// An agent's KG session (MCP tools, hooks).
    Agent,
    /// A person in a graph view.
    View,
    /// The server itself: tier moves, debt verdicts, damaged files.
    Maintenance,
    /// A REST call without a session.
    Client,
    /// Another machine: the change arrived through git sync (its remote in `origin`).
    Sync,
}

/// What kind of change an activity entry is: the `type` of the matching `/ws` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    NodeUpdated,
    NodeRenamed,
    EdgeUpdated,
    NodeDeleted,
    EdgeDeleted,
    NodeRecalled,
    TiersMoved,
    NodeLiked,
    ProgressSaved,
    StepUndone,
    DebtChanged,
    Quarantined,
}
