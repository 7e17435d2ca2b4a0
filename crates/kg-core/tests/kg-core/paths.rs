//! One project at different paths on different machines: each machine's map of its
//! own project folders, and the adoption of a graph another machine filed for a folder
//! of the same name. A "machine" is a home with its storage root; what git sync would
//! carry between them is copied by hand (`carry`).

use kg_core::{Level, Store, Target};
use kg_test_support::{T, TempHome, open_store};
use std::fs;
use std::path::Path;

/// A project folder under `home`, a git clone of `remote` when one is given (only
/// `.git/config` matters: that is what storage reads).
fn project(home: &TempHome, relative: &str, remote: Option<&str>) -> String {
    let dir = home.path.join(relative);
    fs::create_dir_all(&dir).expect("project folder");
    if let Some(url) = remote {
        fs::create_dir_all(dir.join(".git")).expect(".git");
        fs::write(
            dir.join(".git/config"),
            format!("[core]\n\tbare = false\n[remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"),
        )
        .expect("git config");
    }
    dir.to_string_lossy().into_owned()
}

fn at(root: &str) -> Target<'_> {
    Target {
        level: Level::Project,
        session: None,
        project_path: Some(root),
    }
}

fn put(store: &Store, root: &str, id: &str, gist: &str, now: f64) {
    store
        .put_node(at(root), id, gist, None, None, now)
        .expect("put node");
}

/// The slug the store files `root` under, and the node ids of that graph.
fn graph_of(store: &Store, root: &str) -> (String, Vec<String>) {
    let slot = store.existing_project_slot(root, T).expect("project graph");
    let mut ids = store.with_graph(&slot, |g| g.nodes.keys().cloned().collect::<Vec<_>>());
    ids.sort();
    (slot.slug.clone().expect("a project slug"), ids)
}

/// What sync carries for one project graph: the graph file and its recorded remotes
/// (not the machine's own files).
fn carry(from: &TempHome, to: &TempHome, slug: &str) {
    copy_tree(
        &from.storage().join("projects").join(slug),
        &to.storage().join("projects").join(slug),
    );
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read").flatten() {
        let name = entry.file_name();
        if name == "tool_events.json" || name.to_string_lossy().ends_with(".prev") {
            continue;
        }
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &to.join(&name));
        } else {
            fs::copy(entry.path(), to.join(&name)).expect("copy");
        }
    }
}

fn recorded_path(home: &TempHome, slug: &str) -> Option<String> {
    let bytes = fs::read(home.storage().join(format!("projects/{slug}/graph.json"))).ok()?;
    kg_core::parse_graph(&bytes).ok()?.project_path
}

#[test]
fn a_graph_from_another_machine_is_adopted_by_the_folder_of_the_same_name() {
    let (laptop, desktop) = (TempHome::new(), TempHome::new());
    let on_laptop = project(&laptop, "src/shop", None);
    let on_desktop = project(&desktop, "code/shop", None);
    put(
        &open_store(&laptop, T),
        &on_laptop,
        "from-laptop",
        "Written on the laptop",
        T,
    );
    carry(&laptop, &desktop, "shop");

    {
        let store = open_store(&desktop, T + 1.0);
        assert_eq!(
            graph_of(&store, &on_desktop),
            ("shop".to_string(), vec!["from-laptop".to_string()]),
            "the desktop's folder of the same name uses the laptop's graph"
        );
        put(
            &store,
            &on_desktop,
            "from-desktop",
            "Written on the desktop",
            T + 1.0,
        );
    }
    let map = fs::read_to_string(desktop.storage().join("project-paths.json")).expect("map");
    let map: serde_json::Value = serde_json::from_str(&map).expect("map parses");
    assert_eq!(map[&on_desktop], "shop", "{map}");

    // Sync brings the laptop's file back, recording the laptop's path: the desktop
    // keeps using it (its map says so), without refusing or forking it.
    carry(&desktop, &laptop, "shop");
    put(
        &open_store(&laptop, T + 2.0),
        &on_laptop,
        "laptop-again",
        "Written on the laptop after the desktop",
        T + 2.0,
    );
    carry(&laptop, &desktop, "shop");
    assert_eq!(
        recorded_path(&desktop, "shop").as_deref(),
        Some(on_laptop.as_str())
    );
    let store = open_store(&desktop, T + 3.0);
    let (slug, ids) = graph_of(&store, &on_desktop);
    assert_eq!(slug, "shop");
    assert_eq!(ids, ["from-desktop", "from-laptop", "laptop-again"]);
    let projects: Vec<_> = fs::read_dir(desktop.storage().join("projects"))
        .expect("projects")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(projects, ["shop"], "one graph, no fork");
}

