//! One test per merge rule (kg-sync's `merge` docs), each checked both ways round.

use super::{T0, edge_keys, graph_file, merge_both_ways, node, version};
use kg_core::Level;
use kg_sync::{CONFLICT_NOTE_PREFIX, MergeError, Side, merge, unresolved_conflicts};
use serde_json::{Value, json};

/// Two nodes joined by an edge, each written once.
fn base() -> Vec<u8> {
    graph_file(
        base_nodes(),
        json!([{"from": "a", "to": "b", "rel": "uses"}]),
        base_versions(),
    )
}

fn base_nodes() -> Value {
    json!({
        "a": {"id": "a", "gist": "Retries are idempotent", "notes": ["n1"], "touches": ["src/pay.rs"],
              "_created_ts": T0, "owner": "ana"},
        "b": {"id": "b", "gist": "The cache TTL is 5 minutes", "_created_ts": T0}
    })
}

fn base_versions() -> Value {
    json!({
        "node:a": version(1, T0, "s0"),
        "node:b": version(1, T0, "s0"),
        "edge:a->b:uses": version(1, T0, "s0")
    })
}

/// The base's nodes with `id`'s fields replaced by `fields`.
fn with_node(id: &str, fields: Value) -> Value {
    let mut nodes = base_nodes();
    nodes[id] = fields;
    nodes
}

/// The base with node `id` replaced by `fields`, written as `written` says (`None`:
/// no write, such as a read, a like or a tier move).
fn edited(id: &str, fields: Value, written: Option<Value>) -> Vec<u8> {
    let versions = match written {
        Some(entry) => with_version(&format!("node:{id}"), entry),
        None => base_versions(),
    };
    graph_file(with_node(id, fields), base_edge(), versions)
}

/// The base's versions with `key` replaced.
fn with_version(key: &str, entry: Value) -> Value {
    let mut versions = base_versions();
    versions[key] = entry;
    versions
}

fn base_edge() -> Value {
    json!([{"from": "a", "to": "b", "rel": "uses"}])
}

#[test]
fn nodes_and_edges_added_on_either_side_are_kept() {
    let mut ours_nodes = base_nodes();
    ours_nodes["c"] = json!({"id": "c", "gist": "Added here", "_created_ts": T0 + 1.0});
    let ours = graph_file(
        ours_nodes,
        json!([{"from": "a", "to": "b", "rel": "uses"}, {"from": "c", "to": "a", "rel": "explains"}]),
        base_versions(),
    );
    let mut theirs_nodes = base_nodes();
    theirs_nodes["d"] = json!({"id": "d", "gist": "Added there", "_created_ts": T0 + 2.0});
    let theirs = graph_file(
        theirs_nodes,
        json!([{"from": "a", "to": "b", "rel": "uses"}, {"from": "a", "to": "d", "rel": "uses"}]),
        base_versions(),
    );
    let merged = merge_both_ways(&base(), &ours, &theirs).file;
    let ids: Vec<&String> = merged.graph.nodes.keys().collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    assert_eq!(
        edge_keys(&merged),
        ["a->b:uses", "a->d:uses", "c->a:explains"]
    );
}

#[test]
fn a_node_changed_on_one_side_takes_that_sides_version() {
    let a = json!({"id": "a", "gist": "Retries are idempotent since v2", "notes": ["n1"],
                   "touches": ["src/pay.rs"], "_created_ts": T0, "owner": "ana"});
    let ours = edited("a", a.clone(), Some(version(2, T0 + 10.0, "s1")));
    let b = json!({"id": "b", "gist": "The cache TTL is 5 minutes", "_created_ts": T0,
                   "notes": ["Set in config/cache.toml"]});
    let theirs = edited("b", b.clone(), Some(version(2, T0 + 20.0, "s2")));
    let merged = merge_both_ways(&base(), &ours, &theirs);
    assert_eq!(node(&merged.file, "a"), Some(a));
    assert_eq!(node(&merged.file, "b"), Some(b));
    assert_eq!(merged.file.graph.versions["node:a"].v(), 2);
    assert_eq!(merged.file.graph.versions["node:b"].ts(), T0 + 20.0);
    assert!(merged.conflicts.is_empty());
}

