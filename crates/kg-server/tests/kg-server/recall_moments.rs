//! Memory at the moments the work needs it (issue 37), over the real server's hook
//! routes: file recall after a tool call, and the decision log that says why the
//! memory spoke or stayed silent.

use crate::server::Server;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A project folder under the server's home with `files` (relative path → text).
fn project_with(server: &Server, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = server.home.join(name);
    for (path, text) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("folders");
        std::fs::write(&file, text).expect("file");
    }
    std::fs::create_dir_all(&root).expect("project");
    std::fs::canonicalize(&root).expect("real project path")
}

/// Start a KG session for Claude session `claude` in `project`; its id.
fn start_session(server: &Server, project: &Path, claude: &str) -> String {
    let path = format!(
        "/api/session_bootstrap?project_path={}&claude_session_id={claude}&source=startup",
        project.display()
    );
    let (status, body) = server.json("GET", &path, None);
    assert_eq!(status, 200, "{body}");
    body["session_id"].as_str().expect("session id").to_string()
}

fn put_node(server: &Server, project: &Path, id: &str, gist: &str, touches: &[&str]) {
    let (status, body) = server.json(
        "POST",
        "/api/nodes",
        Some(
            &json!({"level": "project", "project_path": project, "id": id, "gist": gist,
                     "touches": touches}),
        ),
    );
    assert_eq!(status, 200, "{body}");
}

/// What the PostToolUse hook route answers for `tool` with `input`.
fn tool_event(server: &Server, project: &Path, claude: &str, tool: &str, input: Value) -> Value {
    let payload = json!({"session_id": claude, "cwd": project, "hook_event_name": "PostToolUse",
                         "tool_name": tool, "tool_input": input, "tool_response": {}});
    let (status, body) = server.json("POST", "/api/tool_event", Some(&payload));
    assert_eq!(status, 200, "{body}");
    body
}

fn context(answer: &Value) -> Option<&str> {
    answer["hookSpecificOutput"]["additionalContext"].as_str()
}

fn decisions(server: &Server) -> Vec<Value> {
    let (status, body) = server.json("GET", "/api/view/recall?limit=50", None);
    assert_eq!(status, 200, "{body}");
    // Newest first on the wire; oldest first here, in the order they happened.
    let mut list = body["decisions"].as_array().cloned().unwrap_or_default();
    list.reverse();
    list
}

#[test]
fn a_read_of_a_touched_file_brings_its_nodes_back_once() {
    let server = Server::fresh();
    let project = project_with(
        &server,
        "shop",
        &[
            ("src/billing/webhook.rs", "fn main() {}"),
            ("README.md", "x"),
        ],
    );
    // The node exists before the session starts, archived so the preload leaves its
    // gist out (an active one would already be in context).
    put_node(
        &server,
        &project,
        "billing-webhook-raw-body",
        "Verify Stripe signatures on the raw body: parsing JSON first breaks them",
        &["src/billing/webhook.rs:20-75 (async fn stripe_webhook)"],
    );
    let (status, body) = server.json(
        "POST",
        "/api/view/step",
        Some(&json!({"level": "project", "project_path": project,
                     "actions": [{"kind": "archive", "id": "billing-webhook-raw-body"}]})),
    );
    assert_eq!(status, 200, "{body}");
    start_session(&server, &project, "cc-file-1");

    // An absolute path, as Claude Code sends it.
    let file = project.join("src/billing/webhook.rs");
    let answer = tool_event(
        &server,
        &project,
        "cc-file-1",
        "Read",
        json!({"file_path": file}),
    );
    let text = context(&answer).expect("file recall");
    assert!(
        text.starts_with("KG recall — memory about src/billing/webhook.rs"),
        "{text}"
    );
    assert!(
        text.contains("- [project] billing-webhook-raw-body: Verify Stripe signatures"),
        "{text}"
    );
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "PostToolUse");

    // The second read, or an edit of the same file: already in context, silence.
    let again = tool_event(
        &server,
        &project,
        "cc-file-1",
        "Read",
        json!({"file_path": file}),
    );
    assert_eq!(again, json!({}));
    let edit = tool_event(
        &server,
        &project,
        "cc-file-1",
        "Edit",
        json!({"file_path": "src/billing/webhook.rs", "old_string": "a", "new_string": "b"}),
    );
    assert_eq!(edit, json!({}));

    // Why it spoke, then why it did not.
    let log = decisions(&server);
    let file_decisions: Vec<&Value> = log.iter().filter(|d| d["trigger"] == "file").collect();
    assert_eq!(file_decisions.len(), 3, "{log:?}");
    assert_eq!(file_decisions[0]["outcome"], "injected");
    assert_eq!(
        file_decisions[0]["injected"],
        json!(["billing-webhook-raw-body"])
    );
    assert_eq!(file_decisions[1]["outcome"], "all_seen");
    assert_eq!(file_decisions[2]["tool"], "Edit");
    let lines = std::fs::read_to_string(server.storage.join("recall.jsonl")).expect("recall.jsonl");
    assert!(lines.lines().count() >= 3);
}

