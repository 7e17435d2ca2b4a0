//! The REST API under `/api` (interfaces.md §4): the graph view's CRUD, the hooks'
//! endpoints, health, sessions, progress and the debt survey.
//!
//! Bodies are compact JSON written exactly as the reference wrote them (key order,
//! `1.0` floats, raw UTF-8); errors are `{"detail": …}` with a message that says what
//! was wrong ([`ApiError`]). Request bodies are serde structs of this file, checked
//! here and converted to store calls.

use crate::hook_json;
use crate::payload::{self, EdgeDeleteAnswer, EdgePutAnswer, NodeDeleteAnswer, NodePutAnswer};
use crate::state::{AppState, VERSION};
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{delete, get, post};
use kg_client::CLIENT_HEADER;
use kg_core::neediest_first;
use kg_core::{BootstrapRequest, session_bootstrap};
use kg_core::{EdgeKey, StoreError, Target, WriteCheck};
use kg_core::{GraphSlot, NodeRead};
use kg_core::{Level, float_value};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

mod answer;
mod body;

use answer::missing_query;
pub use answer::{Answer, ApiError, ApiResult, FieldProblem};
pub(crate) use body::JsonBody;
use body::{Field, Problems, present};

pub(crate) type Shared = State<Arc<AppState>>;
type Params = Query<HashMap<String, String>>;

/// `POST /api/nodes`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PutNodeBody {
    level: Field<String>,
    id: Field<String>,
    gist: Field<String>,
    notes: Field<Vec<String>>,
    touches: Field<Vec<String>>,
    session_id: Field<String>,
    project_path: Field<String>,
    /// The `_written.ts` of the node the writer loaded (`0` for a node without one,
    /// or a new node): the write is refused (409) when it is no longer the current.
    written_ts: Field<f64>,
    /// `{"locked": true}` locks the node, `{"locked": null}` (or `false`) unlocks it.
    #[serde(deserialize_with = "present")]
    fields: Option<Value>,
}

/// `POST /api/nodes/rename`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RenameBody {
    old_id: Field<String>,
    new_id: Field<String>,
    level: Field<String>,
    session_id: Field<String>,
    project_path: Field<String>,
}

/// `POST /api/secrets/allow`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AllowSecretBody {
    finding: Field<String>,
}

/// `POST /api/edges`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PutEdgeBody {
    level: Field<String>,
    from: Field<String>,
    to: Field<String>,
    rel: Field<String>,
    notes: Field<Vec<String>>,
    session_id: Field<String>,
    project_path: Field<String>,
}

/// `POST /api/progress`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ProgressBody {
    task_id: Field<String>,
    level: Field<String>,
    session_id: Field<String>,
    #[serde(deserialize_with = "present")]
    state: Option<Value>,
}

pub(crate) fn parse_level(text: &str) -> Result<Level, ApiError> {
    Level::parse(text).map_err(ApiError::bad_request)
}

/// A query parameter; an empty one counts as not given.
pub(crate) fn param<'a>(params: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    params
        .get(key)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/health", get(health))
        .route("/api/health", get(health))
        .route("/api/server", get(server_info))
        .route("/api/graph/read", get(graph_read))
        .route("/api/sessions/register", post(register))
        .route("/api/sessions/{sid}/stats", get(session_stats))
        .route("/api/session_bootstrap", get(bootstrap))
        .route("/api/session_state", get(session_state))
        .route("/api/maintenance_debt", get(maintenance_debt))
        .route("/api/project_of", get(project_of))
        .route("/api/prompt_context", post(prompt_context))
        .route("/api/tool_event", post(tool_event))
        .route("/api/nodes", post(put_node))
        .route("/api/nodes/rename", post(rename_node))
        .route(
            "/api/nodes/{level}/{id}",
            get(read_node).delete(delete_node),
        )
        .route("/api/edges", post(put_edge))
        .route("/api/edges/{level}/{from}/{to}/{rel}", delete(delete_edge))
        .route("/api/progress", post(progress_set))
        .route("/api/progress/{task_id}", get(progress_get))
        .route("/api/secrets/allow", post(allow_secret))
}

