//! `GET /api/view/activity?levels=user,project&project_path=…&limit=…`: the newest
//! changes of the levels on screen, from the store's change log, each with who made it
//! (an agent's session, a graph view, maintenance, or a client without a session) and
//! one plain line saying what happened. The graph view's activity panel reads it.

use crate::payload::{
    self, ActivityAnswer, ActivityEntry, ActivityKind, Author, RecallAnswer, RecallEntry,
};
use crate::rest::{Answer, ApiError, ApiResult, param};
use crate::state::AppState;
use axum::Router;
use axum::extract::{Query, State};
use axum::routing::get;
use kg_core::{Change, ChangeKind, Level, TierMoves};
use std::collections::HashMap;
use std::sync::Arc;

type Shared = State<Arc<AppState>>;
type Params = Query<HashMap<String, String>>;

/// Entries per answer unless `limit` asks for fewer or more.
const DEFAULT_LIMIT: usize = 200;
/// The most entries one answer holds.
const MAX_LIMIT: usize = 2_000;

pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/view/activity", get(activity))
        .route("/api/view/recall", get(recall))
}

/// The `limit` parameter: `default` when absent, else 1 to [`MAX_LIMIT`].
fn limit_of(params: &HashMap<String, String>, default: usize) -> Result<usize, ApiError> {
    match param(params, "limit") {
        None => Ok(default),
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "limit must be a whole number from 1 to {MAX_LIMIT}"
                ))
            }),
    }
}

/// `GET /api/view/recall?project_path=…&limit=…`: the latest recall decisions of the
/// project on screen (every session's without `project_path`), newest first, each
/// with why the memory spoke or stayed silent.
async fn recall(State(state): Shared, Query(params): Params) -> ApiResult {
    let limit = limit_of(&params, 50)?;
    let project = param(&params, "project_path").map(str::to_string);
    state
        .blocking(move |state, _now| {
            let root = match project.as_deref() {
                Some(path) => Some(state.store.resolve_root(path)?),
                None => None,
            };
            let decisions = state
                .store
                .recall_decisions(root.as_deref(), limit)
                .iter()
                .rev()
                .map(RecallEntry::from)
                .collect();
            Ok(Answer(payload::value(&RecallAnswer { decisions })))
        })
        .await
}

async fn activity(State(state): Shared, Query(params): Params) -> ApiResult {
    let limit = limit_of(&params, DEFAULT_LIMIT)?;
    let mut levels = Vec::new();
    for name in param(&params, "levels")
        .unwrap_or("user,project")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        levels.push(Level::parse(name).map_err(ApiError::bad_request)?);
    }
    let project = param(&params, "project_path").map(str::to_string);
    state
        .blocking(move |state, _now| {
            // Project changes carry the resolved root; resolve the asked path the same way.
            let root = match project.as_deref() {
                Some(path) => Some(state.store.resolve_root(path)?),
                None => None,
            };
            let changes = state.store.recent_changes(limit, |c| {
                levels.contains(&c.level)
                    && (c.level == Level::User
                        || (root.is_some() && c.project_path.as_deref() == root.as_deref()))
            });
            let entries = changes.iter().map(|c| entry(c, author(state, c))).collect();
            Ok(Answer(payload::value(&ActivityAnswer { entries })))
        })
        .await
}

/// Who made a change. A change that arrived through sync is another machine's; a
/// session the registry knows is an agent's; an id minted for a
/// connection is a graph view's (its steps carry it); no session at all is maintenance
/// for tier moves and verdicts, else a client that called the REST API without one.
fn author(state: &AppState, change: &Change) -> Author {
    match change.source_session.as_deref() {
        Some(source) if kg_core::sync_origin(source).is_some() => Author::Sync,
        Some(sid) if state.ws.minted_for_connection(sid) => Author::View,
        Some(_) => Author::Agent,
        None => match change.kind {
            ChangeKind::StepUndone { .. } => Author::View,
            ChangeKind::TiersMoved(_)
            | ChangeKind::DebtChanged { .. }
            | ChangeKind::Quarantined { .. } => Author::Maintenance,
            _ => Author::Client,
        },
    }
}

