//! Snapshot tests of every text the memory shows the model (DESIGN.md "Testing";
//! core.md §7–§10): each test builds its input in code at fixed instants, replaces
//! the random 8-hex session ids with `<sid>` placeholders, and pins the exact text.
//!
//! Snapshots live in `snapshots/` beside this file. After a deliberate format change,
//! regenerate with `INSTA_UPDATE=always cargo test -p kg-core --test kg-core snapshots`
//! and review every changed file against the spec before committing.

use kg_core::ambient::{BootstrapRequest, prompt_context, session_bootstrap, tool_event};
use kg_core::debt::compute_debt;
use kg_core::model::{Edge, field, float_value};
use kg_core::render::{LevelSource, ReadKind, ReadOptions, render_read};
use kg_core::tools::{self, ReadArgs};
use kg_core::{EdgeKey, Graph, Level, Node};
use kg_test_support::T;
use kg_test_support::hook::{prompt_event, tool_use};
use serde_json::{Value, json};
use std::fs;

use crate::snapshot_fixtures::*;

// ----- kg_read ------------------------------------------------------------------------------

/// Pins the full kg_read of a small two-level memory: order, citations, anchors, HEALTH, DEBT.
#[test]
fn full_read() {
    let (w, sid) = fixture();
    let text = w.read(args(&sid), T);
    insta::assert_snapshot!("full_read", scrub(&text, &[&sid]));
}

/// Pins a full read after the preload: the dedup prefix and `(preloaded)` anchors with citations.
#[test]
fn full_read_after_preload() {
    let (w, _) = fixture();
    let request = BootstrapRequest {
        project_path: w.project.clone(),
        claude_session_id: Some("claude-1".into()),
        source: Some("startup".into()),
        transcript_path: None,
    };
    let boot = session_bootstrap(&w.store, &request, kg_core::PreloadHeader::Standard, T)
        .expect("bootstrap");
    let sid = boot.session_id;
    w.node(
        &sid,
        Level::Project,
        "flaky-e2e-clock",
        "E2E suite flakes when the host clock drifts; CI pins NTP",
        &[],
        &[],
        T + 60.0,
    );
    w.edge(
        &sid,
        Level::Project,
        "flaky-e2e-clock",
        "retry-policy",
        "masked-by",
        T + 60.0,
    );
    let first = w.read(args(&sid), T + 120.0);
    let second = w.read(args(&sid), T + 180.0);
    insta::assert_snapshot!(
        "full_read_after_preload",
        scrub(
            &format!("{first}\n\n----- second full read -----\n\n{second}"),
            &[&sid]
        )
    );
}

/// Pins the degradation ladder: anchors, then cheapest citations hidden, with the note.
#[test]
fn degraded_full_read() {
    let (w, sid) = fixture();
    let (user, mut project) = fixture_graphs(&w, &sid);
    for k in 0..6 {
        let id = format!("old-decision-{k:02}");
        let mut node = Node::new(&id);
        node.set(
            field::GIST,
            Value::String(format!("superseded decision {k}")),
        );
        node.set(field::CREATED_TS, float_value(T - 40.0 * DAY));
        node.set(field::ARCHIVED, json!(true));
        project.nodes.insert(id, node);
    }
    for k in 0..4 {
        let stage = format!("src/ingest/stage{k}.rs");
        let key = EdgeKey::new("ingest-queue", &stage, "implemented-in");
        project.edges.insert(key.clone(), Edge::new(key));
    }
    let levels = [
        LevelSource {
            level: Level::User,
            graph: &user,
            debt_line: None,
        },
        LevelSource {
            level: Level::Project,
            graph: &project,
            debt_line: None,
        },
    ];
    let budget = 1_200;
    let whole = render_read(
        levels,
        &read_options(ReadKind::FullRead, usize::MAX, "<sid>"),
    );
    let squeezed = render_read(levels, &read_options(ReadKind::FullRead, budget, "<sid>"));
    let size = |t: &str| t.chars().count();
    assert!(size(&whole.text) > budget && size(&squeezed.text) <= budget);
    insta::assert_snapshot!(
        "degraded_full_read",
        format!(
            "(undegraded {} chars, budget {budget}, degraded {} chars)\n\n----- undegraded -----\n{}\n\n----- degraded -----\n{}",
            size(&whole.text),
            size(&squeezed.text),
            whole.text,
            squeezed.text
        )
    );
}