/// Refuse a state-changing request a browser sent without [`CLIENT_HEADER`]: a page on
/// another site can make a browser send a plain GET or a form POST (an `<img>`, a
/// `no-cors` fetch), and an older browser marks it with no `Sec-Fetch-Site` for the
/// cross-site guard to see. A browser always names itself (`User-Agent: Mozilla/…`,
/// which a page cannot change); clients that are not browsers pass as before.
fn refuse_simple_browser_request(headers: &HeaderMap) -> Result<(), ApiError> {
    let from_browser = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|agent| agent.starts_with("Mozilla/"));
    if from_browser && !headers.contains_key(CLIENT_HEADER) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "This route starts or changes sessions: a browser must send it with the {CLIENT_HEADER} header, which a page of another site cannot add"
            ),
        ));
    }
    Ok(())
}

/// `POST /api/secrets/allow` `{"finding": "<16 hex digits>"}`: a person (the graph view
/// asks them) says the text behind a credential refusal is no secret, so writes that
/// hold it are accepted on this machine. A JSON body: a page on another site cannot
/// send one without a preflight, which is never answered.
async fn allow_secret(
    State(state): Shared,
    JsonBody(body): JsonBody<AllowSecretBody>,
) -> ApiResult {
    let mut problems = Problems::default();
    let finding = problems.required("finding", body.finding);
    problems.finish()?;
    state
        .blocking(move |state, _| {
            state.store.allow_secret(&finding)?;
            log::info!("a credential finding was allowed as no secret: {finding}");
            Ok(Answer(json!({"allowed": finding})))
        })
        .await
}

async fn health(State(state): Shared) -> Answer {
    Answer(health_body(&state))
}

/// `GET /api/server`: the storage root this server serves, so that a client set up
/// for another one (a hook, the stdio bridge, `kg-memory status`) can tell it is not
/// talking to its own memory. (`/health` keeps the reference's exact shape.)
async fn server_info(State(state): Shared, Query(params): Params) -> Answer {
    let root = &state.settings.storage_root;
    // A client's challenge is answered with the root's token (see
    // root_lock::serves_another_root); a long one is no challenge of ours.
    let proof = param(&params, "challenge")
        .filter(|c| c.len() <= 128)
        .and_then(|challenge| {
            crate::root_lock::root_token(root)
                .ok()
                .map(|token| crate::root_lock::proof(&token, challenge))
        });
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
    Answer(json!({
        "proof": proof,
        "storage_root": root.to_string_lossy(),
        "pid": std::process::id(),
        "version": VERSION,
        // Why permanent deletes wait (a clock jump, a clock that disagrees with the
        // memory's stamps); absent when the clock is trusted.
        "clock_doubt": state.store.clock_doubt(),
    }))
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

async fn graph_read(State(state): Shared, Query(params): Params) -> ApiResult {
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
                            return Err(e.into());
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
                    store.reload(&slot, now)?;
                }
            }
            let empty = json!({"nodes": [], "edges": []});
            Ok(Answer(json!({
                "user": graph_json(state, store.user_slot()),
                "project": project.map_or(empty, |p| graph_json(state, &p)),
            })))
        })
        .await
}

async fn register(State(state): Shared, headers: HeaderMap, Query(params): Params) -> ApiResult {
    refuse_simple_browser_request(&headers)?;
    state
        .blocking(move |state, now| {
            let sid = state
                .store
                .register_session(param(&params, "project_path"), None, now)?;
            let start = state.store.session(&sid).map_or(now, |r| r.start_ts);
            Ok(Answer(
                json!({"session_id": sid, "start_ts": float_value(start)}),
            ))
        })
        .await
}

