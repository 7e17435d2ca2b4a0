//! The server SIGKILLed under load, and during concurrent registrations.

use super::*;

#[test]
fn sigkill_under_load_never_loses_an_acknowledged_write() {
    let kills = wire::env_usize("KG_CRASH_KILLS", DEFAULT_KILLS);
    let seed = wire::env_u64("KG_CRASH_SEED", 0x5eed_c4a5_0000_0001);
    let (_dir, home) = disk_home("kg-crash-");
    let storage = home.join("storage");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let project = project.to_string_lossy().into_owned();
    let mut rng = Rng::new(seed);
    let mut model = Model::default();
    let mut sessions: Vec<String> = Vec::new();
    let mut client_sessions: HashMap<usize, String> = HashMap::new();
    let (mut total_ops, mut checked, mut in_flight_landed) = (0, 0, 0);
    let mut leftovers_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut terms = 0;
    let started = Instant::now();
    const MCP_CLIENTS: usize = 3;
    for round_no in 0..kills {
        let context = format!("seed {seed:#x}, round {round_no}");
        let mut server = serve(&home, &storage, &[("KG_SAVE_INTERVAL", "1")]);
        let round = Arc::new(Round {
            port: server.port,
            project: project.clone(),
            dying: AtomicBool::new(false),
        });
        let shared_model = Arc::new(Mutex::new(std::mem::take(&mut model)));
        // One agent registers a fresh session each round; the others continue theirs.
        let fresh = round_no % MCP_CLIENTS;
        let mut handles = Vec::new();
        for me in 0..MCP_CLIENTS {
            let round = round.clone();
            let sid = if me == fresh {
                None
            } else {
                client_sessions.get(&me).cloned()
            };
            let snapshot = Model {
                values: shared_model.lock().expect("model").values.clone(),
            };
            let client_rng = Rng::new(rng.next());
            handles.push(std::thread::spawn(move || {
                mcp_client(&round, me, sid, &snapshot, client_rng)
            }));
        }
        {
            let round = round.clone();
            let snapshot = Model {
                values: shared_model.lock().expect("model").values.clone(),
            };
            let client_rng = Rng::new(rng.next());
            // Sparingly, so a long run stays under the session cap.
            let register = round_no % 4 == 0;
            handles.push(std::thread::spawn(move || {
                rest_client(&round, register, &snapshot, client_rng)
            }));
        }
        model = Arc::try_unwrap(shared_model)
            .expect("model")
            .into_inner()
            .expect("model");
        // The kill lands anywhere: right after the start, mid-load, in a tick, or while
        // a graceful shutdown is flushing (SIGTERM, then SIGKILL shortly after).
        // (Some rounds outlive the first maintenance tick, one second in.)
        let delay = match rng.next() % 10 {
            0 => Duration::from_millis(rng.next() % 20),
            1 => Duration::from_millis(1_000 + rng.next() % 400),
            _ => Duration::from_millis(20 + rng.next() % 600),
        };
        std::thread::sleep(delay);
        round.dying.store(true, Ordering::SeqCst);
        if rng.next() & 7 == 0 {
            server.signal(libc::SIGTERM);
            std::thread::sleep(Duration::from_micros(rng.next() % 20_000));
            terms += 1;
        }
        server.kill();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut logs = Vec::new();
        for h in handles {
            while !h.is_finished() {
                assert!(
                    Instant::now() < deadline,
                    "{context}: a client hung after the kill"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            logs.push(h.join().expect("client thread"));
        }
        for (i, log) in logs.iter().enumerate() {
            if let Some(f) = &log.failure {
                panic!(
                    "{context}: client {i}: {f}\nserver log:\n{}",
                    server.log_tail()
                );
            }
        }
        // Apply what was acknowledged; remember what was in flight.
        let mut in_flight: Vec<Effect> = Vec::new();
        for (i, log) in logs.into_iter().enumerate() {
            total_ops += log.ops;
            for e in &log.acked {
                model.apply(e);
            }
            in_flight.extend(log.in_flight);
            if i < MCP_CLIENTS
                && let Some(sid) = log.sessions.last()
            {
                client_sessions.insert(i, sid.clone());
            }
            sessions.extend(log.sessions);
        }
        // Every file parses; temp leftovers are only counted here.
        let leftovers = check_files(&storage)
            .unwrap_or_else(|e| panic!("{context}: {e}\n{}", server.log_tail()));
        for name in leftovers {
            // `.user.json.AbC12.tmp` → `.user.json.*.tmp`
            let kind = match name.rsplit_once('.') {
                Some((stem, "tmp")) => match stem.rsplit_once('.') {
                    Some((base, _)) => format!("{base}.*.tmp"),
                    None => name.clone(),
                },
                _ => name.clone(),
            };
            *leftovers_seen.entry(kind).or_default() += 1;
        }
        let user =
            load_graph(&storage.join("user.json")).unwrap_or_else(|e| panic!("{context}: {e}"));
        let proj_path = storage.join("projects/proj/graph.json");
        let proj = load_graph(&proj_path).unwrap_or_else(|e| panic!("{context}: {e}"));
        for (file, current) in [
            (storage.join("user.prev"), &user),
            (storage.join("projects/proj/graph.prev"), &proj),
        ] {
            if file.exists() {
                let prev = load_graph(&file).unwrap_or_else(|e| panic!("{context}: {e}"));
                check_prev(&prev, current, &file.display().to_string())
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
            }
        }
        // Acknowledged values are on disk; a write in flight may have landed.
        let on_disk = |key: &Key| -> Val {
            observed(&user, "user", key)
                .or_else(|| observed(&proj, "project", key))
                .flatten()
        };
        let mut possible: HashMap<Key, Vec<Val>> = HashMap::new();
        for e in &in_flight {
            for (k, v) in &e.set {
                possible.entry(k.clone()).or_default().push(v.clone());
            }
        }
        for (key, want) in &model.values {
            let got = on_disk(key);
            let landed = possible.get(key).is_some_and(|vals| vals.contains(&got));
            assert!(
                got == *want || landed,
                "{context}: {key:?} holds {got:?} on disk, acknowledged {want:?}\nserver log:\n{}",
                server.log_tail()
            );
            checked += 1;
        }
        for (key, vals) in &possible {
            let got = on_disk(key);
            assert!(
                got == model.value(key) || vals.contains(&got),
                "{context}: in-flight {key:?} holds {got:?}, neither {:?} nor {vals:?}",
                model.value(key)
            );
            if got != model.value(key) {
                in_flight_landed += 1;
            }
            // What landed is what later rounds must keep.
            model.values.insert(key.clone(), got);
        }
        // Every acknowledged session is in sessions.json with its project.
        let sessions_file: Value = serde_json::from_slice(
            &std::fs::read(storage.join("sessions.json")).unwrap_or_else(|_| b"{}".to_vec()),
        )
        .unwrap_or_else(|e| panic!("{context}: sessions.json: {e}"));
        for sid in &sessions {
            assert_eq!(
                sessions_file[sid]["project_path"].as_str(),
                Some(project.as_str()),
                "{context}: acknowledged session {sid} is not in sessions.json"
            );
        }
        drop(server);
    }
    // A last start: the server loads what the kills left and shows exactly the model.
    let mut server = serve(&home, &storage, &[]);
    let q = format!(
        "/api/graph/read?project_path={}",
        kg_client::encode(&project)
    );
    let (status, graph) =
        wire::json_request(server.port, "GET", &q, None, REQUEST_TIMEOUT).expect("graph read");
    assert_eq!(status, 200, "{graph}");
    for (key, want) in &model.values {
        if let Key::Node { level, id } = key {
            let got = graph[level]["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|n| n["id"] == id.as_str())
                .and_then(|n| n["gist"].as_str().map(str::to_string));
            assert_eq!(&got, want, "after the last restart, {level}/{id}");
        }
    }
    for sid in &sessions {
        let (text, err) = wire::mcp_call(
            server.port,
            "kg_sync",
            &json!({"session_id": sid}),
            REQUEST_TIMEOUT,
        )
        .expect("kg_sync");
        assert!(!err, "{text}");
    }
    // The start and the graph loads removed the temp files the kills left behind.
    let stray: Vec<_> = check_files(&storage)
        .expect("files")
        .into_iter()
        .filter(|n| {
            [".graph.json.", ".user.json.", ".sessions.json."]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .collect();
    assert!(stray.is_empty(), "temp files left after a start: {stray:?}");
    assert!(server.stop().success(), "graceful stop");
    eprintln!(
        "crash: {kills} SIGKILLs ({terms} during a graceful shutdown) survived in {:.1?}: \
         {total_ops} operations, {checked} acknowledged values checked, {} sessions, \
         {in_flight_landed} in-flight writes landed; temp leftovers seen after kills: {leftovers_seen:?}",
        started.elapsed(),
        sessions
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len()
    );
    assert!(
        total_ops > kills,
        "the clients made progress ({total_ops} operations)"
    );
}

/// Regression: registrations answered concurrently were saved as overlapping snapshots
/// of the registry, and an older snapshot could land last — a SIGKILL then lost
/// sessions whose registration had been acknowledged.
#[test]
fn concurrent_registrations_survive_a_sigkill() {
    let (_dir, home) = disk_home("kg-crash-sessions-");
    let project = home.join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let q = format!(
        "/api/sessions/register?project_path={}",
        kg_client::encode(&project.to_string_lossy())
    );
    // Each round starts empty and stays well under the session cap, so every
    // acknowledged registration must still be there (none is evicted).
    let most = kg_core::MAX_SESSIONS / 2;
    let mut total = 0;
    for round in 0..wire::env_usize("KG_CRASH_SESSION_ROUNDS", 6) {
        let storage = home.join(format!("storage-{round}"));
        let mut server = serve(&home, &storage, &[("KG_SAVE_INTERVAL", "1")]);
        let port = server.port;
        let acks = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (acks, q) = (acks.clone(), q.clone());
                std::thread::spawn(move || {
                    while acks.lock().expect("acks").len() < most {
                        let Ok((200, v)) =
                            wire::json_request(port, "POST", &q, None, REQUEST_TIMEOUT)
                        else {
                            break;
                        };
                        let sid = v["session_id"].as_str().unwrap_or_default().to_string();
                        acks.lock().expect("acks").push(sid);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150 + 60 * (round % 8) as u64));
        let acked: Vec<String> = {
            // Everything acknowledged before the kill must be on disk after it.
            let acks = acks.lock().expect("acks");
            server.kill();
            acks.clone()
        };
        for h in handles {
            h.join().expect("client");
        }
        let file: Value =
            serde_json::from_slice(&std::fs::read(storage.join("sessions.json")).expect("file"))
                .expect("sessions.json parses");
        let missing: Vec<_> = acked
            .iter()
            .filter(|s| file[s.as_str()].is_null())
            .collect();
        assert!(
            missing.is_empty(),
            "round {round}: acknowledged sessions missing after SIGKILL: {missing:?}"
        );
        total += acked.len();
    }
    assert!(total > 50, "registrations were made ({total})");
}
