//! The memory tools over MCP (rmcp), stateless: every POST is answered on its
//! own, sessions are the application-level KG session ids inside the arguments.
//!
//! Arguments are checked against each tool's JSON Schema here, with the messages
//! clients already know (`'gist' is a required property`), then converted to
//! kg-core's own argument types: wire types stop at this file.

use crate::state::{AppState, MAX_BODY_BYTES, VERSION};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kg_core::{EdgeKey, Level, Policy};
use kg_core::{PutEdgeArgs, PutNodeArgs, ReadArgs, ToolText};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Map, Value, json};
use std::sync::{Arc, OnceLock};

/// The MCP handler: one per request (stateless), all sharing the app state.
#[derive(Clone, Debug)]
pub struct KgMcp {
    state: Arc<AppState>,
}

/// The streamable-HTTP service mounted at `/`.
pub fn service(state: Arc<AppState>) -> StreamableHttpService<KgMcp, NeverSessionManager> {
    let mut hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".into(),
        "::1".into(),
        "[::1]".into(),
    ];
    hosts.push(state.settings.host.clone());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(hosts)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(state.shutdown.child_token());
    let factory_state = state.clone();
    StreamableHttpService::new(
        move || {
            Ok(KgMcp {
                state: factory_state.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// Answer malformed JSON-RPC with a JSON-RPC error (HTTP 400) before rmcp sees it,
/// so a client learns what was wrong instead of a bare status.
pub async fn screen(request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                &format!(
                    "Request body is larger than the {} MiB limit",
                    MAX_BODY_BYTES >> 20
                ),
            );
        }
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                -32700,
                &format!("Parse error: {e}"),
            );
        }
        Ok(message) => {
            if let Some(problem) = jsonrpc_problem(&message) {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    &format!("Invalid Request: {problem}"),
                );
            }
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// What makes a value not a JSON-RPC 2.0 message, if anything.
fn jsonrpc_problem(message: &Value) -> Option<&'static str> {
    let Value::Object(m) = message else {
        return Some("send one JSON-RPC 2.0 message as a JSON object");
    };
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some("\"jsonrpc\" must be \"2.0\"");
    }
    match m.get("method") {
        Some(Value::String(_)) => None,
        Some(_) => Some("\"method\" must be a string"),
        None if m.contains_key("result") || m.contains_key("error") => None,
        None => Some("a request needs a \"method\""),
    }
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A tool's name, description and argument schema.
struct ToolSpec {
    name: &'static str,
    description: &'static str,
    schema: Value,
    /// Offered under our policy only (the reference has no such tool).
    ours_only: bool,
}