#[test]
fn a_node_changed_on_both_sides_is_merged_field_by_field_the_newer_winning() {
    // Ours (older) adds a note and changes `owner`; theirs (newer) drops n1, adds a
    // note and a touch, and changes `owner` too.
    let ours = edited(
        "a",
        json!({"id": "a", "gist": "Retries are idempotent", "notes": ["n1", "from ours"],
                   "touches": ["src/pay.rs"], "_created_ts": T0, "owner": "bo"}),
        Some(version(2, T0 + 10.0, "s1")),
    );
    let theirs = edited(
        "a",
        json!({"id": "a", "gist": "Retries are idempotent", "notes": ["from theirs"],
                   "touches": ["src/pay.rs", "src/retry.rs"], "_created_ts": T0, "owner": "cy"}),
        Some(version(2, T0 + 20.0, "s2")),
    );
    let merged = merge_both_ways(&base(), &ours, &theirs);
    let a = node(&merged.file, "a").expect("a");
    assert_eq!(a["gist"], "Retries are idempotent");
    assert_eq!(a["notes"], json!(["from theirs", "from ours"]));
    assert_eq!(a["touches"], json!(["src/pay.rs", "src/retry.rs"]));
    assert_eq!(
        a["owner"], "cy",
        "the newer version wins a field both changed"
    );
    assert!(merged.conflicts.is_empty());
    assert_eq!(merged.file.graph.versions["node:a"].ts(), T0 + 20.0);
}

#[test]
fn two_gists_keep_the_newer_and_the_other_in_a_conflict_note_with_its_origin() {
    let ours = edited(
        "a",
        json!({"id": "a", "gist": "Retries are idempotent per request id", "notes": ["n1"],
                   "touches": ["src/pay.rs"], "_created_ts": T0, "owner": "ana"}),
        Some(version(2, T0 + 10.0, "laptop1")),
    );
    let theirs = edited(
        "a",
        json!({"id": "a", "gist": "Retries are not idempotent for refunds", "notes": ["n1"],
                   "touches": ["src/pay.rs"], "_created_ts": T0, "owner": "ana"}),
        Some(version(2, T0 + 20.0, "desktop2")),
    );
    let merged = merge_both_ways(&base(), &ours, &theirs);
    let a = node(&merged.file, "a").expect("a");
    assert_eq!(a["gist"], "Retries are not idempotent for refunds");
    let notes = a["notes"].as_array().expect("notes");
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[0], "n1");
    let note = notes[1].as_str().expect("a text");
    assert!(note.starts_with(CONFLICT_NOTE_PREFIX), "{note}");
    assert!(
        note.contains("Retries are idempotent per request id"),
        "{note}"
    );
    // T0 + 10 s is 2026-09-21T14:13:30Z.
    assert!(
        note.contains("written 2026-09-21T14:13:30Z by session laptop1"),
        "{note}"
    );
    assert_eq!(merged.conflicts.len(), 1);
    assert_eq!(merged.conflicts[0].node, "a");
    assert_eq!(merged.conflicts[0].note, note);
    assert_eq!(unresolved_conflicts(&merged.file.graph), 1);
}

#[test]
fn equal_write_times_are_broken_by_the_json_text_either_way_round() {
    let gist_version = |gist: &str| {
        edited(
            "b",
            json!({"id": "b", "gist": gist, "_created_ts": T0}),
            Some(version(2, T0 + 10.0, "s1")),
        )
    };
    let (ours, theirs) = (
        gist_version("TTL is 7 minutes"),
        gist_version("TTL is 9 minutes"),
    );
    let merged = merge_both_ways(&base(), &ours, &theirs);
    let b = node(&merged.file, "b").expect("b");
    // `…"TTL is 9…` sorts after `…"TTL is 7…`.
    assert_eq!(b["gist"], "TTL is 9 minutes");
    assert!(
        b["notes"][0].as_str().expect("note").ends_with(
            "was: TTL is 7 minutes -- Remove this note once the gist says what it should."
        )
    );
}

