//! `kg-memory import` with the real binary: the MCP memory server's JSONL and Claude
//! Code's markdown memory files (samples in `tests/fixtures/import/`, written from
//! each format's documentation), imported through a running server over HTTP or,
//! with none running, into the storage root directly; read back through the server.
//! The preview writes nothing, and every kind of bad input is refused with its line
//! and nothing written.

use crate::server::{Server, free_port, temp_home};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const DAY: f64 = 86_400.0;
const T: f64 = 1_795_176_000.0;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/import")
        .join(name)
}

/// `kg-memory import <args>` for `home` and `storage`, configured with a port no
/// server listens on: a server holding the root must be found through its lock.
/// Standard input is no terminal, as in CI.
fn import(args: &[&str], home: &Path, storage: &Path) -> Output {
    Command::new(kg_test_support::kg_memory_bin())
        .arg("import")
        .args(args)
        .env("HOME", home)
        .env("KG_STORAGE_ROOT", storage)
        .env("KG_HTTP_PORT", free_port().to_string())
        .env("KG_AUTOCOMMIT_INTERVAL", "0")
        .env_remove("KG_HTTP_HOST")
        .env_remove("KG_CLOCK_FILE")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("run kg-memory import")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn succeeded(out: &Output) -> String {
    assert!(
        out.status.success(),
        "import failed: {}\n{}",
        stderr(out),
        stdout(out)
    );
    stdout(out)
}

/// The user graph, or the project graph of `project`, as the server reads it back.
fn graph(server: &Server, project: Option<&Path>) -> Value {
    let path = match project {
        Some(p) => format!(
            "/api/graph/read?project_path={}",
            kg_client::encode(&p.to_string_lossy())
        ),
        None => "/api/graph/read".to_string(),
    };
    let (status, body) = server.json("GET", &path, None);
    assert_eq!(status, 200, "{body}");
    body[if project.is_some() { "project" } else { "user" }].clone()
}

fn node<'a>(graph: &'a Value, id: &str) -> &'a Value {
    graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no node {id} in {graph}"))
}

fn ids(graph: &Value) -> Vec<String> {
    graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("id").to_string())
        .collect()
}

fn edges(graph: &Value) -> Vec<String> {
    graph["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| format!("{} --{}--> {}", e["from"], e["rel"], e["to"]).replace('"', ""))
        .collect()
}

#[test]
fn the_memory_servers_jsonl_round_trips_through_a_running_server() {
    let server = Server::fresh();
    let file = fixture("memory.jsonl");
    let out = succeeded(&import(
        &[file.to_str().expect("path"), "--yes"],
        &server.home,
        &server.storage,
    ));
    assert!(
        out.contains(&format!(
            "through the running KG Memory server at http://127.0.0.1:{}",
            server.port
        )),
        "{out}"
    );
    assert!(
        out.contains("Imported 4 node(s) and 3 edge(s) into the user graph"),
        "{out}"
    );

    let user = graph(&server, None);
    assert_eq!(
        ids(&user),
        ["john-smith", "anthropic", "project-atlas", "default-user"]
    );
    let john = node(&user, "john-smith");
    assert_eq!(john["gist"], "Speaks fluent Spanish");
    assert_eq!(
        john["notes"],
        json!([
            "Graduated in 2019",
            "Prefers morning meetings",
            "Imported from memory.jsonl line 1: entity \"John_Smith\" of type \"person\"."
        ])
    );
    assert_eq!(node(&user, "default-user")["gist"], "default_user (person)");
    assert_eq!(
        edges(&user),
        [
            "john-smith --works-at--> anthropic",
            "john-smith --leads--> project-atlas",
            "default-user --is-colleague-of--> john-smith"
        ]
    );
    // Written through the store: each node is versioned and saved, like any write.
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(server.storage.join("user.json")).expect("user.json"),
    )
    .expect("graph file");
    assert_eq!(file["_meta"]["versions"]["node:john-smith"]["v"], 1);

    // Importing again creates nothing and changes nothing.
    let again = succeeded(&import(
        &[fixture("memory.jsonl").to_str().expect("path"), "--yes"],
        &server.home,
        &server.storage,
    ));
    assert!(
        again.contains("Already in the user graph, kept as they are")
            && again.contains("Nothing to import"),
        "{again}"
    );
    assert_eq!(graph(&server, None), user);
}