#[test]
fn an_edit_and_a_shell_read_bring_back_what_names_the_file() {
    let server = Server::fresh();
    let project = project_with(
        &server,
        "api",
        &[("src/auth/jwt.rs", "// jwt"), ("config/app.toml", "x = 1")],
    );
    start_session(&server, &project, "cc-file-2");
    // Written after the preload: not yet seen by this session.
    put_node(
        &server,
        &project,
        "auth-jwt-ttl",
        "Access JWTs live 15 minutes",
        &["./src/auth/jwt.rs"],
    );
    put_node(
        &server,
        &project,
        "config-toml-reload",
        "app.toml is read once at start; restart after edits",
        &["config/app.toml"],
    );

    let edit = tool_event(
        &server,
        &project,
        "cc-file-2",
        "Edit",
        json!({"file_path": project.join("src/auth/jwt.rs"), "old_string": "a", "new_string": "b"}),
    );
    assert!(
        context(&edit).is_some_and(|t| t.contains("auth-jwt-ttl")),
        "{edit}"
    );
    let bash = tool_event(
        &server,
        &project,
        "cc-file-2",
        "Bash",
        json!({"command": "cat config/app.toml | head -5"}),
    );
    assert!(
        context(&bash).is_some_and(|t| t.contains("config-toml-reload")),
        "{bash}"
    );
    // A command that writes is not a read.
    put_node(
        &server,
        &project,
        "config-toml-owner",
        "Ops owns app.toml",
        &["config/app.toml"],
    );
    let sed = tool_event(
        &server,
        &project,
        "cc-file-2",
        "Bash",
        json!({"command": "sed -i 's/1/2/' config/app.toml"}),
    );
    // No file recall; what the reply says is the person's new node on a file this
    // session read (another hand's write that bears on its work), once.
    let said = context(&sed).unwrap_or_default();
    assert!(!said.contains("KG recall — memory about"), "{sed}");
    assert!(
        said.starts_with("Meanwhile others wrote to this memory")
            && said.contains("- config-toml-owner (new): Ops owns app.toml"),
        "{sed}"
    );
    let again = tool_event(
        &server,
        &project,
        "cc-file-2",
        "Bash",
        json!({"command": "sed -i 's/2/3/' config/app.toml"}),
    );
    assert_eq!(again, json!({}));
}

#[test]
fn file_recall_is_throttled_per_session() {
    let server = Server::fresh();
    let files: Vec<(String, String)> = (0..5)
        .map(|i| (format!("src/m{i}.rs"), String::new()))
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let project = project_with(&server, "many", &borrowed);
    start_session(&server, &project, "cc-file-3");
    for i in 0..5 {
        put_node(
            &server,
            &project,
            &format!("module-{i}-rule"),
            &format!("Module {i} has a rule"),
            &[&format!("src/m{i}.rs")],
        );
    }
    let spoke: Vec<bool> = (0..5)
        .map(|i| {
            let answer = tool_event(
                &server,
                &project,
                "cc-file-3",
                "Read",
                json!({"file_path": format!("src/m{i}.rs")}),
            );
            context(&answer).is_some()
        })
        .collect();
    assert_eq!(spoke, [true, true, true, false, false]);
    let log = decisions(&server);
    assert_eq!(log.last().expect("a decision")["outcome"], "throttled");
}

#[test]
fn bad_tool_payloads_are_silent() {
    let server = Server::fresh();
    let project = project_with(&server, "odd", &[("a.txt", "x")]);
    start_session(&server, &project, "cc-file-4");
    put_node(
        &server,
        &project,
        "odd-dir",
        "A folder named in touches",
        &["src/", "/dev/zero"],
    );
    let huge = "x".repeat(2 << 20);
    for input in [
        json!({"file_path": "/dev/zero"}),
        json!({"file_path": huge}),
        json!({"file_path": "../../../../etc/passwd"}),
        json!({"file_path": 42}),
        json!("not an object"),
        json!({"command": format!("cat {huge}")}),
    ] {
        for tool in ["Read", "Bash"] {
            let answer = tool_event(&server, &project, "cc-file-4", tool, input.clone());
            assert_eq!(
                answer,
                json!({}),
                "{tool} {}",
                input.to_string().chars().take(300).collect::<String>()
            );
        }
    }
    // A FIFO named by a shell read: never opened, never waited on.
    #[cfg(unix)]
    {
        let fifo = project.join("pipe");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
        // SAFETY: a valid path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let answer = tool_event(
            &server,
            &project,
            "cc-file-4",
            "Bash",
            json!({"command": "cat pipe"}),
        );
        assert_eq!(answer, json!({}));
    }
}

