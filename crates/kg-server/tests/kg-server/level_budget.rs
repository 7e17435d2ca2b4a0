//! `KG_LEVEL_BUDGET` on the real server (issue 32 item 4): the per-level budget is a
//! setting, and everything that reads it follows it: compaction archives sooner under a
//! smaller one, the graph view's gauge draws it with the lines derived from it, and the
//! DEBT `kg_read` and the view print counts the new nodes it archived. A budget that is
//! not a whole number within bounds stops the server with the variable named.

use crate::server::{Server, bin, free_port, temp_home};
use kg_test_support::http::session_of;
use serde_json::{Value, json};
use std::process::Command;

/// Twenty-four nodes of about 300 characters each, written by one session into the
/// user level (about 7,500 rendered characters: far under the default budget); returns
/// the full read that follows and the user level as the view draws it.
fn write_a_level(env: &[(&str, &str)]) -> (String, Value) {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let mut server = Server::start_in(&home, &storage, None, env);
    let project = home.join("shop");
    std::fs::create_dir_all(&project).expect("project");
    let (text, _) = server.call(
        "kg_read",
        &json!({"cwd": project.to_string_lossy().into_owned()}),
    );
    let sid = session_of(&text).unwrap_or_else(|| panic!("no session in {text}"));
    for k in 0..24 {
        let gist = format!(
            "Finding {k:02}: {}",
            "what was learned and why it holds ".repeat(8)
        );
        let (text, err) = server.call(
            "kg_put_node",
            &json!({"session_id": sid, "level": "user", "id": format!("finding-{k:02}"), "gist": gist}),
        );
        assert!(!err, "{text}");
    }
    let (read, err) = server.call("kg_read", &json!({"session_id": sid}));
    assert!(!err, "{read}");
    let (status, level) = server.json("GET", "/api/view/level?level=user", None);
    assert_eq!(status, 200, "{level}");
    (read, level)
}

fn archived(level: &Value) -> usize {
    level["counts"]["archived"].as_u64().unwrap_or(0) as usize
        + level["counts"]["orphaned"].as_u64().unwrap_or(0) as usize
}

#[test]
fn a_smaller_level_budget_archives_sooner_and_the_gauge_and_debt_follow_it() {
    // The default budget holds the level whole.
    let (read, level) = write_a_level(&[]);
    let budget = &level["budget"];
    assert_eq!(budget["budget"], 17_500, "{budget}");
    assert_eq!(budget["fill_line"], 14_000, "{budget}");
    assert_eq!(budget["anchor_budget"], 5_250, "{budget}");
    assert_eq!(budget["grace_share"], 6_125, "{budget}");
    assert_eq!(archived(&level), 0, "{}", level["counts"]);
    let chars = budget["chars"].as_u64().expect("chars");
    assert!(
        chars > 5_000,
        "{chars} characters: the test needs a level over 5,000"
    );
    assert!(!read.contains("archived in a burst"), "{read}");

    // 5,000 characters: the writes past it archive the oldest of them (beyond the new
    // nodes' share), and every line of the gauge is drawn from the budget.
    let (read, level) = write_a_level(&[("KG_LEVEL_BUDGET", "5000")]);
    let budget = &level["budget"];
    assert_eq!(budget["budget"], 5_000, "{budget}");
    assert_eq!(budget["fill_line"], 4_000, "{budget}");
    assert_eq!(budget["fill_ratio"], 0.8, "{budget}");
    assert_eq!(budget["anchor_budget"], 1_500, "{budget}");
    assert_eq!(budget["grace_share"], 1_750, "{budget}");
    let chars = budget["chars"].as_u64().expect("chars");
    assert!(chars <= 5_000, "the level holds {chars} characters");
    assert_ne!(budget["state"], "over", "{budget}");
    let gone = archived(&level);
    assert!(gone > 0, "{}", level["counts"]);
    let outlook = budget["outlook"].as_str().unwrap_or_default();
    assert!(!outlook.contains("6,125"), "{outlook}");
    // DEBT counts the new nodes the smaller budget archived, in the read and the view.
    let burst = format!("{gone} new node(s) archived in a burst");
    assert!(read.contains(&burst), "{burst}:\n{read}");
    let line = level["debt"]["line"].as_str().unwrap_or_default();
    assert!(line.contains(&burst), "{line}");
    // The view's explanations name the configured sizes, not the default ones.
    let reasons: Vec<&str> = level["nodes"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["why"]["reason"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("5,000") || r.contains("1,750 characters")),
        "{reasons:#?}"
    );
    assert!(
        reasons
            .iter()
            .all(|r| !r.contains("17,500") && !r.contains("6,125")),
        "{reasons:#?}"
    );
}

#[test]
fn a_level_budget_that_is_not_a_number_in_bounds_stops_the_server_and_says_why() {
    let (_dir, home) = temp_home();
    for bad in ["", "ten thousand", "-5000", "999", "1000001", "17500.5"] {
        let out = Command::new(bin())
            .args(["serve", "--port", &free_port().to_string()])
            .env("HOME", &home)
            .env("KG_STORAGE_ROOT", home.join("storage"))
            .env("XDG_STATE_HOME", home.join(".state"))
            .env("KG_LEVEL_BUDGET", bad)
            .output()
            .expect("kg-memory serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "started with {bad:?}:\n{stderr}");
        assert!(
            stderr.contains(&format!(
                "KG_LEVEL_BUDGET: {bad:?} is not a budget: give a whole number of characters from 1000 to 1000000"
            )),
            "{bad:?}:\n{stderr}"
        );
        // Nothing was written: no graph, no session.
        assert!(
            !home.join("storage").join("user.json").exists(),
            "{bad:?} wrote a graph"
        );
    }
}
