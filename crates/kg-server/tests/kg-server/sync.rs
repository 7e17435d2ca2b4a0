//! Git sync with the real binary and real git: storage roots written through a real
//! store, `kg-memory sync setup/now/status/off` run on them, every remote a bare
//! repository under a temporary folder.

use crate::server::temp_home;
use kg_core::{GraphFile, Level, Store, StoreConfig, Target, parse_graph};
use kg_test_support::T;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// One machine: a home (git's global config lives there, so none of the user's) and
/// its storage root. Its store's home is the test's folder, so both machines can hold
/// the same project folder (project paths are machine-local; matching different ones
/// is not sync's job here).
struct Machine {
    home: PathBuf,
    root: PathBuf,
    store_home: PathBuf,
}

impl Machine {
    fn new(base: &Path, name: &str) -> Machine {
        let home = base.join(name);
        fs::create_dir_all(&home).expect("home");
        Machine {
            root: home.join("storage"),
            home,
            store_home: base.to_path_buf(),
        }
    }

    /// `kg-memory sync <args>` on this machine.
    fn sync(&self, args: &[&str]) -> Output {
        kg_memory_on(&self.home, &self.root)
            .arg("sync")
            .args(args)
            .output()
            .expect("run kg-memory sync")
    }

    /// `sync <args>`, which must succeed; its standard output.
    fn sync_ok(&self, args: &[&str]) -> String {
        let out = self.sync(args);
        assert!(
            out.status.success(),
            "kg-memory sync {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `sync <args>`, which must fail; its standard error.
    fn sync_fails(&self, args: &[&str]) -> String {
        let out = self.sync(args);
        assert!(
            !out.status.success(),
            "kg-memory sync {args:?} should have failed:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Write through a real store on this root, then close it (everything saved).
    fn write(&self, at: f64, writes: impl FnOnce(&Store, f64)) {
        let store = Store::open(StoreConfig::new(&self.root, &self.store_home), at).expect("store");
        writes(&store, at);
        store.flush();
    }

    fn put(&self, at: f64, ids_and_gists: &[(&str, &str)]) {
        self.write(at, |store, now| {
            for (id, gist) in ids_and_gists {
                store
                    .put_node(USER, id, gist, None, None, now)
                    .expect("put node");
            }
        });
    }

    fn graph(&self, path: &str) -> GraphFile {
        let bytes = fs::read(self.root.join(path)).expect("graph file");
        parse_graph(&bytes).expect("graph parses")
    }

    fn git(&self, args: &[&str]) -> String {
        git_in(&self.root, args)
    }

    fn conflicts_in_status(&self) -> usize {
        let status = self.sync_ok(&["status"]);
        status
            .lines()
            .find_map(|l| l.strip_prefix("Merge conflicts to resolve: "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no conflict count in:\n{status}"))
    }
}

const USER: Target<'static> = Target {
    level: Level::User,
    session: None,
    project_path: None,
};

/// `kg-memory` as a machine with this home and storage root runs it: git sees only the
/// machine's own config, and no clock or repository of the test's environment.
pub(crate) fn kg_memory_on(home: &Path, root: &Path) -> Command {
    let mut command = Command::new(crate::server::bin());
    command
        .env("HOME", home)
        .env("KG_STORAGE_ROOT", root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".state"))
        .env_remove("KG_CLOCK_FILE")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    command
}

pub(crate) fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("LC_ALL", "C")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An empty bare repository: the remote.
pub(crate) fn bare_remote(base: &Path) -> PathBuf {
    bare_repo(&base.join("remote.git"))
}

/// An empty bare repository at `path` (a team's remote beside a person's own).
pub(crate) fn bare_repo(path: &Path) -> PathBuf {
    fs::create_dir_all(path).expect("remote dir");
    git_in(
        path,
        &["init", "--quiet", "--bare", "--initial-branch=main"],
    );
    path.to_path_buf()
}

/// A machine whose project folders lie in its own home, as on a real machine (the
/// CLI takes only those): one machine's folders are no project folders of another.
fn at_home(base: &Path, name: &str) -> Machine {
    let machine = Machine::new(base, name);
    Machine {
        store_home: machine.home.clone(),
        ..machine
    }
}

/// Two machines synced through one bare remote, each holding the other's first node.
fn two_machines(base: &Path) -> (Machine, Machine, PathBuf) {
    let remote = bare_remote(base);
    let url = remote.to_string_lossy().into_owned();
    let a = Machine::new(base, "laptop");
    let b = Machine::new(base, "desktop");
    a.put(T, &[("laptop-first", "Written on the laptop first")]);
    a.sync_ok(&["setup", &url]);
    b.put(
        T + 1.0,
        &[("desktop-first", "Written on the desktop first")],
    );
    let out = b.sync_ok(&["setup", &url]);
    assert!(out.contains("Sync is set up"), "{out}");
    a.sync_ok(&["now"]);
    for m in [&a, &b] {
        let g = m.graph("user.json").graph;
        assert!(g.nodes.contains_key("laptop-first") && g.nodes.contains_key("desktop-first"));
    }
    (a, b, remote)
}

#[test]
fn two_machines_converge_keeping_every_node_and_the_conflict() {
    let (dir, base) = temp_home();
    let (a, b, remote) = two_machines(&base);
    let project = base.join("work/shop");
    fs::create_dir_all(&project).expect("project folder");
    let project_path = project.to_string_lossy().into_owned();
    let in_project = Target {
        level: Level::Project,
        session: None,
        project_path: Some(&project_path),
    };

    // Both machines write: their own nodes, the same shared node with different
    // gists (the desktop's later), and nodes of one project graph.
    a.put(T + 10.0, &[("shared", "The shared fact as first written")]);
    a.sync_ok(&["now"]);
    b.sync_ok(&["now"]);
    a.write(T + 100.0, |store, now| {
        store
            .put_node(USER, "laptop-second", "Laptop's second", None, None, now)
            .expect("put");
        store
            .put_node(
                USER,
                "shared",
                "The laptop's version of the fact",
                None,
                None,
                now,
            )
            .expect("put");
        store
            .put_node(
                in_project,
                "shop-laptop",
                "Shop fact from the laptop",
                None,
                None,
                now,
            )
            .expect("put");
        store
            .put_edge(USER, "laptop-second", "shared", "relates-to", None, now)
            .expect("edge");
    });
    b.write(T + 200.0, |store, now| {
        store
            .put_node(USER, "desktop-second", "Desktop's second", None, None, now)
            .expect("put");
        store
            .put_node(
                USER,
                "shared",
                "The desktop's version of the fact",
                None,
                None,
                now,
            )
            .expect("put");
        store
            .put_node(
                in_project,
                "shop-desktop",
                "Shop fact from the desktop",
                None,
                None,
                now,
            )
            .expect("put");
    });
    // A file of this machine only, which must never reach the remote.
    let slug_dir = fs::read_dir(b.root.join("projects"))
        .expect("projects")
        .flatten()
        .next()
        .expect("a project folder")
        .path();
    fs::write(slug_dir.join("tool_events.json"), "{}").expect("tool events");

    for _ in 0..2 {
        a.sync_ok(&["now"]);
        b.sync_ok(&["now"]);
    }

    let slug = slug_dir
        .file_name()
        .expect("slug")
        .to_string_lossy()
        .into_owned();
    let project_graph = format!("projects/{slug}/graph.json");
    for path in ["user.json", project_graph.as_str()] {
        assert_eq!(
            fs::read(a.root.join(path)).expect("a"),
            fs::read(b.root.join(path)).expect("b"),
            "{path} differs between the machines"
        );
    }
    let user = a.graph("user.json").graph;
    for id in [
        "laptop-first",
        "desktop-first",
        "laptop-second",
        "desktop-second",
        "shared",
    ] {
        assert!(user.nodes.contains_key(id), "{id} is missing");
    }
    assert_eq!(user.edges.len(), 1, "the laptop's edge arrived");
    let shared = &user.nodes["shared"];
    assert_eq!(
        shared.gist(),
        "The desktop's version of the fact",
        "the newer gist wins"
    );
    let conflict_notes: Vec<String> = shared
        .notes()
        .into_iter()
        .filter(|n| n.starts_with(kg_sync::CONFLICT_NOTE_PREFIX))
        .collect();
    assert_eq!(conflict_notes.len(), 1, "{:?}", shared.notes());
    assert!(conflict_notes[0].contains("The laptop's version of the fact"));
    let shop = a.graph(&project_graph).graph;
    assert!(shop.nodes.contains_key("shop-laptop") && shop.nodes.contains_key("shop-desktop"));

    for m in [&a, &b] {
        assert_eq!(m.conflicts_in_status(), 1);
        let status = m.sync_ok(&["status"]);
        assert!(
            status.contains("Ahead: 0 commit(s) to send; behind: 0"),
            "{status}"
        );
        assert!(!status.contains("Last sync: never"), "{status}");
        // Each reopens its memory from the merged files.
        let store =
            Store::open(StoreConfig::new(&m.root, &m.store_home), T + 300.0).expect("reopen");
        store.flush();
    }

    // The remote holds graphs and our two git files, nothing of a machine's own.
    let tracked = git_in(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    for path in tracked.lines() {
        assert!(
            kg_server::sync::is_graph_path(path)
                || path == ".gitignore"
                || path == ".gitattributes",
            "{path} was synced:\n{tracked}"
        );
    }
    assert!(!tracked.contains("tool_events"), "{tracked}");
    drop(dir);
}

#[test]
fn a_corrupted_graph_on_the_remote_is_refused_and_local_memory_kept() {
    let (dir, base) = temp_home();
    let (a, _b, remote) = two_machines(&base);
    // Someone pushes a user graph that does not parse.
    let evil = base.join("evil");
    git_in(
        &base,
        &["clone", "--quiet", &remote.to_string_lossy(), "evil"],
    );
    fs::write(evil.join("user.json"), "{\"nodes\": {\"broken\": ").expect("corrupt");
    git_in(
        &evil,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@y",
            "commit",
            "--quiet",
            "-am",
            "break it",
        ],
    );
    git_in(&evil, &["push", "--quiet", "origin", "main"]);

    a.put(T + 50.0, &[("laptop-local", "Only on the laptop so far")]);
    let before = fs::read(a.root.join("user.json")).expect("before");
    let head_before = a.git(&["rev-parse", "HEAD"]);
    let err = a.sync_fails(&["now"]);
    assert!(
        err.contains("user.json") && err.contains("not a readable memory graph"),
        "{err}"
    );
    assert_eq!(fs::read(a.root.join("user.json")).expect("after"), before);
    assert!(
        a.graph("user.json")
            .graph
            .nodes
            .contains_key("laptop-local")
    );
    assert!(
        !a.root.join(".git/MERGE_HEAD").exists(),
        "no merge left in progress"
    );
    // Only the local commit of the local change was made; the bad commit is not in.
    let log = a.git(&[
        "log",
        "--format=%s",
        &format!("{}..HEAD", head_before.trim()),
    ]);
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.starts_with("Auto-save "), "{log}");
    let status = a.sync_ok(&["status"]);
    assert!(status.contains("Last attempt failed"), "{status}");

    // Valid JSON that is no graph would read as an empty graph: refused as well.
    fs::write(evil.join("user.json"), "[]").expect("not a graph");
    git_in(
        &evil,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@y",
            "commit",
            "--quiet",
            "-am",
            "array",
        ],
    );
    git_in(&evil, &["push", "--quiet", "origin", "main"]);
    let err = a.sync_fails(&["now"]);
    assert!(err.contains("not a readable memory graph"), "{err}");
    assert_eq!(fs::read(a.root.join("user.json")).expect("after"), before);
    drop(dir);
}

#[test]
fn a_remote_that_disappears_loses_nothing_and_syncs_when_back() {
    let (dir, base) = temp_home();
    let (a, b, remote) = two_machines(&base);
    let away = base.join("remote-away.git");
    fs::rename(&remote, &away).expect("hide the remote");

    a.put(
        T + 60.0,
        &[("written-offline", "Written while the remote was gone")],
    );
    let err = a.sync_fails(&["now"]);
    assert!(err.contains("cannot reach the remote origin"), "{err}");
    assert!(err.contains("Nothing was lost"), "{err}");
    assert!(
        a.graph("user.json")
            .graph
            .nodes
            .contains_key("written-offline")
    );
    let status = a.sync_ok(&["status"]);
    assert!(status.contains("Remote unreachable since"), "{status}");
    assert!(status.contains("Ahead: 1 commit(s) to send"), "{status}");

    fs::rename(&away, &remote).expect("bring the remote back");
    a.sync_ok(&["now"]);
    let status = a.sync_ok(&["status"]);
    assert!(!status.contains("unreachable"), "{status}");
    b.sync_ok(&["now"]);
    assert!(
        b.graph("user.json")
            .graph
            .nodes
            .contains_key("written-offline")
    );
    drop(dir);
}

#[test]
fn sync_off_keeps_the_memory_and_its_history() {
    let (dir, base) = temp_home();
    let (a, _b, _remote) = two_machines(&base);
    let before = fs::read(a.root.join("user.json")).expect("before");
    let commits = a.git(&["rev-list", "--count", "HEAD"]);
    let out = a.sync_ok(&["off"]);
    assert!(out.contains("Sync is off"), "{out}");
    assert_eq!(fs::read(a.root.join("user.json")).expect("after"), before);
    assert_eq!(a.git(&["rev-list", "--count", "HEAD"]), commits);
    assert_eq!(a.git(&["remote"]).trim(), "");
    assert!(!a.git(&["config", "--list", "--local"]).contains("merge.kg"));
    assert!(a.sync_ok(&["status"]).starts_with("Sync: off"));
    let err = a.sync_fails(&["now"]);
    assert!(err.contains("sync is not set up"), "{err}");
    assert!(a.sync_ok(&["off"]).contains("was not on"));
    drop(dir);
}

#[test]
fn an_autocommitted_root_joins_keeping_its_files_but_not_its_sessions() {
    let (dir, base) = temp_home();
    let remote = bare_remote(&base);
    let url = remote.to_string_lossy().into_owned();
    // The laptop's root is already a git repository on `master`, as the autocommit
    // leaves it, with the session registry committed.
    let a = Machine::new(&base, "laptop");
    a.put(T, &[("laptop-first", "Written on the laptop first")]);
    fs::write(a.root.join("sessions.json"), "{}").expect("sessions");
    git_in(&a.root, &["init", "--quiet", "--initial-branch=master"]);
    git_in(&a.root, &["add", "-A"]);
    git_in(
        &a.root,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@y",
            "commit",
            "--quiet",
            "-m",
            "Auto-save",
        ],
    );
    a.sync_ok(&["setup", &url]);
    // The desktop starts fresh (its new repository's branch is `main`).
    let b = Machine::new(&base, "desktop");
    b.put(
        T + 1.0,
        &[("desktop-first", "Written on the desktop first")],
    );
    b.sync_ok(&["setup", &url]);
    a.sync_ok(&["now"]);

    let branches = git_in(
        &remote,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
    );
    assert_eq!(branches.trim(), "master", "one shared branch");
    let tracked = git_in(&remote, &["ls-tree", "-r", "--name-only", "master"]);
    assert!(!tracked.contains("sessions.json"), "{tracked}");
    assert!(
        a.root.join("sessions.json").is_file(),
        "kept on disk, out of git"
    );
    for m in [&a, &b] {
        let g = m.graph("user.json").graph;
        assert!(g.nodes.contains_key("laptop-first") && g.nodes.contains_key("desktop-first"));
    }
    drop(dir);
}

/// A graph file damaged on disk here is never committed or pushed: the sync opens the
/// store as a server does, which moves the damaged file aside (kept for a person) and
/// goes on from its backup, and what the remote brought is merged into that.
/// (Before issue 36 the damaged file was committed first, and the merge then stopped
/// on it.)
#[test]
fn a_damaged_local_graph_is_never_committed_or_pushed() {
    let (dir, base) = temp_home();
    let (a, b, remote) = two_machines(&base);
    b.put(T + 20.0, &[("desktop-more", "More from the desktop")]);
    b.sync_ok(&["now"]);
    let damaged = b"{\"nodes\": [\"not an object\"]}".to_vec();
    fs::write(a.root.join("user.json"), &damaged).expect("damage");
    a.sync_ok(&["now"]);
    let moved: Vec<PathBuf> = fs::read_dir(&a.root)
        .expect("root")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("user.json.corrupt-"))
        .collect();
    assert_eq!(moved.len(), 1, "the damaged file is kept aside: {moved:?}");
    assert_eq!(fs::read(&moved[0]).expect("kept"), damaged);
    let user = a.graph("user.json").graph;
    assert!(
        user.nodes.contains_key("desktop-more"),
        "the remote's node arrived"
    );
    let pushed = git_in(&remote, &["show", "main:user.json"]);
    assert!(parse_graph(pushed.as_bytes()).is_ok(), "{pushed}");
    let history = git_in(
        &remote,
        &["log", "-p", "--format=%s", "main", "--", "user.json"],
    );
    assert!(!history.contains("not an object"), "{history}");
    assert_eq!(
        a.git(&["status", "--porcelain"]).trim(),
        "",
        "the work tree is clean"
    );
    drop(dir);
}