fn string() -> Value {
    json!({"type": "string"})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn level() -> Value {
    json!({"type": "string", "enum": ["user", "project"]})
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// What `kg_read` says of itself under both policies.
macro_rules! read_description {
    () => {
        "Read persistent memory. First call of a session: pass cwd (the project root); \
        it returns both graphs (user and project) and a session_id to pass to every later kg_* call. \
        With session_id alone it renders the whole active graph again. With ids (preferred, batched) \
        or id it reads nodes in full — notes, touches, every edge — and brings archived nodes back \
        to active. level limits id lookups to one graph."
    };
}

/// The tools offered under `policy`, in the order clients list them: the
/// reference's nine, and under our policy ours among them, with `kg_read`'s paging.
fn specs(policy: Policy) -> &'static [ToolSpec] {
    static OURS: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    static REFERENCE: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    let cell = match policy {
        Policy::Ours => &OURS,
        Policy::Reference => &REFERENCE,
    };
    cell.get_or_init(|| {
        let mut specs = all_specs(policy);
        specs.retain(|s| !s.ours_only || policy == Policy::Ours);
        specs
    })
}

fn all_specs(policy: Policy) -> Vec<ToolSpec> {
    let ours = policy == Policy::Ours;
    let mut read_properties = json!({"cwd": string(), "session_id": string(), "id": string(),
                                     "ids": strings(), "level": level()});
    if ours {
        read_properties["more"] = json!({"type": "boolean"});
    }
    vec![
        ToolSpec {
            name: "kg_read",
            description: if ours {
                concat!(
                    read_description!(),
                    " A reply longer than your client keeps whole comes in parts: each says so, \
                        and kg_read(session_id, more=true) returns the next."
                )
            } else {
                read_description!()
            },
            ours_only: false,
            schema: object(read_properties, &[]),
        },
        ToolSpec {
            name: "kg_search",
            description: "Ranked full-text search over ids, gists, notes and touches of both graphs, every \
                    tier included (archived and orphaned nodes too), with the connections between the best hits. \
                    Search before writing a node (avoid duplicates) and whenever a problem feels familiar. \
                    Pass session_id so the project graph is searched and already-seen notes are skipped.",
            ours_only: false,
            schema: object(
                json!({"query": string(), "session_id": string()}),
                &["query"],
            ),
        },
        ToolSpec {
            name: "kg_put_node",
            description: "Create or update one insight at the moment you learn it. level: 'user' for \
                    cross-project knowledge about the person or craft, 'project' for this codebase. id: short \
                    kebab-case. gist: one line, the bottom line (aim under 120 chars; over 300 scans badly). \
                    notes: depth and rationale; touches: precise file pointers. Omitted notes/touches stay as \
                    they were; an update re-activates an archived node. Connect it with kg_put_edge.",
            ours_only: false,
            schema: object(
                json!({"session_id": string(), "level": level(), "id": string(), "gist": string(),
                           "notes": strings(), "touches": strings()}),
                &["session_id", "level", "id", "gist"],
            ),
        },
        ToolSpec {
            name: "kg_rename_node",
            description: "Give a node a new id. Its edges follow in every graph (cross-level edges of \
                    projects not loaded included), and so do its creation time, endorsements, tier and \
                    history: the only way to change an id without losing them (put + delete loses them). \
                    new_id names the subject in 3-5 kebab-case words; the claim belongs in the gist. \
                    Refused when new_id exists or would make an edge reach a different node. level \
                    limits the lookup (user first, then project, when omitted).",
            ours_only: true,
            schema: object(
                json!({"session_id": string(), "old_id": string(), "new_id": string(), "level": level()}),
                &["session_id", "old_id", "new_id"],
            ),
        },
        ToolSpec {
            name: "kg_put_edge",
            description: "Create or update a typed relation (rel, e.g. requires, part-of, supersedes) from one \
                    node to another node. Prefer an edge between existing nodes over a new node; cross-level \
                    edges live in the project graph and point at user nodes. A file path belongs in a node's \
                    touches; point an edge at a path only when the relation itself is the fact (lives-in).",
            ours_only: false,
            schema: object(
                json!({"session_id": string(), "level": level(), "from": string(), "to": string(),
                           "rel": string(), "notes": strings()}),
                &["session_id", "level", "from", "to", "rel"],
            ),
        },
        ToolSpec {
            name: "kg_delete_node",
            description: "Delete a node that is wrong and cannot be fixed, with all its edges in that graph \
                    (looks in the user graph first, then the project graph).",
            ours_only: false,
            schema: object(
                json!({"session_id": string(), "id": string()}),
                &["session_id", "id"],
            ),
        },
        ToolSpec {
            name: "kg_delete_edge",
            description: "Delete one relation, identified by from, to and rel (user graph first, then project).",
            ours_only: false,
            schema: object(
                json!({"session_id": string(), "from": string(), "to": string(), "rel": string()}),
                &["session_id", "from", "to", "rel"],
            ),
        },
        ToolSpec {
            name: "kg_useful",
            description: "At wrap-up, endorse up to 5 nodes per session that demonstrably changed the outcome, \
                    judged by results, not by having been read. Endorsements decay over 90 days and keep valuable \
                    nodes active.",
            ours_only: false,
            schema: object(
                json!({"session_id": string(), "ids": strings()}),
                &["session_id", "ids"],
            ),
        },
        ToolSpec {
            name: "kg_sync",
            description: "Fetch what other sessions (or your subagents) changed since this session last \
                    synced or started.",
            ours_only: false,
            schema: object(json!({"session_id": string()}), &["session_id"]),
        },
        ToolSpec {
            name: "kg_progress",
            description: "Durable checkpoints for long tasks (scout, extract, maintain), kept across sessions, \
                    restarts and compaction. With state: replace the task's stored state. Without: read it. \
                    A maintenance pass stamps task 'maintain' with {\"last_ts\": <unix seconds>} — only that \
                    stamp resets a graph's DEBT staleness.",
            ours_only: false,
            schema: object(
                json!({"session_id": string(), "task_id": string(), "state": {"type": "object"}, "level": level()}),
                &["session_id", "task_id"],
            ),
        },
        ToolSpec {
            name: "kg_fix_touch",
            description: "Stale touches (DEBT counts them) name files that no longer exist. Without id: \
                    list this session's stale touches, with the path git says each file was renamed to. With \
                    id and touch (the entry exactly as stored): point that touch at git's new path, or at to, \
                    keeping its line range or symbol. level limits it to one graph.",
            ours_only: true,
            schema: object(
                json!({"session_id": string(), "id": string(), "touch": string(), "to": string(),
                           "level": level()}),
                &["session_id"],
            ),
        },
    ]
}

/// The tools a client is offered under `policy`, in the order they are listed.
fn offered(policy: Policy) -> impl Iterator<Item = &'static ToolSpec> {
    specs(policy).iter()
}

