//! The graph view's steps: `POST /api/view/step` previews or does a list of actions
//! on one graph (promote, archive, write a node, delete one) through
//! `Store::preview` / `Store::perform`, one code path, and `POST /api/view/undo`
//! takes the last step back, whatever the maintenance passes moved with it.

use crate::payload::{self, StepAnswer, StepBody, UndoAnswer, UndoBody};
use crate::rest::{Answer, ApiError, ApiResult, JsonBody, Shared, parse_level};
use crate::state::AppState;
use crate::view::slot_of;
use axum::Router;
use axum::extract::State;
use axum::routing::post;
use kg_core::{Action, Target};
use std::sync::Arc;

/// Actions one step may hold: a bulk selection of a whole level stays well inside.
const MAX_ACTIONS: usize = 1_000;

pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/view/step", post(step))
        .route("/api/view/undo", post(undo))
}

async fn step(State(state): Shared, JsonBody(body): JsonBody<StepBody>) -> ApiResult {
    let level = parse_level(&body.level)?;
    if body.actions.is_empty() {
        return Err(ApiError::bad_request("A step needs at least one action."));
    }
    if body.actions.len() > MAX_ACTIONS {
        return Err(ApiError::bad_request(format!(
            "A step holds at most {MAX_ACTIONS} actions; this one has {}.",
            body.actions.len()
        )));
    }
    let actions: Vec<Action> = body.actions.into_iter().map(Action::from).collect();
    let dry_run = body.dry_run;
    state
        .blocking(move |state, now| {
            let slot = slot_of(state, level, body.project_path.as_deref(), now)?;
            let target = Target {
                level,
                session: body.session_id.as_deref(),
                project_path: slot.project_root(),
            };
            let outcome = if dry_run {
                state.store.preview(target, &actions, now)?
            } else {
                state.store.perform(target, &actions, now)?
            };
            Ok(Answer(payload::value(&StepAnswer::new(
                level, dry_run, &outcome,
            ))))
        })
        .await
}

async fn undo(State(state): Shared, JsonBody(body): JsonBody<UndoBody>) -> ApiResult {
    let level = parse_level(&body.level)?;
    state
        .blocking(move |state, now| {
            let slot = slot_of(state, level, body.project_path.as_deref(), now)?;
            let target = Target {
                level,
                session: None,
                project_path: slot.project_root(),
            };
            let undone = state.store.undo(target, now)?;
            Ok(Answer(payload::value(&UndoAnswer {
                level: level.into(),
                nodes: undone.nodes,
                undo_steps: undone.undo_steps,
            })))
        })
        .await
}
