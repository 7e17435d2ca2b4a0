//! The REST API under `/api` (interfaces.md §4): the graph view's CRUD, the hooks'
//! endpoints, health, sessions, progress and the debt survey.
//!
//! Bodies are compact JSON written exactly as the reference wrote them (key order,
//! `1.0` floats, raw UTF-8); errors are `{"detail": …}` with a message that says what
//! was wrong.

// Handlers answer errors as ready responses; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use crate::app::{AppState, MAX_BODY_BYTES, VERSION};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use kg_core::ambient::{BootstrapRequest, session_bootstrap};
use kg_core::model::{Level, float_value};
use kg_core::namespace::PathError;
use kg_core::pyfmt::{JsonStyle, to_json};
use kg_core::store::{GraphSlot, NodeRead};
use kg_core::{EdgeKey, Store, StoreError, Target};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

type Shared = State<Arc<AppState>>;
type Params = Query<HashMap<String, String>>;

/// A compact JSON response.
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        to_json(body, JsonStyle::WIRE),
    )
        .into_response()
}

pub(crate) fn ok(body: Value) -> Response {
    json_response(StatusCode::OK, &body)
}

pub(crate) fn detail(status: StatusCode, message: impl Into<String>) -> Response {
    json_response(status, &json!({"detail": message.into()}))
}

/// A store error as an HTTP answer: the request's fault → 400 (404 for a missing
/// node), the server's → 500.
pub(crate) fn store_error(e: &StoreError) -> Response {
    let status = match e {
        StoreError::NodeNotFound { .. }
        | StoreError::UnknownSession(_)
        | StoreError::Path(PathError::NoSuchProject(_)) => StatusCode::NOT_FOUND,
        e if e.is_client_error() => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    detail(status, e.to_string())
}

/// One field problem, in the validation-error list shape clients know.
fn field_problem(location: &str, field: &str, message: &str) -> Value {
    json!({"loc": [location, field], "msg": message, "type": "value_error"})
}

fn unprocessable(problems: Vec<Value>) -> Response {
    json_response(
        StatusCode::UNPROCESSABLE_ENTITY,
        &json!({"detail": problems}),
    )
}

/// A JSON object body, refused with a clear message when it is too big, not JSON,
/// or not an object.
#[derive(Debug)]
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/json")
            });
        if !is_json {
            return Err(detail(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Send the body as JSON with Content-Type: application/json",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| match e {
            BytesRejection::FailedToBufferBody(_)
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                detail(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "Request body is larger than the {} MiB limit",
                        MAX_BODY_BYTES >> 20
                    ),
                )
            }
            other => detail(
                other.status(),
                format!("Cannot read the request body: {other}"),
            ),
        })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonObject(map)),
            Ok(_) => Err(unprocessable(vec![field_problem(
                "body",
                "",
                "the body must be a JSON object",
            )])),
            Err(e) => Err(detail(
                StatusCode::BAD_REQUEST,
                format!("Malformed JSON body: {e}"),
            )),
        }
    }
}

/// Typed access to a body's fields, collecting every problem before answering 422.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    problems: Vec<Value>,
}

impl<'a> Fields<'a> {
    fn new(map: &'a Map<String, Value>) -> Self {
        Fields {
            map,
            problems: Vec::new(),
        }
    }

    fn text(&mut self, key: &str, required: bool) -> Option<String> {
        match self.map.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            None | Some(Value::Null) => {
                if required {
                    self.problems
                        .push(field_problem("body", key, "Field required"));
                }
                None
            }
            Some(_) => {
                self.problems
                    .push(field_problem("body", key, "Input should be a valid string"));
                None
            }
        }
    }

    fn strings(&mut self, key: &str) -> Option<Vec<String>> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => Some(
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
            ),
            Some(_) => {
                self.problems.push(field_problem(
                    "body",
                    key,
                    "Input should be a list of strings",
                ));
                None
            }
        }
    }

    fn done(self) -> Result<(), Response> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(unprocessable(self.problems))
        }
    }
}

fn parse_level(text: &str) -> Result<Level, Response> {
    Level::parse(text).map_err(|m| detail(StatusCode::BAD_REQUEST, m))
}

fn param<'a>(params: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    params
        .get(key)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/health", get(health))
        .route("/api/health", get(health))
        .route("/api/graph/read", get(graph_read))
        .route("/api/sessions/register", post(register))
        .route("/api/sessions/{sid}/stats", get(session_stats))
        .route("/api/session_bootstrap", get(bootstrap))
        .route("/api/session_state", get(session_state))
        .route("/api/maintenance_debt", get(maintenance_debt))
        .route("/api/prompt_context", post(prompt_context))
        .route("/api/tool_event", post(tool_event))
        .route("/api/nodes", post(put_node))
        .route(
            "/api/nodes/{level}/{id}",
            get(read_node).delete(delete_node),
        )
        .route("/api/edges", post(put_edge))
        .route("/api/edges/{level}/{from}/{to}/{rel}", delete(delete_edge))
        .route("/api/progress", post(progress_set))
        .route("/api/progress/{task_id}", get(progress_get))
}

