//! Renames and locks over the wire (issue 32 items 2 and 3): `kg_rename_node`, `POST
//! /api/nodes/rename` and the `node_renamed` WebSocket event; a person's lock over REST,
//! the agents' refused rewrite, rename and delete, kept in `rejections`.

use crate::server::Server;
use crate::wire;
use kg_test_support::ws;
use serde_json::{Value, json};
use std::time::Duration;

fn session(server: &mut Server, name: &str) -> (String, String) {
    let project = server.home.join(name);
    std::fs::create_dir_all(&project).expect("project");
    let cwd = project.to_string_lossy().into_owned();
    let (text, _) = server.call("kg_read", &json!({"cwd": cwd}));
    (wire::session_of(&text).expect("session"), cwd)
}

fn ok(server: &mut Server, tool: &str, args: Value) -> String {
    let (text, err) = server.call(tool, &args);
    assert!(!err, "{tool} {args}: {text}");
    text
}

#[test]
fn a_rename_moves_cross_level_edges_and_reaches_the_view() {
    let mut server = Server::fresh();
    let (a, _) = session(&mut server, "shop");
    ok(
        &mut server,
        "kg_put_node",
        json!({"session_id": a, "level": "user", "id": "prefer-small-commits", "gist": "Small commits"}),
    );
    ok(
        &mut server,
        "kg_put_node",
        json!({"session_id": a, "level": "project", "id": "release-checklist", "gist": "The release checklist"}),
    );
    ok(
        &mut server,
        "kg_put_edge",
        json!({"session_id": a, "level": "project", "from": "release-checklist", "to": "prefer-small-commits", "rel": "instance-of"}),
    );
    ok(
        &mut server,
        "kg_useful",
        json!({"session_id": a, "ids": ["prefer-small-commits"]}),
    );

    let runtime = ws::runtime();
    let mut socket = runtime
        .block_on(ws::connect(server.port, "", &[], Duration::from_secs(10)))
        .expect("ws");
    runtime
        .block_on(ws::next_json(&mut socket, Duration::from_secs(10)))
        .expect("hello");

    let text = ok(
        &mut server,
        "kg_rename_node",
        json!({"session_id": a, "old_id": "prefer-small-commits", "new_id": "small-commits-preference"}),
    );
    assert!(text.starts_with("Renamed 'prefer-small-commits' → 'small-commits-preference' in the user graph; 1 edge reference(s)"), "{text}");
    let event = loop {
        let m = runtime
            .block_on(ws::next_json(&mut socket, Duration::from_secs(10)))
            .expect("event");
        if m["type"] == "node_renamed" {
            break m;
        }
    };
    assert_eq!(event["old_id"], "prefer-small-commits");
    assert_eq!(event["node"]["id"], "small-commits-preference");
    assert_eq!(event["source_session"], json!(a));
    assert_eq!(
        event["node"]["_useful_ts"].as_array().map(Vec::len),
        Some(1),
        "{event}"
    );

    let read = ok(
        &mut server,
        "kg_read",
        json!({"session_id": a, "ids": ["release-checklist"]}),
    );
    assert!(
        read.contains("release-checklist --instance-of--> small-commits-preference"),
        "{read}"
    );

    // REST: a person's rename, and its refusals (nothing written).
    let body = json!({"old_id": "release-checklist", "new_id": "release-steps", "level": "project", "project_path": server.home.join("shop")});
    let (status, answer) = server.json("POST", "/api/nodes/rename", Some(&body));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["renamed"],
        json!({"from": "release-checklist", "to": "release-steps"})
    );
    assert_eq!(answer["edges_rewired"], 1);
    assert_eq!(answer["level"], "project");
    let before = std::fs::read_to_string(server.storage.join("user.json")).expect("file");
    let huge = "x".repeat(100_000);
    for (old, new, status_wanted) in [
        ("small-commits-preference", "small-commits-preference", 400),
        ("small-commits-preference", "", 400),
        ("small-commits-preference", huge.as_str(), 400),
        ("small-commits-preference", "../../etc/passwd", 400),
        ("small-commits-preference", "bad id!", 400),
        (
            "small-commits-preference",
            "one-two-three-four-five-six-seven",
            400,
        ),
        ("no-such-node", "fresh-id", 404),
    ] {
        let (status, answer) = server.json(
            "POST",
            "/api/nodes/rename",
            Some(&json!({"old_id": old, "new_id": new})),
        );
        assert_eq!(status, status_wanted, "{old} → {new}: {answer}");
        assert!(
            answer["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{answer}"
        );
    }
    let (status, answer) = server.json("POST", "/api/nodes/rename", Some(&json!({"old_id": 5})));
    assert_eq!(status, 422, "{answer}");
    assert_eq!(
        std::fs::read_to_string(server.storage.join("user.json")).expect("file"),
        before
    );

    // Over MCP the bad ones are errors too.
    for (new, says) in [
        ("small-commits-preference", "already called"),
        ("one-two-three-four-five-six-seven", "has 7 words"),
    ] {
        let (text, err) = server.call(
            "kg_rename_node",
            &json!({"session_id": a, "old_id": "small-commits-preference", "new_id": new}),
        );
        assert!(err && text.contains(says), "{text}");
    }
    let (text, err) = server.call(
        "kg_rename_node",
        &json!({"session_id": a, "old_id": "ghost", "new_id": "ghost-two"}),
    );
    assert!(err && text.contains("not found in either graph"), "{text}");
}

