use super::*;
use crate::model::Edge;
use serde_json::json;

// ---- helpers ---------------------------------------------------------------

fn node(graph: &mut Graph, id: &str, gist: &str, notes: &[&str], touches: &[&str]) {
    let mut n = Node::new(id);
    n.set(field::GIST, Value::String(gist.to_string()));
    if !notes.is_empty() {
        n.set(field::NOTES, json!(notes));
    }
    if !touches.is_empty() {
        n.set(field::TOUCHES, json!(touches));
    }
    graph.nodes.insert(id.to_string(), n);
}

fn edge(graph: &mut Graph, from: &str, to: &str, rel: &str) {
    let key = EdgeKey::new(from, to, rel);
    graph.edges.insert(key.clone(), Edge::new(key));
}

fn project(graph: &Graph) -> Vec<SearchGraph<'_>> {
    vec![SearchGraph {
        level: Level::Project,
        graph,
    }]
}

fn run(graphs: &[SearchGraph<'_>], query: &str, seen: &[&str]) -> SearchResult {
    let is_seen = |id: &str| seen.contains(&id);
    search(graphs, &query_terms(query), Some(&is_seen))
}

// ---- ranking ---------------------------------------------------------------

#[test]
fn terms_are_lowercase_unique_and_whitespace_split() {
    assert_eq!(
        query_terms("  Queue\tRETRY queue\u{3000}retry  x\u{1f}y "),
        ["queue", "retry", "x", "y"]
    );
    assert!(query_terms(" \n ").is_empty());
}

/// The spec's §8.2 worked example, rendered as in §8.4.
fn worked_example() -> Graph {
    let mut g = Graph::default();
    node(
        &mut g,
        "retry-policy",
        "Retry 3 times, exponential 2s base, then dead-letter",
        &["Chosen after the March outage"],
        &["src/jobs/retry.rs"],
    );
    node(
        &mut g,
        "ingest-queue",
        "Ingest runs on a single SQS FIFO queue; ordering per tenant",
        &["Tenant id is the message group id"],
        &[],
    );
    node(
        &mut g,
        "dead-letter-bucket",
        "S3 bucket for poison messages from the queue",
        &["Lifecycle rule expires objects after 30 days"],
        &[],
    );
    edge(&mut g, "ingest-queue", "retry-policy", "governed-by");
    edge(
        &mut g,
        "dead-letter-bucket",
        "retry-policy",
        "receives-from",
    );
    g
}

#[test]
fn worked_example_scores() {
    let g = worked_example();
    let result = run(&project(&g), "queue retry", &[]);
    let scores: Vec<(&str, f64)> = result
        .top
        .iter()
        .map(|h| (h.id.as_str(), h.score))
        .collect();
    assert_eq!(
        scores,
        [
            ("retry-policy", 0.0167),
            ("ingest-queue", 0.0062),
            ("dead-letter-bucket", 0.0061)
        ]
    );
    let idf = 1.5f64.ln() / 3f64.ln();
    assert!((idf - 0.369).abs() < 1e-3);
    assert_eq!(result.top[1].raw_score, idf / 60.0);
    assert_eq!(result.top[2].raw_score, idf / 61.0);
    assert_eq!(result.total, 3);
}

#[test]
fn worked_example_text() {
    let g = worked_example();
    let result = run(&project(&g), "queue retry", &["dead-letter-bucket"]);
    let expected = "Found 3 match(es) for 'queue retry' — top 3:

▸ retry-policy (project)
  gist: Retry 3 times, exponential 2s base, then dead-letter
    - Chosen after the March outage

▸ ingest-queue (project)
  gist: Ingest runs on a single SQS FIFO queue; ordering per tenant
    - Tenant id is the message group id

▸ dead-letter-bucket (project, seen)
  gist: S3 bucket for poison messages from the queue

CONNECTIONS between hits:
  ingest-queue --governed-by--> retry-policy
  dead-letter-bucket --receives-from--> retry-policy";
    assert_eq!(search_text("queue retry", &result, true), expected);
    assert!(result.connectors.is_empty());
    assert_eq!(
        shown_ids(&result),
        ["retry-policy", "ingest-queue", "dead-letter-bucket"]
    );
}

#[test]
fn a_term_in_every_node_scores_nothing_and_a_single_node_graph_uses_idf_one() {
    let mut g = Graph::default();
    node(&mut g, "a", "common", &[], &[]);
    node(&mut g, "b", "common rare", &[], &[]);
    let result = run(&project(&g), "common", &[]);
    assert_eq!(result.total, 0);
    assert_eq!(
        search_text("common", &result, true),
        "No nodes found matching 'common'"
    );
    assert_eq!(
        search_text("common", &result, false),
        format!(
            "No nodes found matching 'common'{}",
            wording::SEARCH_NO_SESSION_MISS
        )
    );
    let mut one = Graph::default();
    node(&mut one, "solo", "only", &[], &[]);
    let result = run(&project(&one), "solo", &[]);
    assert_eq!(result.top[0].raw_score, 1.0 / 60.0);
}

#[test]
fn equal_tf_gets_distinct_ranks_and_ties_keep_first_contribution_order() {
    let mut g = Graph::default();
    node(&mut g, "n0", "zzz", &[], &[]);
    node(&mut g, "n1", "beta", &[], &[]);
    node(&mut g, "n2", "alpha", &[], &[]);
    node(&mut g, "n3", "alpha alpha", &[], &[]);
    node(&mut g, "n4", "beta", &[], &[]);
    // alpha: n3 (tf 2) rank 0, n2 rank 1; beta: n1 rank 0, n4 rank 1.
    let result = run(&project(&g), "alpha beta", &[]);
    let ids: Vec<&str> = result.top.iter().map(|h| h.id.as_str()).collect();
    // Rounded scores tie pairwise (same idf); first contribution decides: alpha's
    // ranking came first, so n3 before n1 and n2 before n4.
    assert_eq!(ids, ["n3", "n1", "n2", "n4"]);
    assert!(result.top[0].raw_score == result.top[1].raw_score);
}

#[test]
fn tf_counts_non_overlapping_occurrences() {
    let mut g = Graph::default();
    node(&mut g, "x", "aaaa", &[], &[]); // "aa" twice, not three times
    node(&mut g, "y", "aa aa aa", &[], &[]);
    node(&mut g, "z", "nothing", &[], &[]);
    let result = run(&project(&g), "aa", &[]);
    assert_eq!(result.top[0].id, "y");
}

#[test]
fn several_project_graphs_keep_first_position_unless_strictly_better() {
    let mut p1 = Graph::default();
    node(&mut p1, "a", "kiwi kiwi", &[], &[]);
    node(&mut p1, "shared", "kiwi", &["from p1"], &[]);
    node(&mut p1, "o1", "plain", &[], &[]);
    node(&mut p1, "o2", "plain", &[], &[]);
    let mut p2 = Graph::default();
    node(&mut p2, "first2", "kiwi kiwi", &[], &[]);
    node(&mut p2, "shared", "kiwi kiwi kiwi", &["from p2"], &[]);
    node(&mut p2, "x", "plain", &[], &[]);
    node(&mut p2, "y", "plain", &[], &[]);
    let graphs = [
        SearchGraph {
            level: Level::Project,
            graph: &p1,
        },
        SearchGraph {
            level: Level::Project,
            graph: &p2,
        },
    ];
    let result = search(&graphs, &query_terms("kiwi"), None);
    // idf = ln 2 / ln 4 = 0.5 in both graphs; p1: a 0.5/60, shared 0.5/61;
    // p2: shared 0.5/60 (strictly better: replaces content, keeps p1's slot), first2 0.5/61.
    let ids: Vec<&str> = result.top.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["a", "shared", "first2"]);
    assert_eq!(result.total, 3);
    assert_eq!(result.top[1].raw_score, 0.5 / 60.0);
    assert_eq!(
        result.top[1].notes.as_deref(),
        Some(&["from p2".to_string()][..])
    );
    // An equal raw score does not replace: the first graph's content stays.
    let mut p3 = p1.clone();
    node(&mut p3, "shared", "kiwi", &["from p3"], &[]);
    let twins = [
        graphs[0],
        SearchGraph {
            level: Level::Project,
            graph: &p3,
        },
    ];
    let result = search(&twins, &query_terms("kiwi"), None);
    assert_eq!(
        result.top[1].notes.as_deref(),
        Some(&["from p1".to_string()][..])
    );
    // Nor does a weaker one; positions follow the first graph.
    let result = search(&[graphs[1], graphs[0]], &query_terms("kiwi"), None);
    let ids: Vec<&str> = result.top.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["shared", "a", "first2"]);
    assert_eq!(
        result.top[0].notes.as_deref(),
        Some(&["from p2".to_string()][..])
    );
    // A user record and a project record of one id stay two records.
    let both = [
        SearchGraph {
            level: Level::User,
            graph: &p1,
        },
        graphs[0],
    ];
    assert_eq!(search(&both, &query_terms("kiwi"), None).total, 4);
}

