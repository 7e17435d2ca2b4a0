//! The stale-write guard over the wire (since-0.9.30.md §4, issue 32 item 1): a
//! `kg_put_node` built on a stale view is refused with the `NOT WRITTEN` marker and
//! writes nothing; a person's write over REST or from the graph view that names what
//! it loaded is refused (409) when the node changed since. Many sessions racing on one
//! node lose no acknowledged write.

use crate::server::Server;
use crate::wire;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

fn session(server: &mut Server, name: &str) -> String {
    let project = server.home.join(name);
    std::fs::create_dir_all(&project).expect("project");
    let (text, _) = server.call(
        "kg_read",
        &json!({"cwd": project.to_string_lossy().into_owned()}),
    );
    wire::session_of(&text).expect("session")
}

fn put(
    server: &mut Server,
    sid: &str,
    id: &str,
    gist: &str,
    notes: Option<Value>,
) -> (String, bool) {
    let mut args = json!({"session_id": sid, "level": "user", "id": id, "gist": gist});
    if let Some(notes) = notes {
        args["notes"] = notes;
    }
    server.call("kg_put_node", &args)
}

fn user_file(server: &Server) -> String {
    std::fs::read_to_string(server.storage.join("user.json")).expect("user.json")
}

#[test]
fn a_write_over_unread_or_changed_content_is_refused_with_the_marker() {
    let mut server = Server::fresh();
    let a = session(&mut server, "alpha");
    let b = session(&mut server, "beta");

    // B writes a node with two notes; A, which never saw it, sends notes of its own.
    let (text, err) = put(
        &mut server,
        &b,
        "stale-probe",
        "Probe",
        Some(json!(["n1", "n2"])),
    );
    assert!(!err, "{text}");
    let before = user_file(&server);
    let (text, err) = put(
        &mut server,
        &a,
        "stale-probe",
        "Probe, A's view",
        Some(json!(["mine"])),
    );
    assert!(err && text.starts_with("NOT WRITTEN"), "{text}");
    assert!(text.contains("'stale-probe' (user graph)"), "{text}");
    assert!(
        text.contains(&format!("session {b}")),
        "names the writer: {text}"
    );
    assert!(text.contains("Nothing was changed"), "{text}");
    assert!(
        text.contains("- n1") && text.contains("- n2"),
        "shows the node: {text}"
    );
    assert_eq!(user_file(&server), before, "a refusal writes nothing");

    // The refusal showed A the node, so the same write is judged on its notes now: it
    // would drop both stored notes, each marked.
    let (text, err) = put(
        &mut server,
        &a,
        "stale-probe",
        "Probe, A's view",
        Some(json!(["mine"])),
    );
    assert!(err && text.starts_with("NOT WRITTEN"), "{text}");
    assert_eq!(
        text.matches("← your write would remove this note").count(),
        2,
        "{text}"
    );
    assert!(text.contains("send the same kg_put_node again"), "{text}");
    assert_eq!(user_file(&server), before);

    // Sent a third time, the removal is intended: saved.
    let (text, err) = put(
        &mut server,
        &a,
        "stale-probe",
        "Probe, A's view",
        Some(json!(["mine"])),
    );
    assert!(
        !err && text.starts_with("Node 'stale-probe' saved"),
        "{text}"
    );

    // A reads a node, B rewrites it, A's gist-only write is refused; the retry (the
    // refusal counted as a read) is saved.
    let (text, err) = put(&mut server, &b, "stale-probe-two", "Two", None);
    assert!(!err, "{text}");
    server.call(
        "kg_read",
        &json!({"session_id": a, "ids": ["stale-probe-two"]}),
    );
    let (text, err) = put(
        &mut server,
        &b,
        "stale-probe-two",
        "Two, rewritten by B",
        None,
    );
    assert!(!err, "{text}");
    let (text, err) = put(&mut server, &a, "stale-probe-two", "Two, A's gist", None);
    assert!(err && text.starts_with("NOT WRITTEN"), "{text}");
    assert!(
        text.contains("changed this node after this session last saw it"),
        "{text}"
    );
    assert!(text.contains("gist: Two, rewritten by B"), "{text}");
    let (text, err) = put(&mut server, &a, "stale-probe-two", "Two, A's gist", None);
    assert!(!err, "{text}");

    // What still passes: a create, a session's writes after its own last write, and
    // identical lists.
    let (text, err) = put(&mut server, &a, "fresh-node", "New", Some(json!(["x"])));
    assert!(!err, "{text}");
    let (text, err) = put(
        &mut server,
        &a,
        "fresh-node",
        "New, again",
        Some(json!(["x", "y"])),
    );
    assert!(!err, "{text}");
    let (text, err) = put(
        &mut server,
        &a,
        "fresh-node",
        "New, once more",
        Some(json!(["x", "y"])),
    );
    assert!(!err, "{text}");
}