#[test]
fn a_locked_node_refuses_agents_and_keeps_working_for_everything_else() {
    let mut server = Server::fresh();
    let (a, _) = session(&mut server, "shop");
    ok(
        &mut server,
        "kg_put_node",
        json!({"session_id": a, "level": "user", "id": "error-message-style", "gist": "Errors say what was wrong and what to do"}),
    );
    ok(
        &mut server,
        "kg_put_node",
        json!({"session_id": a, "level": "user", "id": "api-errors", "gist": "API errors carry a code"}),
    );

    // An agent cannot set the lock.
    let (text, err) = server.call("kg_put_node", &json!({"session_id": a, "level": "user", "id": "error-message-style", "gist": "x", "fields": {"locked": true}}));
    assert!(err && text.contains("only by a person"), "{text}");

    // A person locks it over REST; locking a missing node is a 404 that writes nothing.
    let lock = json!({"level": "user", "id": "error-message-style", "gist": "Errors say what was wrong and what to do", "fields": {"locked": true}});
    let (status, answer) = server.json("POST", "/api/nodes", Some(&lock));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["node"]["locked"], true);

    for (tool, args, op) in [
        (
            "kg_put_node",
            json!({"session_id": a, "level": "user", "id": "error-message-style", "gist": "Terse errors"}),
            "rewrite",
        ),
        (
            "kg_delete_node",
            json!({"session_id": a, "id": "error-message-style"}),
            "delete",
        ),
        (
            "kg_rename_node",
            json!({"session_id": a, "old_id": "error-message-style", "new_id": "error-wording"}),
            "rename",
        ),
    ] {
        let (text, err) = server.call(tool, &args);
        assert!(err, "{tool}: {text}");
        assert!(
            text.contains("is locked: a person locked it")
                && text.contains(&format!("may not {op} it")),
            "{text}"
        );
    }
    // Edges, reads, search and likes still work; the full read shows the lock.
    ok(
        &mut server,
        "kg_put_edge",
        json!({"session_id": a, "level": "user", "from": "api-errors", "to": "error-message-style", "rel": "follows"}),
    );
    let full = ok(&mut server, "kg_read", json!({"session_id": a}));
    assert!(
        full.contains("  error-message-style (locked): Errors say what was wrong"),
        "{full}"
    );
    let node = ok(
        &mut server,
        "kg_read",
        json!({"session_id": a, "ids": ["error-message-style"]}),
    );
    assert!(
        node.contains("▸ error-message-style (user, active, locked)"),
        "{node}"
    );
    ok(
        &mut server,
        "kg_useful",
        json!({"session_id": a, "ids": ["error-message-style"]}),
    );
    // The three refusals are kept.
    let progress = ok(
        &mut server,
        "kg_progress",
        json!({"session_id": a, "task_id": "rejections", "level": "user"}),
    );
    for op in ["\"rewrite\"", "\"delete\"", "\"rename\""] {
        assert!(progress.contains(op), "{progress}");
    }
    // A person unlocks it (null clears); then the agent's write lands.
    let unlock = json!({"level": "user", "id": "error-message-style", "gist": "Errors say what was wrong and what to do", "fields": {"locked": null}});
    let (status, answer) = server.json("POST", "/api/nodes", Some(&unlock));
    assert_eq!(status, 200, "{answer}");
    assert!(answer["node"].get("locked").is_none(), "{answer}");
    server.call(
        "kg_read",
        &json!({"session_id": a, "ids": ["error-message-style"]}),
    );
    ok(
        &mut server,
        "kg_put_node",
        json!({"session_id": a, "level": "user", "id": "error-message-style", "gist": "Terse errors"}),
    );

    // Bad input: a lock of a missing node, a lock that is no boolean.
    let missing =
        json!({"level": "user", "id": "no-such-node", "gist": "x", "fields": {"locked": "yes"}});
    let (status, answer) = server.json("POST", "/api/nodes", Some(&missing));
    assert_eq!(status, 422, "{answer}");
    let (status, _) = server.json("GET", "/api/nodes/user/no-such-node", None);
    assert_eq!(status, 404);
}

