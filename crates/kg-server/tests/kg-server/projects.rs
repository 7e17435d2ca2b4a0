//! A session started anywhere inside a project uses that project's graph: from a
//! subfolder, from a linked git worktree (made with the real `git worktree add`), with
//! legacy session and path-map records; an ambiguous folder is named once at session
//! start; hostile `.git` entries never stall it. The real binary, its real hook
//! couriers and real git.

use crate::hooks::{context_of, env_for, run};
use crate::server::{Server, temp_home};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Run real git in `dir`, with an identity and no user or system configuration.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=KG Test",
            "-c",
            "user.email=kg@test.invalid",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository at `dir` with one commit.
fn repo(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).expect("repo folder");
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").expect("file");
    git(dir, &["init", "--quiet"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "--quiet", "-m", "first"]);
}

fn mkdir(path: &Path) -> PathBuf {
    std::fs::create_dir_all(path).expect("mkdir");
    path.to_path_buf()
}

/// What the SessionStart hook said for a session in `cwd`.
struct Started {
    sid: String,
    context: String,
    notice: String,
}

fn start_in(server: &Server, cwd: &Path, claude: &str, source: &str) -> Started {
    let payload = json!({"session_id": claude, "transcript_path": "", "cwd": cwd,
                         "hook_event_name": "SessionStart", "source": source});
    let (out, code, took) = run(
        &["hook", "session-start"],
        &payload.to_string(),
        &env_for(server),
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        took < Duration::from_secs(20),
        "session start took {took:?}"
    );
    let v: Value = serde_json::from_str(out.trim()).expect("hook JSON");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context")
        .to_string();
    let sid = context
        .split("session_id: ")
        .nth(1)
        .map(|s| s[..8].to_string())
        .expect("session id");
    Started {
        sid,
        context,
        notice: v["systemMessage"].as_str().unwrap_or_default().to_string(),
    }
}

fn start(server: &Server, cwd: &Path, claude: &str) -> Started {
    start_in(server, cwd, claude, "startup")
}

fn put(server: &mut Server, sid: &str, id: &str, gist: &str) {
    let (text, is_error) = server.call(
        "kg_put_node",
        &json!({"session_id": sid, "level": "project", "id": id, "gist": gist}),
    );
    assert!(!is_error, "{text}");
}

/// The project folder a session is bound to, as the server reports it.
fn project_of_session(server: &Server, sid: &str) -> String {
    let (status, stats) = server.json("GET", &format!("/api/sessions/{sid}/stats"), None);
    assert_eq!(status, 200, "{stats}");
    stats["project_path"]
        .as_str()
        .expect("a project")
        .to_string()
}

/// The node ids a project graph file holds (empty when there is no such graph).
fn graph_ids(server: &Server, slug: &str) -> Vec<String> {
    let file = server
        .storage
        .join("projects")
        .join(slug)
        .join("graph.json");
    let Ok(bytes) = std::fs::read(&file) else {
        return Vec::new();
    };
    let graph: Value = serde_json::from_slice(&bytes).expect("graph file");
    graph["nodes"]
        .as_object()
        .map(|nodes| nodes.keys().cloned().collect())
        .unwrap_or_default()
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn a_session_in_a_subfolder_reads_and_writes_the_projects_graph() {
    let mut server = Server::fresh();
    let shop = mkdir(&server.home.join("shop"));
    let deep = mkdir(&shop.join("src/billing"));
    let first = start(&server, &shop, "cc-shop-root");
    put(
        &mut server,
        &first.sid,
        "checkout-totals",
        "Checkout totals are computed in whole cents",
    );

    // A session started two folders down preloads the project's graph.
    let sub = start(&server, &deep, "cc-shop-sub");
    assert!(sub.context.contains("checkout-totals"), "{}", sub.context);
    assert!(
        !sub.context.contains("Project memory:"),
        "nothing ambiguous"
    );
    assert_eq!(project_of_session(&server, &sub.sid), path_text(&shop));
    // What it writes lands in the project's graph, and no graph is made for the subfolder.
    put(
        &mut server,
        &sub.sid,
        "tax-rounding",
        "Tax is rounded half-even per line item",
    );
    assert_eq!(
        graph_ids(&server, "shop"),
        ["checkout-totals", "tax-rounding"]
    );
    assert!(!server.storage.join("projects/billing").exists());

    // Its prompt hook recalls what another session of the project writes later.
    server.call("kg_read", &json!({"session_id": sub.sid}));
    put(
        &mut server,
        &first.sid,
        "refund-window",
        "Refunds are accepted for 30 days after delivery",
    );
    let prompt = json!({"session_id": "cc-shop-sub", "transcript_path": "", "cwd": deep,
                        "hook_event_name": "UserPromptSubmit",
                        "prompt": "how long is the refund window after delivery?"});
    let (out, code, _) = run(
        &["hook", "prompt-submit"],
        &prompt.to_string(),
        &env_for(&server),
    );
    assert_eq!(code, 0);
    assert!(context_of(&out).contains("refund-window"), "{out}");
    // A hook that names no Claude session finds the newest session of the project.
    let (status, state) = server.json(
        "GET",
        &format!(
            "/api/session_state?project_path={}",
            kg_client::encode(&path_text(&deep))
        ),
        None,
    );
    assert_eq!(
        (status, state["found"].as_bool()),
        (200, Some(true)),
        "{state}"
    );
    assert_eq!(state["session_id"], sub.sid.as_str());

    // The server says which graph a folder's sessions use, changing nothing.
    let (status, found) = server.json(
        "GET",
        &format!(
            "/api/project_of?cwd={}",
            kg_client::encode(&path_text(&deep))
        ),
        None,
    );
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["root"], path_text(&shop));
    assert_eq!(found["graph"], "shop");
    assert_eq!(found["has_graph"], true);
    assert_eq!(found["alternatives"], json!([]));
    assert_eq!(found["note"], Value::Null);

    // Without any graph, the git top level is the project: a new graph for the repository.
    let tool = server.home.join("tool");
    repo(&tool);
    let cmd = mkdir(&tool.join("src/cmd"));
    let in_repo = start(&server, &cmd, "cc-tool");
    assert_eq!(project_of_session(&server, &in_repo.sid), path_text(&tool));
    // Without git either, the folder itself is a new project.
    let loose = mkdir(&server.home.join("notes/2026"));
    let alone = start(&server, &loose, "cc-loose");
    assert_eq!(project_of_session(&server, &alone.sid), path_text(&loose));
}

