//! Existing users' files survive a load–save round trip: every graph written by the
//! Python implementation is loaded, saved and compared as JSON values.

use kg_test_support::golden::fixtures;
use kg_test_support::{T, TempHome, open_store};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fs;
use std::path::Path;

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).expect("read")).expect("parse")
}

/// Apply the differences the spec names to an original file, so the rest must match.
fn expected_after_round_trip(original: &Value, kept_edges: &HashSet<String>) -> Value {
    let mut want = original.clone();
    let obj = want.as_object_mut().expect("object");
    // core.md §1.4: only nodes, edges and a rebuilt _meta are written; other top-level
    // keys and unknown _meta keys are dropped, and _meta.progress only when non-empty.
    obj.retain(|k, _| k == "nodes" || k == "edges" || k == "_meta");
    if let Some(Value::Object(meta)) = obj.get_mut("_meta") {
        meta.retain(|k, _| {
            ["versions", "progress", "project_path", "namespace"].contains(&k.as_str())
        });
        if meta
            .get("progress")
            .is_some_and(|p| p.as_object().is_some_and(|o| o.is_empty()))
        {
            meta.remove("progress");
        }
    }
    // core.md §2.7a: edges whose endpoint is no node here, no artifact path and no node
    // of another loaded graph are dropped at load (checked separately below).
    if let Some(Value::Object(edges)) = obj.get_mut("edges") {
        edges.retain(|k, _| kept_edges.contains(k));
    }
    want
}

#[test]
fn every_reference_graph_survives_load_and_save() {
    for which in ["storage", "storage_before"] {
        let home = TempHome::new().with_fixture_storage(which);
        let store = open_store(&home, T);
        let mut files = vec![(home.storage().join("user.json"), store.user_slot().clone())];
        let mut projects: Vec<_> = fs::read_dir(home.storage().join("projects"))
            .expect("projects")
            .flatten()
            .map(|e| e.path().join("graph.json"))
            .filter(|p| p.exists())
            .collect();
        projects.sort();
        let originals: Vec<Value> = std::iter::once(files[0].0.clone())
            .chain(projects.iter().cloned())
            .map(|p| read_json(&p))
            .collect();
        for path in &projects {
            let recorded = read_json(path)["_meta"]["project_path"]
                .as_str()
                .expect("project graphs record their root")
                .to_string();
            let root = store.resolve_root(&recorded).expect("inside home");
            let slot = store.project_slot(&root, T).expect("loads");
            assert_eq!(&slot.path, path, "the recorded root finds its own file");
            files.push((path.clone(), slot));
        }
        let all_ids: HashSet<String> = originals
            .iter()
            .flat_map(|g| {
                g["nodes"]
                    .as_object()
                    .into_iter()
                    .flat_map(|n| n.keys().cloned())
            })
            .collect();
        for ((path, slot), original) in files.iter().zip(&originals) {
            store.save(slot).expect("save");
            let saved = read_json(path);
            let kept: HashSet<String> = saved["edges"]
                .as_object()
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default();
            // Every dropped edge had an endpoint the cleanup rule rejects.
            for (key, edge) in original["edges"].as_object().into_iter().flatten() {
                if kept.contains(key) {
                    continue;
                }
                let dangling = ["from", "to"].iter().any(|end| {
                    let x = edge[*end].as_str().unwrap_or_default();
                    !all_ids.contains(x) && !x.contains('/') && !x.contains('~')
                });
                assert!(
                    dangling,
                    "{}: edge {key} was dropped but is not dangling",
                    path.display()
                );
            }
            assert_eq!(
                saved,
                expected_after_round_trip(original, &kept),
                "{}: round trip changed the graph",
                path.display()
            );
            // Files that needed no cleanup come back byte for byte.
            if kept.len() == original["edges"].as_object().map_or(0, |e| e.len()) {
                let fixture = fixtures()
                    .join(which)
                    .join(path.strip_prefix(home.storage()).expect("inside"));
                let want = fs::read_to_string(fixture)
                    .expect("fixture")
                    .replace("<HOME>", &home.path.to_string_lossy());
                assert_eq!(
                    fs::read_to_string(path).expect("saved"),
                    want,
                    "{}",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn unknown_fields_and_raw_unicode_survive() {
    let home = TempHome::new();
    fs::create_dir_all(home.storage()).expect("storage");
    let original = json!({
        "nodes": {
            "a": {"id": "a", "gist": "naïve — ✓ 🦀", "x-custom": {"k": [1, 2.5, null]},
                   "_created_ts": 1790000000, "_useful_ts": [1790000001.25], "tags": ["t"]},
            "b": {"gist": "no id field", "_archived": false}
        },
        "edges": {"a->b:rel": {"from": "a", "to": "b", "rel": "rel", "weight": 3, "notes": ["n"]}},
        "_meta": {"versions": {"node:a": {"v": 7, "ts": 1790000000.5, "session": null, "extra": true}},
                  "progress": {"maintain": {"last_ts": 1790000000, "cursor": "x"}},
                  "namespace": {"kind": "user", "owner": null}}
    });
    // Written raw (not \u-escaped), as another tool might.
    fs::write(
        home.storage().join("user.json"),
        serde_json::to_string_pretty(&original).expect("json"),
    )
    .expect("write");
    let store = open_store(&home, T);
    store.save(store.user_slot()).expect("save");
    let saved = read_json(&home.storage().join("user.json"));
    assert_eq!(saved, original);
}