async fn session_stats(State(state): Shared, Path(sid): Path<String>) -> ApiResult {
    state
        .blocking(move |state, now| {
            let store = &state.store;
            // A read: an unknown id is answered, never created.
            let record = store.touch_session(&sid, now)?;
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
            Ok(Answer(json!({
                "session_id": sid,
                "duration_seconds": float_value(now - record.start_ts),
                "op_count": record.op_count,
                "project_path": record.project_path,
                "started_at": crate::clock::iso_utc(record.start_ts),
                "graphs": graphs,
            })))
        })
        .await
}

async fn bootstrap(State(state): Shared, headers: HeaderMap, Query(params): Params) -> ApiResult {
    refuse_simple_browser_request(&headers)?;
    let project_path = param(&params, "project_path")
        .map(str::to_string)
        .ok_or_else(|| missing_query("project_path"))?;
    let request = BootstrapRequest {
        project_path,
        claude_session_id: param(&params, "claude_session_id").map(str::to_string),
        source: param(&params, "source").map(str::to_string),
        transcript_path: param(&params, "transcript_path").map(str::to_string),
    };
    state
        .blocking(move |state, now| {
            let b = session_bootstrap(
                &state.store,
                &request,
                kg_core::PreloadHeader::Standard,
                now,
            )
            .map_err(|e| match e {
                e @ StoreError::Path(_) => ApiError::from(e),
                e => {
                    log::error!("bootstrap failed: {e}");
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("bootstrap failed: {e}"),
                    )
                }
            })?;
            let mut answer = json!({
                "session_id": b.session_id,
                "reused": b.reused,
                "context": b.context,
                "text": b.text,
                "stats": b.stats.map_or(json!({}), |s| json!({
                    "user_active": s.user_active,
                    "project_active": s.project_active,
                    "shown_gists": s.shown_gists,
                })),
            });
            // Only when the folder could belong to more than one project (never under
            // the reference policy): the hook shows it to the user too.
            if let Some(notice) = b.project_notice {
                answer["project_notice"] = Value::String(notice);
            }
            Ok(Answer(answer))
        })
        .await
}

async fn session_state(State(state): Shared, Query(params): Params) -> ApiResult {
    let path = param(&params, "project_path")
        .map(str::to_string)
        .ok_or_else(|| missing_query("project_path"))?;
    state
        .blocking(move |state, _now| {
            let store = &state.store;
            let found = store
                .find_by_project_path(&path)
                .and_then(|sid| store.session(&sid).map(|r| (sid, r)));
            Ok(Answer(match found {
                Some((sid, record)) => json!({
                    "found": true,
                    "session_id": sid,
                    "full_read_done": record.full_read_ts.is_some(),
                    "preloaded_count": record.preloaded_ids.as_ref().map_or(0, Vec::len),
                }),
                None => json!({"found": false}),
            }))
        })
        .await
}

/// `GET /api/project_of?cwd=<folder>`: the project a session started in that folder
/// would use, changing nothing: `{folder, root, graph, has_graph, alternatives:
/// [{folder, kind}], note, notice}` (`graph` is the storage folder of the root's graph,
/// `null` while it has none; `note` and `notice` what the session start would tell the
/// model and the person, `null` when the choice is clear).
async fn project_of(State(state): Shared, Query(params): Params) -> ApiResult {
    let cwd = param(&params, "cwd")
        .map(str::to_string)
        .ok_or_else(|| missing_query("cwd"))?;
    state
        .blocking(move |state, _now| {
            let choice = state.store.project_of(&cwd)?;
            let graph = state.store.layout().stored_slug(&choice.root);
            let alternatives: Vec<Value> = choice
                .alternatives
                .iter()
                .map(|a| {
                    json!({
                        "folder": a.folder.to_string_lossy(),
                        "kind": a.kind.as_str(),
                    })
                })
                .collect();
            Ok(Answer(json!({
                "folder": choice.folder,
                "root": choice.root,
                "graph": graph,
                "has_graph": choice.has_graph,
                "alternatives": alternatives,
                "note": choice.note(),
                "notice": choice.notice(),
            })))
        })
        .await
}

