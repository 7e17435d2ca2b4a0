//! Floods and extremes (sessions, tool-event targets, transcripts, future timestamps,
//! level lists, projects, gists): memory, logs and answers stay bounded.

use super::*;

#[test]
fn session_floods_stay_bounded() {
    let f = Fixture::new();
    let before = f.graph_files();
    let cap = kg_core::MAX_SESSIONS;
    let started = Instant::now();
    // Registrations past the cap, then ids the server has never seen (refused).
    let mut last = String::new();
    for k in 0..cap + 200 {
        if k % 10 == 0 {
            // The agent's own session stays in use throughout.
            f.ok("kg_sync", json!({"session_id": f.sid}));
        }
        let (status, v) = f.json("POST", "/api/sessions/register", None);
        assert_eq!(status, 200, "{v}");
        last = v["session_id"].as_str().expect("sid").to_string();
    }
    // Made-up ids — well-formed, malformed, and a megabyte long — are refused with a
    // way out and create nothing. On the code before, each one created a record:
    // 1,000 one-megabyte ids made sessions.json 950 MiB.
    let huge = "f".repeat(1_000_000);
    for k in 0..300 {
        let sid = match k % 3 {
            0 => format!("{k:08x}"),
            1 => format!("unknown-{k}"),
            _ => huge.clone(),
        };
        let (text, is_error) = f.call("kg_sync", json!({"session_id": sid}));
        assert!(is_error, "{}", wire::clip(&text));
        assert!(
            text.starts_with("Error: ") && text.contains("kg_read(cwd="),
            "{}",
            wire::clip(&text)
        );
        assert!(
            text.len() < 600,
            "the id is not echoed whole: {} bytes",
            text.len()
        );
    }
    let (status, stats) = f.json("GET", "/api/sessions/0badf00d/stats", None);
    assert_eq!(status, 404, "{stats}");
    let (_, health) = f.json("GET", "/health", None);
    let active = health["active_sessions"].as_u64().expect("count") as usize;
    assert!(active <= cap, "{active} sessions in memory, cap {cap}");
    // The least recently active went; the active agent and the newest stayed.
    let text = f.ok("kg_read", json!({"session_id": f.sid}));
    assert!(
        text.contains(&format!("Session: {}", f.sid)),
        "{}",
        wire::clip(&text)
    );
    let (status, stats) = f.json("GET", &format!("/api/sessions/{last}/stats"), None);
    assert_eq!(status, 200);
    assert!(stats["duration_seconds"].as_f64().is_some());
    let file: Value = serde_json::from_slice(
        &std::fs::read(f.storage.join("sessions.json")).expect("sessions.json"),
    )
    .expect("parses");
    let on_disk = file.as_object().expect("object").len();
    assert!(on_disk <= cap, "{on_disk} sessions on disk, cap {cap}");
    assert!(
        file.get("0badf00d").is_none(),
        "a stats read created a session"
    );
    let size = std::fs::metadata(f.storage.join("sessions.json")).map_or(0, |m| m.len());
    assert!(size < 2 << 20, "sessions.json is {size} bytes");
    assert!(file[&f.sid].is_object(), "the active session was evicted");
    eprintln!(
        "hostile: {} registrations and 300 made-up ids in {:.1?}: {active} in memory, {on_disk} on disk",
        cap + 200,
        started.elapsed()
    );
    f.still_healthy_and_unchanged(&before);
}

#[test]
fn tool_event_targets_stay_capped() {
    let f = Fixture::new();
    let before = f.graph_files();
    let cap = kg_core::MAX_EVENT_KEYS;
    let event = |tool: &str, input: Value| {
        let (status, v) = f.json(
            "POST",
            "/api/tool_event",
            Some(
                json!({"session_id": "claude-1", "cwd": f.project, "hook_event_name": "PostToolUse",
                        "tool_name": tool, "tool_input": input}),
            ),
        );
        assert_eq!(status, 200, "{v}");
    };
    for k in 0..cap + 100 {
        event("Read", json!({"file_path": format!("src/file{k}.rs")}));
    }
    // Overlong targets are not counted at all.
    let huge = format!("https://example.com/{}", "q".repeat(200_000));
    for _ in 0..3 {
        event("WebFetch", json!({"url": huge}));
        event("WebSearch", json!({"query": huge}));
    }
    let path = f.storage.join("projects/proj/tool_events.json");
    let file: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("counter file")).expect("parses");
    let events = file["events"].as_object().expect("events");
    assert_eq!(events.len(), cap, "the counter file keeps {cap} keys");
    assert!(
        events.contains_key(&format!("read:src/file{}.rs", cap + 99)),
        "newest kept"
    );
    assert!(!events.contains_key("read:src/file0.rs"), "oldest evicted");
    let size = std::fs::metadata(&path).expect("size").len();
    assert!(size < 200_000, "counter file is {size} bytes");
    f.still_healthy_and_unchanged(&before);
}

