//! The hook couriers and the installer, run as the real binary.

use crate::server::{Server, free_port, temp_home};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run `kg-memory <args>` with `stdin`, returning (stdout, exit code, duration).
pub(crate) fn run(args: &[&str], stdin: &str, env: &[(&str, String)]) -> (String, i32, Duration) {
    let started = Instant::now();
    let mut cmd = Command::new(kg_test_support::kg_memory_bin());
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env_remove("KG_HTTP_HOST")
        // Claude Code's configuration stays in the test's HOME.
        .env_remove("CLAUDE_CONFIG_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn kg-memory");
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes());
    let out = child.wait_with_output().expect("wait");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
        started.elapsed(),
    )
}

/// The `additionalContext` a hook printed.
pub(crate) fn context_of(out: &str) -> String {
    let v: Value = serde_json::from_str(out.trim()).expect("hook JSON");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext")
        .to_string()
}

pub(crate) fn env_for(server: &Server) -> Vec<(&'static str, String)> {
    vec![
        ("KG_HTTP_PORT", server.port.to_string()),
        ("HOME", server.home.to_string_lossy().into_owned()),
        (
            "KG_STORAGE_ROOT",
            server.storage.to_string_lossy().into_owned(),
        ),
    ]
}

#[test]
fn couriers_print_the_servers_answer() {
    let mut server = Server::fresh();
    let project = server.home.join("app");
    std::fs::create_dir_all(&project).expect("project");
    let cwd = project.to_string_lossy().into_owned();
    let env = env_for(&server);

    let start = json!({"session_id": "cc-hook-1", "transcript_path": "", "cwd": cwd,
                       "hook_event_name": "SessionStart", "source": "startup"});
    let (out, code, _) = run(&["hook", "session-start"], &start.to_string(), &env);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("hook JSON");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(context.starts_with("KG MEMORY PRELOADED"), "{context}");
    let sid = context
        .split("session_id: ")
        .nth(1)
        .map(|s| &s[..8])
        .expect("sid");
    assert!(
        v["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains(sid) && m.contains("preloaded"))
    );

    // The memory is empty, so the preload held all of it and said so: no full read is
    // owed, and a prompt gets no nudge to make one.
    assert!(context.contains("complete"), "{context}");
    let prompt = json!({"session_id": "cc-hook-1", "transcript_path": "", "cwd": cwd,
                        "hook_event_name": "UserPromptSubmit", "prompt": "how does the cache expire?"});
    let (out, code, _) = run(&["hook", "prompt-submit"], &prompt.to_string(), &env);
    assert_eq!(
        (out.as_str(), code),
        ("", 0),
        "no nudge after a complete preload"
    );

    // After it, a prompt about something the memory knows, with nothing new to
    // recall (the full read showed it), gets a pointer, then a reminder the server
    // chose for the session's state; a prompt about something it does not know gets
    // nothing.
    let (_, is_error) = server.call(
        "kg_put_node",
        &json!({"session_id": sid, "level": "project", "id": "cache-expiry",
                "gist": "The cache expires entries after five minutes"}),
    );
    assert!(!is_error);
    server.call("kg_read", &json!({"session_id": sid}));
    // The full read put the node in context: the prompt about it gets a pointer to
    // it, once; the next one a reminder.
    let (out, _, _) = run(&["hook", "prompt-submit"], &prompt.to_string(), &env);
    assert_eq!(
        context_of(&out),
        "KG recall — memory matching this prompt:\n- [project] cache-expiry (in context)"
    );
    let (out, _, _) = run(&["hook", "prompt-submit"], &prompt.to_string(), &env);
    let reminder = context_of(&out);
    assert!(
        kg_core::reminder_pool(None)
            .iter()
            .any(|r| r.text == reminder && r.fits == kg_core::ReminderFits::Always),
        "{reminder}"
    );
    let haiku = json!({"session_id": "cc-hook-1", "transcript_path": "", "cwd": cwd,
                       "hook_event_name": "UserPromptSubmit", "prompt": "write a haiku about autumn leaves"});
    let (out, code, _) = run(&["hook", "prompt-submit"], &haiku.to_string(), &env);
    assert_eq!(
        (out.as_str(), code),
        ("", 0),
        "nothing for an unrelated prompt"
    );

    // A first read of a file: nothing to say, nothing printed.
    let tool = json!({"session_id": "cc-hook-1", "cwd": cwd, "hook_event_name": "PostToolUse",
                      "tool_name": "Read", "tool_input": {"file_path": format!("{cwd}/src/a.rs")}});
    let (out, code, _) = run(&["hook", "post-tool"], &tool.to_string(), &env);
    assert_eq!((out.as_str(), code), ("", 0));
}

#[test]
fn couriers_stay_silent_and_quick_when_anything_fails() {
    let (_dir, home) = temp_home();
    let dead_port = free_port();
    let env = vec![
        ("KG_HTTP_PORT", dead_port.to_string()),
        ("HOME", home.to_string_lossy().into_owned()),
        (
            "KG_STORAGE_ROOT",
            home.join("storage").to_string_lossy().into_owned(),
        ),
    ];
    let prompt = json!({"session_id": "x", "cwd": "/", "prompt": "hello there friend"}).to_string();
    for event in ["prompt-submit", "post-tool"] {
        let (out, code, took) = run(&["hook", event], &prompt, &env);
        assert_eq!(
            (out.as_str(), code),
            ("", 0),
            "{event} with the server down"
        );
        assert!(took < Duration::from_millis(3500), "{event} took {took:?}");
    }
    let server = Server::fresh();
    for garbage in ["", "not json", "[1,2]", "{\"prompt\": 5}"] {
        for event in [
            "session-start",
            "prompt-submit",
            "post-tool",
            "no-such-event",
        ] {
            let (out, code, _) = run(&["hook", event], garbage, &env_for(&server));
            if event == "session-start" && garbage.starts_with('{') {
                // An object without cwd is a session in the hook's own folder (this
                // crate's, outside the test's HOME): the user graph, and why there is no
                // project memory.
                assert!(out.contains("No project memory in this session"), "{out}");
                assert_eq!(code, 0);
                continue;
            }
            assert_eq!((out.as_str(), code), ("", 0), "{event} with {garbage:?}");
        }
    }
}

#[test]
fn session_start_starts_a_server_when_none_answers() {
    let (_dir, home) = temp_home();
    let port = free_port();
    let storage = home.join("storage");
    let env = vec![
        ("KG_HTTP_PORT", port.to_string()),
        ("HOME", home.to_string_lossy().into_owned()),
        ("KG_STORAGE_ROOT", storage.to_string_lossy().into_owned()),
        ("KG_AUTOCOMMIT_INTERVAL", "0".to_string()),
    ];
    let start = json!({"session_id": "cc-1", "cwd": home.to_string_lossy(), "source": "startup"})
        .to_string();
    let (out, code, _) = run(&["hook", "session-start"], &start, &env);
    assert_eq!(code, 0);
    assert!(
        out.contains(&format!("http://127.0.0.1:{port}/health")),
        "{out}"
    );
    // The detached server comes up on the configured port; stop it again.
    let probe = Server::attach(port, &home);
    probe.stop_remote();
}

/// Hooks set up for one storage root, while a server of another root answers on their
/// port (the tray app on the default root, say): the session is told its memory is
/// offline and why, nothing is read from or written to the other memory, and no second
/// server is started; `kg-memory status` says the same and fails.
#[test]
fn hooks_for_another_storage_root_leave_the_server_on_their_port_alone() {
    let mut server = Server::fresh();
    let project = server.home.join("app");
    std::fs::create_dir_all(&project).expect("project");
    let elsewhere = server.home.join("other-storage");
    let mut env = env_for(&server);
    env.retain(|(k, _)| *k != "KG_STORAGE_ROOT");
    env.push(("KG_STORAGE_ROOT", elsewhere.to_string_lossy().into_owned()));
    let sessions = || {
        let (status, health) = server.json("GET", "/health", None);
        assert_eq!(status, 200);
        health["active_sessions"].as_u64().expect("sessions")
    };
    let before = sessions();

    let start =
        json!({"session_id": "cc-other", "cwd": project.to_string_lossy(), "source": "startup"})
            .to_string();
    let (out, code, _) = run(&["hook", "session-start"], &start, &env);
    assert_eq!(code, 0);
    assert!(
        out.contains("KG memory is offline for this session"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "serves the storage root {}",
            server.storage.canonicalize().expect("root").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("not {}", elsewhere.display())),
        "{out}"
    );
    let prompt = json!({"session_id": "cc-other", "cwd": project.to_string_lossy(), "prompt": "how do we deploy?"}).to_string();
    let (out, code, _) = run(&["hook", "prompt-submit"], &prompt, &env);
    assert_eq!((out.as_str(), code), ("", 0));
    assert_eq!(
        sessions(),
        before,
        "no session was opened on the other memory"
    );
    assert!(
        !elsewhere.exists(),
        "no server was started for the hooks' root"
    );

    let mut status = Command::new(kg_test_support::kg_memory_bin());
    status
        .arg("status")
        .env_remove("KG_HTTP_HOST")
        .env_remove("CLAUDE_CONFIG_DIR");
    for (k, v) in &env {
        status.env(k, v);
    }
    let out = status.output().expect("status");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("nothing serves that one"), "{said}");

    // Hooks that name no storage root of their own (the default one, as the plugin's
    // and an installer run without --storage wire them) take the server on their port.
    let (_other_dir, other_home) = temp_home();
    let plain = vec![
        ("KG_HTTP_PORT", server.port.to_string()),
        ("HOME", other_home.to_string_lossy().into_owned()),
    ];
    let (out, code, _) = run(&["hook", "session-start"], &start, &plain);
    assert_eq!(code, 0);
    assert!(out.contains("KG MEMORY PRELOADED"), "{out}");
    server.stop();
}