/// A project folder that is a git clone of `url` (`git init` and an `origin`).
pub(crate) fn clone_folder(dir: &Path, url: &str) -> String {
    fs::create_dir_all(dir).expect("project folder");
    git_in(dir, &["init", "--quiet"]);
    git_in(dir, &["remote", "add", "origin", url]);
    dir.to_string_lossy().into_owned()
}

fn in_project(root: &str) -> Target<'_> {
    Target {
        level: Level::Project,
        session: None,
        project_path: Some(root),
    }
}

/// The storage folder and the node ids of the graph a machine uses for `root`.
fn project_graph_of(machine: &Machine, root: &str) -> (String, Vec<String>) {
    let store = Store::open(
        StoreConfig::new(&machine.root, &machine.store_home),
        T + 900.0,
    )
    .expect("store");
    let slot = store
        .existing_project_slot(root, T + 900.0)
        .expect("project graph");
    let mut ids = store.with_graph(&slot, |g| g.nodes.keys().cloned().collect::<Vec<_>>());
    ids.sort();
    (slot.slug.clone().expect("project slug"), ids)
}

#[test]
fn one_project_at_different_paths_on_two_machines_shares_one_graph() {
    let (dir, base) = temp_home();
    let remote = bare_remote(&base);
    let url = remote.to_string_lossy().into_owned();
    let (a, b) = (at_home(&base, "laptop"), at_home(&base, "desktop"));
    // The laptop has two projects named shop; the one under the plain name is not
    // the one the desktop clones, so only the git remote can match them.
    let blog = clone_folder(
        &a.home.join("blog/shop"),
        "git@example.com:ana/blog-shop.git",
    );
    let on_laptop = clone_folder(&a.home.join("src/shop"), "git@example.com:ana/shop.git");
    a.write(T, |store, now| {
        store
            .put_node(
                in_project(&blog),
                "blog-fact",
                "The blog's shop",
                None,
                None,
                now,
            )
            .expect("put");
        store
            .put_node(
                in_project(&on_laptop),
                "laptop-fact",
                "Written for the shop on the laptop",
                None,
                None,
                now,
            )
            .expect("put");
    });
    let (slug, _) = project_graph_of(&a, &on_laptop);
    assert!(slug.starts_with("shop-"), "{slug}");
    a.sync_ok(&["setup", &url]);

    // The desktop's clone of the same repository, elsewhere, its remote spelt the
    // https way.
    b.put(
        T + 1.0,
        &[("desktop-first", "Written on the desktop first")],
    );
    b.sync_ok(&["setup", &url]);
    let on_desktop = clone_folder(&b.home.join("code/shop"), "https://example.com/ana/shop");
    b.write(T + 10.0, |store, now| {
        store
            .put_node(
                in_project(&on_desktop),
                "desktop-fact",
                "Written for the shop on the desktop",
                None,
                None,
                now,
            )
            .expect("put");
    });
    b.sync_ok(&["now"]);
    a.sync_ok(&["now"]);
    a.write(T + 20.0, |store, now| {
        store
            .put_node(
                in_project(&on_laptop),
                "laptop-later",
                "Written on the laptop after the sync",
                None,
                None,
                now,
            )
            .expect("put");
    });
    a.sync_ok(&["now"]);
    b.sync_ok(&["now"]);

    let shared = vec![
        "desktop-fact".to_string(),
        "laptop-fact".to_string(),
        "laptop-later".to_string(),
    ];
    assert_eq!(
        project_graph_of(&a, &on_laptop),
        (slug.clone(), shared.clone())
    );
    assert_eq!(project_graph_of(&b, &on_desktop), (slug.clone(), shared));
    let graph_file = format!("projects/{slug}/graph.json");
    assert_eq!(
        a.graph(&graph_file).graph.nodes.keys().collect::<Vec<_>>(),
        b.graph(&graph_file).graph.nodes.keys().collect::<Vec<_>>(),
    );
    // The blog's graph got nothing of the shop's, and each machine holds exactly the
    // two graphs: no third one for the desktop's path.
    assert_eq!(
        b.graph("projects/shop/graph.json")
            .graph
            .nodes
            .keys()
            .collect::<Vec<_>>(),
        ["blog-fact"]
    );
    for m in [&a, &b] {
        let mut folders: Vec<String> = fs::read_dir(m.root.join("projects"))
            .expect("projects")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        folders.sort();
        assert_eq!(folders, ["shop".to_string(), slug.clone()]);
    }
    // Each machine's path map stays home; the project's remote travels with its graph.
    let tracked = git_in(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!tracked.contains("project-paths.json"), "{tracked}");
    assert!(
        tracked.contains(&format!("projects/{slug}/remotes/")),
        "{tracked}"
    );
    for m in [&a, &b] {
        assert!(m.root.join("project-paths.json").is_file());
    }
    drop(dir);
}