/// Regression: the resume path read any transcript path whole — `/dev/zero` grew
/// until memory ran out, and a FIFO blocked the request (and the shutdown) forever.
#[test]
fn transcript_paths_cannot_hang_or_exhaust_the_server() {
    let mut f = Fixture::new();
    let before = f.graph_files();
    let fifo = f.home.join("transcript.fifo");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: a valid path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let q = kg_client::encode(&f.project);
    for (k, transcript) in [
        "/dev/zero".to_string(),
        "/dev/urandom".to_string(),
        fifo.to_string_lossy().into_owned(),
        f.home.to_string_lossy().into_owned(),
        "/proc/self/mem".to_string(),
        "/nonexistent/transcript.jsonl".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let path = format!(
            "/api/session_bootstrap?project_path={q}&source=resume&claude_session_id=cc-{k}&transcript_path={}",
            kg_client::encode(&transcript)
        );
        let started = Instant::now();
        let answer = wire::json_request(f.port(), "GET", &path, None, Duration::from_secs(10));
        let (status, v) = answer.unwrap_or_else(|e| panic!("{transcript}: {e}"));
        assert_eq!(status, 200, "{transcript}: {v}");
        assert_eq!(v["reused"], false, "{transcript}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{transcript} took {:?}",
            started.elapsed()
        );
    }
    // A large transcript still resumes from its last marker (only its end is read).
    let big = f.home.join("big.jsonl");
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::File::create(&big).expect("transcript");
        file.seek(SeekFrom::Start(300 << 20)).expect("sparse");
        writeln!(file, "\n{{\"text\":\"Session: {}\"}}", f.sid).expect("marker");
    }
    let path = format!(
        "/api/session_bootstrap?project_path={q}&source=resume&claude_session_id=cc-y&transcript_path={}",
        kg_client::encode(&big.to_string_lossy())
    );
    let (status, v) = f.json("GET", &path, None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["reused"].clone(), v["session_id"].clone()),
        (json!(true), json!(f.sid))
    );
    // And the server still stops gracefully (nothing is stuck on a FIFO).
    f.still_healthy_and_unchanged(&before);
    let started = Instant::now();
    assert!(f.server.stop().success());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shutdown took {:?}",
        started.elapsed()
    );
}