#[test]
fn a_linked_worktree_session_uses_the_main_checkouts_graph() {
    let mut server = Server::fresh();
    let app = server.home.join("app");
    repo(&app);
    let main = start(&server, &app, "cc-app-main");
    put(
        &mut server,
        &main.sid,
        "app-entry-point",
        "The app starts in src/main.rs and reads config first",
    );

    git(
        &app,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "feature",
            "../app-feature",
        ],
    );
    let feature = server.home.join("app-feature");
    let wt = start(&server, &feature.join("src"), "cc-app-wt");
    assert!(wt.context.contains("app-entry-point"), "{}", wt.context);
    assert_eq!(project_of_session(&server, &wt.sid), path_text(&app));
    put(
        &mut server,
        &wt.sid,
        "feature-flags",
        "Feature flags are read from FEATURES at start",
    );
    assert_eq!(
        graph_ids(&server, "app"),
        ["app-entry-point", "feature-flags"]
    );
    assert!(!server.storage.join("projects/app-feature").exists());

    // A worktree of a bare repository has no main checkout: a project of its own.
    git(
        &server.home,
        &["clone", "--quiet", "--bare", "app", "lib.git"],
    );
    git(
        &server.home.join("lib.git"),
        &["worktree", "add", "--quiet", "../lib-wt", "main"],
    );
    let lib_wt = server.home.join("lib-wt");
    let bare = start(&server, &lib_wt, "cc-lib-wt");
    assert_eq!(project_of_session(&server, &bare.sid), path_text(&lib_wt));

    // A submodule is not mapped to its superproject; as a repository inside a project
    // that has a graph, it is named when a session starts in it.
    let lib = server.home.join("lib-src");
    repo(&lib);
    git(
        &app,
        &["submodule", "add", "--quiet", "../lib-src", "vendor/lib"],
    );
    let sub = start(&server, &app.join("vendor/lib/src"), "cc-app-sub");
    assert_eq!(project_of_session(&server, &sub.sid), path_text(&app));
    let vendored = path_text(&app.join("vendor/lib"));
    assert!(
        sub.context.contains("Project memory:") && sub.context.contains(&vendored),
        "{}",
        sub.context
    );
}

#[test]
fn an_ambiguous_folder_is_named_once_at_session_start() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let mono = home.join("mono");
    repo(&mono);
    let api = mkdir(&mono.join("packages/api/src"));
    let api_root = mono.join("packages/api");
    // A graph made for the package before projects were found from subfolders.
    std::fs::create_dir_all(storage.join("projects/api")).expect("storage");
    std::fs::write(
        storage.join("projects/api/graph.json"),
        json!({"nodes": {"api-auth": {"id": "api-auth", "gist": "The API checks tokens in middleware"}},
               "edges": {}, "_meta": {"project_path": path_text(&api_root)}})
        .to_string(),
    )
    .expect("graph");
    let mut server = Server::start_in(&home, &storage, None, &[]);

    let first = start(&server, &api, "cc-amb-1");
    assert!(first.context.contains("api-auth"), "{}", first.context);
    assert_eq!(
        project_of_session(&server, &first.sid),
        path_text(&api_root)
    );
    let note = first
        .context
        .split("Project memory: ")
        .nth(1)
        .expect("the start says which graph it chose");
    assert!(
        note.contains(&path_text(&api_root))
            && note.contains(&format!(
                "{} is the top of its git repository",
                path_text(&mono)
            )),
        "{note}"
    );
    assert!(
        first.notice.contains(&path_text(&api_root)) && first.notice.contains(&path_text(&mono)),
        "the person is told too: {}",
        first.notice
    );
    assert_eq!(first.context.matches("Project memory:").count(), 1);

    // Said once: not on prompts, not when the session continues after a compaction.
    server.call("kg_read", &json!({"session_id": first.sid}));
    let prompt = json!({"session_id": "cc-amb-1", "transcript_path": "", "cwd": api,
                        "hook_event_name": "UserPromptSubmit", "prompt": "where are tokens checked?"});
    let (out, _, _) = run(
        &["hook", "prompt-submit"],
        &prompt.to_string(),
        &env_for(&server),
    );
    assert!(!out.contains("Project memory"), "{out}");
    let again = start_in(&server, &api, "cc-amb-1", "compact");
    assert_eq!(again.sid, first.sid);
    assert!(!again.context.contains("Project memory:") && !again.notice.contains("Project memory"));

    // A session started by kg_read(cwd) is told as well.
    let (text, _) = server.call("kg_read", &json!({"cwd": api}));
    assert_eq!(text.matches("Project memory:").count(), 1, "{text}");
}

