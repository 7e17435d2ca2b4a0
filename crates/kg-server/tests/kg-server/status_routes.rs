//! `kg-memory status` and `kg-memory doctor` tell the truth for every route and failure: no server, another
//! storage root's server on the port, the port held by a program that is not KG
//! Memory, an install for a custom port and root asked with no flags, and the plugin
//! with `KG_HTTP_PORT` in Claude Code's settings. Each output is a snapshot, with the
//! run's home, storage roots, ports and version replaced by names.

use crate::server::{Server, free_port, temp_home};
use crate::wiring::{foreign_program, install_plugin_record, kg, run};
use serde_json::json;
use std::path::Path;

/// `kg-memory <args>` run in `<home>/work`; (output with the run's values named, exit code).
fn status(
    args: &[&str],
    home: &Path,
    env: &[(&str, &str)],
    names: &[(&str, String)],
) -> (String, i32) {
    let work = home.join("work");
    std::fs::create_dir_all(&work).expect("work folder");
    let mut cmd = kg(args, home, env);
    cmd.current_dir(&work);
    let (out, err, code) = run(cmd, "");
    let mut text = format!("{out}{err}");
    // Longest first, so a storage root under home is named before home.
    let mut names: Vec<&(&str, String)> = names.iter().collect();
    names.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
    for (name, value) in names {
        text = text.replace(value.as_str(), name);
    }
    text = text.replace(env!("CARGO_PKG_VERSION"), "<VERSION>");
    text = without_pids(&text);
    // The maintenance survey's scores move with the clock; the wiring is the point.
    let kept: Vec<&str> = text.lines().filter(|l| !l.contains(" DEBT ")).collect();
    (kept.join("\n"), code)
}

