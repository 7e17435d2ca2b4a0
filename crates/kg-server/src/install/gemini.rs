//! Gemini CLI's entries, all in its user settings (`~/.gemini/settings.json`, or under
//! `$GEMINI_CLI_HOME`): the MCP server over streamable HTTP, and the courier hooks at
//! session start (the preload), before each prompt (recall) and after the tools that
//! read or change files, run shell commands or search the web (file recall, capture
//! nudges). Measured with `@google/gemini-cli` 0.61.0: `gemini mcp add -s user
//! --transport http` writes `mcpServers.<name> = {url, type: "http"}` there; its hooks
//! have Claude Code's shape (event → groups of `{matcher, hooks: [{type, command}]}`)
//! under Gemini's event names, take Claude Code's stdin fields and read the same
//! `hookSpecificOutput.additionalContext` and `systemMessage` back. Hooks run only in a
//! folder the person trusts, as Gemini CLI's MCP servers do.
//!
//! No GEMINI.md is written: Gemini CLI hands the MCP server's own instructions to the
//! model, so the memory's guidance comes from one place for every agent.

use super::claude_code::merge_hooks;
use super::courier::hook_command;
use super::servers::{add_server, loopback_port, remove_server};
use super::{FileChange, Setup, change, files::read_object, remove_hooks, take_out};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Gemini CLI's variable that moves its home (the folder holding `.gemini`).
pub const GEMINI_CLI_HOME: &str = "GEMINI_CLI_HOME";

/// The name of Gemini CLI's MCP server entry for KG Memory (as `gemini mcp add kg …`).
pub const GEMINI_SERVER: &str = "kg";

/// The tools whose results the AfterTool hook sees: Gemini CLI's file reads and edits
/// (file recall), shell commands that read, and web searches (capture nudges).
pub(super) const AFTER_TOOL_MATCHER: &str =
    "read_file|write_file|replace|run_shell_command|google_web_search";

/// Gemini CLI's hook event, our courier's event name, and the tool matcher.
const HOOK_EVENTS: [(&str, &str, Option<&str>); 3] = [
    ("SessionStart", "session-start", None),
    ("BeforeAgent", "prompt-submit", None),
    ("AfterTool", "post-tool", Some(AFTER_TOOL_MATCHER)),
];

/// The `--via` value that makes a courier answer in Gemini CLI's words.
pub const VIA_GEMINI: &str = "gemini";

/// Gemini CLI's user settings file for `home`, as Gemini CLI run with this process's
/// environment reads it.
pub fn settings_path(home: &Path) -> PathBuf {
    let base = std::env::var_os(GEMINI_CLI_HOME)
        .filter(|d| !d.is_empty())
        .map(|d| std::path::absolute(&d).unwrap_or_else(|_| PathBuf::from(d)))
        .unwrap_or_else(|| home.to_path_buf());
    base.join(".gemini").join("settings.json")
}

/// An entry of the shape this installer (or `gemini mcp add --transport http`) writes,
/// to any loopback port: safe to replace or remove.
fn is_gemini_entry(entry: &Value) -> bool {
    entry.as_object().is_some_and(|e| {
        e.len() == 2
            && e.get("type") == Some(&json!("http"))
            && e.get("url")
                .and_then(Value::as_str)
                .is_some_and(|u| loopback_port(u).is_some())
    })
}

fn server_entry(setup: &Setup) -> Value {
    json!({"url": setup.url(), "type": "http"})
}

fn hook_entry(setup: &Setup, event: &str, matcher: Option<&str>) -> Value {
    let mut entry = serde_json::Map::new();
    if let Some(m) = matcher {
        entry.insert("matcher".into(), Value::String(m.into()));
    }
    entry.insert(
        "hooks".into(),
        json!([{
            // Gemini CLI lists hooks by name (and `hooksConfig.disabled` takes names).
            "name": format!("kg-memory {event}"),
            "type": "command",
            "command": hook_command(setup, event, Some(VIA_GEMINI)),
        }]),
    );
    Value::Object(entry)
}

