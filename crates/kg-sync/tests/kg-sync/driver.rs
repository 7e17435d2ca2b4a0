//! The merge driver on real files.

use super::{T0, graph_file, version};
use kg_sync::{DriverError, DriverOutcome, merge, merge_driver};
use serde_json::json;
use std::fs;
use std::path::Path;

fn one_node(gist: &str, ts: f64) -> Vec<u8> {
    graph_file(
        json!({"a": {"id": "a", "gist": gist, "_created_ts": T0}}),
        json!([]),
        json!({"node:a": version(1, ts, "s")}),
    )
}

/// The three files git would hand over, in a folder of their own.
fn files(dir: &Path, base: &[u8], ours: &[u8], theirs: &[u8]) -> [std::path::PathBuf; 3] {
    let paths = ["base.json", "ours.json", "theirs.json"].map(|name| dir.join(name));
    for (path, bytes) in paths.iter().zip([base, ours, theirs]) {
        fs::write(path, bytes).expect("write");
    }
    paths
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_merged_graph_replaces_ours_and_nothing_else_is_left_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, ours, theirs) = (
        one_node("Deploys on Fridays", T0),
        one_node("Deploys on Thursdays", T0 + 1.0),
        one_node("Deploys on Fridays", T0),
    );
    let [b, o, t] = files(dir.path(), &base, &ours, &theirs);
    let outcome = merge_driver(&b, &o, &t, "user.json").expect("runs");
    assert_eq!(
        outcome,
        DriverOutcome::Merged {
            path_name: "user.json".into(),
            conflicts: 0
        }
    );
    assert_eq!(outcome.exit_code(), 0);
    let expected = merge(&base, &ours, &theirs).expect("merges").text;
    assert_eq!(fs::read_to_string(&o).expect("read"), expected);
    // No temporary file and no `.prev` backup beside the file in a work tree.
    assert_eq!(
        names_in(dir.path()),
        ["base.json", "ours.json", "theirs.json"]
    );
}

#[test]
fn conflicts_are_counted_and_the_merge_is_still_clean_for_git() {
    let dir = tempfile::tempdir().expect("tempdir");
    let [b, o, t] = files(
        dir.path(),
        &one_node("Deploys on Fridays", T0),
        &one_node("Deploys on Thursdays", T0 + 1.0),
        &one_node("Deploys on Mondays", T0 + 2.0),
    );
    let outcome = merge_driver(&b, &o, &t, "projects/shop/graph.json").expect("runs");
    assert_eq!(outcome.exit_code(), 0);
    assert!(matches!(
        outcome,
        DriverOutcome::Merged { conflicts: 1, .. }
    ));
    assert!(
        outcome
            .to_string()
            .contains("1 node(s) were edited on both sides")
    );
    assert!(
        fs::read_to_string(&o)
            .expect("read")
            .contains("[merge conflict]")
    );
}

#[test]
fn an_input_that_does_not_parse_leaves_ours_untouched_and_reports_a_conflict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ours = one_node("Deploys on Thursdays", T0 + 1.0);
    let [b, o, t] = files(
        dir.path(),
        &one_node("Deploys on Fridays", T0),
        &ours,
        b"{\"nodes\": {\"a\": {\"gist\": \"cut off",
    );
    let outcome = merge_driver(&b, &o, &t, "user.json").expect("runs");
    assert_eq!(outcome.exit_code(), 1);
    let DriverOutcome::Refused { cause, .. } = &outcome else {
        panic!("expected a refusal, got {outcome:?}");
    };
    assert!(
        cause.starts_with("their version is not a valid KG Memory graph file"),
        "{cause}"
    );
    assert_eq!(fs::read(&o).expect("read"), ours);
    assert_eq!(
        names_in(dir.path()),
        ["base.json", "ours.json", "theirs.json"]
    );
}

#[test]
fn a_missing_input_is_an_error_and_ours_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ours = one_node("Deploys on Thursdays", T0 + 1.0);
    let [b, o, t] = files(dir.path(), &ours, &ours, &ours);
    fs::remove_file(&t).expect("remove");
    match merge_driver(&b, &o, &t, "user.json") {
        Err(DriverError::Read { path, .. }) => assert_eq!(path, t),
        other => panic!("expected a read error, got {other:?}"),
    }
    assert_eq!(fs::read(&o).expect("read"), ours);
}
