//! A storage root written by the reference's 0.17.0 (tests/fixtures/reference-0.17),
//! served by the real binary over MCP and REST, with a prompt's recall decision
//! logged beside 0.17's own: after a graceful stop, every file we did not write is
//! byte for byte as it was, and 0.17's recall log only grew (issue 32 item 6; the
//! graph files we wrote are checked field by field in kg-core's `drop_in`).

use crate::server::{Server, temp_home};
use kg_test_support::home::copy_substituting;
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};

/// A little after the fixture was written: its sessions are still live.
const NOW: f64 = 1_796_466_900.0;

fn files(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(root).expect("under").to_path_buf();
                out.push((relative, fs::read(&path).expect("read")));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_0_17_root_is_served_over_the_wire_and_keeps_what_we_did_not_write() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let fixture = kg_test_support::golden::fixtures().join("../reference-0.17/storage");
    copy_substituting(&fixture, &storage, &home.to_string_lossy());
    let alpha = home.join("work/alpha");
    fs::create_dir_all(&alpha).expect("alpha");
    fs::create_dir_all(home.join("work/beta")).expect("beta");
    let before = files(&storage);
    let mut server = Server::start_in(&home, &storage, Some(NOW), &[]);

    // MCP: the full read continues the session 0.17's hook preloaded, both levels.
    let (read, err) = server.call(
        "kg_read",
        &json!({"cwd": alpha.to_string_lossy().into_owned()}),
    );
    assert!(!err && read.contains("=== USER GRAPH"), "{read}");
    let sid = kg_test_support::http::session_of(&read).expect("session");
    // Nodes in full: the lock a person set under 0.17 shows; then a write of a node a
    // 0.17 session wrote.
    let (nodes, err) = server.call(
        "kg_read",
        &json!({"session_id": sid, "ids": ["error-message-style", "fx-rates-cache"]}),
    );
    assert!(!err, "{nodes}");
    assert!(
        nodes.contains("▸ error-message-style (user, active, locked)"),
        "{nodes}"
    );
    assert!(nodes.contains("ECB feed times out"), "{nodes}");
    let (saved, err) = server.call(
        "kg_put_node",
        &json!({"session_id": sid, "level": "project", "id": "fx-rates-cache",
                "gist": "FX rates are cached for ten minutes and cleared on every deploy"}),
    );
    assert!(
        !err && saved.starts_with("Node 'fx-rates-cache' saved"),
        "{saved}"
    );
    // The agent may not touch the locked node.
    let (refused, err) = server.call(
        "kg_put_node",
        &json!({"session_id": sid, "level": "user", "id": "error-message-style", "gist": "x"}),
    );
    assert!(err && refused.contains("is locked"), "{refused}");

    // REST: the node keeps 0.17's fields we do not interpret.
    let (status, answer) = server.json(
        "GET",
        &format!(
            "/api/nodes/project/fx-rates-cache?project_path={}",
            alpha.to_string_lossy()
        ),
        None,
    );
    assert_eq!(status, 200, "{answer}");
    let node = &answer["node"];
    assert_eq!(
        node["_credited_ts"].as_array().map(Vec::len),
        Some(1),
        "{node}"
    );
    assert_eq!(
        node["_useful_ts"].as_array().map(Vec::len),
        Some(2),
        "{node}"
    );
    assert_eq!(node["_written"]["by"], json!(sid), "{node}");

    // A prompt: its recall decision joins 0.17's recall log.
    let prompt = json!({"session_id": "cc-drop-in", "cwd": alpha.to_string_lossy(),
                        "hook_event_name": "UserPromptSubmit",
                        "prompt": "how are the FX rates cached?"});
    let (status, answer) = server.json("POST", "/api/prompt_context", Some(&prompt));
    assert_eq!(status, 200, "{answer}");
    assert!(server.stop().success(), "graceful stop");

    let after: Vec<(PathBuf, Vec<u8>)> = files(&storage);
    let now = |file: &Path| after.iter().find(|(f, _)| f == file).map(|(_, b)| b);
    for (file, bytes) in &before {
        let name = file.to_string_lossy();
        let Some(now) = now(file) else {
            panic!("{name} is gone");
        };
        match name.as_ref() {
            // Written by us: kg-core's drop_in compares them field by field.
            "projects/alpha/graph.json" | "sessions.json" | "user.json" => {}
            // 0.17's lines stay, ours follow in the same grammar.
            "recall.jsonl" => {
                assert!(now.starts_with(bytes), "0.17's recall lines were rewritten");
                let added = String::from_utf8_lossy(&now[bytes.len()..]).into_owned();
                assert!(!added.is_empty(), "the prompt's decision was logged");
                for line in added.lines() {
                    let entry: Value = serde_json::from_str(line).expect("a JSON line");
                    assert!(
                        entry["ts"].is_number() && entry["reason"].is_string(),
                        "{line}"
                    );
                }
            }
            _ => assert!(now == bytes, "{name} changed"),
        }
    }
    let user: Value =
        serde_json::from_slice(now(Path::new("user.json")).expect("user")).expect("json");
    assert_eq!(user["nodes"]["error-message-style"]["locked"], true);
}
