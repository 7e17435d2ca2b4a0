//! `GET /api/view/activity` on the real server: each change says who made it (an
//! agent's session, a graph view, maintenance, a client without a session), the
//! levels on screen filter it, and a damaged graph file is both an activity entry and
//! a lasting mark on its level.

use crate::server::{Server, temp_home};
use kg_test_support::ws;
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

fn activity(server: &Server, query: &str) -> Vec<Value> {
    let (status, body) = server.json("GET", &format!("/api/view/activity{query}"), None);
    assert_eq!(status, 200, "{body}");
    body["entries"].as_array().expect("entries").clone()
}

fn put(server: &Server, body: Value) {
    let (status, answer) = server.json("POST", "/api/nodes", Some(&body));
    assert_eq!(status, 200, "{answer}");
}

/// The first message a graph view's WebSocket gets.
fn live_greeting(server: &Server) -> Value {
    let runtime = ws::runtime();
    let mut socket = runtime
        .block_on(ws::connect(server.port, "", &[], Duration::from_secs(10)))
        .expect("websocket");
    let hello = runtime
        .block_on(ws::next_json(&mut socket, Duration::from_secs(10)))
        .expect("connected");
    assert_eq!(hello["type"], "connected", "{hello}");
    hello
}

/// The session id the server mints for a graph view's WebSocket.
fn view_session(server: &Server) -> String {
    live_greeting(server)["session_id"]
        .as_str()
        .expect("session id")
        .to_string()
}

#[test]
fn each_change_names_its_author_newest_first() {
    let server = Server::fresh();
    put(
        &server,
        json!({"level": "user", "id": "by-client", "gist": "Written without a session"}),
    );
    let (_, reg) = server.json("POST", "/api/sessions/register", None);
    let agent = reg["session_id"].as_str().expect("sid").to_string();
    put(
        &server,
        json!({"level": "user", "id": "by-agent", "gist": "Written by an agent", "session_id": agent}),
    );
    let view = view_session(&server);
    let (status, done) = server.json(
        "POST",
        "/api/view/step",
        Some(&json!({"level": "user", "session_id": view,
                     "actions": [{"kind": "put_node", "id": "by-view", "gist": "Written in the view"}]})),
    );
    assert_eq!(status, 200, "{done}");
    let (status, undone) = server.json("POST", "/api/view/undo", Some(&json!({"level": "user"})));
    assert_eq!(status, 200, "{undone}");

    let entries = activity(&server, "?levels=user");
    let summary: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["author"].as_str().unwrap_or("?"),
                e["kind"].as_str().unwrap_or("?"),
                e["summary"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("view", "step_undone", "undid a step (1 node restored)"),
            ("view", "node_updated", "wrote by-view"),
            ("agent", "node_updated", "wrote by-agent"),
            ("client", "node_updated", "wrote by-client"),
        ],
        "{entries:#?}"
    );
    assert_eq!(entries[2]["session"], agent.as_str());
    assert_eq!(entries[1]["ids"], json!(["by-view"]));
    let seqs: Vec<u64> = entries.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] > w[1]),
        "newest first: {seqs:?}"
    );

    assert_eq!(activity(&server, "?levels=user&limit=2").len(), 2);
    for bad in ["?limit=0", "?limit=lots", "?limit=99999", "?levels=team"] {
        let (status, body) = server.json("GET", &format!("/api/view/activity{bad}"), None);
        assert_eq!(status, 400, "{bad}: {body}");
    }
}

#[test]
fn a_project_on_screen_shows_its_own_changes_and_the_user_level() {
    let server = Server::fresh();
    let shop = server.home.join("shop");
    let blog = server.home.join("blog");
    for dir in [&shop, &blog] {
        std::fs::create_dir_all(dir).expect("project dir");
    }
    let (shop, blog) = (shop.to_string_lossy(), blog.to_string_lossy());
    put(
        &server,
        json!({"level": "project", "project_path": shop, "id": "shop-cart", "gist": "Cart"}),
    );
    put(
        &server,
        json!({"level": "project", "project_path": blog, "id": "blog-feed", "gist": "Feed"}),
    );
    put(
        &server,
        json!({"level": "user", "id": "style-tabs", "gist": "Tabs"}),
    );

    let ids = |query: &str| -> Vec<String> {
        activity(&server, query)
            .iter()
            .map(|e| e["ids"][0].as_str().unwrap_or("?").to_string())
            .collect()
    };
    let query = format!(
        "?levels=user,project&project_path={}",
        kg_client::encode(&shop)
    );
    assert_eq!(ids(&query), ["style-tabs", "shop-cart"]);
    let query = format!("?levels=project&project_path={}", kg_client::encode(&blog));
    assert_eq!(ids(&query), ["blog-feed"]);
    assert_eq!(
        ids("?levels=user,project"),
        ["style-tabs"],
        "no project asked for"
    );
}

