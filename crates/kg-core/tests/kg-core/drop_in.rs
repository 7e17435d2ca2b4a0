//! A storage root written by the reference's 0.17.0 (tests/fixtures/reference-0.17)
//! loads, serves and saves with everything we do not interpret kept: the new node
//! fields, progress trails, the third level and the logs, byte for byte where we did
//! not touch them (issue 32 item 6).

use kg_core::tools::{ReadArgs, kg_read};
use kg_core::{Level, Store, Target, parse_graph, serialize_graph};
use kg_test_support::home::copy_substituting;
use kg_test_support::{TempHome, open_store};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// A little after the fixture was written: its sessions are still live.
const NOW: f64 = 1_796_466_900.0;

fn fixture() -> PathBuf {
    kg_test_support::golden::fixtures().join("../reference-0.17/storage")
}

fn home_with_fixture() -> TempHome {
    let home = TempHome::named("kg-drop-in-");
    copy_substituting(&fixture(), &home.storage(), &home.path.to_string_lossy());
    for project in ["work/alpha", "work/beta"] {
        fs::create_dir_all(home.path.join(project)).expect("project folder");
    }
    home
}

/// Every file under `root`, relative, sorted.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(root).expect("under").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).expect("read")).expect("json")
}

#[test]
fn our_writer_writes_a_0_17_graph_file_byte_for_byte() {
    let home = home_with_fixture();
    for graph in [
        "user.json",
        "projects/alpha/graph.json",
        "projects/beta/graph.json",
        "maintain.json",
    ] {
        let text = fs::read_to_string(home.storage().join(graph)).expect("read");
        let file = parse_graph(text.as_bytes()).expect("parses");
        let level = file.level.unwrap_or(Level::User);
        let again = serialize_graph(&file.graph, level, file.project_path.as_deref());
        assert_eq!(again, text, "{graph} written back differs");
    }
}

#[test]
fn a_0_17_root_loads_serves_and_saves_keeping_what_we_do_not_interpret() {
    let home = home_with_fixture();
    let root = home.storage();
    let before: Vec<(PathBuf, Vec<u8>)> = files(&root)
        .into_iter()
        .map(|f| {
            let bytes = fs::read(root.join(&f)).expect("read");
            (f, bytes)
        })
        .collect();
    let alpha = home.path.join("work/alpha").to_string_lossy().into_owned();
    {
        let store: Store = open_store(&home, NOW);
        // Serve: a full read of a project session shows both levels, the lock too.
        let sid = store
            .register_session(Some(&alpha), None, NOW)
            .expect("session");
        let read = kg_read(
            &store,
            &ReadArgs {
                session_id: Some(sid.clone()),
                ..ReadArgs::default()
            },
            NOW,
        );
        assert!(!read.is_error, "{}", read.text);
        assert!(
            read.text.contains("  error-message-style (locked): "),
            "{}",
            read.text
        );
        assert!(
            read.text.contains("small-commits-preference"),
            "{}",
            read.text
        );
        // One write, to one node of alpha.
        let target = Target::session(Level::Project, &sid);
        store
            .put_node(
                target,
                "fx-rates-cache",
                "FX rates are cached for ten minutes and cleared on every deploy",
                None,
                None,
                NOW + 1.0,
            )
            .expect("write");
        store.flush();
    }
    let after = files(&root);
    for (file, bytes) in &before {
        assert!(after.contains(file), "{} is gone", file.display());
        let now = fs::read(root.join(file)).expect("read");
        match file.to_string_lossy().as_ref() {
            // Written by us: compared below.
            "projects/alpha/graph.json" | "sessions.json" | "user.json" => {}
            // Never written: every byte stays.
            _ => assert!(&now == bytes, "{} changed", file.display()),
        }
    }
    // The graph we wrote: every node but the one written is as it was, and that one
    // kept every field we do not interpret.
    let (old, new) = (
        serde_json::from_slice::<Value>(
            &before
                .iter()
                .find(|(f, _)| f.ends_with("alpha/graph.json"))
                .expect("alpha")
                .1,
        )
        .expect("json"),
        json(&root.join("projects/alpha/graph.json")),
    );
    for (id, node) in old["nodes"].as_object().expect("nodes") {
        let now = &new["nodes"][id];
        if id == "fx-rates-cache" {
            for (key, value) in node.as_object().expect("node") {
                if !["gist", "_written", "_last_read_ts"].contains(&key.as_str()) {
                    assert_eq!(&now[key], value, "{id}.{key}");
                }
            }
        } else if id != "fx-rates-cache" {
            assert_eq!(now, node, "{id}");
        }
    }
    assert_eq!(new["edges"], old["edges"]);
    assert_eq!(
        new["_meta"]["progress"], old["_meta"]["progress"],
        "progress and its _trail"
    );
    // The user graph: read stamps aside, every node as it was.
    let old_user: Value = serde_json::from_slice(
        &before
            .iter()
            .find(|(f, _)| f.as_os_str() == "user.json")
            .expect("user")
            .1,
    )
    .expect("json");
    let new_user = json(&root.join("user.json"));
    for (id, node) in old_user["nodes"].as_object().expect("nodes") {
        let mut was = node.clone();
        let mut now = new_user["nodes"][id].clone();
        for v in [&mut was, &mut now] {
            if let Some(o) = v.as_object_mut() {
                o.remove("_last_read_ts");
            }
        }
        assert_eq!(now, was, "{id}");
    }
    assert_eq!(new_user["_meta"]["progress"], old_user["_meta"]["progress"]);
    // Sessions: every key of every 0.17 record is kept.
    let old_sessions: Value = serde_json::from_slice(
        &before
            .iter()
            .find(|(f, _)| f.as_os_str() == "sessions.json")
            .expect("sessions")
            .1,
    )
    .expect("json");
    let new_sessions = json(&root.join("sessions.json"));
    for (sid, record) in old_sessions.as_object().expect("sessions") {
        for (key, value) in record.as_object().expect("record") {
            if ![
                "last_activity",
                "op_count",
                "seen_ids",
                "seen_at",
                "read_at",
            ]
            .contains(&key.as_str())
            {
                assert_eq!(&new_sessions[sid][key], value, "{sid}.{key}");
            }
        }
    }
}