#[test]
fn a_namesake_on_the_same_machine_still_gets_a_derived_slug() {
    let home = TempHome::new();
    let remote = Some("git@example.com:ana/shop.git");
    let work = project(&home, "work/shop", remote);
    let oss = project(&home, "oss/shop", remote);
    put(&open_store(&home, T), &work, "work-fact", "From work", T);
    {
        let store = open_store(&home, T + 1.0);
        put(&store, &oss, "oss-fact", "From the other clone", T + 1.0);
        let (slug, ids) = graph_of(&store, &oss);
        assert!(slug.starts_with("shop-") && slug.len() == 13, "{slug}");
        assert_eq!(ids, ["oss-fact"]);
    }
    // Even once the first folder is gone, this machine's map keeps its slug taken:
    // neither the other clone nor a new folder of the same name takes over its memory
    // (that is for another machine's folder).
    fs::remove_dir_all(home.path.join("work")).expect("remove");
    let newcomer = project(&home, "new/shop", remote);
    let store = open_store(&home, T + 2.0);
    let (slug, ids) = graph_of(&store, &oss);
    assert!(slug.starts_with("shop-"), "{slug}");
    assert_eq!(ids, ["oss-fact"]);
    let (new_slug, new_ids) = graph_of(&store, &newcomer);
    assert!(
        new_slug.starts_with("shop-") && new_slug != slug,
        "{new_slug}"
    );
    assert!(new_ids.is_empty(), "{new_ids:?}");
    assert_eq!(
        recorded_path(&home, "shop").as_deref(),
        Some(work.as_str()),
        "the first project's graph is untouched"
    );
}

#[test]
fn a_graph_recording_another_remote_is_not_adopted() {
    let (laptop, desktop) = (TempHome::new(), TempHome::new());
    let theirs = project(&laptop, "src/shop", Some("git@example.com:ana/shop.git"));
    let ours = project(
        &desktop,
        "code/shop",
        Some("https://example.com/bob/shop-clone"),
    );
    put(
        &open_store(&laptop, T),
        &theirs,
        "laptop-fact",
        "Ana's shop",
        T,
    );
    carry(&laptop, &desktop, "shop");
    let store = open_store(&desktop, T + 1.0);
    put(&store, &ours, "desktop-fact", "Bob's shop", T + 1.0);
    let (slug, ids) = graph_of(&store, &ours);
    assert!(slug.starts_with("shop-"), "{slug}");
    assert_eq!(ids, ["desktop-fact"]);
    let kept = fs::read(desktop.storage().join("projects/shop/graph.json")).expect("kept");
    let kept = kg_core::parse_graph(&kept).expect("parses");
    assert!(!kept.graph.nodes.contains_key("desktop-fact"));
    assert_eq!(kept.project_path.as_deref(), Some(theirs.as_str()));
}

#[test]
fn a_matching_remote_wins_over_the_folder_name_and_spellings_do_not_matter() {
    let laptop = TempHome::new();
    // The laptop has two projects named shop: the plain slug is the other one.
    let blog_shop = project(&laptop, "blog/shop", Some("git@example.com:ana/blog-shop"));
    let real_shop = project(&laptop, "src/shop", Some("git@example.com:ana/shop.git"));
    {
        let store = open_store(&laptop, T);
        put(&store, &blog_shop, "blog-fact", "The blog's shop", T);
        put(&store, &real_shop, "shop-fact", "The real shop", T);
    }
    let derived = {
        let store = open_store(&laptop, T);
        assert_eq!(graph_of(&store, &blog_shop).0, "shop");
        graph_of(&store, &real_shop).0
    };
    assert!(derived.starts_with("shop-"), "{derived}");

    // The desktop's clone of the real shop, its remote spelt another way.
    let desktop = TempHome::new();
    carry(&laptop, &desktop, "shop");
    carry(&laptop, &desktop, &derived);
    let clone = project(&desktop, "code/shop", Some("https://example.com/ana/shop"));
    let store = open_store(&desktop, T + 1.0);
    assert_eq!(
        graph_of(&store, &clone),
        (derived.clone(), vec!["shop-fact".to_string()])
    );

    // A third machine's folder without a remote falls back on the folder name.
    let third = TempHome::new();
    carry(&laptop, &third, "shop");
    carry(&laptop, &third, &derived);
    let plain = project(&third, "shop", None);
    let store = open_store(&third, T + 1.0);
    assert_eq!(
        graph_of(&store, &plain),
        ("shop".to_string(), vec!["blog-fact".to_string()])
    );
}