async fn health(State(state): Shared) -> Response {
    ok(health_body(&state))
}

pub fn health_body(state: &AppState) -> Value {
    json!({
        "status": "ok",
        "version": VERSION,
        "transport": "streamable-http",
        "active_sessions": state.store.session_count(),
        "loaded_graphs": state.store.loaded_graph_count(),
    })
}

fn graph_json(state: &AppState, slot: &GraphSlot) -> Value {
    let (nodes, edges) = state.store.snapshot(slot);
    json!({
        "nodes": nodes.into_iter().map(Value::Object).collect::<Vec<_>>(),
        "edges": edges.into_iter().map(Value::Object).collect::<Vec<_>>(),
    })
}

async fn graph_read(State(state): Shared, Query(params): Params) -> Response {
    state
        .blocking(move |state, now| {
            let store = &state.store;
            let reload = params
                .get("reload")
                .is_some_and(|r| r == "true" || r == "1");
            // A given session decides the project, even a path-less one.
            let project = match param(&params, "session_id") {
                Some(sid) => store
                    .session_project_slot(Some(sid), now)
                    .unwrap_or_else(|e| {
                        // `e` names the session, cut to a loggable length.
                        log::warn!("graph read: the session's project is unavailable: {e}");
                        None
                    }),
                None => match param(&params, "project_path") {
                    Some(path) => match store.existing_project_slot(path, now) {
                        Ok(slot) => Some(slot),
                        Err(e @ (StoreError::Path(_) | StoreError::Invalid(_))) => {
                            return store_error(&e);
                        }
                        Err(e) => {
                            log::warn!("graph read: project unavailable: {e}");
                            None
                        }
                    },
                    None => None,
                },
            };
            if reload {
                let mut slots = vec![store.user_slot().clone()];
                slots.extend(project.clone());
                for slot in slots {
                    if let Err(e) = store.reload(&slot, now) {
                        return store_error(&e);
                    }
                }
            }
            let empty = json!({"nodes": [], "edges": []});
            ok(json!({
                "user": graph_json(state, store.user_slot()),
                "project": project.map_or(empty, |p| graph_json(state, &p)),
            }))
        })
        .await
}

async fn register(State(state): Shared, Query(params): Params) -> Response {
    state
        .blocking(move |state, now| {
            match state
                .store
                .register_session(param(&params, "project_path"), None, now)
            {
                Ok(sid) => {
                    let start = state.store.session(&sid).map_or(now, |r| r.start_ts);
                    ok(json!({"session_id": sid, "start_ts": float_value(start)}))
                }
                Err(e) => store_error(&e),
            }
        })
        .await
}

async fn session_stats(State(state): Shared, Path(sid): Path<String>) -> Response {
    state
        .blocking(move |state, now| {
            let store = &state.store;
            // A read: an unknown id is answered, never created.
            let record = match store.touch_session(&sid, now) {
                Ok(record) => record,
                Err(e) => return store_error(&e),
            };
            let counts = |slot: &GraphSlot| {
                store.with_graph(
                    slot,
                    |g| json!({"nodes": g.nodes.len(), "edges": g.edges.len()}),
                )
            };
            let mut graphs = Map::new();
            graphs.insert("user".into(), counts(store.user_slot()));
            if let Some(root) = &record.project_path
                && let Ok(slot) = store.existing_project_slot(root, now)
            {
                graphs.insert("project".into(), counts(&slot));
            }
            ok(json!({
                "session_id": sid,
                "duration_seconds": float_value(now - record.start_ts),
                "op_count": record.op_count,
                "project_path": record.project_path,
                "started_at": crate::clock::iso_utc(record.start_ts),
                "graphs": graphs,
            }))
        })
        .await
}

async fn bootstrap(State(state): Shared, Query(params): Params) -> Response {
    let Some(project_path) = param(&params, "project_path").map(str::to_string) else {
        return unprocessable(vec![field_problem(
            "query",
            "project_path",
            "Field required",
        )]);
    };
    let request = BootstrapRequest {
        project_path,
        claude_session_id: param(&params, "claude_session_id").map(str::to_string),
        source: param(&params, "source").map(str::to_string),
        transcript_path: param(&params, "transcript_path").map(str::to_string),
    };
    state
        .blocking(move |state, now| {
            match session_bootstrap(
                &state.store,
                &request,
                &kg_core::wording::preload_header,
                now,
            ) {
                Ok(b) => ok(json!({
                    "session_id": b.session_id,
                    "reused": b.reused,
                    "context": b.context,
                    "text": b.text,
                    "stats": b.stats.map_or(json!({}), |s| json!({
                        "user_active": s.user_active,
                        "project_active": s.project_active,
                        "shown_gists": s.shown_gists,
                    })),
                })),
                Err(e @ StoreError::Path(_)) => store_error(&e),
                Err(e) => {
                    log::error!("bootstrap failed: {e}");
                    detail(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("bootstrap failed: {e}"),
                    )
                }
            }
        })
        .await
}