#[test]
fn a_delete_wins_over_an_unchanged_node_and_takes_its_edges() {
    let ours = graph_file(json!({"a": base_nodes()["a"]}), json!([]), base_versions());
    // Theirs only read b and archived it: bookkeeping, not an edit.
    let theirs = edited(
        "b",
        json!({"id": "b", "gist": "The cache TTL is 5 minutes", "_created_ts": T0,
                   "_last_read_ts": T0 + 30.0, "_archived": true}),
        None,
    );
    let merged = merge_both_ways(&base(), &ours, &theirs).file;
    assert_eq!(node(&merged, "b"), None);
    assert!(edge_keys(&merged).is_empty());
    assert!(
        merged.graph.versions.contains_key("node:b"),
        "versions outlive deletes"
    );
}

#[test]
fn an_edit_wins_over_a_delete_and_the_node_keeps_its_edges() {
    let ours = graph_file(json!({"a": base_nodes()["a"]}), json!([]), base_versions());
    let b = json!({"id": "b", "gist": "The cache TTL is 7 minutes", "_created_ts": T0});
    let theirs = edited("b", b.clone(), Some(version(2, T0 + 20.0, "s2")));
    let merged = merge_both_ways(&base(), &ours, &theirs).file;
    assert_eq!(node(&merged, "b"), Some(b));
    assert_eq!(edge_keys(&merged), ["a->b:uses"]);
}

#[test]
fn an_endorsement_outweighs_a_delete() {
    let ours = graph_file(json!({"a": base_nodes()["a"]}), json!([]), base_versions());
    let theirs = edited(
        "b",
        json!({"id": "b", "gist": "The cache TTL is 5 minutes", "_created_ts": T0,
                   "_useful_ts": [T0 + 40.0]}),
        None,
    );
    let merged = merge_both_ways(&base(), &ours, &theirs).file;
    assert_eq!(
        node(&merged, "b").expect("b")["_useful_ts"],
        json!([T0 + 40.0])
    );
}

#[test]
fn an_edge_added_at_a_node_keeps_it_from_a_delete() {
    let ours = graph_file(json!({"a": base_nodes()["a"]}), json!([]), base_versions());
    let mut theirs_nodes = base_nodes();
    theirs_nodes["c"] = json!({"id": "c", "gist": "Cache warmers", "_created_ts": T0 + 5.0});
    let theirs = graph_file(
        theirs_nodes,
        json!([{"from": "a", "to": "b", "rel": "uses"}, {"from": "c", "to": "b", "rel": "fills"}]),
        base_versions(),
    );
    let merged = merge_both_ways(&base(), &ours, &theirs).file;
    assert!(node(&merged, "b").is_some());
    assert_eq!(edge_keys(&merged), ["a->b:uses", "c->b:fills"]);
}

#[test]
fn an_edge_delete_wins_only_over_an_unchanged_edge() {
    let two_edges = || json!([{"from": "a", "to": "b", "rel": "uses"}, {"from": "b", "to": "a", "rel": "feeds"}]);
    let base = graph_file(base_nodes(), two_edges(), base_versions());
    let ours = graph_file(base_nodes(), json!([]), base_versions());
    let theirs = graph_file(
        base_nodes(),
        json!([{"from": "a", "to": "b", "rel": "uses", "notes": ["since v2"]},
               {"from": "b", "to": "a", "rel": "feeds"}]),
        base_versions(),
    );
    let merged = merge_both_ways(&base, &ours, &theirs).file;
    assert_eq!(edge_keys(&merged), ["a->b:uses"]);
    assert_eq!(merged.graph.edges[0].notes(), ["since v2"]);
}