fn tool_list(policy: Policy) -> Vec<Tool> {
    offered(policy)
        .map(|s| {
            let schema = match &s.schema {
                Value::Object(o) => o.clone(),
                _ => Map::new(),
            };
            Tool::new(s.name, s.description, Arc::new(schema))
        })
        .collect()
}

/// Check arguments against a schema, reporting the most relevant failure the way
/// Python's `jsonschema` words it: a missing required key first, then the first
/// property (in schema order) of the wrong type or outside its enum, then items.
pub fn validate(schema: &Value, args: &Map<String, Value>) -> Result<(), String> {
    for key in schema["required"].as_array().into_iter().flatten() {
        if let Some(key) = key.as_str()
            && !args.contains_key(key)
        {
            return Err(format!("'{key}' is a required property"));
        }
    }
    let mut deeper = None;
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        let Some(value) = args.get(name) else {
            continue;
        };
        if let Some(message) = type_error(prop, value) {
            return Err(message);
        }
        if let (Some(items), Value::Array(values)) = (prop.get("items"), value) {
            for v in values {
                if let Some(message) = type_error(items, v) {
                    deeper.get_or_insert(message);
                    break;
                }
            }
        }
    }
    deeper.map_or(Ok(()), Err)
}

fn type_error(schema: &Value, value: &Value) -> Option<String> {
    let wanted = schema["type"].as_str()?;
    let ok = match wanted {
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !ok {
        return Some(format!("{} is not of type '{wanted}'", py_repr(value)));
    }
    let choices = schema["enum"].as_array()?;
    if choices.contains(value) {
        return None;
    }
    let listed: Vec<String> = choices.iter().map(py_repr).collect();
    Some(format!(
        "{} is not one of [{}]",
        py_repr(value),
        listed.join(", ")
    ))
}

/// A JSON value printed the way Python prints the decoded value.
fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => kg_core::float_repr(f),
            _ => n.to_string(),
        },
        Value::String(s) => kg_core::repr_str(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", kg_core::repr_str(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn text(args: &Map<String, Value>, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_string)
}

fn list(args: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
    args.get(key).and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    })
}

fn level_arg(args: &Map<String, Value>) -> Option<Level> {
    args.get("level")
        .and_then(Value::as_str)
        .and_then(|l| Level::parse(l).ok())
}

/// One tool call as a client makes it: arguments checked against the tool's schema,
/// then run against the store.
pub fn call(
    state: &AppState,
    name: &str,
    args: &Map<String, Value>,
    client: kg_core::Client,
    now: f64,
) -> ToolText {
    let policy = state.store.config().policy;
    if let Some(spec) = offered(policy).find(|s| s.name == name)
        && let Err(message) = validate(&spec.schema, args)
    {
        return ToolText {
            text: format!("Input validation error: {message}"),
            is_error: true,
        };
    }
    dispatch(state, name, args, client, now)
}