/// Pins the session-start preload dropping whole gists (`…N more active gist(s) not shown`).
#[test]
fn preload_with_dropped_gists() {
    let (w, sid) = fixture();
    // Likes make the order of gist drops visible: liked nodes outscore the rest.
    for id in ["retry-policy", "prefers-terse-replies"] {
        let liker = w.session(T - DAY);
        w.store
            .useful(&liker, &[id.to_string()], T - DAY)
            .expect("like");
    }
    let (user, project) = fixture_graphs(&w, &sid);
    let header = kg_core::wording::preload_header("c0ffee42");
    let budget = header.chars().count() + 2 + 870;
    let preload = render_read(
        [
            LevelSource {
                level: Level::User,
                graph: &user,
                debt_line: None,
            },
            LevelSource {
                level: Level::Project,
                graph: &project,
                debt_line: None,
            },
        ],
        &ReadOptions {
            header: Some(&header),
            ..read_options(ReadKind::Preload, budget, "c0ffee42")
        },
    );
    assert!(preload.text.chars().count() <= budget);
    insta::assert_snapshot!(
        "preload_with_dropped_gists",
        format!(
            "budget {budget}, context {} chars\nshown_ids: {:?}\nuser_active {}, project_active {}\n\n----- context -----\n{}",
            preload.text.chars().count(),
            preload.shown_ids,
            preload.user_active,
            preload.project_active,
            preload.text
        )
    );
}

/// A preload of the session-start hook under our policy, with its header.
fn preload_under_our_policy(w: &World, claude: &str) -> String {
    let request = BootstrapRequest {
        project_path: w.project.clone(),
        claude_session_id: Some(claude.into()),
        source: Some("startup".into()),
        transcript_path: None,
    };
    let boot = session_bootstrap(&w.store, &request, kg_core::PreloadHeader::Standard, T)
        .expect("bootstrap");
    let owes = w
        .store
        .session(&boot.session_id)
        .is_some_and(|r| r.needs_full_read());
    format!(
        "owes a full read: {owes}\nstats: {:?}\n\n{}",
        boot.stats,
        scrub(&boot.context, &[&boot.session_id])
    )
}

/// Pins the preload that holds every active node: it says it is complete, asks for no
/// full read, and the session owes none.
#[test]
fn preload_complete() {
    let (w, _) = fixture();
    insta::assert_snapshot!(
        "preload_complete",
        preload_under_our_policy(&w, "claude-complete")
    );
}

/// Pins the preload that had to leave things out: it says what (gists, edges,
/// anchors, by number) and asks for the full read.
#[test]
fn preload_partial() {
    let (w, sid) = fixture();
    for i in 0..75 {
        let gist = format!(
            "Padding lesson {i:02}: a long enough gist that the preload budget cannot hold \
             every one of these nodes, so the lowest scored are left for the full read"
        );
        w.node(
            &sid,
            Level::Project,
            &format!("padding-lesson-{i:02}"),
            &gist,
            &[],
            &[],
            T - DAY,
        );
    }
    let text = preload_under_our_policy(&w, "claude-partial");
    assert!(
        text.contains("PARTIAL") && text.contains("active gist(s)"),
        "{text}"
    );
    insta::assert_snapshot!("preload_partial", text);
}

/// Pins a single-node read promoted from archive: header, notes, touches, edges, footer.
#[test]
fn single_node_read_promoted_from_archive() {
    let (w, sid) = fixture();
    let text = w.read(
        ReadArgs {
            id: Some("dead-letter-bucket".into()),
            ..args(&sid)
        },
        T,
    );
    insta::assert_snapshot!("single_node_read_promoted", scrub(&text, &[&sid]));
}

/// Pins a batch read: blocks split by blank lines, a NOT FOUND placeholder, one footer.
#[test]
fn batch_read_with_not_found() {
    let (w, sid) = fixture();
    let text = w.read(
        ReadArgs {
            ids: Some(vec![
                "retry-policy".into(),
                "no-such-node".into(),
                "prefers-terse-replies".into(),
            ]),
            ..args(&sid)
        },
        T,
    );
    insta::assert_snapshot!("batch_read_with_not_found", scrub(&text, &[&sid]));
}

