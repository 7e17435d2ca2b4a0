//! Stale touches (issue 37, item 4): DEBT counts touches whose file is gone, the
//! maintenance survey lists them with the path git says each file was renamed to (from
//! a history this test builds with real git), and the rename is accepted over REST (a
//! `retouch` step) and through the agent's `kg_fix_touch` tool. Bad touches (a folder,
//! a device, a path outside the project, a symlink loop, non-UTF-8 names in git) are
//! counted sensibly and never stall a request.

use crate::hooks::env_for;
use crate::hooks::run;
use crate::server::{Server, temp_home};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=KG Test",
            "-c",
            "user.email=kg@test.invalid",
        ])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(root: &Path, rel: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, format!("// {rel}\n")).expect("write");
}

/// A session of the project at `root`, started by the real SessionStart hook.
fn session(server: &Server, root: &Path, claude: &str) -> String {
    let payload = json!({"session_id": claude, "transcript_path": "", "cwd": root,
                         "hook_event_name": "SessionStart", "source": "startup"});
    let (out, code, _) = run(
        &["hook", "session-start"],
        &payload.to_string(),
        &env_for(server),
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("hook JSON");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context");
    context
        .split("session_id: ")
        .nth(1)
        .map(|s| s[..8].to_string())
        .expect("sid")
}

fn put(server: &mut Server, sid: &str, id: &str, touches: &[&str]) {
    let (text, is_error) = server.call(
        "kg_put_node",
        &json!({"session_id": sid, "level": "project", "id": id,
                "gist": format!("What {id} is about"), "touches": touches}),
    );
    assert!(!is_error, "{text}");
}

/// The project's row of the maintenance survey.
fn survey_row(server: &Server, graph: &str) -> Value {
    let started = Instant::now();
    let (status, survey) = server.json("GET", "/api/maintenance_debt", None);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(status, 200, "{survey}");
    survey["graphs"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["graph"] == graph).cloned())
        .unwrap_or_else(|| panic!("no row for {graph}: {survey}"))
}

/// The touches a node of the project graph file holds now.
fn touches_on_disk(server: &Server, graph: &str, id: &str) -> Vec<String> {
    let file = server
        .storage
        .join("projects")
        .join(graph)
        .join("graph.json");
    let graph: Value = serde_json::from_slice(&std::fs::read(file).expect("graph")).expect("json");
    graph["nodes"][id]["touches"]
        .as_array()
        .expect("touches")
        .iter()
        .map(|t| t.as_str().expect("text").to_string())
        .collect()
}

/// `(touch, renamed_to)` of one node in a survey row's stale touches.
fn listed(row: &Value, node: &str) -> Vec<(String, Value)> {
    row["stale_touches"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["node"] == node)
        .map(|s| {
            (
                s["touch"].as_str().unwrap_or_default().to_string(),
                s["renamed_to"].clone(),
            )
        })
        .collect()
}