#[test]
fn a_stale_token_replayed_over_rest_or_from_the_view_gets_409_and_the_node() {
    let mut server = Server::fresh();
    let sid = session(&mut server, "alpha");
    let (text, err) = put(
        &mut server,
        &sid,
        "editor-probe",
        "Agent's first gist",
        None,
    );
    assert!(!err, "{text}");
    let (_, read) = server.json("GET", "/api/nodes/user/editor-probe", None);
    let loaded = read["node"]["_written"]["ts"].as_f64().expect("written ts");
    assert_eq!(read["node"]["_written"]["by"], json!(sid));

    // The agent writes again after the person loaded the node.
    let (text, err) = put(
        &mut server,
        &sid,
        "editor-probe",
        "Agent's newer gist",
        None,
    );
    assert!(!err, "{text}");
    let before = user_file(&server);
    let body = json!({"level": "user", "id": "editor-probe", "gist": "Person's gist", "written_ts": loaded});
    let (status, answer) = server.json("POST", "/api/nodes", Some(&body));
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["node"]["gist"], "Agent's newer gist", "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("NOT WRITTEN")),
        "{answer}"
    );
    assert_eq!(user_file(&server), before);

    // The view's step names what it loaded the same way; the replayed old stamp is
    // refused again, and so is a dry run.
    let step = |written_ts: f64, dry_run: bool| {
        json!({"level": "user", "dry_run": dry_run, "actions": [
            {"kind": "put_node", "id": "editor-probe", "gist": "Person's gist", "written_ts": written_ts}]})
    };
    for dry_run in [true, false] {
        let (status, answer) = server.json("POST", "/api/view/step", Some(&step(loaded, dry_run)));
        assert_eq!(status, 409, "{answer}");
        assert_eq!(answer["node"]["gist"], "Agent's newer gist");
    }
    assert_eq!(user_file(&server), before);

    // Having seen the newer content, the person's write goes through, stamped with no
    // writer; the agent is then refused until it looks again.
    let current = answer["node"]["_written"]["ts"].as_f64().expect("ts");
    let (status, answer) = server.json("POST", "/api/view/step", Some(&step(current, false)));
    assert_eq!(status, 200, "{answer}");
    let (_, read) = server.json("GET", "/api/nodes/user/editor-probe", None);
    assert_eq!(read["node"]["_written"]["by"], Value::Null);
    let (text, err) = put(
        &mut server,
        &sid,
        "editor-probe",
        "Agent's third gist",
        None,
    );
    assert!(err && text.starts_with("NOT WRITTEN"), "{text}");
    assert!(text.contains("a person (graph view or REST)"), "{text}");

    // Bad input: a token of the wrong type is a field error, nothing written.
    let bad =
        json!({"level": "user", "id": "editor-probe", "gist": "x", "written_ts": "yesterday"});
    let (status, answer) = server.json("POST", "/api/nodes", Some(&bad));
    assert_eq!(status, 422, "{answer}");
    // A REST write that names no token is a hand edit: it is not checked.
    let free = json!({"level": "user", "id": "editor-probe", "gist": "Hand edit"});
    let (status, answer) = server.json("POST", "/api/nodes", Some(&free));
    assert_eq!(status, 200, "{answer}");
}

#[test]
fn two_sessions_racing_on_one_node_one_lands_the_other_is_refused() {
    let mut server = Server::fresh();
    let a = session(&mut server, "alpha");
    let b = session(&mut server, "beta");
    let (text, err) = put(&mut server, &a, "race-node", "Start", Some(json!(["base"])));
    assert!(!err, "{text}");
    for sid in [&a, &b] {
        server.call("kg_read", &json!({"session_id": sid, "ids": ["race-node"]}));
    }
    let (first, err_a) = put(
        &mut server,
        &a,
        "race-node",
        "A",
        Some(json!(["base", "from A"])),
    );
    let (second, err_b) = put(
        &mut server,
        &b,
        "race-node",
        "B",
        Some(json!(["base", "from B"])),
    );
    assert!(!err_a, "{first}");
    assert!(err_b && second.starts_with("NOT WRITTEN"), "{second}");
    assert!(
        second.contains("- from A"),
        "B is shown A's write: {second}"
    );
}