// ----- kg_search ----------------------------------------------------------------------------

/// Pins kg_search: hits with notes, a seen hit without them, CONNECTIONS, MORE MATCHES.
#[test]
fn search_hits_connections_and_more() {
    let answer = cache_search(World::reference());
    insta::assert_snapshot!("search_hits_connections_and_more", answer);
}

/// The same search under our ranking: the same grammar, our order (the node that
/// names both words first; "cache" alone no longer ties nine nodes).
#[test]
fn search_ranked_by_our_policy() {
    let answer = cache_search(World::new());
    insta::assert_snapshot!("search_ranked_by_our_policy", answer);
}

/// `kg_search("cache tenant")` over a cache topic of eight nodes and two others.
fn cache_search(w: World) -> String {
    let t0 = T - 10.0 * DAY;
    let sid = w.session(t0);
    let p = Level::Project;
    let cache = [
        (
            "cache-ttl",
            "Edge cache TTL is 5 minutes; purge via API",
            &["Set in infra/cdn.tf", "Purges are rate-limited"][..],
        ),
        (
            "cache-key-tenant",
            "Cache keys start with the tenant id",
            &["Prevents cross-tenant leaks"][..],
        ),
        (
            "cache-warmup",
            "Deploys warm the cache from the top 100 URLs",
            &[][..],
        ),
        (
            "stale-cache-bug",
            "Stale cache after rename: keys used the old slug",
            &["Fixed by keying on ids"][..],
        ),
        (
            "cache-metrics",
            "Hit ratio dashboard lives in Grafana",
            &[][..],
        ),
        (
            "cache-eviction",
            "LRU eviction, 2 GB per node; cache misses spike at deploy",
            &[][..],
        ),
        ("cdn-vendor", "CDN is Fastly; cache config in VCL", &[][..]),
        ("cache-docs", "Runbook: docs/cache.md", &[][..]),
    ];
    for (k, (id, gist, notes)) in cache.iter().enumerate() {
        w.node(&sid, p, id, gist, notes, &[], t0 + k as f64 * 60.0);
    }
    w.node(
        &sid,
        p,
        "identity-model",
        "Every request carries an org id from the JWT",
        &[],
        &[],
        t0,
    );
    w.node(
        &sid,
        p,
        "unrelated-node",
        "Releases are tagged on Tuesdays",
        &[],
        &[],
        t0,
    );
    w.edge(
        &sid,
        p,
        "cache-key-tenant",
        "identity-model",
        "relies-on",
        t0,
    );
    w.edge(&sid, p, "identity-model", "stale-cache-bug", "caused", t0);
    w.edge(&sid, p, "cache-ttl", "infra/cdn.tf", "configured-in", t0);
    w.archive(&sid, p, "stale-cache-bug", t0 + HOUR);
    w.store.mark_seen(&sid, ["cache-key-tenant"]);
    let answer = tools::kg_search(&w.store, "cache tenant", Some(&sid), T);
    assert!(!answer.is_error);
    scrub(&answer.text, &[&sid])
}

/// Pins the no-match search answer without a session, with its best-effort note.
#[test]
fn search_no_match_without_session() {
    let (w, _) = fixture();
    let answer = tools::kg_search(&w.store, "zebra crossing", None, T);
    insta::assert_snapshot!("search_no_match_without_session", answer.text);
}

// ----- other tool texts ---------------------------------------------------------------------