#[test]
fn claude_md_round_trips_into_its_projects_graph_with_no_server_running() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let project = home.join("billing");
    std::fs::create_dir_all(project.join(".claude")).expect("project folder");
    let file = project.join(".claude/CLAUDE.md");
    std::fs::copy(fixture("CLAUDE.md"), &file).expect("copy");

    let out = succeeded(&import(
        &[file.to_str().expect("path"), "--yes"],
        &home,
        &storage,
    ));
    assert!(
        out.contains(&format!("into the project graph of {}", project.display())),
        "{out}"
    );
    assert!(out.contains("through the storage root"), "{out}");
    assert!(
        out.contains("  - line 25: a code block (lines 25-28)")
            && out.contains("an @import of another file"),
        "{out}"
    );
    // The lock was let go: a server starts on the root and reads the import back.
    let server = Server::start_in(&home, &storage, None, &[]);
    let graph = graph(&server, Some(&project));
    let ids = ids(&graph);
    assert_eq!(ids.len(), 13, "{ids:?}");
    for id in [
        "commands",
        "use-pnpm-not-npm-the-lockfile",
        "naming",
        "workflow",
    ] {
        assert!(ids.iter().any(|i| i == id), "{id} missing in {ids:?}");
    }
    let named = node(&graph, "prefer-named-exports-over-default-exports");
    assert_eq!(named["gist"], "Prefer named exports over default exports");
    assert_eq!(
        named["notes"],
        json!([
            "default exports break the tree-shaking of the admin bundle",
            "Imported from CLAUDE.md line 14, section \"Code style\"."
        ])
    );
    let edges = edges(&graph);
    for edge in [
        "use-2-space-indentation --part-of--> code-style",
        "naming --part-of--> code-style",
        "react-components-in-pascalcase-helpers-in --part-of--> naming",
        "run-pnpm-lint-before-every-commit --part-of--> workflow",
    ] {
        assert!(
            edges.iter().any(|e| e == edge),
            "{edge} missing in {edges:?}"
        );
    }
    assert_eq!(edges.len(), 10, "{edges:?}");
}

#[test]
fn auto_memory_must_be_told_its_project_and_user_claude_md_goes_to_the_user_graph() {
    let server = Server::fresh();
    let project = server.home.join("billing");
    std::fs::create_dir_all(&project).expect("project");
    let memory_dir = server.home.join(".claude/projects/-billing/memory");
    std::fs::create_dir_all(&memory_dir).expect("memory dir");
    let memory = memory_dir.join("MEMORY.md");
    std::fs::copy(fixture("MEMORY.md"), &memory).expect("copy");

    let refused = import(
        &[memory.to_str().expect("path"), "--yes"],
        &server.home,
        &server.storage,
    );
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("--project <the project's folder>, or --user"),
        "{}",
        stderr(&refused)
    );
    assert!(ids(&graph(&server, None)).is_empty());

    let out = succeeded(&import(
        &[
            memory.to_str().expect("path"),
            "--project",
            project.to_str().expect("path"),
            "--yes",
        ],
        &server.home,
        &server.storage,
    ));
    assert!(
        out.contains("links to debugging.md, which is not read"),
        "{out}"
    );
    let graph_of_project = graph(&server, Some(&project));
    assert_eq!(
        node(&graph_of_project, "invoice-totals-are-computed-in-cents")["gist"],
        "Invoice totals are computed in cents (integers), never floats"
    );
    let project_edges = edges(&graph_of_project);
    for edge in [
        "make-dev-starts-the-api --part-of--> build",
        "build --part-of--> memory-index",
        "the-user-prefers-small-commits --part-of--> memory-index",
    ] {
        assert!(
            project_edges.iter().any(|e| e == edge),
            "{edge} missing in {project_edges:?}"
        );
    }
    assert_eq!(project_edges.len(), 6, "{project_edges:?}");

    // A folder outside home is no project: the server says so, nothing is written.
    let outside = import(
        &[memory.to_str().expect("path"), "--project", "/", "--yes"],
        &server.home,
        &server.storage,
    );
    assert!(!outside.status.success());
    assert!(
        stderr(&outside).contains("Project path must be within home directory"),
        "{}",
        stderr(&outside)
    );

    let user_claude = server.home.join(".claude/CLAUDE.md");
    std::fs::write(&user_claude, "# Style\n- I like short answers\n").expect("write");
    let out = succeeded(&import(
        &[user_claude.to_str().expect("path"), "--yes"],
        &server.home,
        &server.storage,
    ));
    assert!(
        out.contains("into the user graph (files in ~/.claude"),
        "{out}"
    );
    assert_eq!(
        ids(&graph(&server, None)),
        ["style", "i-like-short-answers"]
    );
}

