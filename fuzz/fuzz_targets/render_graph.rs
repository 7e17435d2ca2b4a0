//! Arbitrary graphs (built from the input bytes: ids, gists with any characters,
//! edges, tiers, timestamps) render within the rules: render equals charge, the
//! preload fits its budget, search and maintenance never panic.
#![no_main]
use kg_core::model::{Edge, EdgeKey, Graph, Level, Node, field, float_value};
use kg_core::render::{LevelSource, ReadKind, ReadOptions, render_read};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn graph_from(data: &[u8]) -> Graph {
    let mut g = Graph::default();
    let text = String::from_utf8_lossy(data);
    let chunks: Vec<&str> = text.split('\u{1}').collect();
    for (i, chunk) in chunks.iter().enumerate().take(300) {
        let id = format!("n{i}-{}", chunk.len() % 17);
        let mut node = Node::new(&id);
        node.set(field::GIST, Value::String(chunk.to_string()));
        let b = chunk.as_bytes().first().copied().unwrap_or(0);
        if b % 3 == 1 {
            node.set(field::ARCHIVED, Value::Bool(true));
        } else if b % 3 == 2 {
            node.set(field::ARCHIVED, Value::Bool(true));
            node.set(field::ORPHANED_TS, float_value(1_700_000_000.0 + f64::from(b)));
        }
        node.set(field::CREATED_TS, float_value(1_790_000_000.0 + f64::from(b) * 1e5));
        g.nodes.insert(id, node);
    }
    let ids: Vec<String> = g.nodes.keys().cloned().collect();
    if ids.is_empty() {
        return g;
    }
    for (k, w) in data.windows(2).enumerate().take(600) {
        let from = &ids[w[0] as usize % ids.len()];
        let to = if w[1] % 5 == 0 { format!("src/f{}.rs", w[1]) } else { ids[w[1] as usize % ids.len()].clone() };
        let key = EdgeKey::new(from, &to, &format!("r{}", k % 4));
        g.edges.insert(key.clone(), Edge::new(key));
    }
    g
}

fuzz_target!(|data: &[u8]| {
    let half = data.len() / 2;
    let user = graph_from(&data[..half]);
    let project = graph_from(&data[half..]);
    for (kind, budget) in [(ReadKind::FullRead, 40_000), (ReadKind::Preload, 10_000), (ReadKind::Preload, 600)] {
        let header = "KG MEMORY PRELOADED session_id: 0badf00d (pass it to every kg_* call)";
        let opts = ReadOptions {
            kind,
            budget,
            preloaded: None,
            header: (kind == ReadKind::Preload).then_some(header),
            session_id: Some("0badf00d"),
            now: 1_795_176_000.0,
            grace_days: 5.0,
        };
        let levels = [
            LevelSource { level: Level::User, graph: &user, debt_line: None },
            LevelSource { level: Level::Project, graph: &project, debt_line: None },
        ];
        let out = render_read(levels, &opts);
        if kind == ReadKind::Preload && budget == 10_000 {
            // Gists can always be dropped, so the preload fits unless a single level's
            // fixed lines alone exceed it.
            let fixed = out.text.lines().filter(|l| l.starts_with("===") || l.starts_with("HEALTH")).map(|l| l.chars().count() + 1).sum::<usize>();
            assert!(out.text.chars().count() <= budget || fixed + header.len() > budget / 2, "preload over budget");
        }
    }
    let graphs = [kg_core::search::SearchGraph { level: Level::Project, graph: &project }];
    let terms = kg_core::search::query_terms(&String::from_utf8_lossy(&data[..data.len().min(64)]));
    let result = kg_core::search::search(&graphs, &terms, None);
    assert!(kg_core::search::search_text("q", &result, false).chars().count() > 0);
    let mut g = project;
    let mut stall = false;
    kg_core::compact::compact_graph(&mut g, &mut stall, "fuzz", 5.0, 1_795_176_000.0, None);
    kg_core::compact::compact_graph(&mut g, &mut stall, "fuzz", 5.0, 1_795_176_000.0, None);
});