/// Pins the kg_sync report: per-level counts, node lines (100-char cut, `[archived]`), edges.
#[test]
fn sync_report() {
    let (w, reader) = fixture();
    w.store.sync(&reader, T).expect("sync");
    let writer = w.session(T + 60.0);
    let long = format!("Deploy freeze on Fridays after 14:00; {}", "x".repeat(120));
    w.node(
        &writer,
        Level::User,
        "deploy-freeze-fridays",
        &long,
        &[],
        &[],
        T + 60.0,
    );
    w.node(
        &writer,
        Level::Project,
        "cache-ttl-5m",
        "Edge cache TTL is 5 minutes; purge via API",
        &[],
        &[],
        T + 61.0,
    );
    w.edge(
        &writer,
        Level::Project,
        "cache-ttl-5m",
        "infra/cdn.tf",
        "configured-in",
        T + 62.0,
    );
    // The write refilled the small project level; archive two nodes again by hand (no
    // version bump), then promote one by reading it (a version bump: reported, listed
    // first because its versions key is older).
    w.archive(&writer, Level::Project, "cache-ttl-5m", T + 63.0);
    w.archive(&writer, Level::Project, "dead-letter-bucket", T + 63.0);
    let read = w
        .store
        .read_node(
            Some(w.target(&writer, Level::Project)),
            Some(&writer),
            "dead-letter-bucket",
            T + 64.0,
        )
        .expect("read");
    assert!(read.was_archived);
    let first = tools::kg_sync(&w.store, &reader, T + 120.0);
    let second = tools::kg_sync(&w.store, &reader, T + 180.0);
    insta::assert_snapshot!(
        "sync_report",
        format!("{}\n\n----- next sync -----\n\n{}", first.text, second.text)
    );
}

/// Pins the kg_useful answer: accepted ids, a Skipped line per rejected id, likes remaining.
#[test]
fn likes_answer() {
    let (w, sid) = fixture();
    let ids = |l: &[&str]| -> Vec<String> { l.iter().map(|s| s.to_string()).collect() };
    let first = tools::kg_useful(
        &w.store,
        &sid,
        &ids(&["retry-policy", "ingest-queue", "retry-policy", "missing"]),
        T,
    );
    let second = tools::kg_useful(
        &w.store,
        &sid,
        &ids(&[
            "uses-fish-shell",
            "avoid-force-push",
            "build-needs-nightly",
            "prefers-terse-replies",
        ]),
        T,
    );
    insta::assert_snapshot!(
        "likes_answer",
        format!(
            "{}\n\n----- second call -----\n\n{}",
            first.text, second.text
        )
    );
}

/// Pins the kg_progress read: Python-style pretty JSON with non-ASCII escaped, and a miss.
#[test]
fn progress_read() {
    let (w, sid) = fixture();
    let state = json!({
        "last_ts": 1795007220,
        "ratio": 0.5,
        "cursor": "überprüfung — 日本",
        "done": [],
        "meta": {},
        "emoji": "🎉",
        "nested": {"ids": ["a", "b"], "ok": true, "none": null},
    });
    let saved = tools::kg_progress(&w.store, &sid, "maintain", Some(state), Level::User, T);
    let read = tools::kg_progress(&w.store, &sid, "maintain", None, Level::User, T);
    let missing = tools::kg_progress(&w.store, &sid, "nothing-here", None, Level::User, T);
    insta::assert_snapshot!(
        "progress_read",
        format!("{}\n\n{}\n\n{}", saved.text, read.text, missing.text)
    );
}

// ----- DEBT and HEALTH lines ----------------------------------------------------------------

/// A graph of `n` active nodes: the first `oversized` with 301-char gists, the first
/// `unconnected` without edges, the first `reads` read on distinct days before `now`.
fn debt_graph(
    n: usize,
    oversized: usize,
    unconnected: usize,
    reads: usize,
    now: f64,
    stamp: Option<f64>,
) -> Graph {
    let mut g = Graph::default();
    for i in 0..n {
        let id = format!("n{i}");
        let mut node = Node::new(&id);
        let gist = if i < oversized {
            "x".repeat(301)
        } else {
            "short".to_string()
        };
        node.set(field::GIST, Value::String(gist));
        if i < reads {
            node.set(field::LAST_READ_TS, float_value(now - i as f64 * DAY));
        }
        g.nodes.insert(id.clone(), node);
        if i >= unconnected {
            let key = EdgeKey::new(&id, "src/x.rs", "in");
            g.edges.insert(key.clone(), Edge::new(key));
        }
    }
    if let Some(ts) = stamp {
        g.progress
            .insert("maintain".into(), json!({"last_ts": ts, "cursor": "x"}));
    }
    g
}