/// `pid 1234` → `pid <PID>`.
fn without_pids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("pid ") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push_str("<PID>");
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn status_with_no_server_says_how_to_start_one() {
    let (_dir, home) = temp_home();
    let port = free_port();
    let storage = home.join("storage");
    let env = [
        ("KG_HTTP_PORT", port.to_string()),
        ("KG_STORAGE_ROOT", path(&storage)),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let names = [
        ("<HOME>", path(&home)),
        ("<STORAGE>", path(&storage)),
        ("<PORT>", port.to_string()),
    ];
    let (out, code) = status(&["status"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!("status_no_server", out);
    let (out, code) = status(&["doctor"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!("doctor_no_server", out);
}

#[test]
fn status_names_another_programs_port() {
    let (_dir, home) = temp_home();
    let port = foreign_program();
    let storage = home.join("storage");
    let env = [
        ("KG_HTTP_PORT", port.to_string()),
        ("KG_STORAGE_ROOT", path(&storage)),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let names = [
        ("<HOME>", path(&home)),
        ("<STORAGE>", path(&storage)),
        ("<PORT>", port.to_string()),
    ];
    let (out, code) = status(&["status"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("taken by another program"), "{out}");
    insta::assert_snapshot!("status_port_held_by_another_program", out);
    let (out, code) = status(&["doctor"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  port"), "{out}");
    insta::assert_snapshot!("doctor_port_held_by_another_program", out);
}

/// Another storage root's server answers on the configured port: status says so, and
/// that the MCP entry's tools reach that other memory.
#[test]
fn status_flags_tools_that_reach_another_roots_server() {
    let other = Server::fresh();
    let home = other.home.clone();
    let mine = home.join("mine");
    let url = format!("http://127.0.0.1:{}/", other.port);
    std::fs::write(
        home.join(".claude.json"),
        json!({"mcpServers": {"kg": {"type": "http", "url": url}}}).to_string(),
    )
    .expect("write ~/.claude.json");
    let env = [
        ("KG_HTTP_PORT", other.port.to_string()),
        ("KG_STORAGE_ROOT", path(&mine)),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let names = [
        ("<HOME>", path(&home)),
        ("<OTHER_STORAGE>", path(&other.storage)),
        ("<MY_STORAGE>", path(&mine)),
        ("<PORT>", other.port.to_string()),
    ];
    let (out, code) = status(&["status"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("its tools read and write that memory"),
        "{out}"
    );
    insta::assert_snapshot!("status_another_roots_server", out);
    let (out, code) = status(&["doctor"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("its tools read and write that memory"),
        "{out}"
    );
    insta::assert_snapshot!("doctor_another_roots_server", out);
}

/// `kg-memory --port P --storage S install claude-code`, then plain `kg-memory status`:
/// it asks the server the hooks reach, not the default one.
#[test]
fn plain_status_finds_a_custom_port_and_root_install() {
    let server = Server::fresh();
    let home = server.home.clone();
    let port = server.port.to_string();
    let storage = path(&server.storage);
    let (out, err, code) = run(
        kg(
            &[
                "--port",
                &port,
                "--storage",
                &storage,
                "install",
                "claude-code",
            ],
            &home,
            &[("XDG_STATE_HOME", &path(&home.join(".state")))],
        ),
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    let names = [
        ("<HOME>", path(&home)),
        ("<STORAGE>", storage.clone()),
        ("<PORT>", port.clone()),
    ];
    let (out, code) = status(&["status"], &home, &[], &names);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("No KG Memory server"), "{out}");
    insta::assert_snapshot!("status_custom_port_and_root_install", out);
    let (out, code) = status(&["doctor"], &home, &[], &names);
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!("doctor_custom_port_and_root_install", out);
}

/// The plugin, its port given as `KG_HTTP_PORT` in `~/.claude/settings.json`'s `env`
/// (as the README says): no warning that it points at the default port.
#[test]
fn status_reads_the_plugins_port_from_claude_codes_settings() {
    let server = Server::fresh();
    let home = server.home.clone();
    install_plugin_record(&home);
    let copy = home.join("plugin-copy");
    std::fs::create_dir_all(&copy).expect("plugin copy");
    std::fs::write(
        copy.join(".mcp.json"),
        json!({"mcpServers": {"kg": {"type": "http", "url": "http://127.0.0.1:${KG_HTTP_PORT:-8765}/"}}})
            .to_string(),
    )
    .expect("plugin .mcp.json");
    let settings_path = home.join(".claude/settings.json");
    let mut settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).expect("settings"))
            .expect("json");
    settings["env"] = json!({
        "KG_HTTP_PORT": server.port.to_string(),
        "KG_STORAGE_ROOT": path(&server.storage),
    });
    std::fs::write(&settings_path, settings.to_string()).expect("write settings");
    let names = [
        ("<HOME>", path(&home)),
        ("<STORAGE>", path(&server.storage)),
        ("<PORT>", server.port.to_string()),
    ];
    let (out, code) = status(&["status"], &home, &[], &names);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains(" ! "), "no warning: {out}");
    insta::assert_snapshot!("status_plugin_with_port_in_settings", out);
    // The plugin's hooks run `kg-memory` from PATH: this build's.
    let bin_dir = crate::server::bin().parent().expect("bin dir");
    let search = format!("{}:/usr/bin:/bin", bin_dir.display());
    let (out, code) = status(&["doctor"], &home, &[("PATH", &search)], &names);
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!("doctor_plugin_with_port_in_settings", out);
}

/// `kg-memory --port P --storage S install codex` (and no Claude Code wiring): plain
/// status and doctor find that server through Codex's hooks and report Codex's route;
/// an MCP entry moved to another port by hand is flagged with its fix.
#[test]
fn status_and_doctor_report_the_codex_route() {
    let server = Server::fresh();
    let home = server.home.clone();
    let port = server.port.to_string();
    let storage = path(&server.storage);
    // No `codex` on PATH: doctor does not ask Codex about its trust (the e2e tests do).
    let state = [
        ("XDG_STATE_HOME", path(&home.join(".state"))),
        ("PATH", path(&home.join("no-programs"))),
    ];
    let state: Vec<(&str, &str)> = state.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (out, err, code) = run(
        kg(
            &["--port", &port, "--storage", &storage, "install", "codex"],
            &home,
            &state,
        ),
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    let names = [
        ("<HOME>", path(&home)),
        ("<STORAGE>", storage.clone()),
        ("<PORT>", port.clone()),
    ];
    let (out, code) = status(&["status"], &home, &state, &names);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Asking the server named by the hooks in <HOME>/.codex/hooks.json"),
        "{out}"
    );
    insta::assert_snapshot!("status_codex_install", out);
    let (out, code) = status(&["doctor"], &home, &state, &names);
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!("doctor_codex_install", out);

    // The entry edited by hand to another port: the tools would miss this memory.
    let config = home.join(".codex/config.toml");
    let text = std::fs::read_to_string(&config).expect("config.toml");
    std::fs::write(&config, text.replace(&format!(":{port}/"), ":9/")).expect("write");
    let (out, code) = status(&["doctor"], &home, &state, &names);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  Codex's MCP server \"kg\" points at http://127.0.0.1:9/"),
        "{out}"
    );
    insta::assert_snapshot!("doctor_codex_entry_elsewhere", out);
}

/// `kg-memory --port P --storage S install gemini`, then plain `kg-memory status` and
/// `doctor`: they ask the server Gemini CLI's hooks reach and show Gemini CLI's wiring.
#[test]
fn plain_status_finds_a_gemini_install_and_shows_its_wiring() {
    let server = Server::fresh();
    let home = server.home.clone();
    let port = server.port.to_string();
    let storage = path(&server.storage);
    let state = [("XDG_STATE_HOME", path(&home.join(".state")))];
    let state: Vec<(&str, &str)> = state.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (out, err, code) = run(
        kg(
            &["--port", &port, "--storage", &storage, "install", "gemini"],
            &home,
            &state,
        ),
        "",
    );
    assert_eq!(code, 0, "{out}{err}");
    let names = [
        ("<HOME>", path(&home)),
        ("<STORAGE>", storage.clone()),
        ("<PORT>", port.clone()),
    ];
    // The folder status runs in is one Gemini CLI trusts.
    std::fs::write(
        home.join(".gemini/trustedFolders.json"),
        json!({path(&home.join("work")): "TRUST_FOLDER"}).to_string(),
    )
    .expect("trust");
    let (out, code) = status(&["status"], &home, &[], &names);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Asking the server named by Gemini CLI's hooks"),
        "{out}"
    );
    assert!(!out.contains(" ! "), "no warning: {out}");
    insta::assert_snapshot!("status_gemini_install", out);
    let (out, code) = status(&["doctor"], &home, &[], &names);
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!("doctor_gemini_install", out);
}

/// Gemini CLI's entry reaches another storage root's server, and its hooks name
/// another port: both are problems, each with its fix.
#[test]
fn status_flags_gemini_wiring_that_reaches_another_memory() {
    let other = Server::fresh();
    let home = other.home.clone();
    let mine = home.join("mine");
    let gemini = home.join(".gemini");
    std::fs::create_dir_all(&gemini).expect("mkdir");
    let hook = |event: &str| json!([{"hooks": [{"type": "command", "command": format!("kg-memory hook {event} --via gemini --port 1")}]}]);
    std::fs::write(
        gemini.join("settings.json"),
        json!({
            "mcpServers": {"kg": {"url": format!("http://127.0.0.1:{}/", other.port), "type": "http"}},
            "hooks": {"SessionStart": hook("session-start"), "BeforeAgent": hook("prompt-submit")},
        })
        .to_string(),
    )
    .expect("write settings");
    let env = [
        ("KG_HTTP_PORT", other.port.to_string()),
        ("KG_STORAGE_ROOT", path(&mine)),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let names = [
        ("<HOME>", path(&home)),
        ("<OTHER_STORAGE>", path(&other.storage)),
        ("<MY_STORAGE>", path(&mine)),
        ("<PORT>", other.port.to_string()),
    ];
    let (out, code) = status(&["status"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Gemini CLI's MCP server \"kg\""), "{out}");
    insta::assert_snapshot!("status_gemini_reaches_another_memory", out);
    let (out, code) = status(&["doctor"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!("doctor_gemini_reaches_another_memory", out);
}

/// A damaged Gemini CLI settings file: doctor names it and what is wrong.
#[test]
fn doctor_names_a_damaged_gemini_settings_file() {
    let (_dir, home) = temp_home();
    let gemini = home.join(".gemini");
    std::fs::create_dir_all(&gemini).expect("mkdir");
    std::fs::write(gemini.join("settings.json"), "{\"mcpServers\": {").expect("write");
    let port = free_port();
    let env = [("KG_HTTP_PORT", port.to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let names = [("<HOME>", path(&home)), ("<PORT>", port.to_string())];
    let (out, code) = status(&["doctor"], &home, &env, &names);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL  <HOME>/.gemini/settings.json is not valid JSON"),
        "{out}"
    );
}
