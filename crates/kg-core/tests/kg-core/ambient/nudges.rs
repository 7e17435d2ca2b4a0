//! Capture nudges from tool events: when a read or a search earns one, how often, and
//! what it counts.

use super::*;

#[test]
fn reads_nudge_on_the_second_distinct_session_then_cool_down() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    let file = format!("{}/src/limits.rs", w.project);
    assert_eq!(
        w.read("cc-1", &format!("{}/node_modules/x/index.js", w.project), T),
        None
    );
    assert_eq!(w.read("cc-1", "/tmp/kg-scratch/limits.rs", T), None);
    assert_eq!(w.counters(), Value::Null, "noise is not counted");
    assert_eq!(w.read("cc-1", &file, T), None, "first read");
    assert_eq!(w.read("cc-1", &file, T + 1.0), None, "same session again");
    let nudge = w
        .read("cc-2", &file, T + 2.0)
        .expect("second session nudges");
    assert!(nudge.starts_with("KG capture: 'src/limits.rs'"));
    assert!(nudge.contains("read in 2 distinct sessions"));
    assert!(nudge.contains(&format!("session_id='{sid}'")));
    assert!(nudge.contains("kg_put_node(") && nudge.contains("level='project'"));
    assert!(nudge.contains("touches=['src/limits.rs']"));
    assert!(!nudge.contains('\n'));
    assert_eq!(w.read("cc-3", &file, T + 3_000.0), None, "target cooldown");
    let counters = w.counters();
    let entry = &counters["events"]["read:src/limits.rs"];
    assert_eq!(entry["count"], 4);
    assert_eq!(entry["sessions"], json!(["cc-1", "cc-2", "cc-3"]));
    assert_eq!(entry["nudged_ts"], json!(T + 2.0));
    assert_eq!(
        counters["throttle"][&sid],
        json!({"count": 1, "last_ts": T + 2.0})
    );
    // 1-space indent, like the reference's file.
    let text = fs::read_to_string(w.counter_path()).expect("file");
    assert!(text.starts_with("{\n \"events\": {\n  \"read:"));
    // A day later the same target may nudge again.
    assert!(w.read("cc-4", &file, T + 2.0 + 86_400.0).is_some());
}

#[test]
fn a_covered_target_never_nudges() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    w.node(&sid, "limits", "Payout limits", &["src/payouts/LIMITS.rs"]);
    w.node(&sid, "fx", "Rates come from src/fx/rates.rs nightly", &[]);
    for file in ["src/payouts/limits.rs", "src/fx/rates.rs"] {
        let path = format!("{}/{file}", w.project);
        assert_eq!(w.read("cc-1", &path, T), None);
        assert_eq!(w.read("cc-2", &path, T), None, "{file} is covered");
    }
    assert_eq!(
        w.counters()["events"]["read:src/fx/rates.rs"]["count"],
        2,
        "counted all the same"
    );
}

#[test]
fn a_session_gets_at_most_three_nudges_ten_minutes_apart() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    let mut now = T;
    let nudge = |name: &str, now: f64| {
        let path = format!("{}/src/{name}.rs", w.project);
        assert_eq!(w.read("cc-1", &path, now), None);
        w.read("cc-2", &path, now)
    };
    assert!(nudge("one", now).is_some());
    assert_eq!(nudge("two", now + 300.0), None, "within 600 s");
    now += 601.0;
    assert!(nudge("three", now).is_some(), "after 600 s");
    now += 601.0;
    assert!(nudge("four", now).is_some());
    now += 601.0;
    assert_eq!(nudge("five", now), None, "three per session");
    assert_eq!(w.counters()["throttle"][&sid]["count"], 3);
    // The throttled targets were counted and never stamped, so another session may
    // still be nudged about them.
    let other = w.session("cc-9", true);
    let path = format!("{}/src/two.rs", w.project);
    let text = w.read("cc-9", &path, now + 1.0).expect("a fresh session");
    assert!(text.contains(&format!("session_id='{other}'")));
    assert!(text.contains("read in 3 distinct sessions"));
}