/// Run one validated tool call against the store.
fn dispatch(
    state: &AppState,
    name: &str,
    args: &Map<String, Value>,
    client: kg_core::Client,
    now: f64,
) -> ToolText {
    let store = &state.store;
    let sid = || text(args, "session_id").unwrap_or_default();
    let need = |key: &str| text(args, key).unwrap_or_default();
    match name {
        "kg_read" => kg_core::kg_read(
            store,
            &ReadArgs {
                cwd: text(args, "cwd"),
                session_id: text(args, "session_id"),
                id: text(args, "id"),
                ids: list(args, "ids"),
                level: level_arg(args),
                more: args.get("more") == Some(&Value::Bool(true)),
                client,
            },
            now,
        ),
        "kg_search" => kg_core::kg_search(
            store,
            &need("query"),
            text(args, "session_id").as_deref(),
            now,
        ),
        "kg_put_node"
            if state.store.config().policy == Policy::Ours
                && args
                    .get("fields")
                    .is_some_and(|f| f.get("locked").is_some()) =>
        {
            ToolText {
                text: format!("Error: {}", kg_core::LOCK_IS_A_PERSONS),
                is_error: true,
            }
        }
        "kg_rename_node" if state.store.config().policy == Policy::Ours => kg_core::kg_rename_node(
            store,
            &sid(),
            &need("old_id"),
            &need("new_id"),
            level_arg(args),
            now,
        ),
        "kg_put_node" => kg_core::kg_put_node(
            store,
            &PutNodeArgs {
                session_id: sid(),
                level: level_arg(args).unwrap_or(Level::User),
                id: need("id"),
                gist: need("gist"),
                notes: list(args, "notes"),
                touches: list(args, "touches"),
            },
            now,
        ),
        "kg_put_edge" => kg_core::kg_put_edge(
            store,
            &PutEdgeArgs {
                session_id: sid(),
                level: level_arg(args).unwrap_or(Level::User),
                from: need("from"),
                to: need("to"),
                rel: need("rel"),
                notes: list(args, "notes"),
            },
            now,
        ),
        "kg_delete_node" => kg_core::kg_delete_node(store, &sid(), &need("id"), now),
        "kg_delete_edge" => kg_core::kg_delete_edge(
            store,
            &sid(),
            &EdgeKey::new(&need("from"), &need("to"), &need("rel")),
            now,
        ),
        "kg_useful" => {
            kg_core::kg_useful(store, &sid(), &list(args, "ids").unwrap_or_default(), now)
        }
        "kg_sync" => kg_core::kg_sync(store, &sid(), now),
        "kg_progress" => kg_core::kg_progress(
            store,
            &sid(),
            &need("task_id"),
            args.get("state").cloned(),
            level_arg(args).unwrap_or(Level::User),
            now,
        ),
        "kg_fix_touch" if state.store.config().policy == Policy::Ours => {
            let renames = |root: &std::path::Path| state.renames.renames(root);
            kg_core::kg_fix_touch(
                store,
                &kg_core::FixTouchArgs {
                    session_id: sid(),
                    id: text(args, "id"),
                    touch: text(args, "touch"),
                    to: text(args, "to"),
                    level: level_arg(args),
                },
                &renames,
                now,
            )
        }
        other => ToolText {
            text: format!(
                "Internal error: Unknown tool: {other} (the tools are {})",
                offered(state.store.config().policy)
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            is_error: true,
        },
    }
}

fn result(answer: ToolText) -> CallToolResult {
    let content = vec![ContentBlock::text(answer.text)];
    if answer.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

impl rmcp::ServerHandler for KgMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("knowledge-graph-mcp", VERSION))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tool_list(
            self.state.store.config().policy,
        )))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tool_list(self.state.store.config().policy)
            .into_iter()
            .find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        // The reply's size limit is the client's: Codex counts bytes, others UTF-16.
        let agent = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get(header::USER_AGENT))
            .and_then(|v| v.to_str().ok());
        let client = kg_core::Client::from_user_agent(agent);
        let answer = self
            .state
            .blocking(move |state, now| call(state, &name, &args, client, now))
            .await;
        Ok(result(answer).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(name: &str) -> &'static Value {
        &specs(Policy::Ours)
            .iter()
            .find(|s| s.name == name)
            .expect("tool")
            .schema
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_reference_nine_tools_in_the_spec_order_and_ours_among_them() {
        let names = |policy| offered(policy).map(|s| s.name).collect::<Vec<_>>();
        let nine = [
            "kg_read",
            "kg_search",
            "kg_put_node",
            "kg_put_edge",
            "kg_delete_node",
            "kg_delete_edge",
            "kg_useful",
            "kg_sync",
            "kg_progress",
        ];
        assert_eq!(names(Policy::Reference), nine);
        // A rename sits beside the write it amends; the touch fix comes last.
        assert_eq!(
            names(Policy::Ours),
            [
                "kg_read",
                "kg_search",
                "kg_put_node",
                "kg_rename_node",
                "kg_put_edge",
                "kg_delete_node",
                "kg_delete_edge",
                "kg_useful",
                "kg_sync",
                "kg_progress",
                "kg_fix_touch",
            ]
        );
    }

    #[test]
    fn validation_messages_match_jsonschema() {
        let put = schema("kg_put_node");
        assert_eq!(
            validate(
                put,
                &args(json!({"session_id": "a", "level": "project", "id": "x"}))
            ),
            Err("'gist' is a required property".into())
        );
        assert_eq!(
            validate(
                put,
                &args(json!({"session_id": "a", "level": "project", "id": 5, "gist": "g"}))
            ),
            Err("5 is not of type 'string'".into())
        );
        assert_eq!(
            validate(
                put,
                &args(json!({"session_id": "a", "level": "team", "id": "x", "gist": "g"}))
            ),
            Err("'team' is not one of ['user', 'project']".into())
        );
        assert_eq!(
            validate(
                put,
                &args(
                    json!({"session_id": "a", "level": "user", "id": "x", "gist": "g", "notes": "n"})
                )
            ),
            Err("'n' is not of type 'array'".into())
        );
        assert_eq!(
            validate(
                put,
                &args(
                    json!({"session_id": "a", "level": "user", "id": "x", "gist": "g", "notes": [1]})
                )
            ),
            Err("1 is not of type 'string'".into())
        );
        assert!(
            validate(
                put,
                &args(
                    json!({"session_id": "a", "level": "user", "id": "x", "gist": "g", "extra": 1})
                )
            )
            .is_ok()
        );
        assert_eq!(
            validate(
                schema("kg_progress"),
                &args(json!({"session_id": "a", "task_id": "t", "state": [true, null]}))
            ),
            Err("[True, None] is not of type 'object'".into())
        );
    }
}