fn entry(change: &Change, author: Author) -> ActivityEntry<'_> {
    let node_id = |node: &'_ kg_core::Object| -> String {
        node.get("id")
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string()
    };
    let (kind, ids, summary): (ActivityKind, Vec<String>, String) = match &change.kind {
        ChangeKind::NodeUpdated { node } => {
            let id = node_id(node);
            (
                ActivityKind::NodeUpdated,
                vec![id.clone()],
                format!("wrote {id}"),
            )
        }
        ChangeKind::EdgeUpdated { edge } => {
            let text = |k: &str| edge.get(k).and_then(|v| v.as_str()).unwrap_or("?");
            let (from, to, rel) = (text("from"), text("to"), text("rel"));
            (
                ActivityKind::EdgeUpdated,
                vec![from.to_string(), to.to_string()],
                format!("linked {from} —{rel}→ {to}"),
            )
        }
        ChangeKind::NodeRenamed { old_id, node } => {
            let id = node_id(node);
            (
                ActivityKind::NodeRenamed,
                vec![id.clone(), old_id.clone()],
                format!("renamed {old_id} to {id}"),
            )
        }
        ChangeKind::NodeDeleted { id } => (
            ActivityKind::NodeDeleted,
            vec![id.clone()],
            format!("deleted {id}"),
        ),
        ChangeKind::EdgeDeleted { key } => (
            ActivityKind::EdgeDeleted,
            vec![key.from().to_string(), key.to().to_string()],
            format!("unlinked {} —{}→ {}", key.from(), key.rel(), key.to()),
        ),
        ChangeKind::NodeRecalled { node, rescued } => {
            let id = node_id(node);
            let mut summary = format!("read {id}, which came back to the active graph");
            if !rescued.is_empty() {
                summary.push_str(&format!(
                    "; {} orphaned neighbour{} returned to the archive",
                    rescued.len(),
                    plural(rescued.len())
                ));
            }
            let mut ids = vec![id];
            ids.extend(rescued.iter().cloned());
            (ActivityKind::NodeRecalled, ids, summary)
        }
        ChangeKind::TiersMoved(moves) => (
            ActivityKind::TiersMoved,
            moved_ids(moves),
            moves_summary(moves),
        ),
        ChangeKind::NodeLiked { id } => (
            ActivityKind::NodeLiked,
            vec![id.clone()],
            format!("marked {id} useful"),
        ),
        ChangeKind::ProgressSaved { task_id } => (
            ActivityKind::ProgressSaved,
            Vec::new(),
            format!("saved progress of task {task_id}"),
        ),
        ChangeKind::StepUndone { nodes } => (
            ActivityKind::StepUndone,
            nodes.clone(),
            format!(
                "undid a step ({} node{} restored)",
                nodes.len(),
                plural(nodes.len())
            ),
        ),
        ChangeKind::DebtChanged { from, to, .. } => (
            ActivityKind::DebtChanged,
            Vec::new(),
            match from {
                Some(from) => format!("maintenance debt went from {from} to {to}"),
                None => format!("maintenance debt is {to}"),
            },
        ),
        ChangeKind::Quarantined {
            moved_to,
            recovered_from_prev,
            ..
        } => (
            ActivityKind::Quarantined,
            Vec::new(),
            format!(
                "the graph file did not parse: moved it to {} and {}",
                moved_to.display(),
                if *recovered_from_prev {
                    "loaded the backup (.prev)"
                } else {
                    "started the graph empty"
                }
            ),
        ),
    };
    ActivityEntry {
        seq: change.seq,
        ts: change.ts,
        level: change.level.into(),
        project_path: change.project_path.as_deref(),
        author,
        // A synced change names its origin, not a session.
        session: change
            .source_session
            .as_deref()
            .filter(|source| kg_core::sync_origin(source).is_none()),
        origin: change
            .source_session
            .as_deref()
            .and_then(kg_core::sync_origin),
        kind,
        ids,
        summary,
    }
}

fn moved_ids(moves: &TierMoves) -> Vec<String> {
    [
        &moves.archived,
        &moves.restored,
        &moves.orphaned,
        &moves.deleted,
    ]
    .into_iter()
    .flatten()
    .cloned()
    .collect()
}

/// "archived 3, restored 1 (over budget)".
fn moves_summary(moves: &TierMoves) -> String {
    let parts: Vec<String> = [
        ("archived", moves.archived.len()),
        ("restored", moves.restored.len()),
        ("orphaned", moves.orphaned.len()),
        ("deleted for good", moves.deleted.len()),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(verb, n)| format!("{verb} {n} node{}", plural(n)))
    .collect();
    let what = if parts.is_empty() {
        "moved no node".to_string()
    } else {
        parts.join(", ")
    };
    if moves.reason.is_empty() {
        what
    } else {
        format!("{what} ({})", moves.reason)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