/// Stale touches the survey lists per graph at most (its debt counts them all).
const SURVEY_STALE_AT_MOST: usize = 100;

async fn maintenance_debt(State(state): Shared) -> Answer {
    state
        .blocking(move |state, now| {
            // The disk survey (interfaces.md §8): file figures only, neediest first.
            // Stale touches looked up now: someone asked.
            let catalogue = state.store.catalogue_checked(now, true);
            let rows: Vec<Value> = neediest_first(&catalogue, |g| g.file_debt.as_ref())
                .into_iter()
                .map(|(g, debt)| {
                    let mut row = Map::new();
                    row.insert("graph".into(), Value::String(g.name.clone()));
                    row.insert("level".into(), Value::String(g.level.as_str().into()));
                    if g.level == Level::Project {
                        let path = g.project_path.clone().map_or(Value::Null, Value::String);
                        row.insert("project_path".into(), path);
                    }
                    row.insert("debt".into(), Value::Object(debt.to_object()));
                    // Our policy's stale touches, listed (the counts are in `debt`).
                    if !g.stale_touches.is_empty() {
                        let root = g.project_path.as_deref().map(std::path::Path::new);
                        let stale = g.stale_touches.iter().take(SURVEY_STALE_AT_MOST).cloned();
                        let listed: Vec<Value> = state
                            .stale_offers(stale.collect(), root)
                            .into_iter()
                            .map(
                                |(s, to)| json!({"node": s.id, "touch": s.touch, "renamed_to": to}),
                            )
                            .collect();
                        row.insert("stale_touches".into(), Value::Array(listed));
                    }
                    Value::Object(row)
                })
                .collect();
            let mut survey = json!({ "graphs": rows });
            // Credentials the memory already holds, for a person to remove before
            // sync carries them (only when there are some: the survey's format has
            // no such field).
            let credentials: Vec<Value> = state
                .store
                .stored_credentials()
                .into_iter()
                .map(|c| json!({"graph": c.graph, "id": c.id, "field": c.field, "kind": c.kind}))
                .collect();
            if !credentials.is_empty() {
                survey["suspected_credentials"] = Value::Array(credentials);
            }
            Answer(survey)
        })
        .await
}

/// A hook's payload: Claude Code's hook input, read into kg-core's events in
/// [`hook_json`].
type HookBody = Result<JsonBody<Map<String, Value>>, ApiError>;

async fn prompt_context(State(state): Shared, body: HookBody) -> Answer {
    // A hook never breaks a session: anything unusable is simply silence.
    let Ok(JsonBody(payload)) = body else {
        return Answer(json!({}));
    };
    state
        .blocking(move |state, now| {
            let reply =
                kg_core::prompt_reply(&state.store, &hook_json::prompt_event(&payload), now);
            Answer(hook_json::prompt_answer(reply))
        })
        .await
}