#[test]
fn stale_touches_are_counted_listed_with_gits_renames_and_fixed_over_rest_and_mcp() {
    let mut server = Server::fresh();
    let shop = server.home.join("shop");
    for rel in [
        "src/a.rs",
        "lib/util.rs",
        "docs/guide.md",
        "src/naïve.rs",
        "src/keep.rs",
    ] {
        write(&shop, rel);
    }
    git(&shop, &["init", "--quiet"]);
    git(&shop, &["add", "-A"]);
    git(&shop, &["commit", "--quiet", "-m", "first"]);
    let sid = session(&server, &shop, "cc-stale-1");
    put(
        &mut server,
        &sid,
        "parser-entry",
        &["src/a.rs:12-40 (parser)", "docs/guide.md"],
    );
    put(
        &mut server,
        &sid,
        "util-helpers",
        &["lib/util.rs#top", "the helper module"],
    );
    put(&mut server, &sid, "unicode-file", &["src/naïve.rs"]);
    put(
        &mut server,
        &sid,
        "kept",
        &["src/keep.rs", "src", "/dev/null"],
    );

    let row = survey_row(&server, "shop");
    assert_eq!(
        row["debt"].get("dangling_touches"),
        None,
        "nothing stale yet: {row}"
    );
    assert_eq!(row.get("stale_touches"), None);

    // The history: two renames (one of them a chain), a deletion, a non-ASCII rename.
    std::fs::create_dir_all(shop.join("src/parse")).expect("mkdir");
    git(&shop, &["mv", "src/a.rs", "src/parse/a.rs"]);
    git(&shop, &["mv", "lib/util.rs", "lib/helpers.rs"]);
    git(&shop, &["mv", "src/naïve.rs", "src/ñandú.rs"]);
    git(&shop, &["rm", "--quiet", "docs/guide.md"]);
    git(&shop, &["commit", "--quiet", "-m", "move things"]);
    git(&shop, &["mv", "lib/helpers.rs", "lib/help.rs"]);
    git(&shop, &["commit", "--quiet", "-m", "shorter"]);

    // DEBT counts them, in the survey and in what an agent reads.
    let row = survey_row(&server, "shop");
    assert_eq!(row["debt"]["dangling_touches"], 4, "{row}");
    assert_eq!(row["debt"]["dangling_nodes"], 3, "{row}");
    assert_eq!(
        listed(&row, "parser-entry"),
        [
            (
                "src/a.rs:12-40 (parser)".to_string(),
                json!("src/parse/a.rs")
            ),
            ("docs/guide.md".to_string(), Value::Null),
        ]
    );
    assert_eq!(
        listed(&row, "util-helpers"),
        [("lib/util.rs#top".to_string(), json!("lib/help.rs"))]
    );
    assert_eq!(
        listed(&row, "unicode-file"),
        [("src/naïve.rs".to_string(), json!("src/ñandú.rs"))]
    );
    assert!(
        listed(&row, "kept").is_empty(),
        "a folder and a device are there: {row}"
    );
    let (read, _) = server.call("kg_read", &json!({"session_id": sid}));
    assert!(read.contains("4 stale touch(es)"), "{read}");

    // The view's level lists them with git's path.
    let level = format!(
        "/api/view/level?level=project&project_path={}",
        kg_client::encode(&shop.to_string_lossy())
    );
    let (status, data) = server.json("GET", &level, None);
    assert_eq!(status, 200);
    let item = data["debt_items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|i| {
                    i["kind"] == "stale_touch"
                        && i["id"] == "parser-entry"
                        && i["file"] == "src/a.rs"
                })
                .cloned()
        })
        .unwrap_or_else(|| panic!("{}", data["debt_items"]));
    assert_eq!(item["renamed_to"], "src/parse/a.rs");
    assert_eq!(item["touch"], "src/a.rs:12-40 (parser)");
    assert_eq!(data["debt"]["dangling_touches"], 4);

    // A person accepts one over REST: the view's step, its range and symbol kept.
    let (status, answer) = server.json(
        "POST",
        "/api/view/step",
        Some(&json!({"level": "project", "project_path": shop, "actions": [
            {"kind": "retouch", "id": "parser-entry", "from": "src/a.rs:12-40 (parser)", "to": "src/parse/a.rs"}
        ]})),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["updated"], json!(["parser-entry"]));
    assert_eq!(
        touches_on_disk(&server, "shop", "parser-entry"),
        ["src/parse/a.rs:12-40 (parser)", "docs/guide.md"]
    );
    // A touch that changed meanwhile is refused, naming why; nothing changes.
    let (status, refused) = server.json(
        "POST",
        "/api/view/step",
        Some(&json!({"level": "project", "project_path": shop, "actions": [
            {"kind": "retouch", "id": "parser-entry", "from": "src/a.rs:12-40 (parser)", "to": "x.rs"}
        ]})),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(refused.to_string().contains("has no touch"), "{refused}");

    // An agent lists and accepts through its tool, taking git's path.
    let (list, is_error) = server.call("kg_fix_touch", &json!({"session_id": sid}));
    assert!(!is_error, "{list}");
    assert!(
        list.contains("util-helpers: \"lib/util.rs#top\" — git says the file became lib/help.rs")
            && list.contains("parser-entry: \"docs/guide.md\" — git knows no new name for it"),
        "{list}"
    );
    let (fixed, is_error) = server.call(
        "kg_fix_touch",
        &json!({"session_id": sid, "id": "util-helpers", "touch": "lib/util.rs#top"}),
    );
    assert!(!is_error, "{fixed}");
    assert!(fixed.contains("\"lib/help.rs#top\""), "{fixed}");
    assert_eq!(
        touches_on_disk(&server, "shop", "util-helpers"),
        ["lib/help.rs#top", "the helper module"]
    );
    // Where git knows nothing, it says so; with `to` the agent gives the path itself.
    let (error, is_error) = server.call(
        "kg_fix_touch",
        &json!({"session_id": sid, "id": "parser-entry", "touch": "docs/guide.md"}),
    );
    assert!(
        is_error && error.contains("Git records no rename"),
        "{error}"
    );
    write(&shop, "docs/manual.md");
    let (fixed, is_error) = server.call(
        "kg_fix_touch",
        &json!({"session_id": sid, "id": "parser-entry", "touch": "docs/guide.md", "to": "docs/manual.md"}),
    );
    assert!(!is_error, "{fixed}");
    let (error, is_error) = server.call("kg_fix_touch", &json!({"session_id": sid, "id": "kept"}));
    assert!(
        is_error && error.contains("id and touch together"),
        "{error}"
    );

    // One left: the non-ASCII rename, which the survey still offers.
    let row = survey_row(&server, "shop");
    assert_eq!(row["debt"]["dangling_touches"], 1, "{row}");
    assert_eq!(
        listed(&row, "unicode-file"),
        [("src/naïve.rs".to_string(), json!("src/ñandú.rs"))]
    );
}

