//! The clients of a round: MCP agents and REST writers, each logging what the server
//! acknowledged.

use super::*;

/// An MCP agent: its own node ids, user and project level, edges to files, deletes,
/// progress, and read-your-writes checks.
pub(super) fn mcp_client(
    round: &Round,
    me: usize,
    sid: Option<String>,
    model: &Model,
    mut rng: Rng,
) -> ClientLog {
    let mut log = ClientLog::default();
    let port = round.port;
    let call = |tool: &str, args: &Value| wire::mcp_call(port, tool, args, REQUEST_TIMEOUT);
    // Continue the session of an earlier round when there is one; it must have
    // survived the kill (a fresh one is registered otherwise).
    let sid = match sid {
        Some(sid) => match call("kg_read", &json!({"session_id": sid})) {
            Ok((text, false)) if text.contains(&format!("\n\nSession: {sid}")) => sid,
            Ok((text, _)) => {
                log.failure = Some(format!(
                    "session {sid} did not survive the kill: {}",
                    wire::clip(&text)
                ));
                return log;
            }
            Err(_) => return log,
        },
        None => match call("kg_read", &json!({"cwd": round.project})) {
            Ok((text, false)) => match wire::session_of(&text) {
                Some(sid) => {
                    log.sessions.push(sid.clone());
                    sid
                }
                None => {
                    log.failure = Some(format!("no session in {}", wire::clip(&text)));
                    return log;
                }
            },
            Ok((text, true)) => {
                log.failure = Some(format!("kg_read(cwd) failed: {text}"));
                return log;
            }
            Err(_) => return log,
        },
    };
    if log.sessions.is_empty() {
        log.sessions.push(sid.clone());
    }
    let owner = format!("m{me}-");
    // The client's own view of its keys, updated as acknowledgements arrive.
    let mut mine: Model = Model::default();
    for (k, v) in &model.values {
        let owned = match k {
            Key::Node { id, .. } => id.starts_with(&owner),
            Key::Edge { key, .. } => key.0.starts_with(&owner),
            Key::Progress { task, .. } => task == &format!("task-m{me}"),
        };
        if owned {
            mine.values.insert(k.clone(), v.clone());
        }
    }
    loop {
        let r = rng.next();
        let n = rng.next() % 12;
        let id = format!("{owner}{n}");
        let level = level_of(n);
        let (tool, args, effect, check): (&str, Value, Effect, Option<String>) = match r % 20 {
            0..=8 => {
                let gist = format!("m{me} put {} of node {n}", log.ops);
                (
                    "kg_put_node",
                    // The same notes each time: replacing them would be refused
                    // once by the stale-write guard, which is not what this tests.
                    json!({"session_id": sid, "level": level, "id": id, "gist": gist,
                           "notes": [format!("a note of m{me}")]}),
                    Effect {
                        set: vec![(node_key(level, &id), Some(gist))],
                    },
                    Some("Node '".into()),
                )
            }
            9..=11 => {
                let present = mine.present_nodes(&owner);
                if present.is_empty() {
                    continue;
                }
                let (level, from) = &present[(rng.next() as usize) % present.len()];
                let to = format!("src/file{}.rs", rng.next() % 4);
                (
                    "kg_put_edge",
                    json!({"session_id": sid, "level": level, "from": from, "to": to, "rel": "touches"}),
                    Effect {
                        set: vec![(edge_key(level, from, &to, "touches"), Some(String::new()))],
                    },
                    Some("Edge ".into()),
                )
            }
            12 => {
                let present = mine.present_edges(&owner);
                if present.is_empty() {
                    continue;
                }
                let (level, (from, to, rel)) = &present[(rng.next() as usize) % present.len()];
                (
                    "kg_delete_edge",
                    json!({"session_id": sid, "from": from, "to": to, "rel": rel}),
                    Effect {
                        set: vec![(edge_key(level, from, to, rel), None)],
                    },
                    Some("Edge deleted".into()),
                )
            }
            13 => {
                if mine.value(&node_key(level, &id)).is_none() {
                    continue;
                }
                let mut set = vec![(node_key(level, &id), None)];
                set.extend(
                    mine.edges_touching(level, &id)
                        .into_iter()
                        .map(|k| (k, None)),
                );
                (
                    "kg_delete_node",
                    json!({"session_id": sid, "id": id}),
                    Effect { set },
                    Some("Deleted node".into()),
                )
            }
            14..=15 => {
                let state = json!({"step": log.ops, "client": me});
                let plevel = if r & 1 == 0 { "user" } else { "project" };
                (
                    "kg_progress",
                    json!({"session_id": sid, "task_id": format!("task-m{me}"), "state": state, "level": plevel}),
                    Effect {
                        set: vec![(
                            Key::Progress {
                                level: plevel.into(),
                                task: format!("task-m{me}"),
                            },
                            Some(state.to_string()),
                        )],
                    },
                    Some("Progress saved".into()),
                )
            }
            _ => {
                // Read your writes: the server shows what it acknowledged.
                let expected = mine.value(&node_key(level, &id));
                match call(
                    "kg_read",
                    &json!({"session_id": sid, "ids": [id], "level": level}),
                ) {
                    Ok((text, _)) => {
                        let ok = match &expected {
                            Some(gist) => text.contains(&format!("gist: {gist}\n")),
                            None => text.contains(": NOT FOUND"),
                        };
                        if !ok && !round.dying.load(Ordering::SeqCst) {
                            log.failure = Some(format!(
                                "read of {level}/{id} expected {expected:?}, got {}",
                                wire::clip(&text)
                            ));
                            return log;
                        }
                    }
                    Err(_) => return log,
                }
                log.ops += 1;
                continue;
            }
        };
        log.in_flight = Some(effect.clone());
        match call(tool, &args) {
            Ok((text, is_error)) => {
                let good = !is_error && check.as_deref().is_none_or(|c| text.starts_with(c));
                if !good {
                    if round.dying.load(Ordering::SeqCst) {
                        return log; // an answer cut short by the kill
                    }
                    log.failure = Some(format!("{tool} {args}: {text}"));
                    return log;
                }
                log.in_flight = None;
                mine.apply(&effect);
                log.acked.push(effect);
                log.ops += 1;
            }
            Err(_) => return log, // the server died: the write is in flight
        }
    }
}