/// What one racer did: the notes its acknowledged writes added, and how often it was
/// refused.
#[derive(Default)]
struct Tally {
    acknowledged: Vec<String>,
    refused: usize,
}

/// The notes of `race-node` as a batched read shows them.
fn notes_in(read: &str) -> Vec<String> {
    let mut notes = Vec::new();
    let mut inside = false;
    for line in read.lines() {
        if line.starts_with("notes:") || line.trim_start().starts_with("notes:") {
            inside = true;
            continue;
        }
        if inside {
            match line.trim_start().strip_prefix("- ") {
                Some(note) => notes.push(note.to_string()),
                None => inside = false,
            }
        }
    }
    notes
}

#[test]
fn many_sessions_racing_on_one_node_lose_no_acknowledged_write() {
    let racers = wire::env_usize("KG_RACE_SESSIONS", 8);
    let writes_each = wire::env_usize("KG_RACE_WRITES", 5);
    let mut server = Server::fresh();
    let port = server.port;
    let sids: Vec<String> = (0..racers)
        .map(|i| session(&mut server, &format!("racer{i}")))
        .collect();
    let (text, err) = put(
        &mut server,
        &sids[0],
        "race-node",
        "Shared node",
        Some(json!(["seed"])),
    );
    assert!(!err, "{text}");
    let seed_read = server
        .call(
            "kg_read",
            &json!({"session_id": sids[0], "ids": ["race-node"]}),
        )
        .0;
    assert_eq!(notes_in(&seed_read), ["seed"], "{seed_read}");

    let tallies: Arc<Mutex<Vec<Tally>>> = Arc::default();
    let handles: Vec<_> = sids
        .iter()
        .enumerate()
        .map(|(me, sid)| {
            let (sid, tallies) = (sid.clone(), tallies.clone());
            std::thread::spawn(move || {
                let mut tally = Tally::default();
                let mut attempts = 0;
                while tally.acknowledged.len() < writes_each {
                    attempts += 1;
                    assert!(attempts < 2_000, "racer {me} never got a write in");
                    // Read, then write back what was read plus one note of its own.
                    let (read, _) = wire::mcp_call(
                        port,
                        "kg_read",
                        &json!({"session_id": sid, "ids": ["race-node"]}),
                        TIMEOUT,
                    )
                    .expect("read");
                    let mut notes = notes_in(&read);
                    let mine = format!("racer {me} write {}", tally.acknowledged.len());
                    notes.push(mine.clone());
                    let args = json!({"session_id": sid, "level": "user", "id": "race-node",
                                      "gist": format!("last written by racer {me}"), "notes": notes});
                    let (text, err) =
                        wire::mcp_call(port, "kg_put_node", &args, TIMEOUT).expect("put");
                    if text.starts_with("Node 'race-node' saved") {
                        tally.acknowledged.push(mine);
                    } else {
                        assert!(err && text.starts_with("NOT WRITTEN"), "racer {me}: {text}");
                        tally.refused += 1;
                    }
                }
                tallies.lock().expect("tallies").push(tally);
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a racer panicked");
    }
    let tallies = tallies.lock().expect("tallies");
    let acknowledged: Vec<&String> = tallies.iter().flat_map(|t| &t.acknowledged).collect();
    let refused: usize = tallies.iter().map(|t| t.refused).sum();
    assert_eq!(acknowledged.len(), racers * writes_each);

    let (final_read, _) = server.call(
        "kg_read",
        &json!({"session_id": sids[0], "ids": ["race-node"]}),
    );
    let stored = notes_in(&final_read);
    for note in &acknowledged {
        assert!(
            stored.contains(note),
            "acknowledged write lost: {note}\n{final_read}"
        );
    }
    assert_eq!(stored.len(), acknowledged.len() + 1, "{final_read}");
    assert_eq!(stored[0], "seed");
    eprintln!(
        "{racers} sessions, {} acknowledged writes, {refused} refused as stale",
        acknowledged.len()
    );
}
