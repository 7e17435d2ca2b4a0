//! One scenario each: announcements, a remote gone away, a corrupted remote, a kill
//! during a merge, a team's project, concurrent edits, missing and moved project
//! folders.

use super::*;

/// Node ids of a graph file.
fn node_ids(file: &GraphFile) -> Vec<String> {
    file.graph.nodes.keys().cloned().collect()
}

pub(crate) fn put(m: &Machine, id: &str, gist: &str) {
    let (status, answer) = m.call(
        "POST",
        "/api/nodes",
        Some(&json!({"level": "user", "id": id, "gist": gist})),
    );
    assert_eq!(status, 200, "{answer}");
}

#[test]
fn what_arrives_is_announced_with_its_origin_and_the_status_says_when() {
    let (dir, base) = temp_home();
    let (machines, _remote) = machines(&base, &["laptop", "desktop"]);
    let (a, b) = (&machines[0], &machines[1]);
    put(a, "deploy-window", "Deploys happen on Tuesdays only");
    a.sync_ok();
    let answer = b.sync_ok();
    assert!(answer["received"].as_u64() >= Some(1), "{answer}");
    assert!(
        b.graph("user.json")
            .graph
            .nodes
            .contains_key("deploy-window")
    );

    // The activity timeline names the other machine's remote as the origin.
    let (status, activity) = b.call("GET", "/api/view/activity?levels=user", None);
    assert_eq!(status, 200, "{activity}");
    let arrived = activity["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["ids"][0] == "deploy-window")
        .unwrap_or_else(|| panic!("no entry for the synced node: {activity}"));
    assert_eq!(arrived["author"], "sync", "{arrived}");
    assert!(
        arrived["origin"]
            .as_str()
            .is_some_and(|o| o.starts_with("origin (")),
        "{arrived}"
    );
    assert_eq!(arrived["session"], Value::Null);

    // The status: on, synced just now, nothing pending.
    let (status, sync) = b.call("GET", "/api/sync", None);
    assert_eq!(status, 200, "{sync}");
    assert_eq!(sync["on"], true, "{sync}");
    assert!(sync["last_success"].as_f64().is_some(), "{sync}");
    assert_eq!(sync["offline_since"], Value::Null);
    assert_eq!(
        (sync["ahead"].as_u64(), sync["behind"].as_u64()),
        (Some(0), Some(0)),
        "{sync}"
    );

    // `kg-memory sync now` on a root a server holds asks that server; setup refuses.
    let (ok, said) = b.cli_sync(&["now"]);
    assert!(
        ok && said.contains("Through the running server: Synced"),
        "{said}"
    );
    let (ok, said) = b.cli_sync(&["setup", "/elsewhere.git"]);
    assert!(!ok && said.contains("Stop that server"), "{said}");
    drop(machines);
    drop(dir);
}

#[test]
fn a_remote_that_goes_away_is_reported_offline_and_nothing_is_lost() {
    let (dir, base) = temp_home();
    let (machines, remote) = machines(&base, &["laptop", "desktop"]);
    let (a, b) = (&machines[0], &machines[1]);
    let away = base.join("remote-away.git");
    fs::rename(&remote, &away).expect("take the remote away");
    put(a, "offline-fact", "Written while the remote was away");
    let (status, answer) = a.sync();
    assert_eq!(status, 502, "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .is_some_and(|d| d.contains("cannot reach the remote")),
        "{answer}"
    );
    let (_, sync) = a.call("GET", "/api/sync", None);
    assert!(sync["offline_since"].as_f64().is_some(), "{sync}");
    assert!(
        sync["summary"]
            .as_str()
            .is_some_and(|s| s.contains("Remote unreachable since")),
        "{sync}"
    );
    // Still served and on disk meanwhile.
    assert!(
        a.graph("user.json")
            .graph
            .nodes
            .contains_key("offline-fact")
    );

    fs::rename(&away, &remote).expect("bring the remote back");
    let answer = a.sync_ok();
    assert!(answer["sent"].as_u64() >= Some(1), "{answer}");
    let (_, sync) = a.call("GET", "/api/sync", None);
    assert_eq!(sync["offline_since"], Value::Null, "{sync}");
    b.sync_ok();
    assert!(
        b.graph("user.json")
            .graph
            .nodes
            .contains_key("offline-fact")
    );
    drop(machines);
    drop(dir);
}

#[test]
fn a_corrupted_graph_on_the_remote_is_refused_and_the_running_memory_untouched() {
    let (dir, base) = temp_home();
    let (machines, remote) = machines(&base, &["laptop", "desktop"]);
    let a = &machines[0];
    put(a, "kept-fact", "This stays whatever the remote holds");
    a.sync_ok();
    // Someone pushes a broken user.json.
    let clone = base.join("vandal");
    git_in(
        &base,
        &["clone", "--quiet", &remote.to_string_lossy(), "vandal"],
    );
    fs::write(clone.join("user.json"), b"{\"nodes\": {\"half").expect("break it");
    git_in(
        &clone,
        &[
            "-c",
            "user.name=v",
            "-c",
            "user.email=v@x",
            "commit",
            "--quiet",
            "-am",
            "break",
        ],
    );
    git_in(&clone, &["push", "--quiet", "origin", "HEAD:main"]);

    let before = fs::read(a.root.join("user.json")).expect("graph");
    let (status, answer) = a.sync();
    assert_eq!(status, 502, "{answer}");
    let detail = answer["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("user.json is not a readable memory graph"),
        "{detail}"
    );
    assert_eq!(fs::read(a.root.join("user.json")).expect("graph"), before);
    let (status, node) = a.call("GET", "/api/nodes/user/kept-fact", None);
    assert_eq!(status, 200, "{node}");
    let (_, sync) = a.call("GET", "/api/sync", None);
    assert!(
        sync["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("not a readable memory graph")),
        "{sync}"
    );
    drop(machines);
    drop(dir);
}

/// SIGKILL a server at moments inside its sync, again and again, while it merges a
/// large change from another machine into its own unsent writes: after each restart
/// the repository is sound, and the last sync holds every node of both machines.
#[test]
fn a_server_killed_while_it_merges_loses_nothing() {
    let (dir, base) = temp_home();
    let (mut machines, _remote) = machines(&base, &["laptop", "desktop"]);
    let others: Vec<String> = (0..300).map(|i| format!("desktop-bulk-{i}")).collect();
    for id in &others {
        put(&machines[1], id, &format!("The desktop's fact {id}"));
    }
    machines[1].sync_ok();
    let ours: Vec<String> = (0..40).map(|i| format!("laptop-own-{i}")).collect();
    let mut rng = Rng(0x5EED_0FC0_FFEE);
    let a = &mut machines[0];
    for (round, chunk) in ours.chunks(8).enumerate() {
        for id in chunk {
            put(a, id, &format!("The laptop's fact {id}"));
        }
        let port = a.port();
        let syncing = std::thread::spawn(move || {
            // The answer never comes: the server dies under it.
            let _ = json_request(port, "POST", "/api/sync/now", Some(&json!({})), TIMEOUT);
        });
        std::thread::sleep(Duration::from_millis(5 + rng.below(150) as u64));
        a.server.as_mut().expect("server").kill();
        let _ = syncing.join();
        // A git child of the killed server may still be finishing; the repository
        // must be sound once it has.
        std::thread::sleep(Duration::from_millis(300));
        git_in(&a.root, &["fsck", "--no-progress"]);
        for file in ["user.json"] {
            if a.root.join(file).exists() {
                let _ = a.graph(file); // parses
            }
        }
        a.start();
        eprintln!("round {round}: killed and restarted");
    }
    // The restart's own sync may be running: wait for a sync of ours to go through.
    let mut synced = false;
    for _ in 0..20 {
        if a.sync().0 == 200 {
            synced = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        synced,
        "the laptop could not sync after the kills:\n{}",
        a.server.as_ref().expect("server").log_tail()
    );
    let ids = node_ids(&a.graph("user.json"));
    for id in ours.iter().chain(&others) {
        assert!(ids.contains(id), "{id} is missing after the kills");
    }
    let status = a.git(&["status", "--porcelain"]);
    assert!(status.trim().is_empty(), "left in the work tree: {status}");
    machines[1].sync_ok();
    assert_eq!(
        fs::read(machines[0].root.join("user.json")).expect("graph"),
        fs::read(machines[1].root.join("user.json")).expect("graph")
    );
    drop(machines);
    drop(dir);
}

/// A team shares one project's memory through a remote of its own, each person at
/// their own folder, while each person's user graph stays private (and their own
/// storage root's remote never sees the team's project).
#[test]
fn a_team_shares_one_project_memory_and_nothing_else() {
    let (dir, base) = temp_home();
    let team = bare_repo(&base.join("team-shop.git"));
    let private = bare_remote(&base);
    let mut ana = Machine::new(&base, "ana");
    let mut bob = Machine::new(&base, "bob");
    let ana_shop = ana.home.join("work/shop");
    let bob_shop = bob.home.join("code/shop");
    for folder in [&ana_shop, &bob_shop] {
        fs::create_dir_all(folder).expect("project folder");
    }
    let ana_shop_path = ana_shop.to_string_lossy().into_owned();
    let bob_shop_path = bob_shop.to_string_lossy().into_owned();

    // Ana syncs her whole memory with her own remote, and the shop with the team's.
    let (ok, said) = ana.cli_sync(&["setup", &private.to_string_lossy()]);
    assert!(ok, "{said}");
    let (ok, said) = ana.cli_sync(&[
        "setup",
        "--project",
        &ana_shop_path,
        &team.to_string_lossy(),
    ]);
    assert!(ok, "{said}");
    assert!(said.contains("the project memory"), "{said}");
    ana.start();
    let in_project = |path: &str, id: &str, gist: &str| json!({"level": "project", "project_path": path, "id": id, "gist": gist});
    let (status, answer) = ana.call(
        "POST",
        "/api/nodes",
        Some(&in_project(
            &ana_shop_path,
            "shop-checkout-flow",
            "Checkout calls the tax service before payment",
        )),
    );
    assert_eq!(status, 200, "{answer}");
    put(&ana, "ana-editor-prefs", "Ana prefers tabs; private to her");
    // Each repository answers for itself: a conflict would name its graph.
    let answer = ana.sync_ok();
    let said = answer["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("the storage root") && said.contains("the project memory shop"),
        "{said}"
    );

    // Bob joins the team's project memory only.
    let (ok, said) = bob.cli_sync(&[
        "setup",
        "--project",
        &bob_shop_path,
        &team.to_string_lossy(),
    ]);
    assert!(ok, "{said}");
    bob.start();
    let (status, node) = bob.call(
        "GET",
        &format!(
            "/api/nodes/project/shop-checkout-flow?project_path={}",
            kg_client::encode(&bob_shop_path)
        ),
        None,
    );
    assert_eq!(
        status, 200,
        "Bob does not see the team's node at his own folder: {node}"
    );
    let (status, _) = bob.call("GET", "/api/nodes/user/ana-editor-prefs", None);
    assert_eq!(status, 404, "Ana's user graph must stay hers");

    // Bob writes; Ana receives it through the team remote.
    let (status, answer) = bob.call(
        "POST",
        "/api/nodes",
        Some(&in_project(
            &bob_shop_path,
            "shop-refund-window",
            "Refunds close 30 days after delivery",
        )),
    );
    assert_eq!(status, 200, "{answer}");
    bob.sync_ok();
    ana.sync_ok();
    let (status, node) = ana.call(
        "GET",
        &format!(
            "/api/nodes/project/shop-refund-window?project_path={}",
            kg_client::encode(&ana_shop_path)
        ),
        None,
    );
    assert_eq!(status, 200, "{node}");

    // The team's remote holds the project graph and nothing of anyone's user graph;
    // Ana's own remote holds her user graph and not the team's project.
    let team_files = git_in(&team, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        team_files.lines().any(|f| f == "graph.json"),
        "{team_files}"
    );
    assert!(!team_files.contains("user.json"), "{team_files}");
    let private_files = git_in(&private, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        private_files.lines().any(|f| f == "user.json"),
        "{private_files}"
    );
    assert!(!private_files.contains("projects/shop"), "{private_files}");
    let (_, status) = ana.call("GET", "/api/sync", None);
    assert_eq!(status["projects"][0]["on"], true, "{status}");
    drop((ana, bob));
    drop(dir);
}

/// The same node edited on both machines keeps the newer gist and the other in a
/// conflict note that DEBT counts; a node deleted on one machine and edited on the
/// other is kept with the edit.
#[test]
fn edits_on_both_sides_and_a_delete_against_an_edit_end_as_the_rules_say() {
    let (dir, base) = temp_home();
    let (machines, _remote) = machines(&base, &["laptop", "desktop"]);
    let (a, b) = (&machines[0], &machines[1]);
    put(a, "pricing-rule", "Prices are rounded to whole cents");
    put(a, "legacy-flag", "The legacy checkout flag is still read");
    settle(&machines);

    put(
        a,
        "pricing-rule",
        "Prices are rounded half-up to whole cents",
    );
    let (status, _) = a.call("DELETE", "/api/nodes/user/legacy-flag", None);
    assert_eq!(status, 200);
    // The desktop writes later: its gist is the newer one.
    std::thread::sleep(Duration::from_millis(20));
    put(
        b,
        "pricing-rule",
        "Prices are rounded half-even (banker's rounding)",
    );
    put(
        b,
        "legacy-flag",
        "The legacy checkout flag is read only by the mobile app",
    );
    settle(&machines);

    for m in [a, b] {
        let g = m.graph("user.json").graph;
        let rule = g.nodes.get("pricing-rule").expect("pricing-rule");
        assert_eq!(
            rule.gist(),
            "Prices are rounded half-even (banker's rounding)"
        );
        let notes = rule.notes();
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with(kg_core::CONFLICT_NOTE_PREFIX)
                    && n.contains("Prices are rounded half-up to whole cents")),
            "{}: the losing gist is not kept: {notes:?}",
            m.name
        );
        let flag = g
            .nodes
            .get("legacy-flag")
            .expect("the edited node survives the delete");
        assert_eq!(
            flag.gist(),
            "The legacy checkout flag is read only by the mobile app"
        );
        let (status, level) = m.call("GET", "/api/view/level?level=user", None);
        assert_eq!(status, 200, "{level}");
        assert_eq!(level["debt"]["merge_conflicts"], 1, "{}: {level}", m.name);
        assert_ne!(level["debt"]["level"], "LOW", "{level}");
    }
    drop(machines);
    drop(dir);
}

/// `--project` names a project folder of this machine: a made-up one is refused and
/// leaves nothing behind.
#[test]
fn a_project_sync_for_a_folder_that_is_not_there_is_refused_and_creates_nothing() {
    let (dir, base) = temp_home();
    let team = bare_remote(&base);
    let m = Machine::new(&base, "laptop");
    let ghost = m.home.join("code/ghost").to_string_lossy().into_owned();
    let (ok, said) = m.cli_sync(&["setup", "--project", &ghost, &team.to_string_lossy()]);
    assert!(!ok && said.contains("is not a folder"), "{said}");
    let (ok, said) = m.cli_sync(&["off", "--project", &ghost]);
    assert!(!ok && said.contains("has no memory of"), "{said}");
    assert!(!m.root.join("projects/ghost").exists());
    drop(dir);
}

/// One person's two machines sync a project through the storage root; the laptop then
/// gives the project a team remote of its own. The desktop's running server keeps its
/// copy of the project's memory when the storage root's remote stops tracking it, and
/// keeps it out of that remote from then on, as the laptop does.
#[test]
fn a_project_moved_to_its_own_remote_elsewhere_stays_in_the_running_memory() {
    let (dir, base) = temp_home();
    let (mut machines, remote) = machines(&base, &["laptop", "desktop"]);
    let team = bare_repo(&base.join("team-shop.git"));
    let url = "git@example.com:ana/shop.git";
    let shop_a = clone_folder(&machines[0].home.join("src/shop"), url);
    let shop_b = clone_folder(&machines[1].home.join("code/shop"), url);
    let put_in = |m: &Machine, folder: &str, id: &str| {
        let body = json!({"level": "project", "project_path": folder, "id": id, "gist": format!("{id} of the shop")});
        let (status, answer) = m.call("POST", "/api/nodes", Some(&body));
        assert_eq!(status, 200, "{answer}");
    };
    let has = |m: &Machine, folder: &str, id: &str| {
        let path = format!(
            "/api/nodes/project/{id}?project_path={}",
            kg_client::encode(folder)
        );
        m.call("GET", &path, None).0 == 200
    };
    put_in(&machines[0], &shop_a, "shop-from-laptop");
    settle(&machines);
    assert!(has(&machines[1], &shop_b, "shop-from-laptop"));

    // The laptop's server stops for the set-up, and starts again.
    let laptop = &mut machines[0];
    if let Some(mut server) = laptop.server.take() {
        server.stop();
    }
    let (ok, said) = laptop.cli_sync(&["setup", "--project", &shop_a, &team.to_string_lossy()]);
    assert!(ok, "{said}");
    laptop.start();
    laptop.sync_ok();

    let desktop = &machines[1];
    desktop.sync_ok();
    assert!(
        has(desktop, &shop_b, "shop-from-laptop"),
        "the desktop lost the project's node"
    );
    let tracked = desktop.git(&["ls-files", "projects"]);
    assert!(tracked.trim().is_empty(), "still tracked: {tracked}");
    put_in(desktop, &shop_b, "shop-from-desktop");
    desktop.sync_ok();
    assert!(has(desktop, &shop_b, "shop-from-desktop"));
    let shared = git_in(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!shared.contains("graph.json"), "{shared}");
    drop(machines);
    drop(dir);
}
