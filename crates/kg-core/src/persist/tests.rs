use super::*;
use proptest::prelude::*;

/// One change a store can make to a graph between two saves.
#[derive(Debug, Clone)]
enum Change {
    NewNode(u8),
    EditNode(u8, String),
    RemoveNode(u8),
    PutEdge(u8, u8, Option<String>),
    RemoveEdge(u8),
    BumpVersion(u8),
    /// Go back to the graph as it was after change `n` (an undo restores a copy).
    Restore(u8),
    Progress(String),
    /// Move a node's value, cached text and all, under another id.
    Rename(u8, u8),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0u8..12).prop_map(Change::NewNode),
        (0u8..12, "[a-z\"\u{e9} ]{0,8}").prop_map(|(i, g)| Change::EditNode(i, g)),
        (0u8..12).prop_map(Change::RemoveNode),
        (0u8..12, 0u8..12, proptest::option::of("[a-z]{1,4}"))
            .prop_map(|(a, b, n)| Change::PutEdge(a, b, n)),
        (0u8..12).prop_map(Change::RemoveEdge),
        (0u8..12).prop_map(Change::BumpVersion),
        (0u8..40).prop_map(Change::Restore),
        "[a-z]{0,3}".prop_map(Change::Progress),
        (0u8..12, 0u8..12).prop_map(|(a, b)| Change::Rename(a, b)),
    ]
}

fn apply(graph: &mut Graph, change: &Change, history: &[Graph], now: f64) {
    let id = |i: u8| format!("n{i}");
    match change {
        Change::NewNode(i) => {
            graph.node_entry(&id(*i));
        }
        Change::EditNode(i, gist) => {
            if let Some(node) = graph.node_mut(&id(*i)) {
                node.set("gist", Value::String(gist.clone()));
            }
        }
        Change::RemoveNode(i) => {
            graph.remove_node(&id(*i));
        }
        Change::PutEdge(a, b, notes) => {
            let edge = graph.edge_entry(&EdgeKey::new(&id(*a), &id(*b), "rel"));
            if let Some(note) = notes {
                edge.set_notes(vec![note.clone()]);
            }
        }
        Change::RemoveEdge(k) => {
            let k = *k as usize;
            if k < graph.edges.len() {
                graph.edges.shift_remove_index(k);
            }
        }
        Change::BumpVersion(i) => graph.bump_version(format!("node:n{i}"), now, Some("s")),
        Change::Restore(n) => {
            if let Some(old) = history.get(*n as usize) {
                *graph = old.clone();
            }
        }
        Change::Progress(text) => {
            graph
                .progress
                .insert("note".into(), Value::String(text.clone()));
        }
        Change::Rename(a, b) => {
            if let Some(node) = graph.nodes.shift_remove(&id(*a)) {
                graph.nodes.insert(id(*b), node);
            }
        }
    }
}

#[test]
fn a_writer_that_lost_its_last_text_writes_afresh() {
    let mut graph = Graph::default();
    for i in 0..3 {
        graph.node_entry(&format!("n{i}"));
    }
    let mut writer = GraphWriter::default();
    writer.write(&graph, Level::User, None);
    // What a write that panicked half-way leaves: spans without their text.
    writer.text.clear();
    assert_eq!(
        writer.write(&graph, Level::User, None),
        serialize_graph(&graph, Level::User, None)
    );
}

proptest! {
    #[test]
    fn a_writer_reusing_its_last_text_writes_what_a_fresh_one_writes(
        changes in prop::collection::vec(change(), 1..60),
    ) {
        let mut graph = Graph::default();
        let mut writer = GraphWriter::default();
        let mut history = Vec::new();
        for (step, change) in changes.iter().enumerate() {
            apply(&mut graph, change, &history, 1_790_000_000.0 + step as f64);
            history.push(graph.clone());
            let reused = writer.write(&graph, Level::Project, Some("/p")).to_string();
            prop_assert_eq!(reused, serialize_graph(&graph, Level::Project, Some("/p")));
        }
    }
}

const SAMPLE: &str = r#"{
  "nodes": {
    "b": {
      "id": "b",
      "gist": "caf\u00e9 \u2014 ok",
      "custom": {"x": [1, 2.5]},
      "_created_ts": 1790000000.5
    },
    "_meta": {"id": "_meta"},
    "a": {
      "id": "a",
      "gist": "first"
    }
  },
  "edges": {
    "b->a:rel": {
      "from": "b",
      "to": "a",
      "rel": "rel"
    },
    "stale-key": {
      "from": "b",
      "to": "a",
      "rel": "rel",
      "notes": [
        "last wins"
      ]
    }
  },
  "_meta": {
    "versions": {
      "node:b": {
        "v": 3,
        "ts": 1790400000.1,
        "session": "3f9a0c1e"
      }
    },
    "progress": {
      "maintain": {
        "last_ts": 1790300000
      }
    },
    "project_path": "/home/ana/src/billing",
    "namespace": {
      "kind": "project",
      "owner": null
    }
  }
}"#;

