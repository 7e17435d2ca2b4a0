//! Issue 32's bad input, each over the wire it arrives by: a rename to an empty, huge,
//! malformed, path-like or seven-word id, onto itself, onto another node or of a node
//! that does not exist (MCP and REST); a new node with a seven-word id (MCP and REST); a lock of a missing node (the view's step, and
//! its dry run); `kg_read(more=true)` without a started read; a stale write token
//! replayed (REST and the view's step). Each gets an error that says what was wrong,
//! and no graph file changes, neither at once nor when the server stops and saves.

use crate::server::Server;
use kg_test_support::http::session_of;
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};

/// Every graph file under the storage root (`*.json` but the session registry), with
/// its bytes.
fn graph_files(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json")
                && path.file_name().is_some_and(|n| n != "sessions.json")
            {
                let relative = path.strip_prefix(root).expect("under").to_path_buf();
                out.push((relative, fs::read(&path).expect("read")));
            }
        }
    }
    out.sort();
    out
}

fn assert_unchanged(before: &[(PathBuf, Vec<u8>)], root: &Path, what: &str) {
    let after = graph_files(root);
    let names = |files: &[(PathBuf, Vec<u8>)]| -> Vec<PathBuf> {
        files.iter().map(|(p, _)| p.clone()).collect()
    };
    assert_eq!(
        names(before),
        names(&after),
        "{what}: graph files came or went"
    );
    for ((path, old), (_, new)) in before.iter().zip(&after) {
        assert!(old == new, "{what}: {} changed", path.display());
    }
}

/// An MCP call that must fail; returns its text.
fn refused(server: &mut Server, tool: &str, args: Value) -> String {
    let (text, err) = server.call(tool, &args);
    assert!(err, "{tool} {args} was accepted: {text}");
    text
}