/// Stamps from the future (a wrong clock, a hand edit): reads, search, debt and
/// maintenance keep working, compaction still brings an over-budget level under
/// its budget, and debt does not stay silenced until 2099.
#[test]
fn timestamps_from_the_future_do_not_break_maintenance() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    std::fs::create_dir_all(&storage).expect("storage");
    let now = 1_795_176_000.0_f64; // 2026-11-20
    let y2099 = 4_070_908_800.0_f64;
    let mut nodes = serde_json::Map::new();
    let mut versions = serde_json::Map::new();
    for k in 0..300 {
        let id = format!("future-{k:03}");
        nodes.insert(
            id.clone(),
            json!({"id": id, "gist": format!("{k:03} {}", "a gist long enough to fill the level quickly ".repeat(2)),
                   "_created_ts": y2099, "_last_read_ts": y2099 + k as f64, "_useful_ts": [y2099]}),
        );
        versions.insert(
            format!("node:{id}"),
            json!({"v": 1, "ts": y2099, "session": null}),
        );
    }
    nodes.insert(
        "orphan-2099".into(),
        json!({"id": "orphan-2099", "gist": "orphaned in the future", "_created_ts": y2099,
               "_archived": true, "_orphaned_ts": y2099}),
    );
    let graph = json!({"nodes": nodes, "edges": {}, "_meta": {"versions": versions,
        "progress": {"maintain": {"last_ts": y2099}}}});
    std::fs::write(
        storage.join("user.json"),
        serde_json::to_vec_pretty(&graph).expect("json"),
    )
    .expect("graph");
    std::fs::write(
        storage.join("sessions.json"),
        json!({"cafe0001": {"start_ts": y2099, "project_path": null, "last_activity": y2099, "op_count": 1}})
            .to_string(),
    )
    .expect("sessions");
    let clock = home.join("clock");
    std::fs::write(&clock, now.to_string()).expect("clock");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let clock_env = clock.to_string_lossy().into_owned();
    let mut server = serve(
        &home,
        &storage,
        &[
            ("KG_SAVE_INTERVAL", "1"),
            ("KG_CLOCK_FILE", clock_env.as_str()),
        ],
    );
    let port = server.port;
    let call = |tool: &str, args: Value| {
        let (text, err) = wire::mcp_call(port, tool, &args, TIMEOUT).expect("answer");
        assert!(!err, "{tool}: {text}");
        text
    };
    let text = call("kg_read", json!({"cwd": project.to_string_lossy()}));
    let sid = wire::session_of(&text).expect("session");
    call(
        "kg_search",
        json!({"session_id": sid, "query": "gist future"}),
    );
    call("kg_read", json!({"session_id": sid, "ids": ["future-007"]}));
    let (status, debt) =
        wire::json_request(port, "GET", "/api/maintenance_debt", None, TIMEOUT).expect("debt");
    assert_eq!(status, 200, "{debt}");
    // A maintenance stamp from 2099 is no stamp: the graph reads as never maintained.
    let user = debt["graphs"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["graph"] == "user"))
        .cloned()
        .unwrap_or_else(|| panic!("{debt}"));
    assert_eq!(user["debt"]["never_maintained"], true, "{user}");
    // The tick compacts the over-budget level although every node claims to be new.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = call("kg_read", json!({"session_id": sid}));
        let head = text.lines().next().unwrap_or_default().to_string();
        let archived = head
            .split(", ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        if archived > 0 {
            let (_, view) =
                wire::json_request(port, "GET", "/api/view/level?level=user", None, TIMEOUT)
                    .expect("view");
            let chars = view["budget"]["chars"].as_u64().unwrap_or(u64::MAX);
            assert!(
                chars <= 17_500,
                "user level still {chars} chars after compaction"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the over-budget level was never compacted: {head}\n{}",
            server.log_tail()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(server.stop().success());
    let saved = kg_core::parse_graph(&std::fs::read(storage.join("user.json")).expect("file"))
        .expect("the graph still parses");
    assert!(
        saved.graph.nodes.contains_key("orphan-2099"),
        "the orphan's grace is not cut short"
    );
}

/// Item 1 of the trust issue: `levels=user,user` locked the user graph twice on one
/// thread, and the request (and every later one touching the user graph) never
/// answered; `levels=project,user` reversed the lock order against tool calls. On the
/// code before, the first request below timed out. Here every request answers while
/// tool calls lock user then project from other threads, and the server then stops
/// on SIGTERM.
#[test]
fn duplicated_and_reversed_level_lists_cannot_hang_the_server() {
    let mut f = Fixture::new();
    let project = kg_client::encode(&f.project);
    let searches = [
        "/api/view/search?q=stored&levels=user,user".to_string(),
        format!("/api/view/search?q=stored&levels=project,user&project_path={project}"),
        format!(
            "/api/view/search?q=stored&levels=project,user,project,user&project_path={project}"
        ),
    ];
    std::thread::scope(|scope| {
        for worker in 0..4 {
            let f = &f;
            let searches = &searches;
            scope.spawn(move || {
                for round in 0..25 {
                    if worker % 2 == 0 {
                        let path = &searches[round % searches.len()];
                        let (status, body) = f.json("GET", path, None);
                        assert_eq!(status, 200, "{path}: {body}");
                        assert!(body["total"].as_u64().is_some_and(|n| n >= 1), "{body}");
                    } else {
                        f.ok("kg_search", json!({"query": "stored fact", "session_id": f.sid}));
                        f.ok("kg_put_node", json!({"session_id": f.sid, "level": "project", "id": format!("w{worker}-{round}"), "gist": "stored while searching"}));
                    }
                }
            });
        }
    });
    let status = f.server.stop();
    assert!(status.success(), "graceful stop: {status}");
}

/// Item 3: any path inside home loaded a project graph and kept it forever (3,000
/// requests: RSS 189 MB → 1.08 GB), and each request logged its path whole. Here
/// made-up projects answer "no such project" and load nothing, real ones stay within
/// the cap of loaded graphs, and log lines stay short.
#[test]
fn made_up_and_many_projects_keep_memory_and_logs_bounded() {
    let f = Fixture::new();
    let log_before = f.log_len();
    let long_tail = "x".repeat(3_000);
    for k in 0..150 {
        let ghost = kg_client::encode(&format!("{}/ghost-{k}/{long_tail}", f.home.display()));
        for path in [
            format!("/api/graph/read?project_path={ghost}"),
            format!("/api/view/level?level=project&project_path={ghost}"),
            format!("/api/nodes/project/p-anchor?project_path={ghost}"),
        ] {
            let (status, body) = f.json("GET", &path, None);
            assert_eq!(status, 404, "{}", wire::clip(&body.to_string()));
            let detail = body["detail"].as_str().unwrap_or("");
            assert!(
                detail.starts_with("No such project: "),
                "{}",
                wire::clip(detail)
            );
        }
    }
    let (_, health) = f.json("GET", "/health", None);
    assert_eq!(
        health["loaded_graphs"], 2,
        "made-up projects loaded: {health}"
    );
    let logged = f.log_len() - log_before;
    assert!(
        logged < 150 * 3 * 400,
        "{logged} bytes of log for 450 requests"
    );
    // Real projects: memory follows the working set, not the history.
    let cap = kg_core::MAX_LOADED_PROJECTS as u64;
    for k in 0..cap + 10 {
        let dir = f.home.join(format!("real-{k}"));
        std::fs::create_dir_all(&dir).expect("project folder");
        let path = kg_client::encode(&dir.to_string_lossy());
        let (status, body) = f.json("GET", &format!("/api/graph/read?project_path={path}"), None);
        assert_eq!(status, 200, "{body}");
    }
    let (_, health) = f.json("GET", "/health", None);
    let loaded = health["loaded_graphs"].as_u64().expect("count");
    assert!(
        loaded <= cap + 1,
        "{loaded} graphs loaded, cap {cap} projects"
    );
    // The fixture's project was unloaded, and comes back whole.
    let (_, graphs) = f.json("GET", "/api/view/graphs", None);
    let row = graphs["graphs"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["project_path"] == json!(f.project)))
        .cloned()
        .unwrap_or_default();
    assert_eq!(row["loaded"], false, "{row}");
    let text = f.ok("kg_read", json!({"session_id": f.sid}));
    assert!(text.contains("p-anchor"), "{}", wire::clip(&text));
}