#[test]
fn the_preview_names_everything_and_writes_nothing() {
    let server = Server::fresh();
    // One node the file also has: the preview says it is kept.
    let (status, _) = server.json(
        "POST",
        "/api/nodes",
        Some(&json!({"level": "user", "id": "anthropic", "gist": "Written by hand"})),
    );
    assert_eq!(status, 200);
    let before = std::fs::read(server.storage.join("user.json")).expect("user.json");
    let file = fixture("memory.jsonl");
    let file = file.to_str().expect("path");

    for args in [vec![file, "--dry-run"], vec![file]] {
        let out = import(&args, &server.home, &server.storage);
        let text = stdout(&out);
        for line in [
            "Nodes to create: 3",
            "  + john-smith: Speaks fluent Spanish   [line 1, named \"John_Smith\"]",
            "  + project-atlas: Internal billing rewrite, due in Q3   [line 3, named \"Project Atlas\"]",
            "Edges to create: 3",
            "  + john-smith --works-at--> anthropic   [line 5]",
            "Already in the user graph, kept as they are",
            "  = anthropic   [line 2]",
            "its active part renders",
        ] {
            assert!(text.contains(line), "{line:?} missing in:\n{text}");
        }
        if args.contains(&"--dry-run") {
            assert!(out.status.success(), "{}", stderr(&out));
            assert!(text.contains("Dry run: nothing was written."), "{text}");
        } else {
            // No terminal to ask on and no --yes: shown, refused, nothing written.
            assert!(!out.status.success());
            assert!(stderr(&out).contains("pass --yes"), "{}", stderr(&out));
        }
        assert_eq!(
            std::fs::read(server.storage.join("user.json")).expect("user.json"),
            before,
            "the preview changed the graph file"
        );
    }
    assert_eq!(ids(&graph(&server, None)), ["anthropic"]);
    assert_eq!(
        node(&graph(&server, None), "anthropic")["gist"],
        "Written by hand"
    );
}