/// Pins DEBT lines: HIGH with its call to action, MED, LOW; never maintained vs untended 2.2d.
#[test]
fn debt_lines() {
    let now = T;
    let cases = [
        (
            "busy, worn, never maintained",
            debt_graph(10, 5, 3, 4, now, None),
        ),
        (
            "quiet, worn, never maintained",
            debt_graph(10, 6, 2, 0, now, None),
        ),
        (
            "quiet, clean, never maintained",
            debt_graph(6, 0, 0, 0, now, None),
        ),
        (
            "busy, worn, maintained 2.2 days ago",
            debt_graph(10, 5, 3, 4, now, Some(now - 2.2 * DAY)),
        ),
        (
            "busy, clean, maintained 9 days ago",
            debt_graph(8, 0, 1, 3, now, Some(now - 9.0 * DAY)),
        ),
        ("empty graph", Graph::default()),
    ];
    let lines: Vec<String> = cases
        .iter()
        .map(|(what, g)| {
            let debt = compute_debt(g, false, std::iter::empty(), now);
            format!("{what}:\n{}", debt.line())
        })
        .collect();
    insta::assert_snapshot!("debt_lines", lines.join("\n\n"));
}

/// Pins HEALTH lines with Python rounding (12.5% → 12, avg 0.25 → 0.2, 0.75 → 0.8), avg 0.
#[test]
fn health_lines() {
    let chain = |n: usize, links: usize| -> Graph {
        let mut g = Graph::default();
        for i in 0..n {
            let mut node = Node::new(&format!("n{i}"));
            node.set(field::GIST, Value::String(format!("node {i}")));
            g.nodes.insert(format!("n{i}"), node);
        }
        for i in 0..links {
            let key = EdgeKey::new(&format!("n{i}"), &format!("n{}", i + 1), "next");
            g.edges.insert(key.clone(), Edge::new(key));
        }
        g
    };
    let health = |g: &Graph| -> String {
        let empty = Graph::default();
        let read = render_read(
            [
                LevelSource {
                    level: Level::User,
                    graph: g,
                    debt_line: None,
                },
                LevelSource {
                    level: Level::Project,
                    graph: &empty,
                    debt_line: None,
                },
            ],
            &read_options(ReadKind::FullRead, usize::MAX, "<sid>"),
        );
        read.text
            .lines()
            .filter(|l| l.starts_with("HEALTH: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut orphaned = chain(3, 2);
    orphaned
        .nodes
        .get_mut("n2")
        .expect("n2")
        .set(field::ORPHANED_TS, float_value(T));
    let cases = [
        ("4 nodes, 1 link", chain(4, 1)),
        ("8 nodes, 6 links", chain(8, 6)),
        ("2 nodes, 2 links", {
            let mut g = chain(2, 1);
            let key = EdgeKey::new("n1", "n0", "back");
            g.edges.insert(key.clone(), Edge::new(key));
            g
        }),
        ("chain to an orphan (dead edge, not counted)", orphaned),
    ];
    let lines: Vec<String> = cases
        .iter()
        .map(|(what, g)| format!("{what} (user, then empty project):\n{}", health(g)))
        .collect();
    insta::assert_snapshot!("health_lines", lines.join("\n\n"));
}

// ----- ambient texts ------------------------------------------------------------------------

/// Pins prompt recall: unseen hits, a seen hit `(in context)`, connector and path edges.
#[test]
fn prompt_recall_injection() {
    let w = World::reference();
    let t0 = T - 10.0 * DAY;
    let sid = w
        .store
        .register_session(Some(&w.project), Some("claude-recall"), t0)
        .expect("session");
    w.store.mark_full_read(&sid, t0);
    let p = Level::Project;
    w.node(
        &sid,
        p,
        "ledger-rounding",
        "Ledger rounds half-even at the cent; never floats",
        &[],
        &[],
        t0,
    );
    w.node(
        &sid,
        p,
        "money-type",
        "Money is i64 cents wrapped in a newtype",
        &[],
        &[],
        t0,
    );
    w.node(
        &sid,
        p,
        "ledger-export",
        "Nightly ledger export writes parquet totals per tenant",
        &[],
        &[],
        t0,
    );
    w.node(
        &sid,
        p,
        "ledger-audit",
        "Ledger audit log is append-only; corrections are new rows",
        &[],
        &[],
        t0,
    );
    for (k, gist) in [
        "Releases are tagged on Tuesdays",
        "CI runs on two cores",
        "Docs are built with mdbook",
        "Staging resets every night",
    ]
    .iter()
    .enumerate()
    {
        w.node(&sid, p, &format!("other-{k}"), gist, &[], &[], t0);
    }
    w.edge(&sid, p, "ledger-rounding", "money-type", "uses", t0);
    w.edge(&sid, p, "ledger-export", "money-type", "sums", t0);
    w.store.mark_seen(&sid, ["ledger-audit"]);
    let payload = json!({
        "cwd": w.project,
        "session_id": "claude-recall",
        "prompt": "why do ledger rounding, the ledger export and the audit rows disagree?",
    });
    let first = prompt_context(&w.store, &prompt_event(&payload), T).expect("an injection");
    let again = prompt_context(&w.store, &prompt_event(&payload), T + 60.0);
    assert_eq!(again, None, "a repeat is silent");
    insta::assert_snapshot!("prompt_recall_injection", first);
}

/// Pins the capture nudge for a file read in two Claude sessions that no node references.
#[test]
fn capture_nudge() {
    let w = World::new();
    fs::write(format!("{}/src/engine.rs", w.project), "fn main() {}\n").expect("file");
    let sid = w
        .store
        .register_session(Some(&w.project), Some("claude-b"), T)
        .expect("session");
    let read = |claude: &str, now: f64| {
        tool_event(
            &w.store,
            &tool_use(&json!({
                "cwd": w.project,
                "tool_name": "Read",
                "session_id": claude,
                "tool_input": {"file_path": format!("{}/src/engine.rs", w.project)},
            })),
            now,
        )
    };
    assert_eq!(read("claude-a", T), None, "a first read is silent");
    let nudge = read("claude-b", T + 60.0).expect("a nudge");
    insta::assert_snapshot!("capture_nudge", scrub(&nudge, &[&sid]));
}

// ----- the plugin's skills and the messages that name a route ------------------------

/// The plugin's skills, by name, as the model reads them.
fn skills() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hooks/skills");
    let mut skills: Vec<(String, String)> = fs::read_dir(&dir)
        .expect("hooks/skills")
        .flatten()
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let text = fs::read_to_string(entry.path().join("SKILL.md")).expect("SKILL.md");
            (name, text)
        })
        .collect();
    skills.sort();
    skills
}