/// Item 5: project B = `~/b/proj` is given `proj-<FNV-1a of B>` when `~/a/proj` holds
/// `proj`; D = `~/proj-<that hash>` is filed under that very name. On the code before,
/// B read D's nodes and B's acknowledged write was gone from disk after D's next save.
#[test]
fn namesake_projects_never_share_a_graph_file() {
    let (_dir, home) = crate::server::temp_home();
    let storage = home.join("storage");
    let b = home.join("b/proj");
    let hash = b
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
            (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
        });
    let d = home.join(format!("proj-{:08x}", hash as u32));
    let a = home.join("a/proj");
    for dir in [&a, &b, &d] {
        std::fs::create_dir_all(dir).expect("project folder");
    }
    let write = |port: u16, dir: &Path, id: &str| {
        let (text, err) =
            wire::mcp_call(port, "kg_read", &json!({"cwd": dir}), TIMEOUT).expect("read");
        assert!(!err, "{text}");
        let sid = wire::session_of(&text).expect("session");
        let args = json!({"session_id": sid, "level": "project", "id": id, "gist": format!("written to {id}")});
        let (text, err) = wire::mcp_call(port, "kg_put_node", &args, TIMEOUT).expect("put");
        assert!(!err, "{text}");
    };
    let full_read = |port: u16, dir: &Path| {
        wire::mcp_call(port, "kg_read", &json!({"cwd": dir}), TIMEOUT)
            .expect("read")
            .0
    };
    let mut server = serve(&home, &storage, &[]);
    write(server.port, &d, "node-of-d");
    write(server.port, &a, "node-of-a");
    write(server.port, &b, "node-of-b");
    write(server.port, &d, "node-of-d-again");
    let text = full_read(server.port, &b);
    assert!(
        text.contains("node-of-b") && !text.contains("node-of-d"),
        "{}",
        wire::clip(&text)
    );
    server.stop();
    // The files say so too, and a restarted server finds each graph again.
    let projects = storage.join("projects");
    let on_disk: Vec<String> = files_under(&projects, &[])
        .into_iter()
        .filter(|p| p.ends_with("graph.json"))
        .filter_map(|p| std::fs::read_to_string(projects.join(p)).ok())
        .collect();
    assert_eq!(
        on_disk.iter().filter(|t| t.contains("node-of-b")).count(),
        1
    );
    assert!(
        !on_disk
            .iter()
            .any(|t| t.contains("node-of-b") && t.contains("node-of-d"))
    );
    let server = serve(&home, &storage, &[]);
    for (dir, mine, theirs) in [
        (&b, "node-of-b", "node-of-d"),
        (&d, "node-of-d-again", "node-of-b"),
    ] {
        let text = full_read(server.port, dir);
        assert!(
            text.contains(mine) && !text.contains(theirs),
            "{}",
            wire::clip(&text)
        );
    }
}