/// Bad input: refused with the line and why, nothing written, through a server and
/// with none.
#[test]
fn bad_input_is_refused_with_its_line_and_nothing_is_written() {
    let server = Server::fresh();
    let dir = server.home.join("inputs");
    std::fs::create_dir_all(&dir).expect("inputs");
    let entity = |name: &str| {
        format!(
            "{{\"type\":\"entity\",\"name\":\"{name}\",\"entityType\":\"x\",\"observations\":[\"fact\"]}}\n"
        )
    };
    let huge_line = entity("padding");
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        (
            "malformed.jsonl",
            format!("{}{{\"type\":\"entity\",\"name\":\n{}", entity("a"), entity("b")).into_bytes(),
            vec!["line 2: not a JSON object"],
        ),
        (
            "duplicates.jsonl",
            format!("{}{}{}", entity("Alice"), entity("Bob"), entity("Alice")).into_bytes(),
            vec!["line 3: the entity \"Alice\" is already on line 1"],
        ),
        (
            "same-id.jsonl",
            format!("{}{}", entity("Data Store"), entity("data_store")).into_bytes(),
            vec!["line 2: the entity \"data_store\" would get the node id 'data-store'"],
        ),
        (
            "bad-ids.jsonl",
            format!(
                "{}{}{{\"type\":\"relation\",\"from\":\"ok\",\"to\":\"ok\",\"relationType\":\"→\"}}\n",
                entity("ok"),
                entity("🎉")
            )
            .into_bytes(),
            vec![
                "line 2: the entity name \"🎉\" has no Latin letters or digits",
                "line 3: the relation type \"→\" has no Latin letters or digits",
            ],
        ),
        (
            "latin1.jsonl",
            [entity("ok").into_bytes(), b"{\"type\":\"entity\",\"name\":\"caf\xe9\"}\n".to_vec()].concat(),
            vec!["is not UTF-8 text: line 2"],
        ),
        (
            "huge.jsonl",
            huge_line.repeat((4 << 20) / huge_line.len() + 1).into_bytes(),
            vec!["bytes; kg-memory import reads files up to 4194304 bytes (4 MiB)"],
        ),
        (
            "empty.jsonl",
            b"\n  \n".to_vec(),
            vec!["is empty: there is nothing in it to import"],
        ),
        (
            "many.jsonl",
            (0..2001).map(|i| entity(&format!("n{i}"))).collect::<String>().into_bytes(),
            vec!["the file holds 2001 nodes; one import creates at most 2000"],
        ),
    ];
    let (_bare_dir, bare_home) = temp_home();
    let bare_storage = bare_home.join("storage");
    for (name, bytes, says) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write input");
        let path = path.to_str().expect("path");
        for (home, storage) in [(&server.home, &server.storage), (&bare_home, &bare_storage)] {
            let out = import(&[path, "--yes", "--user"], home, storage);
            assert!(
                !out.status.success(),
                "{name} was accepted: {}",
                stdout(&out)
            );
            let err = stderr(&out);
            for said in &says {
                assert!(err.contains(said), "{name}: {said:?} missing in:\n{err}");
            }
            assert!(
                err.contains("Nothing was written") || err.contains("nothing was written"),
                "{name}: {err}"
            );
            assert!(stdout(&out).is_empty(), "{name}: no preview for bad input");
        }
        assert!(
            ids(&graph(&server, None)).is_empty(),
            "{name} wrote to the server"
        );
        assert!(!bare_storage.exists(), "{name} touched the storage root");
    }
    // A folder or a missing file: why, said once.
    for (what, path) in [
        ("a folder", dir.clone()),
        ("a missing file", dir.join("none.jsonl")),
    ] {
        let out = import(
            &[path.to_str().expect("path"), "--yes"],
            &server.home,
            &server.storage,
        );
        assert!(!out.status.success(), "{what} was accepted");
        let err = stderr(&out);
        assert!(
            err.contains("cannot read") && err.contains("Nothing was written"),
            "{what}: {err}"
        );
        // Why, once: the system's words for a missing file, ours for a folder.
        let why = if what == "a folder" {
            "is a folder"
        } else {
            "(os error"
        };
        assert_eq!(err.matches(why).count(), 1, "{what}: said twice: {err}");
    }
}

