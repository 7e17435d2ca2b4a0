//! Paged reads over MCP (since-0.9.30.md §6, issue 32 item 4): a `kg_read` reply longer
//! than the client keeps whole comes in parts sized in the client's unit (UTF-16 for
//! Claude Code, bytes for Codex), and `kg_read(more=true)` follows them to the end with
//! nothing repeated or lost; the full read completes only with its last part.

use crate::server::Server;
use kg_test_support::http::{self, tool_result};
use serde_json::{Value, json};

/// One tool call with this User-Agent; (text, isError).
fn call_as(server: &Server, agent: &str, tool: &str, args: &Value) -> (String, bool) {
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("User-Agent", agent),
    ];
    let body = http::tools_call(tool, args).to_string();
    let (status, _, answer) = server
        .http("POST", "/", Some(&body), &headers)
        .expect("rpc");
    assert_eq!(status, 200, "{answer}");
    tool_result(&answer).expect("tool result")
}

fn utf16(text: &str) -> usize {
    text.encode_utf16().count()
}

/// The parts of a read: the first answer, then `more=true` until a part has no footer.
fn follow(server: &Server, agent: &str, sid: &str, first: String) -> Vec<String> {
    let mut parts = vec![first];
    while parts
        .last()
        .is_some_and(|p| p.contains("more=true) for part"))
    {
        assert!(parts.len() < 50, "no end in sight");
        let (text, err) = call_as(
            server,
            agent,
            "kg_read",
            &json!({"session_id": sid, "more": true}),
        );
        assert!(!err, "{text}");
        parts.push(text);
    }
    parts
}

/// A part without its footer.
fn body(part: &str) -> &str {
    match part.rfind("\n\n[part ") {
        Some(at) => &part[..at],
        None => part,
    }
}

fn session(server: &mut Server) -> String {
    let project = server.home.join("shop");
    std::fs::create_dir_all(&project).expect("project");
    let (text, _) = server.call(
        "kg_read",
        &json!({"cwd": project.to_string_lossy().into_owned()}),
    );
    kg_test_support::http::session_of(&text).expect("session")
}