/// Item 8: a 1,000,000-character gist was accepted, and every later `kg_read` and
/// `kg_search` was a megabyte. Here it is refused with the same one-line rule over
/// MCP and REST (the graph view's route), blank gists too, and a line break is
/// flattened so the indented render of `kg_read` holds.
#[test]
fn gists_notes_and_touches_are_bounded_on_every_route() {
    let f = Fixture::new();
    let before = f.graph_files();
    let huge = "g".repeat(1_000_000);
    let (text, err) = f.call(
        "kg_put_node",
        json!({"session_id": f.sid, "level": "user", "id": "huge", "gist": huge}),
    );
    assert!(err, "{}", wire::clip(&text));
    let rule = text
        .strip_prefix("Error: ")
        .expect("a domain error")
        .to_string();
    assert!(
        rule.starts_with("Gist is 1000000 characters; the limit is 1000."),
        "{rule}"
    );
    let (status, body) = f.json(
        "POST",
        "/api/nodes",
        Some(json!({"level": "user", "id": "huge", "gist": huge})),
    );
    assert_eq!(status, 400);
    assert_eq!(
        body["detail"].as_str(),
        Some(rule.as_str()),
        "one message for every route"
    );
    for blank in ["", "   ", "\n\t"] {
        let (text, err) = f.call(
            "kg_put_node",
            json!({"session_id": f.sid, "level": "user", "id": "blank", "gist": blank}),
        );
        assert!(err && text.starts_with("Error: Gist is empty"), "{text}");
    }
    let notes: Vec<String> = vec!["n".repeat(5_000)];
    let (text, err) = f.call(
        "kg_put_edge",
        json!({"session_id": f.sid, "level": "user", "from": "anchor", "to": "x", "rel": "uses", "notes": notes}),
    );
    assert!(err && text.contains("Note 1 is 5000 characters"), "{text}");
    let touches: Vec<String> = (0..60).map(|i| format!("src/{i}.rs")).collect();
    let (text, err) = f.call(
        "kg_put_node",
        json!({"session_id": f.sid, "level": "user", "id": "t", "gist": "ok", "touches": touches}),
    );
    assert!(err && text.contains("Too many touches: 60 given"), "{text}");
    let big_state = json!({"log": "p".repeat(100_000)});
    let (text, err) = f.call(
        "kg_progress",
        json!({"session_id": f.sid, "task_id": "scout", "state": big_state}),
    );
    assert!(
        err && text.contains("bytes as JSON; the limit is 65536"),
        "{text}"
    );
    f.still_healthy_and_unchanged(&before);
    f.ok(
        "kg_put_node",
        json!({"session_id": f.sid, "level": "user", "id": "two-lines", "gist": "first line\r\nsecond line"}),
    );
    let read = f.ok("kg_read", json!({"session_id": f.sid}));
    assert!(
        read.contains("two-lines: first line second line"),
        "{}",
        wire::clip(&read)
    );
}

/// Item 4, the WebSocket side: each `/ws` connection without a session registered one
/// and rewrote `sessions.json` (3,000 connections stalled the store for 14–23 s, and
/// past 1,000 they pushed agents' sessions out of the registry). Now a connection
/// gets an id of its own and the registry does not change.
#[test]
fn websocket_connections_register_no_sessions() {
    let f = Fixture::new();
    let (_, health) = f.json("GET", "/health", None);
    let sessions_before = health["active_sessions"].clone();
    let registry_before = std::fs::read(f.storage.join("sessions.json")).expect("sessions.json");
    let mut open = Vec::new();
    for _ in 0..300 {
        open.push(ws::upgrade_raw(f.port(), TIMEOUT));
    }
    let (_, health) = f.json("GET", "/health", None);
    assert_eq!(health["active_sessions"], sessions_before, "{health}");
    let registry_after = std::fs::read(f.storage.join("sessions.json")).expect("sessions.json");
    assert!(
        registry_after == registry_before,
        "sessions.json was rewritten"
    );
    f.ok("kg_sync", json!({"session_id": f.sid}));
}