#[test]
fn the_views_steps_lock_rename_and_undo() {
    let mut server = Server::fresh();
    let (a, cwd) = session(&mut server, "shop");
    ok(
        &mut server,
        "kg_put_node",
        json!({"session_id": a, "level": "user", "id": "prefer-small-commits", "gist": "Small commits"}),
    );
    ok(
        &mut server,
        "kg_put_node",
        json!({"session_id": a, "level": "user", "id": "review-checklist", "gist": "Review checklist"}),
    );
    ok(
        &mut server,
        "kg_put_node",
        json!({"session_id": a, "level": "project", "id": "release-steps", "gist": "Release steps"}),
    );
    ok(
        &mut server,
        "kg_put_edge",
        json!({"session_id": a, "level": "project", "from": "release-steps", "to": "prefer-small-commits", "rel": "instance-of"}),
    );
    let step = |actions: Value, dry_run: bool| json!({"level": "user", "dry_run": dry_run, "actions": actions});
    let node =
        |server: &Server, id: &str| server.json("GET", &format!("/api/nodes/user/{id}"), None);

    // Bulk lock, then undo.
    let lock = json!([{"kind": "lock", "id": "prefer-small-commits", "locked": true},
                      {"kind": "lock", "id": "review-checklist", "locked": true}]);
    let (status, answer) = server.json("POST", "/api/view/step", Some(&step(lock, false)));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["locked"],
        json!(["prefer-small-commits", "review-checklist"])
    );
    // (A node read stamps the node, which undo would refuse to overwrite: read after.)
    let (status, answer) = server.json("POST", "/api/view/undo", Some(&json!({"level": "user"})));
    assert_eq!(status, 200, "{answer}");
    assert!(
        node(&server, "review-checklist").1["node"]
            .get("locked")
            .is_none()
    );

    // A lock of a missing node: 404, nothing written.
    let missing = json!([{"kind": "lock", "id": "no-such-node", "locked": true}]);
    let (status, answer) = server.json("POST", "/api/view/step", Some(&step(missing, false)));
    assert_eq!(status, 404, "{answer}");

    // Rename: previewed, done (the project's edge follows), undone (it comes back).
    let rename = json!([{"kind": "rename", "id": "prefer-small-commits", "new_id": "small-commits-preference"}]);
    let (status, answer) = server.json("POST", "/api/view/step", Some(&step(rename.clone(), true)));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["renamed"]["to"], "small-commits-preference");
    assert_eq!(answer["undo_steps"], 0, "a dry run renames nothing");
    let (status, answer) = server.json("POST", "/api/view/step", Some(&step(rename, false)));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["renamed"],
        json!({"from": "prefer-small-commits", "to": "small-commits-preference", "edges_rewired": 1})
    );
    let read = ok(
        &mut server,
        "kg_read",
        json!({"session_id": a, "ids": ["release-steps"]}),
    );
    assert!(
        read.contains("--instance-of--> small-commits-preference"),
        "{read}"
    );
    let (status, answer) = server.json("POST", "/api/view/undo", Some(&json!({"level": "user"})));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["nodes"], json!(["prefer-small-commits"]));
    assert_eq!(node(&server, "prefer-small-commits").0, 200);
    assert_eq!(node(&server, "small-commits-preference").0, 404);
    let read = ok(
        &mut server,
        "kg_read",
        json!({"session_id": a, "ids": ["release-steps"]}),
    );
    assert!(
        read.contains("--instance-of--> prefer-small-commits"),
        "{read}"
    );

    // A rename goes alone; a rename onto an existing id is refused.
    let mixed = json!([{"kind": "rename", "id": "review-checklist", "new_id": "review-list"},
                       {"kind": "archive", "id": "review-checklist"}]);
    let (status, answer) = server.json("POST", "/api/view/step", Some(&step(mixed, false)));
    assert_eq!(status, 400, "{answer}");
    let onto =
        json!([{"kind": "rename", "id": "review-checklist", "new_id": "prefer-small-commits"}]);
    let (status, answer) = server.json("POST", "/api/view/step", Some(&step(onto, true)));
    assert_eq!(status, 400, "{answer}");
    let _ = cwd;
}