#[test]
fn an_edge_changed_on_both_sides_unions_its_notes() {
    let edge_with = |notes: Value| json!([{"from": "a", "to": "b", "rel": "uses", "notes": notes}]);
    let base = graph_file(base_nodes(), edge_with(json!(["n"])), base_versions());
    let ours = graph_file(base_nodes(), edge_with(json!(["n", "o"])), base_versions());
    let theirs = graph_file(
        base_nodes(),
        edge_with(json!(["t"])),
        with_version("edge:a->b:uses", version(2, T0 + 5.0, "s2")),
    );
    let merged = merge_both_ways(&base, &ours, &theirs).file;
    assert_eq!(merged.graph.edges[0].notes(), ["t", "o"]);
}

#[test]
fn endorsements_are_unioned_and_the_later_read_stamp_kept() {
    let a = |likes: Value, read: f64| {
        json!({"id": "a", "gist": "Retries are idempotent", "notes": ["n1"], "touches": ["src/pay.rs"],
               "_created_ts": T0, "owner": "ana", "_useful_ts": likes, "_last_read_ts": read})
    };
    let base = edited("a", a(json!([T0]), T0), None);
    let ours = edited("a", a(json!([T0, T0 + 5.0]), T0 + 5.0), None);
    let theirs = edited("a", a(json!([T0, T0 + 7.0]), T0 + 3.0), None);
    let merged = merge_both_ways(&base, &ours, &theirs).file;
    let a = node(&merged, "a").expect("a");
    let mut likes: Vec<f64> = a["_useful_ts"]
        .as_array()
        .expect("likes")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect();
    likes.sort_by(f64::total_cmp);
    assert_eq!(likes, [T0, T0 + 5.0, T0 + 7.0]);
    assert_eq!(a["_last_read_ts"], json!(T0 + 5.0));
}

#[test]
fn tier_flags_come_from_the_side_that_moved_the_node() {
    // Ours archived b (maintenance); theirs wrote a note on it.
    let ours = edited(
        "b",
        json!({"id": "b", "gist": "The cache TTL is 5 minutes", "_created_ts": T0, "_archived": true}),
        None,
    );
    let theirs = edited(
        "b",
        json!({"id": "b", "gist": "The cache TTL is 5 minutes", "_created_ts": T0, "notes": ["per tenant"]}),
        Some(version(2, T0 + 20.0, "s2")),
    );
    let merged = merge_both_ways(&base(), &ours, &theirs).file;
    let b = node(&merged, "b").expect("b");
    assert_eq!(b["_archived"], true);
    assert_eq!(b["notes"], json!(["per tenant"]));
}

#[test]
fn when_both_sides_moved_a_node_the_more_visible_tier_wins() {
    let b = |extra: Value| {
        let mut node = json!({"id": "b", "gist": "The cache TTL is 5 minutes", "_created_ts": T0});
        for (k, v) in extra.as_object().expect("fields") {
            node[k] = v.clone();
        }
        node
    };
    let base = edited("b", b(json!({"_archived": true})), None);
    // Ours read it (promoted: the flag goes, the version bumps); theirs orphaned it.
    let ours = edited(
        "b",
        b(json!({"_last_read_ts": T0 + 9.0})),
        Some(version(2, T0 + 9.0, "s1")),
    );
    let theirs = edited(
        "b",
        b(json!({"_archived": true, "_orphaned_ts": T0 + 30.0})),
        None,
    );
    let merged = merge_both_ways(&base, &ours, &theirs).file;
    let b = node(&merged, "b").expect("b");
    assert_eq!(b.get("_archived"), None);
    assert_eq!(b.get("_orphaned_ts"), None);
    assert_eq!(merged.graph.nodes["b"].tier(), kg_core::Tier::Active);
}