#[test]
fn a_new_node_that_repeats_one_is_saved_and_names_it() {
    let mut server = Server::fresh();
    let project = project_with(&server, "cache", &[]);
    let sid = start_session(&server, &project, "cc-dup-1");
    let existing = [
        (
            "cache-invalidation-rule",
            "Cache entries expire after ten minutes and are cleared on deploy",
        ),
        (
            "deploy-pipeline",
            "Deploys run through GitHub Actions, then an ECS rolling update",
        ),
        (
            "db-pool-size",
            "PgBouncer pool is 40 connections per service",
        ),
        (
            "auth-jwt-ttl",
            "Access JWTs live 15 minutes, refresh tokens 30 days",
        ),
        (
            "billing-retries",
            "Stripe calls retry three times with idempotency keys",
        ),
        ("search-index", "Meilisearch reindexes tickets nightly"),
        (
            "email-bounces",
            "Postmark bounces mark the contact as unreachable",
        ),
        ("ws-idle", "The ALB closes idle WebSockets after 60 seconds"),
        (
            "s3-attachments",
            "Attachments go to S3 with presigned URLs valid 5 minutes",
        ),
        (
            "otel-sampling",
            "Traces are sampled at 10 percent in production",
        ),
        (
            "queue-visibility",
            "Jobs in the Postgres queue become visible again after 5 minutes",
        ),
    ];
    for (id, gist) in existing {
        put_node(&server, &project, id, gist, &[]);
    }
    let put = |server: &mut Server, id: &str, gist: &str| {
        let (text, is_error) = server.call(
            "kg_put_node",
            &json!({"session_id": sid, "level": "project", "id": id, "gist": gist}),
        );
        assert!(!is_error, "{text}");
        text
    };
    let text = put(
        &mut server,
        "cache-expiry-deploy",
        "Cache entries expire after ten minutes; a deploy clears them",
    );
    assert!(
        text.starts_with("Node 'cache-expiry-deploy' saved to project graph"),
        "{text}"
    );
    assert!(
        text.contains("Possible duplicate: 'cache-invalidation-rule' already says"),
        "{text}"
    );
    // Never blocking: the node is there.
    let (status, _) = server.json(
        "GET",
        &format!(
            "/api/nodes/project/cache-expiry-deploy?project_path={}",
            project.display()
        ),
        None,
    );
    assert_eq!(status, 200);
    // An update of it is not a creation: no nudge again.
    let again = put(
        &mut server,
        "cache-expiry-deploy",
        "Cache entries expire after ten minutes; deploys clear them",
    );
    assert!(!again.contains("Possible duplicate"), "{again}");
    // A look-alike id (a capital I for the l, another case).
    let text = put(&mut server, "Ws-idIe", "Idle sockets");
    assert!(
        text.contains("Look-alike id: 'Ws-idIe' differs from the existing 'ws-idle'"),
        "{text}"
    );
    // A new topic says nothing.
    let text = put(
        &mut server,
        "ui-dark-mode",
        "The web app follows the system's dark mode setting",
    );
    assert!(
        !text.contains("duplicate") && !text.contains("Look-alike"),
        "{text}"
    );
}

#[test]
fn a_session_in_a_git_worktree_gets_the_memory_of_its_copy_of_a_file() {
    let server = Server::fresh();
    let project = project_with(&server, "radio", &[("src/spi.c", "int spi;")]);
    crate::projects::git(&project, &["init", "-q"]);
    crate::projects::git(&project, &["add", "."]);
    crate::projects::git(&project, &["commit", "-qm", "spi"]);
    let worktree = project.with_file_name("radio-feature");
    crate::projects::git(
        &project,
        &["worktree", "add", "-q", &worktree.to_string_lossy()],
    );
    let worktree = std::fs::canonicalize(&worktree).expect("worktree");
    put_node(
        &server,
        &project,
        "spi-clock-order",
        "Enable the SPI clock before touching its registers",
        &["src/spi.c"],
    );
    let (status, body) = server.json(
        "POST",
        "/api/view/step",
        Some(&json!({"level": "project", "project_path": project,
                     "actions": [{"kind": "archive", "id": "spi-clock-order"}]})),
    );
    assert_eq!(status, 200, "{body}");
    start_session(&server, &worktree, "cc-worktree-1");
    let answer = tool_event(
        &server,
        &worktree,
        "cc-worktree-1",
        "Read",
        json!({"file_path": worktree.join("src/spi.c")}),
    );
    let text = context(&answer).expect("file recall in the worktree");
    assert!(
        text.contains("- [project] spi-clock-order: Enable the SPI clock"),
        "{text}"
    );
}