#[test]
fn issue_32s_bad_input_gets_a_clear_error_and_writes_nothing() {
    let mut server = Server::fresh();
    let project = server.home.join("shop");
    fs::create_dir_all(&project).expect("project");
    let (text, _) = server.call(
        "kg_read",
        &json!({"cwd": project.to_string_lossy().into_owned()}),
    );
    let sid = session_of(&text).expect("session");
    for (level, id, gist) in [
        ("user", "prefer-small-commits", "Keep commits small"),
        ("user", "review-checklist", "Reviews check tests and naming"),
        ("project", "release-steps", "Tag, build, publish"),
    ] {
        let (text, err) = server.call(
            "kg_put_node",
            &json!({"session_id": sid, "level": level, "id": id, "gist": gist}),
        );
        assert!(!err, "{text}");
    }
    let (text, err) = server.call(
        "kg_put_edge",
        &json!({"session_id": sid, "level": "project", "from": "release-steps", "to": "prefer-small-commits", "rel": "follows"}),
    );
    assert!(!err, "{text}");
    // A token the view loaded, then overtaken by the agent's newer write.
    let (_, loaded) = server.json("GET", "/api/nodes/user/review-checklist", None);
    let token = loaded["node"]["_written"]["ts"]
        .as_f64()
        .expect("written ts");
    let (text, err) = server.call(
        "kg_put_node",
        &json!({"session_id": sid, "level": "user", "id": "review-checklist", "gist": "Reviews check tests, naming and docs"}),
    );
    assert!(!err, "{text}");
    let storage = server.storage.clone();
    let before = graph_files(&storage);
    assert!(before.len() >= 2, "{:?}", before.iter().map(|f| &f.0));

    // Renames over MCP: each refusal names what is wrong with the new id.
    let huge = "x".repeat(100_000);
    let rename =
        |new: &str| json!({"session_id": sid, "old_id": "prefer-small-commits", "new_id": new});
    for (new, says) in [
        ("", "Invalid node id"),
        (huge.as_str(), "Invalid node id"),
        ("bad id!", "Invalid node id"),
        ("../../etc/passwd", "Invalid node id"),
        ("one-two-three-four-five-six-seven", "has 7 words"),
        ("prefer-small-commits", "already called"),
        ("review-checklist", "already has a node 'review-checklist'"),
    ] {
        let text = refused(&mut server, "kg_rename_node", rename(new));
        assert!(text.contains(says), "{new:.40}: {text:.300}");
        assert!(
            text.len() < 2_000,
            "the refusal echoes the huge id: {} chars",
            text.len()
        );
    }
    let text = refused(
        &mut server,
        "kg_rename_node",
        json!({"session_id": sid, "old_id": "no-such-node", "new_id": "fresh-id"}),
    );
    assert!(text.contains("Node 'no-such-node' not found"), "{text}");
    let text = refused(
        &mut server,
        "kg_rename_node",
        json!({"session_id": sid, "old_id": "prefer-small-commits"}),
    );
    assert!(text.contains("new_id"), "{text}");
    assert_unchanged(&before, &storage, "renames over MCP");

    // An id of seven words is refused on create as on rename, with the hint.
    let long_id = "one-two-three-four-five-six-seven";
    let text = refused(
        &mut server,
        "kg_put_node",
        json!({"session_id": sid, "level": "user", "id": long_id, "gist": "A claim in the id"}),
    );
    assert!(
        text.contains("has 7 words") && text.contains("3–5 words"),
        "{text}"
    );
    let (status, answer) = server.json(
        "POST",
        "/api/nodes",
        Some(&json!({"level": "user", "id": long_id, "gist": "A claim in the id"})),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .is_some_and(|d| d.contains("has 7 words")),
        "{answer}"
    );
    assert_unchanged(&before, &storage, "a new id of seven words");

    // The same over REST: 400 (404 for a missing node), with a detail.
    for (old, new, status_wanted) in [
        ("prefer-small-commits", "", 400),
        ("prefer-small-commits", huge.as_str(), 400),
        ("prefer-small-commits", "bad id!", 400),
        ("prefer-small-commits", "prefer-small-commits", 400),
        ("no-such-node", "fresh-id", 404),
    ] {
        let (status, answer) = server.json(
            "POST",
            "/api/nodes/rename",
            Some(&json!({"old_id": old, "new_id": new})),
        );
        assert_eq!(status, status_wanted, "{old} → {new:.40}: {answer}");
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(!detail.is_empty() && detail.len() < 2_000, "{answer:.300}");
    }
    assert_unchanged(&before, &storage, "renames over REST");

    // A lock of a missing node, done and previewed: 404 naming the node.
    for dry_run in [false, true] {
        let step = json!({"level": "user", "dry_run": dry_run,
                          "actions": [{"kind": "lock", "id": "no-such-node", "locked": true}]});
        let (status, answer) = server.json("POST", "/api/view/step", Some(&step));
        assert_eq!(status, 404, "{answer}");
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(detail.contains("no-such-node"), "{answer}");
    }
    assert_unchanged(&before, &storage, "a lock of a missing node");

    // more=true with no read under way: says there is no further part and how to read.
    let text = refused(
        &mut server,
        "kg_read",
        json!({"session_id": sid, "more": true}),
    );
    assert!(text.contains("no further part"), "{text}");
    assert_unchanged(&before, &storage, "more=true without a started read");

    // The stale token replayed: 409 with the newer node, over REST and from the view.
    let body = json!({"level": "user", "id": "review-checklist", "gist": "Person's gist", "written_ts": token});
    let (status, answer) = server.json("POST", "/api/nodes", Some(&body));
    assert_eq!(status, 409, "{answer}");
    assert_eq!(
        answer["node"]["gist"],
        "Reviews check tests, naming and docs"
    );
    let detail = answer["detail"].as_str().unwrap_or_default();
    assert!(detail.starts_with("NOT WRITTEN"), "{answer}");
    let step = json!({"level": "user", "dry_run": false, "actions": [
        {"kind": "put_node", "id": "review-checklist", "gist": "Person's gist", "written_ts": token}]});
    let (status, answer) = server.json("POST", "/api/view/step", Some(&step));
    assert_eq!(status, 409, "{answer}");
    assert_unchanged(&before, &storage, "a stale token replayed");

    // Nothing was left dirty either: a graceful stop saves nothing new.
    assert!(server.stop().success(), "the server stops cleanly");
    assert_unchanged(&before, &storage, "after the stop");
}