#[test]
fn a_read_of_twice_the_limit_comes_in_parts_with_nothing_repeated_or_lost() {
    let mut server = Server::fresh();
    let sid = session(&mut server);
    // 40 nodes with long notes (an emoji in each: two UTF-16 units): about twice what
    // Claude Code keeps in one reply.
    let ids: Vec<String> = (0..40).map(|i| format!("long-notes-{i:02}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let notes: Vec<String> = (0..4)
            .map(|k| format!("note {k} of {i} 🧪 {}", "detail ".repeat(70)))
            .collect();
        let (text, err) = server.call("kg_put_node", &json!({"session_id": sid, "level": "user", "id": id, "gist": format!("Lesson {i}"), "notes": notes}));
        assert!(!err, "{text}");
    }
    let (first, err) = call_as(
        &server,
        "claude-code/2.1",
        "kg_read",
        &json!({"session_id": sid, "ids": ids}),
    );
    assert!(!err, "{first}");
    let parts = follow(&server, "claude-code/2.1", &sid, first);
    let n = parts.len();
    assert!(n >= 2, "{n} part(s)");
    for (i, part) in parts.iter().enumerate() {
        assert!(
            utf16(part) <= 45_000,
            "part {} is {} UTF-16 units",
            i + 1,
            utf16(part)
        );
        if i + 1 < n {
            let footer = format!(
                "[part {} of {n} — the reply continues. Call kg_read(session_id='{sid}', more=true) for part {}",
                i + 1,
                i + 2
            );
            assert!(
                part.contains(&footer),
                "{}",
                &part[part.len().saturating_sub(300)..]
            );
        }
    }
    let whole: String = parts.iter().map(|p| body(p)).collect::<Vec<_>>().join("\n");
    let total: usize = utf16(&whole);
    assert!(total > 80_000, "the read is about twice the limit: {total}");
    for id in &ids {
        assert_eq!(whole.matches(&format!("▸ {id} (")).count(), 1, "{id} once");
        for k in 0..4 {
            let i = &id["long-notes-".len()..].trim_start_matches('0');
            let i = if i.is_empty() { "0" } else { i };
            assert_eq!(
                whole.matches(&format!("note {k} of {i} 🧪")).count(),
                1,
                "{id} note {k}"
            );
        }
    }
    assert!(
        whole.ends_with(&format!("Session: {sid}")),
        "the last part ends the read"
    );
    // Nothing more: a clear error.
    let (text, err) = call_as(
        &server,
        "claude-code/2.1",
        "kg_read",
        &json!({"session_id": sid, "more": true}),
    );
    assert!(err && text.contains("no further part"), "{text}");
}

#[test]
fn codex_parts_are_counted_in_bytes_and_the_full_read_completes_with_the_last() {
    let mut server = Server::fresh();
    let sid = session(&mut server);
    // Cyrillic gists: two bytes a character, so a full read within its character budget
    // is longer than Codex keeps in one reply.
    for i in 0..70 {
        let gist = format!(
            "Урок {i:02}: {}",
            "кэш сбрасывается при выкладке, ".repeat(9)
        );
        let level = if i % 2 == 0 { "user" } else { "project" };
        let (text, err) = server.call("kg_put_node", &json!({"session_id": sid, "level": level, "id": format!("cyrillic-lesson-{i:02}"), "gist": gist}));
        assert!(!err, "{text}");
    }
    let fresh = {
        let project = server.home.join("shop").to_string_lossy().into_owned();
        let (text, _) = call_as(
            &server,
            "codex_cli_rs/0.40",
            "kg_read",
            &json!({"cwd": project}),
        );
        // A kg_read(cwd) answers a full read of a new session: its first part.
        let sid = text
            .rsplit("session_id='")
            .next()
            .and_then(|t| t.get(..8))
            .map(str::to_string)
            .expect("a footer naming the session");
        (sid, text)
    };
    let (sid2, first) = fresh;
    assert!(first.len() <= 36_000, "{} bytes", first.len());
    let project = server.home.join("shop").to_string_lossy().into_owned();
    let state = |server: &Server| {
        let (_, state) = server.json(
            "GET",
            &format!("/api/session_state?project_path={project}"),
            None,
        );
        assert_eq!(state["session_id"], json!(sid2));
        state["full_read_done"].clone()
    };
    assert_eq!(
        state(&server),
        json!(false),
        "not complete before its last part"
    );
    let parts = follow(&server, "codex_cli_rs/0.40", &sid2, first);
    assert_eq!(state(&server), json!(true));
    assert!(parts.len() >= 2);
    for part in &parts {
        assert!(part.len() <= 36_000, "{} bytes", part.len());
    }
    let whole: String = parts.iter().map(|p| body(p)).collect::<Vec<_>>().join("\n");
    for i in 0..70 {
        assert_eq!(
            whole
                .matches(&format!("  cyrillic-lesson-{i:02}: "))
                .count(),
            1,
            "lesson {i}"
        );
    }
    assert!(
        whole.contains("I have recalled KG Memories"),
        "the closing line comes with the last part"
    );
}

#[test]
fn more_without_a_started_read_is_a_clear_error() {
    let mut server = Server::fresh();
    let sid = session(&mut server);
    let (text, err) = server.call("kg_read", &json!({"session_id": sid, "more": true}));
    assert!(err && text.contains("no further part"), "{text}");
    let (text, err) = server.call("kg_read", &json!({"more": true}));
    assert!(err, "{text}");
    let (text, err) = server.call("kg_read", &json!({"session_id": "0badf00d", "more": true}));
    assert!(err && text.contains("Unknown session"), "{text}");
}

#[test]
fn the_reference_policy_answers_whole_and_offers_neither_more_nor_a_rename() {
    let (_dir, home) = crate::server::temp_home();
    let mut server = Server::start_in(
        &home,
        &home.join("storage"),
        None,
        &[("KG_POLICY", "reference")],
    );
    let sid = session(&mut server);
    let ids: Vec<String> = (0..40).map(|i| format!("long-notes-{i:02}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let notes: Vec<String> = (0..4)
            .map(|k| format!("note {k} of {i} 🧪 {}", "detail ".repeat(70)))
            .collect();
        let (text, err) = server.call("kg_put_node", &json!({"session_id": sid, "level": "user", "id": id, "gist": format!("Lesson {i}"), "notes": notes}));
        assert!(!err, "{text}");
    }
    let args = json!({"session_id": sid, "ids": ids});
    let (whole, err) = call_as(&server, "claude-code/2.1", "kg_read", &args);
    assert!(!err, "{whole}");
    assert!(utf16(&whole) > 80_000, "{}", utf16(&whole));
    assert!(!whole.contains("more=true"), "one reply, as 0.9.30 gave");
    // `more` is an argument the reference does not know: the read is answered anew.
    let (again, err) = call_as(
        &server,
        "claude-code/2.1",
        "kg_read",
        &json!({"session_id": sid, "more": true}),
    );
    assert!(!err && again.contains("USER GRAPH"), "{again}");

    let (status, body) = server.rpc(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}));
    assert_eq!(status, 200);
    let list: Value = serde_json::from_str(&body).expect("json");
    let read = &list["result"]["tools"][0];
    assert_eq!(read["name"], "kg_read");
    assert_eq!(
        read["inputSchema"]["properties"].get("more"),
        None,
        "{read}"
    );
    assert!(
        !read["description"]
            .as_str()
            .is_some_and(|d| d.contains("more=true")),
        "{read}"
    );
    let (text, err) = server.call(
        "kg_rename_node",
        &json!({"session_id": sid, "old_id": "long-notes-00", "new_id": "short-notes"}),
    );
    assert!(err && text.contains("Unknown tool"), "{text}");
}

