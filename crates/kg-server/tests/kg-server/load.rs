//! No lost writes under load: 16 concurrent MCP clients × 2,000 mixed calls against
//! one server, zero transport errors, and after a graceful shutdown every
//! acknowledged write is on disk with its last acknowledged value.

use crate::server::{Server, temp_home};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const CLIENTS: usize = 16;
const CALLS: usize = 2_000;

/// One MCP call over its own HTTP connection, as Claude Code sends it.
fn call(port: u16, tool: &str, args: &Value) -> Result<(String, bool), String> {
    kg_test_support::http::mcp_call(port, tool, args, Duration::from_secs(60))
}

/// What one client was told was stored: node id → last acknowledged gist (`None`
/// after an acknowledged delete).
type Acks = HashMap<(String, String), Option<String>>;

fn client(port: u16, project: &str, me: usize) -> Result<Acks, String> {
    let (text, _) = call(port, "kg_read", &json!({"cwd": project}))?;
    let sid = kg_test_support::http::session_of(&text).ok_or("no session id")?;
    let mut acks = Acks::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (me as u64 + 1);
    for k in 0..CALLS {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let level = if seed & 1 == 0 { "project" } else { "user" };
        let id = format!("c{me}-n{}", (seed >> 8) % 40);
        let key = (level.to_string(), id.clone());
        match (seed >> 16) % 20 {
            0..=6 => {
                let gist = format!("client {me} call {k}: insight {}", seed % 1000);
                let (text, err) = call(
                    port,
                    "kg_put_node",
                    &json!({"session_id": sid, "level": level, "id": id, "gist": gist}),
                )?;
                if err || !text.starts_with("Node '") {
                    return Err(format!("put failed: {text}"));
                }
                acks.insert(key, Some(gist));
            }
            7..=8 => {
                let to = format!("c{me}-n{}", (seed >> 24) % 40);
                let (text, err) = call(
                    port,
                    "kg_put_edge",
                    &json!({"session_id": sid, "level": level, "from": id, "to": to, "rel": "relates-to"}),
                )?;
                if err {
                    return Err(format!("edge failed: {text}"));
                }
            }
            9 => {
                let (text, _) = call(
                    port,
                    "kg_delete_node",
                    &json!({"session_id": sid, "id": id}),
                )?;
                // Deletion looks in the user graph first; the answer names the level.
                if text.starts_with("Deleted node") {
                    let deleted = if text.ends_with("from user graph") {
                        "user"
                    } else {
                        "project"
                    };
                    acks.insert((deleted.to_string(), id), None);
                }
            }
            10..=13 => {
                call(
                    port,
                    "kg_read",
                    &json!({"session_id": sid, "ids": [id], "level": level}),
                )?;
            }
            14..=16 => {
                call(
                    port,
                    "kg_search",
                    &json!({"session_id": sid, "query": format!("insight client {me}")}),
                )?;
            }
            17..=18 => {
                call(port, "kg_sync", &json!({"session_id": sid}))?;
            }
            _ => {
                let (text, _) = call(port, "kg_read", &json!({"session_id": sid}))?;
                // A full read is never torn: both levels and the footer are there.
                if !(text.contains("=== USER GRAPH")
                    && text.contains("=== PROJECT GRAPH")
                    && text.contains("Session: "))
                {
                    return Err("torn full read".into());
                }
            }
        }
    }
    Ok(acks)
}

#[test]
fn sixteen_clients_lose_no_acknowledged_write() {
    let (_dir, home) = temp_home();
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let mut server = Server::start_in(
        &home,
        &home.join("storage"),
        None,
        &[("KG_SAVE_INTERVAL", "1")],
    );
    let port = server.port;
    let project = Arc::new(project.to_string_lossy().into_owned());
    let handles: Vec<_> = (0..CLIENTS)
        .map(|me| {
            let project = project.clone();
            std::thread::spawn(move || client(port, &project, me))
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.push(
            h.join()
                .expect("client thread")
                .expect("no transport or tool error"),
        );
    }
    assert!(server.stop().success(), "graceful shutdown");
    let read = |path: std::path::PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).expect("graph file")).expect("parses")
    };
    let user = read(home.join("storage/user.json"));
    let proj = read(home.join("storage/projects/proj/graph.json"));
    let mut checked = 0;
    for acks in &all {
        for ((level, id), gist) in acks {
            let graph = if level == "user" { &user } else { &proj };
            let node = &graph["nodes"][id];
            match gist {
                Some(g) => assert_eq!(node["gist"].as_str(), Some(g.as_str()), "{level}/{id}"),
                None => assert!(node.is_null(), "{level}/{id} was deleted"),
            }
            checked += 1;
        }
    }
    assert!(
        checked > CLIENTS * 40,
        "checked {checked} acknowledged values"
    );
}