#[test]
fn legacy_session_and_path_map_records_keep_working() {
    const T: f64 = 1_795_176_000.0;
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let shop = mkdir(&home.join("shop"));
    let src = mkdir(&shop.join("src"));
    // This machine's map files the project under a derived storage name.
    std::fs::create_dir_all(storage.join("projects/shop-1a2b3c4d")).expect("storage");
    std::fs::write(
        storage.join("project-paths.json"),
        json!({path_text(&shop): "shop-1a2b3c4d"}).to_string(),
    )
    .expect("map");
    std::fs::write(
        storage.join("projects/shop-1a2b3c4d/graph.json"),
        json!({"nodes": {"price-cache": {"id": "price-cache", "gist": "Prices are cached for ten minutes"}},
               "edges": {}, "_meta": {"project_path": path_text(&shop)}})
        .to_string(),
    )
    .expect("graph");
    // A session registered for the subfolder itself, before the change.
    std::fs::write(
        storage.join("sessions.json"),
        json!({"0badf00d": {"project_path": path_text(&src), "start_ts": T, "last_activity": T}})
            .to_string(),
    )
    .expect("sessions");
    let server = Server::start_in(&home, &storage, Some(T + 60.0), &[]);

    let (status, state) = server.json(
        "GET",
        &format!(
            "/api/session_state?project_path={}",
            kg_client::encode(&path_text(&src))
        ),
        None,
    );
    assert_eq!(
        (status, state["session_id"].as_str()),
        (200, Some("0badf00d")),
        "{state}"
    );
    let fresh = start(&server, &src, "cc-legacy");
    assert!(fresh.context.contains("price-cache"), "{}", fresh.context);
    assert_eq!(project_of_session(&server, &fresh.sid), path_text(&shop));
    assert!(!storage.join("projects/src").exists() && !storage.join("projects/shop").exists());
}

#[test]
fn the_reference_policy_keeps_the_folder_as_the_project() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let mut server = Server::start_in(&home, &storage, None, &[("KG_POLICY", "reference")]);
    let proj = mkdir(&home.join("proj"));
    let src = mkdir(&proj.join("src"));
    let root = start(&server, &proj, "cc-ref-root");
    put(
        &mut server,
        &root.sid,
        "ref-node",
        "A node of the project folder",
    );
    let sub = start(&server, &src, "cc-ref-sub");
    assert_eq!(project_of_session(&server, &sub.sid), path_text(&src));
    assert!(!sub.context.contains("ref-node"));
}

#[cfg(unix)]
#[test]
fn hostile_dot_git_entries_never_stall_a_session_start() {
    let server = Server::fresh();
    let mkfifo = |p: &Path| {
        let c = std::ffi::CString::new(p.to_string_lossy().as_bytes()).expect("path");
        // SAFETY: a valid path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    };
    let fifo = mkdir(&server.home.join("fifo-repo"));
    mkfifo(&fifo.join(".git"));
    let looped = mkdir(&server.home.join("loop-repo"));
    std::os::unix::fs::symlink(looped.join(".git"), looped.join(".git")).expect("loop");
    let device = mkdir(&server.home.join("device-repo"));
    std::os::unix::fs::symlink("/dev/zero", device.join(".git")).expect("device");
    let huge = mkdir(&server.home.join("huge-repo"));
    let file = std::fs::File::create(huge.join(".git")).expect("create");
    file.set_len(1 << 40).expect("a sparse terabyte");
    let pointer = mkdir(&server.home.join("pointer-repo"));
    std::fs::write(pointer.join(".git"), "gitdir: /dev/zero\n").expect("pointer");
    for dir in [&fifo, &looped, &device, &huge, &pointer] {
        let inside = mkdir(&dir.join("src"));
        let started = Instant::now();
        let name = dir.file_name().expect("name").to_string_lossy();
        let s = start(&server, &inside, &format!("cc-{name}"));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(
            project_of_session(&server, &s.sid),
            path_text(dir),
            "{}",
            dir.display()
        );
    }
}