#[test]
fn install_dry_run_then_install_and_uninstall_round_trip() {
    let (_dir, home) = temp_home();
    let claude_json = "{\n  \"numStartups\": 7,\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n";
    std::fs::write(home.join(".claude.json"), claude_json).expect("write");
    std::fs::create_dir_all(home.join(".claude")).expect("mkdir");
    let settings = "{\"permissions\": {\"allow\": [\"Bash(ls)\"]}}";
    std::fs::write(home.join(".claude/settings.json"), settings).expect("write");
    let env = vec![
        ("HOME", home.to_string_lossy().into_owned()),
        ("KG_HTTP_PORT", "8765".to_string()),
    ];
    let (out, code, _) = run(&["install", "claude-code", "--dry-run"], "", &env);
    assert_eq!(code, 0, "{out}");
    // A diff: our entry added, next to its neighbours; the rest of the file not shown.
    assert!(
        out.contains("\n+    \"kg\": {\n")
            && out.contains("\"other\"")
            && !out.contains("numStartups"),
        "{out}"
    );
    assert!(out.contains("hook session-start"), "{out}");
    assert!(out.contains("dry run"), "{out}");
    assert_eq!(
        std::fs::read_to_string(home.join(".claude.json")).expect("read"),
        claude_json,
        "dry run writes nothing"
    );
    let (out, code, _) = run(&["install", "claude-code"], "", &env);
    assert_eq!(code, 0, "{out}");
    let installed: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude.json")).expect("read"))
            .expect("json");
    assert_eq!(
        installed["mcpServers"]["kg"],
        json!({"type": "http", "url": "http://127.0.0.1:8765/"})
    );
    let (out, code, _) = run(&["uninstall", "claude-code"], "", &env);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        std::fs::read_to_string(home.join(".claude.json")).expect("read"),
        claude_json
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/settings.json")).expect("read"),
        settings
    );
}

