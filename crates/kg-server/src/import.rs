//! `POST /api/import`: the running server's door for `kg-memory import`. The whole
//! import arrives in one request and goes to the store as one batch
//! (`Store::import`): checked as a whole, applied under the graph's lock, one
//! maintenance pass, one save. `dry_run` answers what it would do, from the same code.

use crate::rest::{Answer, ApiError, ApiResult, JsonBody, Shared, parse_level};
use crate::state::AppState;
use crate::view::slot_of;
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::post;
use kg_core::{BatchEdge, BatchNode, BatchOutcome, Target};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// Largest file read: a memory file this big is a dump, not a memory, and every node
/// of it would be saved one by one.
pub const MAX_IMPORT_BYTES: u64 = 4 * 1024 * 1024;
/// Most nodes one import creates. The active part of a level holds a few hundred
/// gists; beyond this, most of an import would only ever sit in the archive.
pub const MAX_IMPORT_NODES: usize = 2_000;
/// Most edges one import creates.
pub const MAX_IMPORT_EDGES: usize = 5_000;
/// The largest request body: an import file of [`MAX_IMPORT_BYTES`], with room for
/// JSON's escapes. Every other route keeps the server's 1 MiB limit.
pub const IMPORT_BODY_BYTES: usize = 4 * MAX_IMPORT_BYTES as usize;

pub fn router() -> Router<Arc<AppState>> {
    Router::new().route(
        "/api/import",
        post(import).layer(DefaultBodyLimit::max(IMPORT_BODY_BYTES)),
    )
}

/// `{level, project_path?, dry_run?, nodes: [{id, gist, notes?}], edges: [{from, to, rel}]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportBody {
    level: String,
    #[serde(default)]
    project_path: Option<String>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    nodes: Vec<NodeBody>,
    #[serde(default)]
    edges: Vec<EdgeBody>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeBody {
    id: String,
    gist: String,
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EdgeBody {
    from: String,
    to: String,
    rel: String,
}

async fn import(State(state): Shared, body: Result<JsonBody<ImportBody>, ApiError>) -> ApiResult {
    let JsonBody(body) = body.map_err(|e| match e {
        ApiError::Detail(StatusCode::PAYLOAD_TOO_LARGE, _) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "An import request is at most {} MiB; split the file and import the parts that matter.",
                IMPORT_BODY_BYTES >> 20
            ),
        ),
        other => other,
    })?;
    let level = parse_level(&body.level)?;
    if body.nodes.len() > MAX_IMPORT_NODES || body.edges.len() > MAX_IMPORT_EDGES {
        return Err(ApiError::bad_request(format!(
            "One import creates at most {MAX_IMPORT_NODES} nodes and {MAX_IMPORT_EDGES} edges; this one asks for {} and {}.",
            body.nodes.len(),
            body.edges.len()
        )));
    }
    let nodes: Vec<BatchNode> = body
        .nodes
        .into_iter()
        .map(|n| BatchNode {
            id: n.id,
            gist: n.gist,
            notes: n.notes,
        })
        .collect();
    let edges: Vec<BatchEdge> = body
        .edges
        .into_iter()
        .map(|e| BatchEdge {
            from: e.from,
            to: e.to,
            rel: e.rel,
        })
        .collect();
    let dry_run = body.dry_run;
    state
        .blocking(move |state, now| {
            let slot = slot_of(state, level, body.project_path.as_deref(), now)?;
            let target = Target {
                level,
                session: None,
                project_path: slot.project_root(),
            };
            let outcome = state.store.import(target, &nodes, &edges, dry_run, now)?;
            Ok(Answer(answer(level.as_str(), dry_run, &outcome)))
        })
        .await
}

/// The answer's JSON; [`outcome_of`] reads it back.
fn answer(level: &str, dry_run: bool, o: &BatchOutcome) -> Value {
    json!({
        "level": level,
        "dry_run": dry_run,
        "created": o.created,
        "kept": o.kept,
        "edges_created": o.edges_created,
        "edges_kept": o.edges_kept,
        "archived": o.rebalanced.archived,
        "restored": o.rebalanced.restored,
        "orphaned": o.rebalanced.orphaned,
        "archived_existing": o.archived_existing,
        "chars_before": o.chars_before,
        "chars_after": o.chars_after,
        "budget": o.budget,
        "counts": {"active": o.counts.0, "archived": o.counts.1, "orphaned": o.counts.2},
    })
}
