//! `POST /api/view/step` and `/api/view/undo` on the real server: a dry run names what
//! the commit then moves, undo restores the file byte for byte, and bad steps are
//! refused with nothing written.

use crate::server::Server;
use serde_json::{Value, json};

const DAY: f64 = 86_400.0;
const T: f64 = 1_795_176_000.0;

fn user_file(server: &Server) -> Vec<u8> {
    std::fs::read(server.storage.join("user.json")).expect("user.json")
}

/// A user level over its budget once its 80 nodes leave their grace period, settled
/// by a plain write at `T` (the server's clock starts ten days earlier).
fn full_user_level(server: &Server) {
    for i in 0..80 {
        let gist: String = format!("topic-{i:02} is one insight of a full level, padded ")
            .chars()
            .chain(std::iter::repeat('x'))
            .take(240)
            .collect();
        let (status, body) = server.json(
            "POST",
            "/api/nodes",
            Some(&json!({"level": "user", "id": format!("topic-{i:02}"), "gist": gist})),
        );
        assert_eq!(status, 200, "{body}");
    }
    server.set_now(T);
    // Any write runs the passes; this one archives what no longer fits.
    let (status, _) = server.json(
        "POST",
        "/api/nodes",
        Some(&json!({"level": "user", "id": "settle", "gist": "Settles the level"})),
    );
    assert_eq!(status, 200);
}

fn step(dry_run: bool) -> Value {
    let actions: Vec<Value> = (0..16)
        .map(|i| {
            json!({"kind": "put_node", "id": format!("new-{i:02}"),
                   "gist": "A new insight long enough to push the level over its budget. ".repeat(5)})
        })
        .chain([json!({"kind": "delete_node", "id": "topic-79"})])
        .collect();
    json!({"level": "user", "dry_run": dry_run, "actions": actions})
}

#[test]
fn a_dry_run_names_what_the_commit_moves_and_undo_restores_the_file() {
    let server = Server::fresh_at(T - 10.0 * DAY);
    full_user_level(&server);
    let before = user_file(&server);

    let (status, preview) = server.json("POST", "/api/view/step", Some(&step(true)));
    assert_eq!(status, 200, "{preview}");
    assert_eq!(preview["dry_run"], true);
    let archived = preview["rebalanced"]["archived"].as_array().expect("list");
    assert!(
        !archived.is_empty(),
        "the step overfills the level: {preview}"
    );
    assert_eq!(user_file(&server), before, "a dry run writes nothing");

    let (status, done) = server.json("POST", "/api/view/step", Some(&step(false)));
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["dry_run"], false);
    assert_eq!(done["undo_steps"], 1);
    for key in [
        "created",
        "updated",
        "deleted",
        "rebalanced",
        "edges_deleted",
    ] {
        assert_eq!(
            done[key], preview[key],
            "{key}: the commit does what the dry run said"
        );
    }
    assert_ne!(user_file(&server), before);

    let (status, undone) = server.json("POST", "/api/view/undo", Some(&json!({"level": "user"})));
    assert_eq!(status, 200, "{undone}");
    assert_eq!(undone["undo_steps"], 0);
    assert_eq!(
        user_file(&server),
        before,
        "undo restores the file byte for byte"
    );

    let (status, nothing) = server.json("POST", "/api/view/undo", Some(&json!({"level": "user"})));
    assert_eq!(status, 409);
    assert_eq!(nothing["detail"], "Nothing to undo in the user graph.");
}

#[test]
fn bad_steps_are_refused_and_write_nothing() {
    let server = Server::fresh();
    let (status, _) = server.json(
        "POST",
        "/api/nodes",
        Some(&json!({"level": "user", "id": "kept", "gist": "Stays as it is"})),
    );
    assert_eq!(status, 200);
    let before = user_file(&server);
    let refused = |body: Value, want: u16, says: &str| {
        let (status, answer) = server.json("POST", "/api/view/step", Some(&body));
        assert_eq!(status, want, "{body} → {answer}");
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(says), "{body} → {detail}");
        assert_eq!(user_file(&server), before, "{body} wrote nothing");
    };
    refused(
        json!({"level": "user", "actions": []}),
        400,
        "at least one action",
    );
    refused(
        json!({"level": "user", "actions": [{"kind": "explode", "id": "kept"}]}),
        422,
        "unknown variant",
    );
    refused(
        json!({"level": "user", "actions": [{"kind": "put_node", "id": "../x", "gist": "g"}]}),
        400,
        "",
    );
    refused(
        json!({"level": "user", "actions": [
            {"kind": "put_node", "id": "fresh", "gist": "would be new"},
            {"kind": "promote", "id": "missing"}]}),
        404,
        "Node 'missing' not found",
    );
    refused(
        json!({"level": "galaxy", "actions": [{"kind": "archive", "id": "kept"}]}),
        400,
        "",
    );
    let many: Vec<Value> = (0..1001)
        .map(|_| json!({"kind": "archive", "id": "kept"}))
        .collect();
    refused(
        json!({"level": "user", "actions": many}),
        400,
        "at most 1000 actions",
    );
}