/// The laptop moves a project both machines sync through the storage root to a team
/// remote of its own: the storage root's remote then no longer tracks that graph. The
/// desktop's next sync must neither delete its copy nor stop at the deletion (as git's
/// own merge would: the file gone, or a modify/delete conflict when the desktop had
/// written to it); the desktop joins the team remote later and nothing of either is lost.
#[test]
fn a_project_moved_to_its_own_remote_elsewhere_is_kept_here() {
    let (dir, base) = temp_home();
    let remote = bare_remote(&base);
    let url = remote.to_string_lossy().into_owned();
    let team_url = bare_repo(&base.join("team-shop.git"))
        .to_string_lossy()
        .into_owned();
    let (a, b) = (at_home(&base, "laptop"), at_home(&base, "desktop"));
    let shop_a = clone_folder(&a.home.join("src/shop"), "git@example.com:ana/shop.git");
    let shop_b = clone_folder(&b.home.join("code/shop"), "git@example.com:ana/shop.git");
    let put_in_project = |m: &Machine, folder: &str, at: f64, id: &str| {
        m.write(at, |store, now| {
            store
                .put_node(
                    in_project(folder),
                    id,
                    &format!("{id} of the shop"),
                    None,
                    None,
                    now,
                )
                .expect("put");
        });
    };
    put_in_project(&a, &shop_a, T, "shop-from-laptop");
    a.sync_ok(&["setup", &url]);
    b.sync_ok(&["setup", &url]);
    let (slug, ids) = project_graph_of(&b, &shop_b);
    assert_eq!(ids, ["shop-from-laptop"]);
    let graph_file = format!("projects/{slug}/graph.json");

    // The desktop writes to the project meanwhile; the laptop moves it to the team.
    put_in_project(&b, &shop_b, T + 20.0, "shop-from-desktop");
    a.sync_ok(&["setup", "--project", &shop_a, &team_url]);
    a.sync_ok(&["now"]);
    let said = b.sync_ok(&["now"]);
    let kept = b.graph(&graph_file).graph;
    assert!(
        kept.nodes.contains_key("shop-from-laptop") && kept.nodes.contains_key("shop-from-desktop"),
        "the desktop's project graph lost nodes: {:?}\n{said}",
        kept.nodes.keys().collect::<Vec<_>>()
    );
    // It stays out of the storage root's repository, as on the laptop.
    let tracked = b.git(&["ls-files", "projects"]);
    assert!(!tracked.contains(&graph_file), "{tracked}");

    // The desktop joins the team remote: one graph with both machines' nodes.
    b.sync_ok(&["setup", "--project", &shop_b, &team_url]);
    a.sync_ok(&["now"]);
    for m in [&a, &b] {
        let mut ids: Vec<String> = m.graph(&graph_file).graph.nodes.keys().cloned().collect();
        ids.sort();
        assert_eq!(ids, ["shop-from-desktop", "shop-from-laptop"]);
    }
    drop(dir);
}