/// What a tool call brings back: the memory about the files it touched (file recall),
/// else a capture nudge, wrapped as the hook's output; `{}` when there is nothing.
async fn tool_event(State(state): Shared, body: HookBody) -> Answer {
    // A hook never breaks a session: anything unusable is simply silence.
    let Ok(JsonBody(payload)) = body else {
        return Answer(json!({}));
    };
    state
        .blocking(move |state, now| {
            let store = &state.store;
            let touched = crate::agent_files::touched(&payload, store.home());
            let used = hook_json::tool_use(&payload);
            let harness_session = used.harness_session.filter(|s| !s.is_empty());
            let recall = kg_core::file_recall(
                store,
                &kg_core::FileTouch {
                    harness_session,
                    cwd: used.cwd.unwrap_or(""),
                    tool: used.tool_name.unwrap_or(""),
                    files: &touched.files,
                },
                now,
            );
            // A reply carries recall or a nudge, never both; a file the memory knows
            // needs no nudge to capture it.
            // Other sessions' writes that bear on this one come last (ours only).
            let news = kg_core::hook_news(store, harness_session, used.cwd.unwrap_or(""), now);
            let text = match recall {
                kg_core::FileRecall {
                    text: Some(text), ..
                } => Some(text),
                kg_core::FileRecall { covered: true, .. } => None,
                _ => kg_core::tool_event(store, &used, now),
            };
            let text = match (text, news) {
                (Some(text), Some(news)) => Some(format!("{text}\n\n{news}")),
                (text, news) => text.or(news),
            };
            Answer(hook_json::answer(hook_json::POST_TOOL_USE, text))
        })
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

async fn put_node(State(state): Shared, JsonBody(body): JsonBody<PutNodeBody>) -> ApiResult {
    let mut problems = Problems::default();
    let level = problems.required("level", body.level);
    let id = problems.required("id", body.id);
    let gist = problems.required("gist", body.gist);
    let notes = problems.optional("notes", body.notes);
    let touches = problems.optional("touches", body.touches);
    let session = problems.optional("session_id", body.session_id);
    let project_path = problems.optional("project_path", body.project_path);
    let lock = match body.fields {
        None | Some(Value::Null) => None,
        Some(Value::Object(fields)) => match fields.get("locked") {
            None => None,
            Some(Value::Bool(locked)) => Some(*locked),
            Some(Value::Null) => Some(false),
            Some(_) => {
                problems.push("fields", "locked must be true, false or null");
                None
            }
        },
        Some(_) => {
            problems.push("fields", "Input should be an object");
            None
        }
    };
    let check = match problems.optional("written_ts", body.written_ts) {
        Some(loaded) => WriteCheck::Based(loaded),
        None => WriteCheck::Unchecked,
    };
    problems.finish()?;
    state
        .blocking(move |state, now| {
            // The identifier is checked before the level, as the tools do.
            kg_core::validate_ident(kg_core::IdentKind::NodeId, &id)
                .map_err(ApiError::bad_request)?;
            let level = parse_level(&level)?;
            let t = target(level, session.as_deref(), project_path.as_deref());
            let mut put = state
                .store
                .put_node_checked(t, &id, &gist, notes, touches, check, now)?;
            if let Some(locked) = lock {
                put.node = state.store.set_locked(t, &id, locked, now)?;
            }
            Ok(Answer(payload::value(&NodePutAnswer {
                node: put.node,
                level: put.level.into(),
            })))
        })
        .await
}

/// `POST /api/nodes/rename {old_id, new_id, level?, session_id?, project_path?}`: a
/// person's rename (a locked node too).
async fn rename_node(State(state): Shared, JsonBody(body): JsonBody<RenameBody>) -> ApiResult {
    let mut problems = Problems::default();
    let old_id = problems.required("old_id", body.old_id);
    let new_id = problems.required("new_id", body.new_id);
    let level = problems.optional("level", body.level);
    let session = problems.optional("session_id", body.session_id);
    let project_path = problems.optional("project_path", body.project_path);
    problems.finish()?;
    state
        .blocking(move |state, now| {
            let level = level.as_deref().map(parse_level).transpose()?;
            let t = level.map(|level| target(level, session.as_deref(), project_path.as_deref()));
            let r = state.store.rename_node(
                t,
                session.as_deref(),
                &old_id,
                &new_id,
                kg_core::Actor::Person,
                now,
            )?;
            Ok(Answer(payload::value(&payload::NodeRenameAnswer {
                renamed: payload::Renaming {
                    from: r.from,
                    to: r.to,
                },
                level: r.level.into(),
                edges_rewired: r.edges_rewired,
                skipped_graphs: r
                    .skipped
                    .iter()
                    .map(|s| payload::SkippedGraphAnswer {
                        graph: s.graph.clone(),
                        reason: s.reason.as_str(),
                    })
                    .collect(),
                node: r.node,
            })))
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
) -> ApiResult {
    let level = parse_level(&level)?;
    state
        .blocking(move |state, now| {
            let session = param(&params, "session_id");
            let t = target(level, session, param(&params, "project_path"));
            let read = state.store.read_node(Some(t), session, &id, now)?;
            Ok(Answer(node_read_body(&read)))
        })
        .await
}

async fn delete_node(
    State(state): Shared,
    Path((level, id)): Path<(String, String)>,
    Query(params): Params,
) -> ApiResult {
    let level = parse_level(&level)?;
    state
        .blocking(move |state, now| {
            let session = param(&params, "session_id");
            let t = target(level, session, param(&params, "project_path"));
            let (level, n) = state.store.delete_node(Some(t), session, &id, now)?;
            Ok(Answer(payload::value(&NodeDeleteAnswer {
                deleted: id,
                level: level.into(),
                edges_deleted: n,
            })))
        })
        .await
}

async fn put_edge(State(state): Shared, JsonBody(body): JsonBody<PutEdgeBody>) -> ApiResult {
    let mut problems = Problems::default();
    let level = problems.required("level", body.level);
    let from = problems.required("from", body.from);
    let to = problems.required("to", body.to);
    let rel = problems.required("rel", body.rel);
    let notes = problems.optional("notes", body.notes);
    let session = problems.optional("session_id", body.session_id);
    let project_path = problems.optional("project_path", body.project_path);
    problems.finish()?;
    state
        .blocking(move |state, now| {
            for (kind, value) in [
                (kg_core::IdentKind::EdgeRef, &from),
                (kg_core::IdentKind::EdgeRef, &to),
                (kg_core::IdentKind::Rel, &rel),
            ] {
                kg_core::validate_ident(kind, value).map_err(ApiError::bad_request)?;
            }
            let level = parse_level(&level)?;
            let t = target(level, session.as_deref(), project_path.as_deref());
            let (level, edge) = state.store.put_edge(t, &from, &to, &rel, notes, now)?;
            Ok(Answer(payload::value(&EdgePutAnswer {
                edge,
                level: level.into(),
            })))
        })
        .await
}

async fn delete_edge(
    State(state): Shared,
    Path((level, from, to, rel)): Path<(String, String, String, String)>,
    Query(params): Params,
) -> ApiResult {
    let level = parse_level(&level)?;
    state
        .blocking(move |state, now| {
            let session = param(&params, "session_id");
            let t = target(level, session, param(&params, "project_path"));
            let found =
                state
                    .store
                    .delete_edge(Some(t), session, &EdgeKey::new(&from, &to, &rel), now)?;
            Ok(Answer(payload::value(&EdgeDeleteAnswer {
                deleted: found.is_some(),
                level: level.into(),
            })))
        })
        .await
}

async fn progress_get(
    State(state): Shared,
    Path(task_id): Path<String>,
    Query(params): Params,
) -> ApiResult {
    let level = if param(&params, "level") == Some("project") {
        Level::Project
    } else {
        Level::User
    };
    state
        .blocking(move |state, now| {
            let value =
                state
                    .store
                    .progress_get(param(&params, "session_id"), &task_id, level, now)?;
            Ok(Answer(value.unwrap_or_else(|| json!({}))))
        })
        .await
}

async fn progress_set(State(state): Shared, JsonBody(body): JsonBody<ProgressBody>) -> ApiResult {
    let mut problems = Problems::default();
    let task_id = problems.required("task_id", body.task_id);
    let level = problems.optional("level", body.level);
    let session = problems.optional("session_id", body.session_id);
    let value = problems.any("state", body.state);
    problems.finish()?;
    let level = if level.as_deref() == Some("project") {
        Level::Project
    } else {
        Level::User
    };
    state
        .blocking(move |state, now| {
            state
                .store
                .progress_set(session.as_deref(), &task_id, value, level, now)?;
            Ok(Answer(json!({"task_id": task_id, "stored": true})))
        })
        .await
}