#[test]
fn web_targets_count_hits_not_sessions() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    let url = "https://docs.rs/sqlx/latest/sqlx/postgres/advisory_lock";
    let fetch = |now: f64| {
        w.event(
            "cc-1",
            "WebFetch",
            json!({"url": url, "prompt": "x"}),
            &w.project,
            now,
        )
    };
    assert_eq!(fetch(T), None);
    let nudge = fetch(T + 1.0).expect("second fetch nudges");
    assert!(nudge.starts_with(&format!("KG capture: '{url}'")));
    assert!(nudge.contains("fetched 2 times"));
    assert!(nudge.contains(&format!("session_id='{sid}'")));
    assert!(nudge.contains(&format!("touches=['{url}']")));

    let search =
        |q: &str, now: f64| w.event("cc-1", "WebSearch", json!({"query": q}), &w.project, now);
    assert_eq!(search("  Postgres Advisory LOCK ", T + 700.0), None);
    let nudge = search("postgres advisory lock", T + 701.0).expect("repeated query");
    assert!(nudge.starts_with("KG capture: 'postgres advisory lock'"));
    assert!(nudge.contains("searched 2 times"));
    // A blank query is no target: not even counted.
    assert_eq!(search(" \t ", T + 702.0), None);
    let events = w.counters()["events"].clone();
    assert!(events.get("search:").is_none());
    assert_eq!(events["search:postgres advisory lock"]["count"], 2);
}

#[test]
fn gemini_clis_reads_and_searches_count_as_claude_codes() {
    let w = World::new();
    w.session("gem-1", true);
    w.session("gem-2", true);
    let file = format!("{}/src/limits.rs", w.project);
    let read = |session: &str, now: f64| {
        w.event(
            session,
            "read_file",
            json!({"file_path": file}),
            &w.project,
            now,
        )
    };
    assert_eq!(read("gem-1", T), None);
    let nudge = read("gem-2", T + 1.0).expect("second session nudges");
    assert!(nudge.starts_with("KG capture: 'src/limits.rs'"), "{nudge}");
    let search = |now: f64| {
        w.event(
            "gem-1",
            "google_web_search",
            json!({"query": "tokio select fairness"}),
            &w.project,
            now,
        )
    };
    assert_eq!(search(T + 700.0), None);
    let nudge = search(T + 701.0).expect("repeated query");
    assert!(nudge.contains("searched 2 times"), "{nudge}");
}

#[test]
fn other_tools_and_malformed_payloads_are_ignored() {
    let w = World::new();
    w.session("cc-1", true);
    for tool in ["Bash", "Grep", "Edit"] {
        for now in [T, T + 1.0] {
            let input = json!({"file_path": format!("{}/src/a.rs", w.project), "command": "ls"});
            assert_eq!(w.event("cc-1", tool, input, &w.project, now), None);
        }
    }
    assert_eq!(w.event("cc-1", "Read", json!({}), &w.project, T), None);
    assert_eq!(
        w.event("cc-1", "Read", json!({"file_path": ""}), &w.project, T),
        None
    );
    let no_cwd =
        json!({"session_id": "cc-1", "tool_name": "Read", "tool_input": {"file_path": "/x"}});
    assert_eq!(tool_event(&w.store, &tool_use(&no_cwd), T), None);
    assert_eq!(
        tool_event(&w.store, &tool_use(&json!("not an object")), T),
        None
    );
    assert_eq!(w.counters(), Value::Null, "nothing was counted");
    // A cwd outside home is neither counted nor nudged.
    for now in [T, T + 1.0] {
        assert_eq!(
            w.event(
                &format!("cc-{now}"),
                "Read",
                json!({"file_path": "/etc/hosts"}),
                "/etc",
                now
            ),
            None
        );
    }
    assert!(!w.home.storage().join("projects/etc").exists());
}

#[test]
fn a_project_under_tmp_or_build_folders_gets_its_read_nudges() {
    // The project's own location says nothing about noise: only what lies inside it.
    let w = World::at("tmp/build/dist/proj", Policy::Ours);
    let sid = w.session("cc-1", true);
    let file = format!("{}/src/limits.rs", w.project);
    assert_eq!(w.read("cc-1", &file, T), None, "first read");
    let nudge = w
        .read("cc-2", &file, T + 1.0)
        .expect("second session nudges");
    assert!(nudge.starts_with("KG capture: 'src/limits.rs'"), "{nudge}");
    assert!(nudge.contains(&format!("session_id='{sid}'")));
    // Inside the project, its ignored folders are noise; outside it, everything is.
    let home = w.home.path.to_string_lossy().into_owned();
    for noise in [
        format!("{}/node_modules/x/index.js", w.project),
        format!("{}/target/debug/build.rs", w.project),
        format!("{}/build/out.rs", w.project),
        format!("{}/.git/config", w.project),
        format!("{home}/elsewhere/notes.md"),
        "/etc/hosts".to_string(),
    ] {
        assert_eq!(w.read("cc-1", &noise, T + 700.0), None, "{noise}");
        assert_eq!(w.read("cc-2", &noise, T + 700.0), None, "{noise}");
    }
    let counted: Vec<String> = w.counters()["events"]
        .as_object()
        .expect("events")
        .keys()
        .cloned()
        .collect();
    assert_eq!(counted, vec!["read:src/limits.rs".to_string()]);
}