#[test]
fn parse_keeps_order_and_collapses_duplicate_edges() {
    let file = parse_graph(SAMPLE.as_bytes()).expect("parses");
    let ids: Vec<_> = file.graph.nodes.keys().cloned().collect();
    assert_eq!(ids, ["b", "a"]);
    assert_eq!(file.graph.edges.len(), 1);
    let edge = &file.graph.edges[0];
    assert_eq!(edge.notes(), ["last wins"]);
    assert_eq!(file.project_path.as_deref(), Some("/home/ana/src/billing"));
    assert_eq!(file.level, Some(Level::Project));
    assert_eq!(file.graph.nodes["b"].gist(), "café — ok");
}

#[test]
fn serialise_round_trips_byte_for_byte_without_the_legacy_key() {
    let file = parse_graph(SAMPLE.as_bytes()).expect("parses");
    let text = serialize_graph(&file.graph, Level::Project, file.project_path.as_deref());
    let again = parse_graph(text.as_bytes()).expect("reparses");
    assert_eq!(again, file);
    assert!(text.contains("\"gist\": \"caf\\u00e9 \\u2014 ok\""));
    assert!(text.contains("\"b->a:rel\": {"));
    assert!(!text.contains("stale-key"));
}

#[test]
fn structural_damage_is_reported() {
    for bad in [
        "[]",
        "{\"nodes\": []}",
        "{\"nodes\": {\"a\": 5}}",
        "{\"edges\": {\"k\": {\"from\": \"a\", \"to\": \"b\"}}}",
        "{\"nodes\": {",
        "{\"_meta\": {\"versions\": []}}",
    ] {
        assert!(parse_graph(bad.as_bytes()).is_err(), "{bad}");
    }
    assert!(parse_graph(b"{\"nodes\": {\"a\": {\"gist\": \"\xff\"}}}").is_err());
}

#[test]
fn atomic_write_keeps_prev_and_never_clobbers_it_with_garbage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("graph.json");
    let valid = |b: &[u8]| parse_graph(b).is_ok();
    let s1 = atomic_write(&path, b"{}", WriteMode::GRAPH, None, Some(&valid)).expect("w1");
    assert!(!dir.path().join("graph.prev").exists());
    let s2 = atomic_write(
        &path,
        b"{\"nodes\": {}}",
        WriteMode::GRAPH,
        s1,
        Some(&valid),
    )
    .expect("w2");
    assert_eq!(
        fs::read(dir.path().join("graph.prev")).expect("prev"),
        b"{}"
    );
    // Someone scribbles over the file: it must not become the backup.
    fs::write(&path, b"garbage").expect("scribble");
    atomic_write(
        &path,
        b"{\"edges\": {}}",
        WriteMode::GRAPH,
        s2,
        Some(&valid),
    )
    .expect("w3");
    assert_eq!(
        fs::read(dir.path().join("graph.prev")).expect("prev"),
        b"{}"
    );
    assert_eq!(fs::read(&path).expect("cur"), b"{\"edges\": {}}");
    // The damaged file itself is kept aside, never destroyed.
    let quarantined: Vec<_> = fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("graph.json.corrupt-")
        })
        .map(|e| fs::read(e.path()).expect("read"))
        .collect();
    assert_eq!(quarantined, [b"garbage".to_vec()]);
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.ends_with("prev-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn missing_folders_are_created_for_a_durable_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("projects/new/graph.json");
    atomic_write(&path, b"{}", WriteMode::GRAPH, None, None).expect("write");
    assert_eq!(fs::read(&path).expect("read"), b"{}");
    atomic_write(&path, b"{ }", WriteMode::GRAPH, None, None).expect("again");
    assert_eq!(fs::read(&path).expect("read"), b"{ }");
}

#[test]
fn corrupt_file_is_moved_aside_and_prev_loaded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("graph.json");
    fs::write(&path, b"{\"nodes\": {\"a\": ").expect("write");
    fs::write(dir.path().join("graph.prev"), SAMPLE).expect("prev");
    match load_graph_file(&path, 1795176000.0).expect("load") {
        Loaded::Quarantined {
            moved_to,
            recovered: Some(file),
            ..
        } => {
            assert_eq!(moved_to, dir.path().join("graph.json.corrupt-1795176000"));
            assert_eq!(fs::read(&moved_to).expect("q"), b"{\"nodes\": {\"a\": ");
            assert_eq!(file.graph.nodes.len(), 2);
            assert!(!path.exists());
        }
        other => panic!("unexpected {other:?}"),
    }
}