#[test]
fn under_the_reference_policy_the_hook_adds_a_reminder_at_random() {
    let (_dir, home) = temp_home();
    let storage = home.join("storage");
    let mut server = Server::start_in(&home, &storage, None, &[("KG_POLICY", "reference")]);
    let project = home.join("app");
    std::fs::create_dir_all(&project).expect("project");
    let cwd = project.to_string_lossy().into_owned();
    let env = env_for(&server);
    let start = json!({"session_id": "cc-ref-1", "transcript_path": "", "cwd": cwd,
                       "hook_event_name": "SessionStart", "source": "startup"});
    let (out, _, _) = run(&["hook", "session-start"], &start.to_string(), &env);
    let context = context_of(&out);
    let sid = &context.split("session_id: ").nth(1).expect("sid")[..8];
    server.call("kg_read", &json!({"session_id": sid}));
    // Even a prompt the memory knows nothing about gets one, as in the reference.
    let haiku = json!({"session_id": "cc-ref-1", "transcript_path": "", "cwd": cwd,
                       "hook_event_name": "UserPromptSubmit", "prompt": "write a haiku about autumn leaves"});
    let (out, _, _) = run(&["hook", "prompt-submit"], &haiku.to_string(), &env);
    let reminder = context_of(&out);
    assert!(
        kg_core::reminder_pool(None)
            .iter()
            .any(|r| r.text == reminder),
        "{reminder}"
    );
}