async fn session_state(State(state): Shared, Query(params): Params) -> Response {
    let Some(path) = param(&params, "project_path").map(str::to_string) else {
        return unprocessable(vec![field_problem(
            "query",
            "project_path",
            "Field required",
        )]);
    };
    state
        .blocking(move |state, _now| {
            let store = &state.store;
            match store
                .find_by_project_path(&path)
                .and_then(|sid| store.session(&sid).map(|r| (sid, r)))
            {
                Some((sid, record)) => ok(json!({
                    "found": true,
                    "session_id": sid,
                    "full_read_done": record.full_read_ts.is_some(),
                    "preloaded_count": record.preloaded_ids.as_ref().map_or(0, Vec::len),
                })),
                None => ok(json!({"found": false})),
            }
        })
        .await
}

async fn maintenance_debt(State(state): Shared) -> Response {
    state
        .blocking(move |state, now| {
            let rows = kg_core::debt::survey(state.store.layout(), now);
            ok(json!({"graphs": rows.iter().map(|r| Value::Object(r.to_object())).collect::<Vec<_>>()}))
        })
        .await
}

async fn prompt_context(State(state): Shared, body: Result<JsonObject, Response>) -> Response {
    hook_answer(
        state,
        body,
        "UserPromptSubmit",
        kg_core::ambient::prompt_context,
    )
    .await
}

async fn tool_event(State(state): Shared, body: Result<JsonObject, Response>) -> Response {
    hook_answer(state, body, "PostToolUse", kg_core::ambient::tool_event).await
}

/// One hook's answer: the decision's text wrapped as that hook's output, or `{}`.
async fn hook_answer(
    state: Arc<AppState>,
    body: Result<JsonObject, Response>,
    hook_event: &'static str,
    decide: fn(&Store, &Value, f64) -> Option<String>,
) -> Response {
    // A hook never breaks a session: anything unusable is simply silence.
    let Ok(JsonObject(payload)) = body else {
        return ok(json!({}));
    };
    state
        .blocking(
            move |state, now| match decide(&state.store, &Value::Object(payload), now) {
                Some(text) => ok(kg_core::ambient::hook_output(hook_event, text)),
                None => ok(json!({})),
            },
        )
        .await
}

/// Resolve `level` + `project_path` / `session_id` addressing shared by the CRUD routes.
fn target<'a>(level: Level, session: Option<&'a str>, project_path: Option<&'a str>) -> Target<'a> {
    Target {
        level,
        session,
        project_path: if level == Level::Project {
            project_path
        } else {
            None
        },
    }
}