/// The import writes through the normal path, so the level stays in budget: nodes
/// past their grace period are archived to make room, as after any write.
#[test]
fn a_big_import_keeps_the_level_within_its_budget() {
    let server = Server::fresh_at(T - 10.0 * DAY);
    for i in 0..40 {
        let gist = format!("old-{i:02} is an older insight ").repeat(8);
        let (status, body) = server.json(
            "POST",
            "/api/nodes",
            Some(&json!({"level": "user", "id": format!("old-{i:02}"), "gist": gist})),
        );
        assert_eq!(status, 200, "{body}");
    }
    server.set_now(T);
    let lines: String = (0..60)
        .map(|i| {
            let fact = format!("imported fact {i:02} about the billing service ").repeat(5);
            format!("{{\"type\":\"entity\",\"name\":\"fact {i:02}\",\"entityType\":\"fact\",\"observations\":[\"{fact}\"]}}\n")
        })
        .collect();
    let file = server.home.join("big.jsonl");
    std::fs::write(&file, lines).expect("write");
    // The preview says what the maintenance pass will archive, from the store's own
    // dry run, and the dry run changes nothing.
    let before = graph(&server, None);
    let preview = succeeded(&import(
        &[file.to_str().expect("path"), "--dry-run"],
        &server.home,
        &server.storage,
    ));
    let promised = preview
        .split("the maintenance pass after the import would archive ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("the preview names no archived nodes: {preview}"));
    assert!(promised > 0, "{preview}");
    assert!(
        preview.contains("node(s) the user graph holds now (old-"),
        "{preview}"
    );
    assert_eq!(
        graph(&server, None),
        before,
        "the dry run changed the graph"
    );
    let out = succeeded(&import(
        &[file.to_str().expect("path"), "--yes"],
        &server.home,
        &server.storage,
    ));
    assert!(out.contains("Imported 60 node(s)"), "{out}");
    assert!(
        out.contains(&format!(
            "Maintenance archived {promised} node(s) the graph held before"
        )),
        "the import archived other than the preview said ({promised}): {out}"
    );
    // One save for the whole import: the backup the save kept is the graph as it was
    // before it, holding none of the imported nodes (a save per write would have kept
    // the state before the last write).
    let prev: Value = serde_json::from_str(
        &std::fs::read_to_string(server.storage.join("user.prev")).expect("user.prev"),
    )
    .expect("backup");
    let prev_ids: Vec<&String> = prev["nodes"].as_object().expect("nodes").keys().collect();
    assert_eq!(prev_ids.len(), 40, "{prev_ids:?}");
    assert!(
        prev_ids.iter().all(|id| id.starts_with("old-")),
        "{prev_ids:?}"
    );

    let (status, level) = server.json("GET", "/api/view/level?level=user", None);
    assert_eq!(status, 200);
    let budget = &level["budget"];
    assert!(
        budget["chars"].as_u64() <= budget["budget"].as_u64(),
        "over budget after the import: {budget}"
    );
    let archived_old = level["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|row| {
            row["node"]["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("old-"))
                && row["tier"] != "active"
        })
        .count();
    assert!(archived_old > 0, "no older node was archived: {budget}");
    assert_eq!(
        level["counts"]["active"].as_u64().map(|n| n >= 60),
        Some(true)
    );
}

/// On a terminal the import asks, and only a yes writes. `script` (util-linux) gives
/// the command a terminal; the answer is typed on it.
#[test]
fn on_a_terminal_it_asks_and_only_yes_writes() {
    let server = Server::fresh();
    let command = format!(
        "{} import {}",
        kg_test_support::kg_memory_bin().display(),
        fixture("memory.jsonl").display()
    );
    let answer = |typed: &str| {
        let mut child = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("HOME", &server.home)
            .env("KG_STORAGE_ROOT", &server.storage)
            .env("KG_HTTP_PORT", free_port().to_string())
            .env_remove("KG_HTTP_HOST")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script (util-linux) runs the import on a terminal");
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(typed.as_bytes())
            .expect("type the answer");
        let out = child.wait_with_output().expect("import on a terminal");
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let no = answer("n\n");
    assert!(
        no.contains("Create 4 node(s) and 3 edge(s) in the user graph? [y/N]")
            && no.contains("Nothing was imported."),
        "{no}"
    );
    assert!(ids(&graph(&server, None)).is_empty());
    let yes = answer("y\n");
    assert!(yes.contains("Imported 4 node(s) and 3 edge(s)"), "{yes}");
    assert_eq!(ids(&graph(&server, None)).len(), 4);
}

/// `POST /api/import` takes an import as one batch: one node it refuses refuses all
/// of it, and nothing is written.
#[test]
fn an_import_with_one_bad_node_writes_nothing() {
    let server = Server::fresh();
    let before = std::fs::read(server.storage.join("user.json")).ok();
    let (status, body) = server.json(
        "POST",
        "/api/import",
        Some(&json!({
            "level": "user",
            "nodes": [
                {"id": "fine-one", "gist": "a fine node"},
                {"id": "bad id with spaces", "gist": "refused"},
            ],
            "edges": [{"from": "fine-one", "to": "bad id with spaces", "rel": "uses"}],
        })),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("bad id with spaces")),
        "{body}"
    );
    assert!(ids(&graph(&server, None)).is_empty());
    assert_eq!(std::fs::read(server.storage.join("user.json")).ok(), before);
    // The same without the bad node goes in whole, in one answer.
    let (status, body) = server.json(
        "POST",
        "/api/import",
        Some(&json!({
            "level": "user",
            "nodes": [{"id": "fine-one", "gist": "a fine node"}, {"id": "fine-two", "gist": "another"}],
            "edges": [{"from": "fine-one", "to": "fine-two", "rel": "uses"}],
        })),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["created"], json!(["fine-one", "fine-two"]));
    assert_eq!(body["edges_created"], 1);
    assert_eq!(ids(&graph(&server, None)), ["fine-one", "fine-two"]);
}
