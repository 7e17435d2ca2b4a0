//! rmcp's own streamable-HTTP client against the real `kg-memory serve`: handshake,
//! the eleven tools in order, a first read with `cwd`, a write, a search, and a
//! schema-validation error — everything through rmcp's typed client API, none of it
//! hand-built JSON-RPC.

use crate::server::Server;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

/// The reference's nine, with ours (a rename beside the write, the touch fix last).
const TOOLS: [&str; 11] = [
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
];

type Client = RunningService<RoleClient, ClientConfig>;

/// Connect rmcp's client: `initialize` offering `offer`, or (`None`) the handshake-free
/// `server/discover` lifecycle of protocol 2026-07-28.
async fn connect(server: &Server, offer: Option<ProtocolVersion>) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/", server.base()));
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("kg-rmcp-test", "1.0.0"),
    );
    match offer {
        Some(version) => info
            .with_protocol_version(version)
            .serve(transport)
            .await
            .expect("rmcp client initializes"),
        None => info
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("rmcp client discovers"),
    }
}

/// Call one tool; returns (text of the single text block, isError).
async fn call(client: &Client, tool: &'static str, args: Value) -> (String, bool) {
    let Value::Object(arguments) = args else {
        panic!("tool arguments must be an object");
    };
    let result: CallToolResult = client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool}: {e}"));
    assert_eq!(result.content.len(), 1, "{tool}: one content block");
    let text = result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("{tool}: text content"))
        .text
        .clone();
    (text, result.is_error.unwrap_or(false))
}

/// The whole conversation a coding agent has with the server, at one protocol version.
async fn scenario(offer: Option<ProtocolVersion>, version: ProtocolVersion) {
    let server = Server::fresh();
    let project = server.home.join("rmcp-proj");
    std::fs::create_dir_all(&project).expect("project folder");
    let client = connect(&server, offer).await;

    // Handshake: who answered, and what it offers.
    let info = client.peer_info().expect("server info after initialize");
    assert_eq!(info.protocol_version, version, "negotiated version");
    let implementation = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(implementation.name, "knowledge-graph-mcp");
    assert!(!implementation.version.is_empty());
    assert!(info.capabilities.tools.is_some(), "tools capability");
    assert!(info.capabilities.resources.is_none());
    assert!(info.capabilities.prompts.is_none());
    assert!(info.instructions.is_none(), "no instructions");

    // tools/list: the eleven tools, in the documented order, each with an object schema.
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOLS);
    for tool in &tools {
        assert!(
            tool.description.as_deref().is_some_and(|d| !d.is_empty()),
            "{} has a description",
            tool.name
        );
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name
        );
    }
    let put_node = tools
        .iter()
        .find(|t| t.name == "kg_put_node")
        .expect("kg_put_node");
    assert_eq!(
        put_node.input_schema.get("required"),
        Some(&json!(["session_id", "level", "id", "gist"]))
    );

    // First read: cwd registers a KG session and renders both (empty) graphs.
    let (text, is_error) = call(
        &client,
        "kg_read",
        json!({"cwd": project.to_string_lossy()}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(
        text.contains("=== USER GRAPH — 0 active, 0 archived ==="),
        "{text}"
    );
    assert!(
        text.contains("=== PROJECT GRAPH — 0 active, 0 archived ==="),
        "{text}"
    );
    let sid = text
        .split("Session: ")
        .nth(1)
        .and_then(|t| t.get(..8))
        .expect("Session footer")
        .to_string();
    assert!(
        sid.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "session id {sid:?}"
    );
    assert!(
        text.contains("I have recalled KG Memories"),
        "first full read"
    );

    // A write through the session.
    let (text, is_error) = call(
        &client,
        "kg_put_node",
        json!({"session_id": sid, "level": "project", "id": "rmcp-client-works",
               "gist": "rmcp's streamable HTTP client talks to the stateless server",
               "notes": ["written by the rmcp_client test"], "touches": ["crates/kg-server/src/mcp.rs"]}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "Node 'rmcp-client-works' saved to project graph");

    // Search finds it, with its notes (not yet seen by this session).
    let (text, is_error) = call(
        &client,
        "kg_search",
        json!({"session_id": sid, "query": "streamable stateless"}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("Found 1 match(es) for 'streamable stateless'"),
        "{text}"
    );
    assert!(text.contains("▸ rmcp-client-works (project"), "{text}");
    assert!(
        text.contains("gist: rmcp's streamable HTTP client talks to the stateless server"),
        "{text}"
    );
    assert!(text.contains("- written by the rmcp_client test"), "{text}");

    // A node read shows what was stored.
    let (text, is_error) = call(
        &client,
        "kg_read",
        json!({"session_id": sid, "ids": ["rmcp-client-works"]}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("▸ rmcp-client-works (project, active)"),
        "{text}"
    );
    assert!(
        text.contains("touches: crates/kg-server/src/mcp.rs"),
        "{text}"
    );
    assert!(text.ends_with(&format!("Session: {sid}")), "{text}");

    // Schema validation: a missing required argument is a tool error, not a
    // protocol error, with the jsonschema-style message.
    let (text, is_error) = call(
        &client,
        "kg_put_node",
        json!({"session_id": sid, "level": "project", "id": "no-gist"}),
    )
    .await;
    assert!(is_error, "missing gist sets isError: {text}");
    assert_eq!(
        text,
        "Input validation error: 'gist' is a required property"
    );

    // The failed call wrote nothing.
    let (text, _) = call(
        &client,
        "kg_read",
        json!({"session_id": sid, "ids": ["no-gist"], "level": "project"}),
    )
    .await;
    assert!(text.starts_with("▸ no-gist: NOT FOUND"), "{text}");

    client.cancel().await.expect("client closes cleanly");
}

/// What Claude Code negotiates today.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_end_to_end_2025_06_18() {
    scenario(
        Some(ProtocolVersion::V_2025_06_18),
        ProtocolVersion::V_2025_06_18,
    )
    .await;
}

/// rmcp's default `initialize` offers 2026-07-28, which only exists without a
/// handshake: the server settles on the newest version that has one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_end_to_end_initialize_offering_latest() {
    scenario(
        Some(ProtocolVersion::LATEST),
        ProtocolVersion::LATEST_WITH_INITIALIZE,
    )
    .await;
}

/// Protocol 2026-07-28: `server/discover`, no handshake, every request self-contained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_end_to_end_discover_2026_07_28() {
    scenario(None, ProtocolVersion::V_2026_07_28).await;
}