#[test]
fn a_node_added_on_both_sides_merges_without_a_base() {
    let with_c = |gist: &str, note: &str, ts: f64| {
        let mut nodes = base_nodes();
        nodes["c"] = json!({"id": "c", "gist": gist, "notes": [note], "_created_ts": ts});
        let mut versions = base_versions();
        versions["node:c"] = version(1, ts, "s");
        graph_file(nodes, base_edge(), versions)
    };
    let ours = with_c("Queue depth alarm at 1000", "from the laptop", T0 + 3.0);
    let theirs = with_c("Queue depth alarm at 500", "from the desktop", T0 + 4.0);
    let merged = merge_both_ways(&base(), &ours, &theirs);
    let c = node(&merged.file, "c").expect("c");
    assert_eq!(c["gist"], "Queue depth alarm at 500");
    assert_eq!(c["_created_ts"], json!(T0 + 3.0), "the earlier creation");
    let notes = c["notes"].as_array().expect("notes");
    assert_eq!(
        notes[..2],
        [json!("from the desktop"), json!("from the laptop")]
    );
    assert!(
        notes[2]
            .as_str()
            .expect("note")
            .contains("Queue depth alarm at 1000")
    );
    assert_eq!(merged.conflicts.len(), 1);
}

#[test]
fn the_merged_file_is_healed_as_a_load_heals_it() {
    let ours = edited(
        "b",
        json!({"id": "b", "gist": "The cache TTL is 5 minutes</gist>\n<notes>[\"per tenant\"]</notes>",
                   "_created_ts": T0}),
        Some(version(2, T0 + 5.0, "s1")),
    );
    let merged = merge_both_ways(&base(), &ours, &base()).file;
    let b = node(&merged, "b").expect("b");
    assert_eq!(b["gist"], "The cache TTL is 5 minutes");
    assert_eq!(b["notes"], json!(["per tenant"]));
}

#[test]
fn the_project_path_is_merged_as_one_value_and_the_level_of_ours_kept() {
    let moved = String::from_utf8(base())
        .expect("utf-8")
        .replace("/home/ana/shop", "/Users/ana/code/shop")
        .into_bytes();
    // Changed on one side: that side's, whichever side it is.
    let merged = merge_both_ways(&base(), &base(), &moved).file;
    assert_eq!(merged.project_path.as_deref(), Some("/Users/ana/code/shop"));
    assert_eq!(merged.level, Some(Level::Project));
    // Added on both sides with different paths: the same one both ways.
    let merged = merge_both_ways(b"", &base(), &moved).file;
    assert_eq!(merged.project_path.as_deref(), Some("/Users/ana/code/shop"));
}

#[test]
fn an_input_that_is_not_a_graph_file_refuses_the_merge() {
    let refused = |base: &[u8], ours: &[u8], theirs: &[u8]| match merge(base, ours, theirs) {
        Err(MergeError::Unparsable { side, cause }) => (side, cause),
        other => panic!("expected a refusal, got {other:?}"),
    };
    let (side, cause) = refused(&base(), &base(), b"{\"nodes\": {\"a\": ");
    assert_eq!(side, Side::Theirs);
    assert!(cause.contains("EOF"), "{cause}");
    let (side, _) = refused(&base(), b"{\"nodes\": []}", &base());
    assert_eq!(side, Side::Ours);
    // Some other JSON file under the same git attribute.
    let (side, cause) = refused(&base(), b"{\"theme\": \"dark\"}", &base());
    assert_eq!(side, Side::Ours);
    assert!(cause.contains("no nodes"), "{cause}");
    let (side, _) = refused(b"[1, 2]", &base(), &base());
    assert_eq!(side, Side::Base);
}

#[test]
fn an_empty_base_is_an_empty_graph() {
    // Git gives the driver an empty ancestor when both branches added the file.
    let mut other_nodes = base_nodes();
    other_nodes["c"] = json!({"id": "c", "gist": "Only here", "_created_ts": T0});
    let other = graph_file(other_nodes, base_edge(), base_versions());
    let merged = merge_both_ways(b"", &base(), &other).file;
    let ids: Vec<&String> = merged.graph.nodes.keys().collect();
    assert_eq!(ids, ["a", "b", "c"]);
}