#[test]
fn the_reference_policy_keeps_its_path_substring_noise() {
    let w = World::at("tmp/proj", Policy::Reference);
    w.session("cc-1", true);
    let file = format!("{}/src/limits.rs", w.project);
    assert_eq!(w.read("cc-1", &file, T), None);
    assert_eq!(w.read("cc-2", &file, T + 1.0), None, "under /tmp/: noise");
    assert_eq!(w.counters(), Value::Null, "not even counted");
}

#[test]
fn every_example_call_in_a_web_nudge_is_valid() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    let url = "https://docs.rs/tokio/latest/tokio/sync/struct.Mutex.html";
    let fetch = |now: f64| w.event("cc-1", "WebFetch", json!({"url": url}), &w.project, now);
    assert_eq!(fetch(T), None);
    let nudge = fetch(T + 1.0).expect("second fetch nudges");
    // Every `level='…'` the nudge names is one kg_put_node accepts.
    let levels: Vec<&str> = nudge
        .split("level='")
        .skip(1)
        .filter_map(|rest| rest.split('\'').next())
        .collect();
    assert_eq!(levels, vec!["project", "user"], "{nudge}");
    assert!(nudge.contains(&format!(
        "kg_put_node(session_id='{sid}', level='project', id='<kebab-id>'"
    )));
    // The reference's wording (its level is prose) stays under its policy.
    let r = World::reference();
    r.session("cc-1", true);
    let fetch = |now: f64| r.event("cc-1", "WebFetch", json!({"url": url}), &r.project, now);
    assert_eq!(fetch(T), None);
    let nudge = fetch(T + 1.0).expect("nudges");
    assert!(nudge.contains("level='project (or user, if the finding is cross-project)'"));
}

#[test]
fn relative_paths_resolve_against_the_cwd() {
    let w = World::new();
    w.session("cc-1", true);
    assert_eq!(w.read("cc-1", "src/rel.rs", T), None);
    let nudge = w
        .read("cc-2", "./src/../src/rel.rs", T)
        .expect("the same file, reached another way");
    assert!(nudge.starts_with("KG capture: 'src/rel.rs'"));
    let counters = w.counters();
    assert_eq!(counters["events"]["read:src/rel.rs"]["count"], 2);
}

#[test]
fn the_throttle_forgets_sessions_idle_for_a_week() {
    let w = World::new();
    let sid = w.session("cc-1", true);
    fs::create_dir_all(w.counter_path().parent().expect("dir")).expect("mkdir");
    let seeded = json!({
        "events": {},
        "throttle": {
            "0ldd0ne0": {"count": 3, "last_ts": T - 8.0 * 86_400.0},
            "recent00": {"count": 1, "last_ts": T - 86_400.0}
        }
    });
    fs::write(w.counter_path(), seeded.to_string()).expect("seed");
    let file = format!("{}/src/a.rs", w.project);
    assert_eq!(w.read("cc-1", &file, T), None);
    assert!(w.read("cc-2", &file, T).is_some());
    let throttle = w.counters()["throttle"].clone();
    assert!(throttle.get("0ldd0ne0").is_none());
    assert_eq!(throttle["recent00"]["count"], 1);
    assert_eq!(throttle[&sid]["count"], 1);
}

#[test]
fn concurrent_events_lose_no_count_and_the_file_stays_bounded() {
    let w = Arc::new(World::new());
    w.session("cc-0", true);
    let file = format!("{}/src/hot.rs", w.project);
    let handles: Vec<_> = (0..16)
        .map(|i| {
            let w = Arc::clone(&w);
            let file = file.clone();
            std::thread::spawn(move || w.read(&format!("cc-{i}"), &file, T))
        })
        .collect();
    let nudges = handles
        .into_iter()
        .filter_map(|h| h.join().expect("thread"))
        .count();
    assert_eq!(nudges, 1, "the target cooldown holds under concurrency");
    let entry = w.counters()["events"]["read:src/hot.rs"].clone();
    assert_eq!(entry["count"], 16);
    assert_eq!(entry["sessions"].as_array().map(Vec::len), Some(10));

    for i in 0..510 {
        w.read("cc-1", &format!("{}/src/f{i}.rs", w.project), T + i as f64);
    }
    let events = w.counters()["events"].clone();
    assert_eq!(events.as_object().map(|o| o.len()), Some(500));
    assert!(events.get("read:src/hot.rs").is_none(), "oldest evicted");
    assert!(events.get("read:src/f509.rs").is_some());
}