/// A full read of twice what Claude Code keeps in one reply (the level and read budgets
/// raised so that nothing is archived or left out): `more=true` follows it to its end,
/// every gist once and in its level's section, the closing lines with the last part.
#[test]
fn a_full_read_of_twice_the_limit_is_followed_to_its_end() {
    let (_dir, home) = crate::server::temp_home();
    let mut server = Server::start_in(
        &home,
        &home.join("storage"),
        None,
        &[("KG_LEVEL_BUDGET", "80000"), ("KG_READ_BUDGET", "200000")],
    );
    let sid = session(&mut server);
    let ids: Vec<String> = (0..100).map(|i| format!("long-lesson-{i:03}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let level = if i % 2 == 0 { "user" } else { "project" };
        let gist = format!(
            "Lesson {i:03} 🧪 {}",
            format!("step{i} then check ").repeat(50)
        );
        let gist: String = gist.chars().take(900).collect();
        let (text, err) = server.call(
            "kg_put_node",
            &json!({"session_id": sid, "level": level, "id": id, "gist": gist}),
        );
        assert!(!err, "{text}");
    }
    let (first, err) = call_as(
        &server,
        "claude-code/2.1",
        "kg_read",
        &json!({"session_id": sid}),
    );
    assert!(!err, "{first}");
    assert!(
        first.starts_with("=== USER GRAPH — 50 active"),
        "{:.200}",
        first
    );
    let parts = follow(&server, "claude-code/2.1", &sid, first);
    let n = parts.len();
    assert!(n >= 2, "{n} part(s)");
    for (i, part) in parts.iter().enumerate() {
        assert!(
            utf16(part) <= 45_000,
            "part {} is {} units",
            i + 1,
            utf16(part)
        );
    }
    let whole: String = parts.iter().map(|p| body(p)).collect::<Vec<_>>().join("\n");
    assert!(utf16(&whole) > 90_000, "twice the limit: {}", utf16(&whole));
    // Every gist once, each level's in its own section.
    let at = |id: &str| {
        assert_eq!(
            whole.matches(&format!("  {id}: Lesson")).count(),
            1,
            "{id} once"
        );
        whole.find(&format!("  {id}: Lesson")).unwrap_or(0)
    };
    let project_at = whole
        .find("=== PROJECT GRAPH")
        .expect("the project section");
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(at(id) > project_at, i % 2 == 1, "{id} in its level");
    }
    assert!(!whole.contains("ARCHIVED"), "nothing archived or left out");
    // The read's closing line comes once, at the end of the last part.
    assert_eq!(whole.matches(&format!("Session: {sid}")).count(), 1);
    let last = &parts[n - 1];
    assert!(
        last.ends_with(&format!("Session: {sid}")),
        "{}",
        &last[last.len().saturating_sub(600)..]
    );
}