#[test]
fn a_damaged_graph_file_marks_its_level_and_the_activity() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    std::fs::create_dir_all(&storage).expect("storage");
    let good = br#"{"nodes": {"kept": {"id": "kept", "gist": "From the backup"}}, "edges": {}}"#;
    std::fs::write(storage.join("user.prev"), good).expect("prev");
    std::fs::write(storage.join("user.json"), b"{\"nodes\": {\"a\": ").expect("damaged");
    let server = Server::start_in(&home, &storage, None, &[]);

    let (status, level) = server.json("GET", "/api/view/level?level=user", None);
    assert_eq!(status, 200, "{level}");
    let damaged = &level["damaged"];
    let moved_to = damaged["moved_to"].as_str().expect("moved_to");
    assert!(moved_to.contains("user.json.corrupt-"), "{damaged}");
    assert_eq!(
        std::fs::read(moved_to).expect("the damaged bytes are kept"),
        b"{\"nodes\": {\"a\": "
    );
    assert_eq!(
        damaged["backup"].as_str(),
        Some(storage.join("user.prev").to_string_lossy().as_ref())
    );
    assert!(
        damaged["cause"].as_str().is_some_and(|c| c.contains("EOF")),
        "{damaged}"
    );
    assert_eq!(level["nodes"][0]["node"]["id"], "kept");

    let entries = activity(&server, "?levels=user");
    let quarantine = entries
        .iter()
        .find(|e| e["kind"] == "quarantined")
        .expect("a quarantine entry");
    assert_eq!(quarantine["author"], "maintenance");
    assert!(
        quarantine["summary"]
            .as_str()
            .is_some_and(|s| s.contains(moved_to) && s.contains("loaded the backup")),
        "{quarantine}"
    );

    // The graph list marks it too, and `kg-memory status` says it in words.
    let (_, list) = server.json("GET", "/api/view/graphs", None);
    assert_eq!(list["graphs"][0]["damaged"]["moved_to"], moved_to, "{list}");
    let said = Command::new(crate::server::bin())
        .arg("status")
        .env("HOME", &home)
        .env("KG_STORAGE_ROOT", &storage)
        .env("KG_HTTP_PORT", server.port.to_string())
        .env_remove("KG_HTTP_HOST")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .expect("status");
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(
        said.contains("! user: its file did not parse")
            && said.contains(moved_to)
            && said.contains("user.prev"),
        "{said}"
    );

    // A level that loaded cleanly says nothing of the kind.
    let fresh = Server::fresh();
    let (_, level) = fresh.json("GET", "/api/view/level?level=user", None);
    assert_eq!(level["damaged"], Value::Null);
    let (_, list) = fresh.json("GET", "/api/view/graphs", None);
    assert_eq!(list["graphs"][0]["damaged"], Value::Null);
}

/// The level answer and the live greeting carry the change-log position they were made
/// at, so a view that read its level before its connection began can tell it may have
/// missed a change (and read the level again).
#[test]
fn the_level_and_the_live_greeting_tell_their_change_log_position() {
    let server = Server::fresh();
    let head = |server: &Server| {
        let (status, level) = server.json("GET", "/api/view/level?level=user", None);
        assert_eq!(status, 200, "{level}");
        level["change_head"].as_u64().expect("change_head")
    };
    let greeting_head = |server: &Server| {
        live_greeting(server)["change_head"]
            .as_u64()
            .expect("change_head")
    };
    let before = head(&server);
    assert_eq!(greeting_head(&server), before, "nothing changed in between");
    put(
        &server,
        json!({"level": "user", "id": "between", "gist": "Written after the level was read"}),
    );
    let connected = greeting_head(&server);
    assert!(
        connected > before,
        "a level read at {before} lacks the change a connection from {connected} on will not send"
    );
    assert_eq!(head(&server), connected, "a level read now holds it");
}