/// KG Memory reaches Claude Code by the plugin, by `kg-memory install claude-code`, or
/// by `claude mcp add`, on whatever port the person chose: a skill that names one
/// route's tool prefix or server name names the others' too, and none fixes the port.
#[test]
fn skills_hold_for_every_route() {
    let skills = skills();
    assert!(skills.len() >= 7, "{} skills", skills.len());
    for (name, text) in &skills {
        if text.contains("mcp__plugin_knowledge-graph_kg__") {
            assert!(
                text.contains("mcp__kg__"),
                "{name} names only the plugin's tool prefix"
            );
        }
        for (line_no, line) in text.lines().enumerate() {
            let at = format!("{name}/SKILL.md:{}", line_no + 1);
            assert!(
                !line.contains("127.0.0.1:8765"),
                "{at} fixes the port: {line}"
            );
            assert!(
                !line.contains("about a minute"),
                "{at}: a server starts in under a second"
            );
            if line.contains("/mcp") && line.contains("plugin:knowledge-graph:kg") {
                assert!(
                    line.contains("`kg`") || line.contains("(kg,"),
                    "{at} names only the plugin's server: {line}"
                );
            }
            if line.contains("claude mcp add") && line.contains("--transport") {
                assert!(
                    line.contains("-s user"),
                    "{at}: without -s user the server exists in one folder only: {line}"
                );
            }
        }
        insta::assert_snapshot!(format!("skill_{name}"), text);
    }
}

#[test]
fn messages_that_name_a_route() {
    let warming = kg_core::server_warming_up("http://127.0.0.1:9100");
    assert!(
        warming.contains("http://127.0.0.1:9100/health"),
        "{warming}"
    );
    assert!(
        warming.contains("(kg, or plugin:knowledge-graph:kg"),
        "{warming}"
    );
    insta::assert_snapshot!("server_warming_up", warming);
    insta::assert_snapshot!(
        "no_project_memory",
        kg_core::wording::no_project_memory("/srv/work/shop")
    );
}