async fn put_node(State(state): Shared, body: Result<JsonObject, Response>) -> Response {
    let JsonObject(body) = match body {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut f = Fields::new(&body);
    let level = f.text("level", true);
    let id = f.text("id", true);
    let gist = f.text("gist", true);
    let notes = f.strings("notes");
    let touches = f.strings("touches");
    let session = f.text("session_id", false);
    let project_path = f.text("project_path", false);
    if let Err(r) = f.done() {
        return r;
    }
    let (Some(level), Some(id), Some(gist)) = (level, id, gist) else {
        return detail(StatusCode::BAD_REQUEST, "level, id and gist are required");
    };
    state
        .blocking(move |state, now| {
            // The identifier is checked before the level, as the tools do.
            if let Err(m) = kg_core::model::validate_ident(kg_core::model::IdentKind::NodeId, &id) {
                return detail(StatusCode::BAD_REQUEST, m);
            }
            let level = match parse_level(&level) {
                Ok(l) => l,
                Err(r) => return r,
            };
            let t = target(level, session.as_deref(), project_path.as_deref());
            match state.store.put_node(t, &id, &gist, notes, touches, now) {
                Ok(put) => ok(json!({"node": put.node, "level": put.level.as_str()})),
                Err(e) => store_error(&e),
            }
        })
        .await
}

fn node_read_body(read: &NodeRead) -> Value {
    json!({
        "node": read.node,
        "level": read.level.as_str(),
        "was_archived": read.was_archived,
        "edges": read.edges.iter().cloned().map(Value::Object).collect::<Vec<_>>(),
    })
}

async fn read_node(
    State(state): Shared,
    Path((level, id)): Path<(String, String)>,
    Query(params): Params,
) -> Response {
    let level = match parse_level(&level) {
        Ok(l) => l,
        Err(r) => return r,
    };
    state
        .blocking(move |state, now| {
            let session = param(&params, "session_id");
            let t = target(level, session, param(&params, "project_path"));
            match state.store.read_node(Some(t), session, &id, now) {
                Ok(read) => ok(node_read_body(&read)),
                Err(e) => store_error(&e),
            }
        })
        .await
}

async fn delete_node(
    State(state): Shared,
    Path((level, id)): Path<(String, String)>,
    Query(params): Params,
) -> Response {
    let level = match parse_level(&level) {
        Ok(l) => l,
        Err(r) => return r,
    };
    state
        .blocking(move |state, now| {
            let session = param(&params, "session_id");
            let t = target(level, session, param(&params, "project_path"));
            match state.store.delete_node(Some(t), session, &id, now) {
                Ok((level, n)) => {
                    ok(json!({"deleted": id, "level": level.as_str(), "edges_deleted": n}))
                }
                Err(e) => store_error(&e),
            }
        })
        .await
}

async fn put_edge(State(state): Shared, body: Result<JsonObject, Response>) -> Response {
    let JsonObject(body) = match body {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut f = Fields::new(&body);
    let level = f.text("level", true);
    let from = f.text("from", true);
    let to = f.text("to", true);
    let rel = f.text("rel", true);
    let notes = f.strings("notes");
    let session = f.text("session_id", false);
    let project_path = f.text("project_path", false);
    if let Err(r) = f.done() {
        return r;
    }
    let (Some(level), Some(from), Some(to), Some(rel)) = (level, from, to, rel) else {
        return detail(
            StatusCode::BAD_REQUEST,
            "level, from, to and rel are required",
        );
    };
    state
        .blocking(move |state, now| {
            for (kind, value) in [
                (kg_core::model::IdentKind::EdgeRef, &from),
                (kg_core::model::IdentKind::EdgeRef, &to),
                (kg_core::model::IdentKind::Rel, &rel),
            ] {
                if let Err(m) = kg_core::model::validate_ident(kind, value) {
                    return detail(StatusCode::BAD_REQUEST, m);
                }
            }
            let level = match parse_level(&level) {
                Ok(l) => l,
                Err(r) => return r,
            };
            let t = target(level, session.as_deref(), project_path.as_deref());
            match state.store.put_edge(t, &from, &to, &rel, notes, now) {
                Ok((level, edge)) => ok(json!({"edge": edge, "level": level.as_str()})),
                Err(e) => store_error(&e),
            }
        })
        .await
}

async fn delete_edge(
    State(state): Shared,
    Path((level, from, to, rel)): Path<(String, String, String, String)>,
    Query(params): Params,
) -> Response {
    let level = match parse_level(&level) {
        Ok(l) => l,
        Err(r) => return r,
    };
    state
        .blocking(move |state, now| {
            let session = param(&params, "session_id");
            let t = target(level, session, param(&params, "project_path"));
            match state
                .store
                .delete_edge(Some(t), session, &EdgeKey::new(&from, &to, &rel), now)
            {
                Ok(found) => ok(json!({"deleted": found.is_some(), "level": level.as_str()})),
                Err(e) => store_error(&e),
            }
        })
        .await
}

async fn progress_get(
    State(state): Shared,
    Path(task_id): Path<String>,
    Query(params): Params,
) -> Response {
    let level = if param(&params, "level") == Some("project") {
        Level::Project
    } else {
        Level::User
    };
    state
        .blocking(move |state, now| {
            match state
                .store
                .progress_get(param(&params, "session_id"), &task_id, level, now)
            {
                Ok(value) => ok(value.unwrap_or_else(|| json!({}))),
                Err(e) => store_error(&e),
            }
        })
        .await
}

async fn progress_set(State(state): Shared, body: Result<JsonObject, Response>) -> Response {
    let JsonObject(body) = match body {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut f = Fields::new(&body);
    let task_id = f.text("task_id", true);
    let level = f.text("level", false);
    let session = f.text("session_id", false);
    let value = body.get("state").cloned();
    if value.is_none() {
        f.problems
            .push(field_problem("body", "state", "Field required"));
    }
    if let Err(r) = f.done() {
        return r;
    }
    let (Some(task_id), Some(value)) = (task_id, value) else {
        return detail(StatusCode::BAD_REQUEST, "task_id and state are required");
    };
    let level = if level.as_deref() == Some("project") {
        Level::Project
    } else {
        Level::User
    };
    state
        .blocking(move |state, now| {
            match state
                .store
                .progress_set(session.as_deref(), &task_id, value, level, now)
            {
                Ok(()) => ok(json!({"task_id": task_id, "stored": true})),
                Err(e) => store_error(&e),
            }
        })
        .await
}