#[test]
fn fast_rounding_agrees_with_python_round() {
    let mut x = 0.000_01f64;
    while x < 2.0 {
        assert_eq!(round4(x), round_to(x, 4), "{x}");
        x = x * 1.000_37 + 1e-7;
    }
    for rank in 0..5_000 {
        for idf in [1.0, 0.369, 0.5, 0.123_456_7] {
            let raw = idf / (60.0 + f64::from(rank));
            assert_eq!(round4(raw), round_to(raw, 4));
            let two = raw + idf / 61.0;
            assert_eq!(round4(two), round_to(two, 4));
        }
    }
    for tie in [0.000_05, 0.000_15, 0.012_25, 1.000_05] {
        assert_eq!(round4(tie), round_to(tie, 4), "{tie}");
    }
}

// ---- connection paths (§12.6 item 38) ---------------------------------------

#[test]
fn a_three_hop_chain_yields_exactly_its_edges() {
    let mut g = Graph::default();
    node(&mut g, "A", "endpoint wombat", &[], &[]);
    node(&mut g, "m1", "middle one", &[], &[]);
    node(&mut g, "m2", "middle two", &[], &[]);
    node(&mut g, "B", "endpoint wombat too", &[], &[]);
    node(&mut g, "noise", "unrelated", &[], &[]);
    edge(&mut g, "A", "m1", "next");
    edge(&mut g, "m1", "m2", "next");
    edge(&mut g, "m2", "B", "next");
    edge(&mut g, "B", "src/file.rs", "implemented-in"); // artifacts do not route
    edge(&mut g, "A", "A", "self"); // nor do self-loops
    let result = run(&project(&g), "wombat", &[]);
    assert_eq!(
        result.path_edges,
        [
            EdgeKey::new("m2", "B", "next"),
            EdgeKey::new("m1", "m2", "next"),
            EdgeKey::new("A", "m1", "next"),
        ]
    );
    let connectors: Vec<&str> = result.connectors.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(connectors, ["m2", "m1"]);
    assert_eq!(shown_ids(&result), ["A", "B", "m2", "m1"]);
}

