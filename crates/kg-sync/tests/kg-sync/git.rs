//! `kg-memory merge-driver` under a real `git merge`, on graph files a real store wrote.

use super::T0;
use kg_core::{Level, Store, StoreConfig, Target, parse_graph};
use kg_sync::{CONFLICT_NOTE_PREFIX, unresolved_conflicts};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A git command in `repo`, isolated from the user's and the system's git settings.
fn git(repo: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Ana")
        .env("GIT_AUTHOR_EMAIL", "ana@example.invalid")
        .env("GIT_COMMITTER_NAME", "Ana")
        .env("GIT_COMMITTER_EMAIL", "ana@example.invalid")
        .output()
        .expect("git runs")
}

fn git_ok(repo: &Path, args: &[&str]) -> String {
    let out = git(repo, args);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A storage root that is a git repository whose `*.json` files merge with our driver.
fn repository(home: &Path) -> PathBuf {
    let root = home.join("memory");
    fs::create_dir_all(&root).expect("mkdir");
    git_ok(&root, &["init", "-q", "-b", "main"]);
    fs::write(root.join(".gitattributes"), "*.json merge=kg\n").expect("attributes");
    let driver = format!(
        "{} merge-driver %O %A %B %P",
        kg_test_support::kg_memory_bin().display()
    );
    git_ok(&root, &["config", "merge.kg.name", "KG Memory graph merge"]);
    git_ok(&root, &["config", "merge.kg.driver", &driver]);
    root
}

/// Make changes through a store opened on the root (and closed after).
fn with_store(root: &Path, home: &Path, now: f64, change: impl FnOnce(&Store)) {
    let store = Store::open(StoreConfig::new(root, home), now).expect("store opens");
    change(&store);
}

const USER: Target<'static> = Target {
    level: Level::User,
    session: None,
    project_path: None,
};

fn put(store: &Store, id: &str, gist: &str, notes: Option<&[&str]>, now: f64) {
    let notes = notes.map(|n| n.iter().map(ToString::to_string).collect());
    store
        .put_node(USER, id, gist, notes, None, now)
        .expect("put_node");
}

fn commit(root: &Path, message: &str) {
    git_ok(root, &["add", "user.json", ".gitattributes"]);
    git_ok(root, &["commit", "-q", "-m", message]);
}

#[test]
fn git_merges_two_branches_of_a_graph_file_with_the_driver() {
    let home = tempfile::tempdir().expect("home");
    let root = repository(home.path());
    with_store(&root, home.path(), T0, |store| {
        put(store, "deploy-day", "Deploys go out on Fridays", None, T0);
        put(store, "cache-ttl", "The cache TTL is 5 minutes", None, T0);
        store
            .put_edge(USER, "deploy-day", "cache-ttl", "flushes", None, T0)
            .expect("put_edge");
    });
    commit(&root, "base");

    // The laptop: a new gist for deploy-day, a note on cache-ttl, a new node.
    git_ok(&root, &["checkout", "-q", "-b", "laptop"]);
    with_store(&root, home.path(), T0 + 10.0, |store| {
        put(
            store,
            "deploy-day",
            "Deploys go out on Thursdays",
            None,
            T0 + 10.0,
        );
        put(
            store,
            "cache-ttl",
            "The cache TTL is 5 minutes",
            Some(&["per tenant"]),
            T0 + 11.0,
        );
        put(
            store,
            "queue-alarm",
            "Queue depth alarm at 1000",
            None,
            T0 + 12.0,
        );
    });
    commit(&root, "laptop");

    // The desktop: a later gist for deploy-day, cache-ttl deleted, a new node.
    git_ok(&root, &["checkout", "-q", "main"]);
    with_store(&root, home.path(), T0 + 20.0, |store| {
        put(
            store,
            "deploy-day",
            "Deploys go out on Tuesdays",
            None,
            T0 + 20.0,
        );
        store
            .delete_node(Some(USER), None, "cache-ttl", T0 + 21.0)
            .expect("delete_node");
        put(
            store,
            "on-call",
            "On-call rotates on Mondays",
            None,
            T0 + 22.0,
        );
    });
    commit(&root, "desktop");

    let out = git(&root, &["merge", "--no-edit", "laptop"]);
    assert!(
        out.status.success(),
        "git merge failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        git_ok(&root, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
    let parents = git_ok(&root, &["log", "-1", "--format=%P"]);
    assert_eq!(parents.split_whitespace().count(), 2, "a merge commit");

    let merged = parse_graph(&fs::read(root.join("user.json")).expect("read")).expect("parses");
    let ids: Vec<&String> = merged.graph.nodes.keys().collect();
    assert_eq!(ids, ["deploy-day", "cache-ttl", "on-call", "queue-alarm"]);
    let deploy = &merged.graph.nodes["deploy-day"];
    assert_eq!(
        deploy.gist(),
        "Deploys go out on Tuesdays",
        "the newer gist"
    );
    let notes = deploy.notes();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].starts_with(CONFLICT_NOTE_PREFIX));
    assert!(notes[0].contains("Deploys go out on Thursdays"));
    // The laptop's note outweighs the desktop's delete, and the edge comes back too.
    assert_eq!(merged.graph.nodes["cache-ttl"].notes(), ["per tenant"]);
    let edges: Vec<String> = merged.graph.edges.keys().map(ToString::to_string).collect();
    assert_eq!(edges, ["deploy-day->cache-ttl:flushes"]);
    assert_eq!(unresolved_conflicts(&merged.graph), 1);

    // A store loads the merged file as it is.
    with_store(&root, home.path(), T0 + 30.0, |store| {
        let loaded = store.with_graph(store.user_slot(), |g| g.clone());
        assert_eq!(loaded, merged.graph);
    });
}

#[test]
fn a_corrupt_graph_on_the_other_branch_is_a_conflict_and_ours_stays() {
    let home = tempfile::tempdir().expect("home");
    let root = repository(home.path());
    with_store(&root, home.path(), T0, |store| {
        put(store, "deploy-day", "Deploys go out on Fridays", None, T0);
    });
    commit(&root, "base");
    git_ok(&root, &["checkout", "-q", "-b", "broken"]);
    fs::write(root.join("user.json"), "{\"nodes\": {\"deploy-day\": ").expect("corrupt");
    commit(&root, "a cut-off file");
    git_ok(&root, &["checkout", "-q", "main"]);
    with_store(&root, home.path(), T0 + 5.0, |store| {
        put(
            store,
            "deploy-day",
            "Deploys go out on Thursdays",
            None,
            T0 + 5.0,
        );
    });
    commit(&root, "desktop");
    let ours = fs::read(root.join("user.json")).expect("read");

    let out = git(&root, &["merge", "--no-edit", "broken"]);
    assert!(
        !out.status.success(),
        "git merge should stop on the conflict"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("their version is not a valid KG Memory graph file"),
        "{stderr}"
    );
    let status = git_ok(&root, &["status", "--porcelain", "--untracked-files=no"]);
    assert_eq!(status, "UU user.json\n");
    assert_eq!(fs::read(root.join("user.json")).expect("read"), ours);
}
