//! A merge conflict waiting in a node's notes shows in DEBT everywhere the server
//! gives it (kg_read, the view's payloads, the disk survey) until the note is removed.

use crate::server::Server;
use crate::wire;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The user graph's row of `GET /api/maintenance_debt` (the survey reads the file).
fn survey_row(server: &Server) -> Value {
    let (status, survey) = server.json("GET", "/api/maintenance_debt", None);
    assert_eq!(status, 200, "{survey}");
    survey["graphs"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["graph"] == "user"))
        .cloned()
        .unwrap_or_else(|| panic!("no user graph in the survey: {survey}"))
}

/// The survey's count once the file on disk says `expected` (writes reach the file
/// shortly after the call that made them).
fn survey_conflicts(server: &Server, expected: Option<u64>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let row = survey_row(server);
        if row["debt"]["merge_conflicts"].as_u64() == expected || Instant::now() > deadline {
            return row;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The user level's DEBT line in a `kg_read` answer.
fn user_debt_line(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("DEBT: "))
        .unwrap_or_else(|| panic!("no DEBT line in: {}", wire::clip(text)))
        .to_string()
}

#[test]
fn a_conflict_note_counts_in_debt_until_it_is_removed() {
    let mut server = Server::fresh();
    let project = server.home.join("shop");
    std::fs::create_dir_all(&project).expect("project");
    let (text, _) = server.call(
        "kg_read",
        &json!({"cwd": project.to_string_lossy().into_owned()}),
    );
    let sid = wire::session_of(&text).expect("session");
    let put = |server: &mut Server, notes: Value| {
        let (text, err) = server.call(
            "kg_put_node",
            &json!({"session_id": sid, "level": "user", "id": "checkout-retries",
                    "gist": "Checkout retries a failed payment 3 times.", "notes": notes}),
        );
        assert!(!err, "{text}");
    };
    // What a sync's merge leaves when two machines wrote different gists.
    let conflict = format!(
        "{}This node was edited in two places and merged. The newer gist was kept; \
         the other one was: Checkout retries twice.",
        kg_core::CONFLICT_NOTE_PREFIX
    );
    put(&mut server, json!([conflict, "Set in payments/config.rs."]));

    let (text, _) = server.call("kg_read", &json!({"session_id": sid}));
    let line = user_debt_line(&text);
    assert!(
        line.contains(
            ", merged with conflicts: 1 (see the node notes starting \"[merge conflict]\": \
             settle each, then remove its note), "
        ),
        "{line}"
    );

    let (status, level) = server.json("GET", "/api/view/level?level=user", None);
    assert_eq!(status, 200, "{level}");
    let debt = &level["debt"];
    assert_eq!(debt["merge_conflicts"], 1, "{debt}");
    // One unconnected node, never maintained, no activity: a score LOW on its own,
    // raised to MED by the conflict (our policy, the default).
    assert!(debt["score"].as_f64().is_some_and(|s| s < 0.3), "{debt}");
    assert_eq!(debt["level"], "MED", "{debt}");
    assert_eq!(debt["line"], line.as_str());
    assert_eq!(debt["conflict_note_prefix"], kg_core::CONFLICT_NOTE_PREFIX);
    let (status, graphs) = server.json("GET", "/api/view/graphs", None);
    assert_eq!(status, 200, "{graphs}");
    let user = graphs["graphs"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["graph"] == "user"))
        .unwrap_or_else(|| panic!("{graphs}"));
    assert_eq!(user["debt"]["merge_conflicts"], 1, "{user}");
    let row = survey_conflicts(&server, Some(1));
    assert_eq!(row["debt"]["merge_conflicts"], 1, "{row}");

    // Settled: the same node without the note. Leaving a note out is refused once,
    // naming it (the stale-write guard); sent again, it is meant.
    let settle = json!({"session_id": sid, "level": "user", "id": "checkout-retries",
                        "gist": "Checkout retries a failed payment 3 times.",
                        "notes": ["Set in payments/config.rs."]});
    let (text, err) = server.call("kg_put_node", &settle);
    assert!(err && text.starts_with("NOT WRITTEN"), "{text}");
    assert!(text.contains("[merge conflict]"), "{text}");
    put(&mut server, json!(["Set in payments/config.rs."]));
    let (text, _) = server.call("kg_read", &json!({"session_id": sid}));
    let line = user_debt_line(&text);
    assert!(!line.contains("conflict"), "{line}");
    let (_, level) = server.json("GET", "/api/view/level?level=user", None);
    assert!(level["debt"].get("merge_conflicts").is_none(), "{level}");
    assert_eq!(level["debt"]["level"], "LOW", "{level}");
    let row = survey_conflicts(&server, None);
    assert!(row["debt"].get("merge_conflicts").is_none(), "{row}");
}
