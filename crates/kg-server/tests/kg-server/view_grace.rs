//! `GET /api/view/level` on the real server explains the grace rule of the policy it
//! runs: under ours new nodes hold only a share of the budget, so a level written in
//! one burst can shrink; under the reference's every new node is out of reach.

use crate::server::{Server, temp_home};
use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// The user level of a server started with `env` on a level written in one burst:
/// 80 unread nodes of 240 characters, an hour old (about 20,000 characters, over the
/// 17,500-character budget).
fn burst_level(env: &[(&str, &str)]) -> Value {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    std::fs::create_dir_all(&storage).expect("storage");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let mut nodes = Map::new();
    for k in 0..80 {
        let id = format!("burst-{k:02}");
        let gist = format!("{id}: an agent's long note written in one burst ");
        nodes.insert(
            id.clone(),
            json!({"id": id, "gist": format!("{gist:x<240}"), "_created_ts": now - 3600.0 - k as f64}),
        );
    }
    let graph = json!({"nodes": nodes, "edges": {}});
    std::fs::write(storage.join("user.json"), graph.to_string()).expect("user graph");
    let server = Server::start_in(&home, &storage, None, env);
    let (status, level) = server.json("GET", "/api/view/level?level=user", None);
    assert_eq!(status, 200, "{level}");
    level
}

fn reason<'a>(level: &'a Value, id: &str) -> &'a str {
    level["nodes"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["node"]["id"] == id))
        .and_then(|r| r["why"]["reason"].as_str())
        .unwrap_or_else(|| panic!("{id} has a reason"))
}

#[test]
fn the_view_explains_the_grace_share_under_our_policy() {
    let level = burst_level(&[]);
    let budget = &level["budget"];
    assert_eq!(budget["state"], "over", "{budget}");
    assert_eq!(budget["grace_share"], 6125, "{budget}");
    let outlook = budget["outlook"].as_str().expect("outlook");
    assert!(
        outlook.starts_with("over the budget: the next write or tick archives the lowest-scored of ")
            && outlook.contains("nodes written in the last 5 days are protected while their lines fit in 35% of the budget (6,125 characters), newest first"),
        "{outlook}"
    );
    // The oldest of the burst is beyond the share, the newest inside it.
    assert!(
        reason(&level, "burst-79")
            .contains("newer nodes already fill the 35% of the level's budget"),
        "{}",
        reason(&level, "burst-79")
    );
    assert!(
        reason(&level, "burst-00").ends_with("this one fits, so compaction does not archive it."),
        "{}",
        reason(&level, "burst-00")
    );
}

#[test]
fn the_view_explains_unlimited_grace_under_the_reference_policy() {
    let level = burst_level(&[("KG_POLICY", "reference")]);
    let budget = &level["budget"];
    assert_eq!(budget["grace_share"], Value::Null, "{budget}");
    assert_eq!(
        budget["outlook"],
        "over the budget, but nothing can be archived yet: every active node is newer than 5 days, and a node that new is never archived (it has not had time to prove useful). The first leaves it in 5 days; the level shrinks from then on. Archive by hand to make room now"
    );
    assert!(
        reason(&level, "burst-79")
            .ends_with("-day grace period (5 days left), so compaction never archives it."),
        "{}",
        reason(&level, "burst-79")
    );
}
