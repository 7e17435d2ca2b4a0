//! Tier assignment parity: maintenance at the frozen instant on the never-compacted
//! store must move exactly the nodes the reference moved, tick by tick, and leave
//! graph files identical to the reference's.

use kg_core::{Graph, Store, Tier};
use kg_test_support::golden::fixtures;
use kg_test_support::{T, TempHome};
use serde_json::Value;
use std::fs;

fn tiers(graph: &Graph) -> Value {
    let pick = |tier: Tier| -> Vec<Value> {
        graph
            .nodes
            .iter()
            .filter(|(_, n)| n.tier() == tier)
            .map(|(id, _)| Value::String(id.clone()))
            .collect()
    };
    serde_json::json!({
        "active": pick(Tier::Active),
        "archived": pick(Tier::Archived),
        "orphaned": pick(Tier::Orphaned),
    })
}

fn snapshot(store: &Store) -> Vec<(String, Value)> {
    let mut out = vec![(
        "user".to_string(),
        store.with_graph(store.user_slot(), tiers),
    )];
    for slot in store.loaded_projects() {
        let name = format!("project:{}", slot.slug.clone().unwrap_or_default());
        out.push((name, store.with_graph(&slot, tiers)));
    }
    out
}

#[test]
fn maintenance_reaches_the_reference_fixed_point() {
    let home = TempHome::new().with_fixture_storage("storage_before");
    // The reference's grace rule: with new unread nodes in the level (the fixture's
    // five new alpha nodes), ours archives nodes in use last (issue 21).
    let mut config = kg_core::StoreConfig::new(home.storage(), &home.path);
    config.policy = kg_core::Policy::Reference;
    let store = Store::open(config, T).expect("store opens");
    for project in ["alpha", "beta"] {
        let root = store
            .resolve_root(&home.path.join("kgfix").join(project).to_string_lossy())
            .expect("inside home");
        store.project_slot(&root, T).expect("project loads");
    }
    let expected: Value = serde_json::from_str(
        &fs::read_to_string(fixtures().join("compaction.json")).expect("compaction.json"),
    )
    .expect("parses");
    let mut states = vec![snapshot(&store)];
    for _ in 0..5 {
        store.tick(T);
        let state = snapshot(&store);
        if Some(&state) == states.last() {
            break;
        }
        states.push(state);
    }
    for (name, graph) in expected["graphs"].as_object().expect("graphs") {
        let ours: Vec<&Value> = states
            .iter()
            .map(|s| &s.iter().find(|(n, _)| n == name).expect("graph loaded").1)
            .collect();
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("counts");
            }
            v
        };
        assert_eq!(
            ours[0], &graph["before"],
            "{name}: tiers before maintenance"
        );
        // Distinct states after successive ticks, then the fixed point.
        let ticks: Vec<Value> = graph["ticks"]
            .as_array()
            .expect("ticks")
            .iter()
            .map(strip)
            .collect();
        let our_ticks: Vec<Value> = ours
            .windows(2)
            .filter(|w| w[0] != w[1])
            .map(|w| w[1].clone())
            .collect();
        assert_eq!(our_ticks, ticks, "{name}: states tick by tick");
        assert_eq!(
            ours.last().copied(),
            Some(&graph["after"]),
            "{name}: fixed point"
        );
    }
    store.flush();
    let home_text = home.path.to_string_lossy().into_owned();
    for file in [
        "user.json",
        "projects/alpha/graph.json",
        "projects/beta/graph.json",
        "sessions.json",
    ] {
        let want = fs::read_to_string(fixtures().join("storage").join(file))
            .expect("reference file")
            .replace("<HOME>", &home_text);
        let got = fs::read_to_string(home.storage().join(file)).expect("our file");
        if want != got {
            let diff = kg_test_support::golden::first_difference(&want, &got);
            panic!("{file} differs from the reference after maintenance:\n{diff}");
        }
    }
}
