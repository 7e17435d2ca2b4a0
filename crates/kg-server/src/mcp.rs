//! The memory tools over MCP (rmcp), stateless: every POST is answered on its
//! own, sessions are the application-level KG session ids inside the arguments.
//!
//! The tools themselves, with their schemas and argument parsing, are in `tools`.

use crate::state::{AppState, MAX_BODY_BYTES, VERSION};
use crate::tools::{call, tool_list};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kg_core::ToolText;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use std::sync::Arc;

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
