//! MCP at the root, in process.

use super::*;

/// One JSON-RPC message POSTed to the MCP endpoint, as Claude Code sends it.
async fn rpc(app: &App, message: &Value) -> (StatusCode, Value) {
    let request = Request::post("/")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(message.to_string()))
        .expect("request");
    let (status, content_type, body) = app.send(request).await;
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}: {body}"
    );
    (status, parse(&body))
}

#[tokio::test]
async fn mcp_is_served_at_the_root() {
    let app = App::new();
    let (status, init) = rpc(
        &app,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "router-test", "version": "0"},
        }}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{init}");
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(
        init["result"]["serverInfo"]["name"], "knowledge-graph-mcp",
        "{init}"
    );
    assert_eq!(init["result"]["serverInfo"]["version"], kg_server::VERSION);
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );

    // Stateless: no session header, no initialize needed before a request.
    let (status, list) = rpc(
        &app,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
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
            "kg_fix_touch"
        ]
    );
    assert_eq!(
        list["result"]["tools"][2]["inputSchema"]["required"],
        json!(["session_id", "level", "id", "gist"])
    );

    // A call reaches the tool's validation.
    let (status, call) = rpc(
        &app,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "kg_put_node", "arguments": {"session_id": "a", "level": "user", "id": "x"},
        }}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{call}");
    assert_eq!(call["result"]["isError"], true);
    assert_eq!(
        call["result"]["content"][0]["text"],
        "Input validation error: 'gist' is a required property"
    );

    // Malformed JSON-RPC is screened before rmcp.
    let request = Request::post("/")
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from("{"))
        .expect("request");
    let (status, _, body) = app.send(request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(parse(&body)["error"]["code"], -32700, "{body}");
    let (status, answer) = rpc(
        &app,
        &json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(
        (status, answer),
        (
            StatusCode::BAD_REQUEST,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request: \"jsonrpc\" must be \"2.0\""}})
        )
    );
    // The guard stands in front of MCP too.
    let request = Request::post("/")
        .header(header::HOST, "evil.example")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string(),
        ))
        .expect("request");
    assert_eq!(app.send(request).await.0, StatusCode::MISDIRECTED_REQUEST);
}