#[cfg(unix)]
#[test]
fn bad_touches_are_counted_sensibly_and_never_stall() {
    let mut server = Server::fresh();
    let proj = server.home.join("odd");
    write(&proj, "src/main.rs");
    std::os::unix::fs::symlink(proj.join("src/loop-a.rs"), proj.join("src/loop-b.rs"))
        .expect("link");
    std::os::unix::fs::symlink(proj.join("src/loop-b.rs"), proj.join("src/loop-a.rs"))
        .expect("link");
    let fifo = proj.join("src/pipe.rs");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: a valid path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // A git history that renames a file whose name is not UTF-8.
    git(&proj, &["init", "--quiet"]);
    {
        use std::os::unix::ffi::OsStrExt;
        let bad = proj.join(std::ffi::OsStr::from_bytes(b"src/bad-\xff.rs"));
        std::fs::write(&bad, "x").expect("non-UTF-8 name");
    }
    git(&proj, &["add", "-A"]);
    git(&proj, &["commit", "--quiet", "-m", "first"]);
    git(&proj, &["mv", "src/main.rs", "src/app.rs"]);
    {
        use std::os::unix::ffi::OsStrExt;
        let from = std::ffi::OsStr::from_bytes(b"src/bad-\xff.rs");
        let out = Command::new("git")
            .arg("mv")
            .arg(from)
            .arg("src/bad.rs")
            .current_dir(&proj)
            .output()
            .expect("git mv");
        assert!(out.status.success());
    }
    git(&proj, &["commit", "--quiet", "-m", "rename"]);
    let sid = session(&server, &proj, "cc-odd");
    put(
        &mut server,
        &sid,
        "odd-touches",
        &[
            "src",               // a folder: there
            "/dev/zero",         // a device: there, never opened
            "src/pipe.rs",       // a FIFO: there, never opened
            "src/loop-a.rs",     // a symlink loop: names no file
            "../elsewhere/x.rs", // outside the project, missing
            "/nonexistent/kg-test/x.rs",
            "src/main.rs:1",       // renamed by git to src/app.rs
            "src/bad-\u{fffd}.rs", // how an agent would write the non-UTF-8 name
            "notes about main.rs", // prose
        ],
    );
    let started = Instant::now();
    let row = survey_row(&server, "odd");
    assert!(started.elapsed() < Duration::from_secs(10));
    let stale: Vec<(String, Value)> = listed(&row, "odd-touches");
    assert_eq!(
        stale,
        [
            ("src/loop-a.rs".to_string(), Value::Null),
            ("../elsewhere/x.rs".to_string(), Value::Null),
            ("/nonexistent/kg-test/x.rs".to_string(), Value::Null),
            ("src/main.rs:1".to_string(), json!("src/app.rs")),
            ("src/bad-\u{fffd}.rs".to_string(), Value::Null),
        ],
        "{row}"
    );
    assert_eq!(row["debt"]["dangling_touches"], 5);
    assert_eq!(row["debt"]["dangling_nodes"], 1);
}

#[test]
fn the_reference_policy_has_no_stale_touches_and_nine_tools() {
    let (_dir, home) = temp_home();
    let mut server = Server::start_in(
        &home,
        &home.join("storage"),
        None,
        &[("KG_POLICY", "reference")],
    );
    let proj = home.join("refproj");
    std::fs::create_dir_all(&proj).expect("mkdir");
    let sid = session(&server, &proj, "cc-ref-stale");
    put(&mut server, &sid, "gone-file", &["src/gone.rs"]);
    let row = survey_row(&server, "refproj");
    assert_eq!(row["debt"].get("dangling_touches"), None, "{row}");
    assert_eq!(row.get("stale_touches"), None);
    let (read, _) = server.call("kg_read", &json!({"session_id": sid}));
    assert!(!read.contains("stale touch"), "{read}");
    let (status, body) = server.rpc(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}));
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        v["result"]["tools"].as_array().map(Vec::len),
        Some(9),
        "{body}"
    );
    let (text, is_error) = server.call("kg_fix_touch", &json!({"session_id": sid}));
    assert!(is_error && text.contains("Unknown tool"), "{text}");
}
