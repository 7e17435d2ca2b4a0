//! Git sync as the tray and the view read it: `GET /api/sync` and
//! `POST /api/sync/now`. One shape for every reader: the server writes these types,
//! the tray reads them back ([`SyncAnswer`] is `Deserialize`), the view gets their
//! TypeScript twins.

use super::*;
use crate::sync::{SyncReport, SyncStatus};

/// One repository's git sync: the storage root, or a project that syncs with a remote
/// of its own. A key a reader does not find reads as its default (sync off).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct SyncRepo {
    /// The project's storage folder; `null` for the storage root.
    pub project: Option<String>,
    /// A remote is set up.
    pub on: bool,
    /// `origin (url)`; `null` when sync is off.
    pub remote: Option<String>,
    pub branch: Option<String>,
    /// Seconds since the Unix epoch.
    pub last_success: Option<f64>,
    pub last_attempt: Option<f64>,
    /// Why the last attempt failed; `null` when it worked.
    pub last_error: Option<String>,
    /// Since when the remote cannot be reached (the server retries on its own).
    pub offline_since: Option<f64>,
    /// Commits here and not on the remote, and there and not here, as of the last
    /// fetch; `null` before the first.
    pub ahead: Option<usize>,
    pub behind: Option<usize>,
    /// Files changed here since the last commit.
    pub uncommitted: usize,
    /// Unresolved merge conflicts in the graph files.
    pub conflicts: usize,
    /// Items held back from the remote for breaking a write rule.
    pub held_back: usize,
    /// `kg-memory sync status`, in words.
    pub summary: String,
}

impl From<&SyncStatus> for SyncRepo {
    fn from(status: &SyncStatus) -> SyncRepo {
        SyncRepo {
            project: status.scope.project.clone(),
            on: status.remote.is_some(),
            remote: status.remote.clone(),
            branch: status.branch.clone(),
            last_success: status.state.last_success,
            last_attempt: status.state.last_attempt,
            last_error: status.state.last_error.clone(),
            offline_since: status.state.offline_since,
            ahead: status.ahead_behind.map(|(ahead, _)| ahead),
            behind: status.ahead_behind.map(|(_, behind)| behind),
            uncommitted: status.uncommitted,
            conflicts: status.conflict_count(),
            held_back: status.held_back_count(),
            summary: status.to_string(),
        }
    }
}

/// `GET /api/sync`: the storage root's sync, with each project that syncs on its own.
// Written as an intersection: ts-rs would repeat every field of the flattened root.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, TS)]
#[ts(type = "SyncRepo & { projects: Array<SyncRepo> }")]
pub struct SyncAnswer {
    #[serde(flatten)]
    pub root: SyncRepo,
    #[serde(default)]
    pub projects: Vec<SyncRepo>,
}

/// `POST /api/sync/now` when it worked (a failure is an error answer with its
/// reason).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct SyncNowAnswer {
    pub synced: bool,
    /// Changes taken in from the remotes, sent to them, and merge conflicts left in
    /// node notes, over every repository that synced.
    pub received: usize,
    pub sent: usize,
    pub conflicts: usize,
    /// What happened, in words: one line per repository when several synced.
    pub message: String,
}

impl SyncNowAnswer {
    /// The answer for a sync that worked: `total` over every repository, `message`
    /// as the person reads it.
    pub fn new(total: &SyncReport, message: String) -> SyncNowAnswer {
        SyncNowAnswer {
            synced: true,
            received: total.received,
            sent: total.sent,
            conflicts: total.conflicts,
            message,
        }
    }
}