/// The graph view's REST calls: project-level nodes and edges by `project_path`,
/// deletes, user-level progress, and a registered session each round.
pub(super) fn rest_client(round: &Round, register: bool, model: &Model, mut rng: Rng) -> ClientLog {
    let mut log = ClientLog::default();
    let port = round.port;
    let q = format!("project_path={}", kg_client::encode(&round.project));
    let req = |method: &str, path: &str, body: Option<&Value>| {
        wire::json_request(port, method, path, body, REQUEST_TIMEOUT)
    };
    let registered = if register {
        req("POST", &format!("/api/sessions/register?{q}"), None)
    } else {
        Ok((200, json!({"session_id": null})))
    };
    match registered {
        Ok((200, v)) => match v["session_id"].as_str() {
            Some(sid) => log.sessions.push(sid.to_string()),
            None if !register => {}
            None => {
                log.failure = Some(format!("register answered {v}"));
                return log;
            }
        },
        Ok((status, v)) => {
            if !round.dying.load(Ordering::SeqCst) {
                log.failure = Some(format!("register answered {status} {v}"));
            }
            return log;
        }
        Err(_) => return log,
    }
    let mut mine = Model::default();
    for (k, v) in &model.values {
        let owned = match k {
            Key::Node { id, .. } => id.starts_with("r-"),
            Key::Edge { key, .. } => key.0.starts_with("r-"),
            Key::Progress { task, .. } => task == "task-rest",
        };
        if owned {
            mine.values.insert(k.clone(), v.clone());
        }
    }
    loop {
        let r = rng.next();
        let n = rng.next() % 10;
        let id = format!("r-{n}");
        let (method, path, body, effect) = match r % 10 {
            0..=4 => {
                let gist = format!("rest put {} of node {n}", log.ops);
                (
                    "POST",
                    "/api/nodes".to_string(),
                    Some(
                        json!({"level": "project", "id": id, "gist": gist, "project_path": round.project}),
                    ),
                    Effect {
                        set: vec![(node_key("project", &id), Some(gist))],
                    },
                )
            }
            5..=6 => {
                let present = mine.present_nodes("r-");
                if present.len() < 2 {
                    continue;
                }
                let from = &present[(rng.next() as usize) % present.len()].1;
                let to = &present[(rng.next() as usize) % present.len()].1;
                if from == to {
                    continue;
                }
                (
                    "POST",
                    "/api/edges".to_string(),
                    Some(
                        json!({"level": "project", "from": from, "to": to, "rel": "relates-to", "project_path": round.project}),
                    ),
                    Effect {
                        set: vec![(
                            edge_key("project", from, to, "relates-to"),
                            Some(String::new()),
                        )],
                    },
                )
            }
            7 => {
                if mine.value(&node_key("project", &id)).is_none() {
                    continue;
                }
                let mut set = vec![(node_key("project", &id), None)];
                set.extend(
                    mine.edges_touching("project", &id)
                        .into_iter()
                        .map(|k| (k, None)),
                );
                (
                    "DELETE",
                    format!("/api/nodes/project/{id}?{q}"),
                    None,
                    Effect { set },
                )
            }
            _ => {
                let state = json!({"rest_step": log.ops});
                (
                    "POST",
                    "/api/progress".to_string(),
                    Some(json!({"task_id": "task-rest", "state": state, "level": "user"})),
                    Effect {
                        set: vec![(
                            Key::Progress {
                                level: "user".into(),
                                task: "task-rest".into(),
                            },
                            Some(state.to_string()),
                        )],
                    },
                )
            }
        };
        log.in_flight = Some(effect.clone());
        match req(method, &path, body.as_ref()) {
            Ok((200, _)) => {
                log.in_flight = None;
                mine.apply(&effect);
                log.acked.push(effect);
                log.ops += 1;
            }
            Ok((status, v)) => {
                // While the server is dying an answer may be cut short (in flight).
                if !round.dying.load(Ordering::SeqCst) {
                    log.failure = Some(format!("{method} {path}: {status} {v}"));
                }
                return log;
            }
            Err(_) => return log,
        }
    }
}