#[test]
fn a_node_eight_hops_away_has_no_path() {
    let mut g = Graph::default();
    node(&mut g, "far-a", "platypus", &[], &[]);
    for i in 1..8 {
        node(&mut g, &format!("hop{i}"), "filler", &[], &[]);
    }
    node(&mut g, "far-b", "platypus", &[], &[]);
    let chain: Vec<String> = std::iter::once("far-a".to_string())
        .chain((1..8).map(|i| format!("hop{i}")))
        .chain(std::iter::once("far-b".to_string()))
        .collect();
    for pair in chain.windows(2) {
        edge(&mut g, &pair[0], &pair[1], "next");
    }
    let result = run(&project(&g), "platypus", &[]);
    assert_eq!(result.top.len(), 2);
    assert!(result.path_edges.is_empty());
    assert!(result.connectors.is_empty());
}

#[test]
fn four_hops_connect_and_five_do_not() {
    for (hops, connected) in [(4, true), (5, false)] {
        let mut g = Graph::default();
        let ids: Vec<String> = (0..=hops).map(|i| format!("n{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let gist = if i == 0 || i == hops { "echidna" } else { "x" };
            node(&mut g, id, gist, &[], &[]);
        }
        for pair in ids.windows(2) {
            edge(&mut g, &pair[0], &pair[1], "next");
        }
        let result = run(&project(&g), "echidna", &[]);
        assert_eq!(!result.path_edges.is_empty(), connected, "{hops} hops");
    }
}

// ---- text (§12.6 items 36, 37) ------------------------------------------------

#[test]
fn text_shows_seen_flags_connections_and_more_matches() {
    let mut g = Graph::default();
    for i in 0..42 {
        let gist = format!("needle {}", "needle ".repeat(42 - i));
        node(
            &mut g,
            &format!("hit{i:02}"),
            &gist,
            &[&format!("note of {i}")],
            &[],
        );
    }
    node(&mut g, "bridge", "joins two hits", &["bridge note"], &[]);
    node(&mut g, "unrelated", "nothing here", &[], &[]);
    edge(&mut g, "hit00", "bridge", "uses");
    edge(&mut g, "bridge", "hit01", "uses");
    let result = run(&project(&g), "needle", &["hit01"]);
    let text = search_text("needle", &result, true);
    assert!(text.starts_with("Found 42 match(es) for 'needle' — top 5:\n\n▸ hit00 (project)\n"));
    assert!(text.contains("    - note of 0\n"));
    assert!(text.contains("▸ hit01 (project, seen)\n  gist: needle"));
    assert!(!text.contains("note of 1\n"));
    assert!(text.contains(
            "\n\nCONNECTIONS between hits:\n  bridge: joins two hits\n  bridge --uses--> hit01\n  hit00 --uses--> bridge\n\nMORE MATCHES:\n  hit05: "
        ));
    let more = text.split("MORE MATCHES:\n").nth(1).unwrap_or_default();
    assert_eq!(more.lines().count(), 10);
    assert!(text.ends_with(&format!("  hit14: {}", g.nodes["hit14"].gist())));
    assert_eq!(result.top[1].notes, None);
    assert_eq!(shown_ids(&result).len(), 16);
}

#[test]
fn huge_notes_are_trimmed_but_every_top_gist_survives() {
    let mut g = Graph::default();
    let big_note = "n".repeat(400);
    for i in 0..20 {
        let notes: Vec<String> = (0..10).map(|j| format!("{i}-{j} {big_note}")).collect();
        let notes: Vec<&str> = notes.iter().map(String::as_str).collect();
        node(
            &mut g,
            &format!("big{i:02}"),
            &format!("ferret gist {i}"),
            &notes,
            &[],
        );
    }
    for i in 0..5 {
        node(&mut g, &format!("plain{i}"), "no match", &[], &[]);
    }
    for i in 0..5 {
        edge(
            &mut g,
            &format!("big{i:02}"),
            &format!("big{:02}", i + 1),
            "next",
        );
    }
    let result = run(&project(&g), "ferret", &[]);
    let text = search_text("ferret", &result, true);
    assert!(
        text.chars().count() <= SEARCH_BUDGET,
        "{}",
        text.chars().count()
    );
    for hit in &result.top {
        assert!(text.contains(&format!("▸ {} (project)\n  gist: {}", hit.id, hit.gist)));
    }
    // More lines, edges and connectors went first; notes go from the lowest hit up.
    assert!(!text.contains("MORE MATCHES:"));
    assert!(!text.contains("CONNECTIONS between hits:"));
    assert!(text.contains("0-0 "));
    assert!(!text.contains("4-9 "));
    // Exactly as many notes as fit: one more would break the budget.
    let kept = text.matches("\n    - ").count();
    assert!(text.chars().count() + 1 + 6 + 404 > SEARCH_BUDGET);
    assert!(kept > 0);
    // Everything returned is marked seen, trimmed or not.
    assert_eq!(shown_ids(&result).len(), 15);
}

#[test]
fn trim_drops_more_lines_before_edges_and_keeps_sections_consistent() {
    let mut g = Graph::default();
    let long = "q".repeat(900);
    for i in 0..15 {
        node(
            &mut g,
            &format!("h{i:02}"),
            &format!("stoat {long}"),
            &[],
            &[],
        );
    }
    node(&mut g, "mid", "middle", &[], &[]);
    edge(&mut g, "h00", "mid", "r");
    edge(&mut g, "mid", "h01", "r");
    let result = run(&project(&g), "stoat", &[]);
    let text = search_text("stoat", &result, true);
    assert!(text.chars().count() <= SEARCH_BUDGET);
    assert!(
        text.contains(
            "CONNECTIONS between hits:\n  mid: middle\n  mid --r--> h01\n  h00 --r--> mid"
        )
    );
    assert!(text.contains("MORE MATCHES:\n  h05: "));
    assert!(!text.contains("h14: "));
    // Adding the next more line back would have broken the budget.
    let next = format!(
        "\n  h{:02}: stoat {long}",
        text.matches("\n  h").count() + 5
    );
    assert!(text.chars().count() + next.chars().count() > SEARCH_BUDGET);
}

#[test]
fn no_session_header_note_and_all_notes() {
    let g = worked_example();
    let result = search(&project(&g), &query_terms("queue"), None);
    let text = search_text("Queue", &result, false);
    assert!(text.starts_with(&format!(
        "Found 2 match(es) for 'Queue' — top 2:{}\n\n",
        wording::SEARCH_NO_SESSION_HEADER
    )));
    assert!(result.top.iter().all(|h| !h.seen && h.notes.is_some()));
}
