//! Sync in the running server: one sync at a time (the background loop's, or one asked
//! for by hand), each off the async runtime, and its state over REST for the tray, the
//! graph view and `kg-memory sync now` while the server holds the root.
//!
//! - `GET /api/sync`: the sync status (`kg-memory sync status` as JSON): the storage
//!   root's, with each project memory that syncs on its own under `projects`;
//! - `POST /api/sync/now`: sync at once; answers what it did, or why it failed.

use crate::payload::{self, SyncAnswer, SyncNowAnswer, SyncRepo};
use crate::rest::{Answer, ApiError, ApiResult};
use crate::state::AppState;
use crate::sync::{Scope, SyncError, SyncOptions, SyncReport, status, sync_live, synced_scopes};
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use std::sync::Arc;

type Shared = State<Arc<AppState>>;

pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/sync", get(sync_status))
        .route("/api/sync/now", post(sync_now_route))
}

/// What syncing everything that syncs did: in all, and for each repository.
#[derive(Debug, Default)]
pub struct SyncedAll {
    pub total: SyncReport,
    /// Each repository (described as messages name it) and its report.
    pub each: Vec<(String, SyncReport)>,
}

impl std::fmt::Display for SyncedAll {
    /// One repository: its report; several: one line each, so a conflict names its graph.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.each.as_slice() {
            [_] | [] => write!(f, "{}", self.total),
            several => {
                let lines: Vec<String> = several
                    .iter()
                    .map(|(what, report)| format!("{what}: {report}"))
                    .collect();
                write!(f, "{}", lines.join("\n"))
            }
        }
    }
}

/// Sync now everything in the storage root that syncs (the root, and the projects
/// with a remote of their own), waiting for a sync already running to finish first.
/// Every one is tried; the first failure is the answer, after the others ran.
pub async fn sync_now(state: &Arc<AppState>) -> Result<SyncedAll, SyncError> {
    let _one_at_a_time = state.sync_gate.lock().await;
    let driver_exe = match &state.settings.merge_driver {
        Some(exe) => exe.clone(),
        None => std::env::current_exe().unwrap_or_else(|_| "kg-memory".into()),
    };
    state
        .blocking(move |state, now| {
            let root = &state.settings.storage_root;
            let scopes = synced_scopes(root);
            if scopes.is_empty() {
                return Err(SyncError::NotSetUp {
                    what: Scope::storage_root(root).describe(),
                });
            }
            let options = SyncOptions { driver_exe, now };
            let mut synced = SyncedAll::default();
            let mut first_failure = None;
            for scope in &scopes {
                match sync_live(scope, &state.store, &options) {
                    Ok(report) => {
                        synced.total.add(&report);
                        synced.each.push((scope.describe(), report));
                    }
                    Err(e) => {
                        first_failure.get_or_insert(e);
                    }
                }
            }
            first_failure.map_or(Ok(synced), Err)
        })
        .await
}

async fn sync_status(State(state): Shared) -> ApiResult {
    state
        .blocking(|state, _| {
            let root = &state.settings.storage_root;
            let answer = SyncAnswer {
                root: SyncRepo::from(&status(&Scope::storage_root(root))?),
                projects: Scope::projects(root)
                    .iter()
                    .map(|scope| status(scope).map(|s| SyncRepo::from(&s)))
                    .collect::<Result<_, _>>()?,
            };
            Ok(Answer(payload::value(&answer)))
        })
        .await
        .map_err(|e: SyncError| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

async fn sync_now_route(State(state): Shared) -> ApiResult {
    match sync_now(&state).await {
        Ok(synced) => Ok(Answer(payload::value(&SyncNowAnswer::new(
            &synced.total,
            synced.to_string(),
        )))),
        Err(e @ SyncError::NotSetUp { .. }) => {
            Err(ApiError::new(StatusCode::CONFLICT, e.to_string()))
        }
        // The remote's fault or the network's, not this server's: the answer says
        // what happened, and nothing was lost.
        Err(e) => {
            log::warn!("sync (asked for): {e}");
            Err(ApiError::new(StatusCode::BAD_GATEWAY, e.to_string()))
        }
    }
}