/// What `kg-memory install gemini` would change.
pub fn install(setup: &Setup) -> anyhow::Result<Vec<FileChange>> {
    let path = setup.gemini_settings.clone();
    let (before, mut map) = read_object(&path)?;
    let mut summary = Vec::new();
    add_server(
        &mut map,
        GEMINI_SERVER,
        server_entry(setup),
        is_gemini_entry,
        "`gemini mcp remove -s user kg`",
        &mut summary,
    )?;
    let entries = HOOK_EVENTS
        .iter()
        .map(|(event, name, matcher)| (*event, hook_entry(setup, name, *matcher)));
    merge_hooks(&mut map, entries, &mut summary)?;
    Ok(vec![change(path, before, &map, summary)])
}

/// What `kg-memory uninstall gemini` would change.
pub fn uninstall(setup: &Setup) -> anyhow::Result<Vec<FileChange>> {
    Ok(take_out(setup.gemini_settings.clone(), &|m, s| {
        remove_server(m, GEMINI_SERVER, is_gemini_entry, s);
        remove_hooks(m, s);
    })?
    .into_iter()
    .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::apply;
    use crate::install::tests::setup;
    use std::fs;

    #[test]
    fn install_keeps_the_persons_settings_and_uninstall_restores_their_bytes() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        s.settings.port = 9321;
        let path = home.path().join(".gemini/settings.json");
        fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        let mine = "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}},\n  \"mcpServers\": {\"docs\": {\"command\": \"docs-mcp\"}},\n  \"hooks\": {\"AfterAgent\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify done\"}]}]}\n}\n";
        fs::write(&path, mine).expect("write");

        let plan = install(&s).expect("plan");
        let after: Value =
            serde_json::from_str(plan[0].after.as_deref().expect("text")).expect("json");
        assert_eq!(after["security"]["auth"]["selectedType"], "gemini-api-key");
        assert_eq!(after["mcpServers"]["docs"]["command"], "docs-mcp");
        assert_eq!(
            after["mcpServers"]["kg"],
            json!({"url": "http://127.0.0.1:9321/", "type": "http"})
        );
        assert_eq!(
            after["hooks"]["AfterAgent"][0]["hooks"][0]["command"],
            "notify done"
        );
        assert_eq!(
            after["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "/opt/kg/bin/kg-memory hook session-start --via gemini --port 9321"
        );
        assert_eq!(
            after["hooks"]["BeforeAgent"][0]["hooks"][0]["name"],
            "kg-memory prompt-submit"
        );
        assert_eq!(
            after["hooks"]["AfterTool"][0]["matcher"],
            AFTER_TOOL_MATCHER
        );
        apply(&plan, 1.0, true).expect("install");
        assert!(
            install(&s)
                .expect("again")
                .iter()
                .all(|c| c.summary.is_empty()),
            "a second install changes nothing"
        );

        apply(&uninstall(&s).expect("plan"), 2.0, false).expect("uninstall");
        assert_eq!(fs::read_to_string(&path).expect("read"), mine);
        assert!(
            uninstall(&s).expect("again").is_empty(),
            "nothing left to remove"
        );
    }

    #[test]
    fn a_file_install_created_goes_and_a_rewritten_one_loses_only_our_entries() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let path = home.path().join(".gemini/settings.json");
        apply(&install(&s).expect("plan"), 1.0, true).expect("install");
        apply(&uninstall(&s).expect("plan"), 2.0, false).expect("uninstall");
        assert!(!path.exists(), "install created it, uninstall removes it");

        // Gemini CLI rewrites its own file (a setting changed in /settings): uninstall
        // takes out only what install added.
        fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        fs::write(&path, "{\"ui\": {\"theme\": \"Default\"}}").expect("write");
        apply(&install(&s).expect("plan"), 3.0, true).expect("install");
        let mut rewritten: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        rewritten["ui"]["theme"] = json!("ANSI");
        fs::write(
            &path,
            serde_json::to_string_pretty(&rewritten).expect("json"),
        )
        .expect("write");
        apply(&uninstall(&s).expect("plan"), 4.0, false).expect("uninstall");
        let left: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(left, json!({"ui": {"theme": "ANSI"}}));
    }

    #[test]
    fn someone_elses_kg_server_stops_the_install_and_changes_nothing() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let path = home.path().join(".gemini/settings.json");
        fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        let theirs = r#"{"mcpServers": {"kg": {"httpUrl": "https://kg.example.com/mcp"}}}"#;
        fs::write(&path, theirs).expect("write");
        let err = install(&s).expect_err("refused").to_string();
        assert!(
            err.contains("not by KG Memory") && err.contains("gemini mcp remove"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&path).expect("read"), theirs);
    }
}
