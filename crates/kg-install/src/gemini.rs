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

use crate::InstallError;
use crate::claude_code::merge_hooks;
use crate::courier::{Courier, courier_hooks, hook_command};
use crate::files::{in_file, pretty, read_object};
use crate::hand_added::{HAND_ADDED, has_our_hooks, recorded_as_hand_added};
use crate::installed::InstalledTarget;
use crate::servers::{add_server, loopback_port, remove_server};
use crate::{FileChange, Setup, change, remove_hooks, take_out};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Gemini CLI's variable that moves its home (the folder holding `.gemini`).
pub const GEMINI_CLI_HOME: &str = "GEMINI_CLI_HOME";

/// The name of Gemini CLI's MCP server entry for KG Memory (as `gemini mcp add kg …`).
pub const GEMINI_SERVER: &str = "kg";

/// The tools whose results the AfterTool hook sees: Gemini CLI's file reads and edits
/// (file recall), shell commands that read, and web searches (capture nudges).
pub(crate) const AFTER_TOOL_MATCHER: &str =
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

/// Gemini CLI's settings as a JSON object. Gemini CLI allows comments in the file;
/// rewriting it would lose them, so such a file is refused with that said.
fn read_settings(
    path: &Path,
) -> Result<(Option<String>, serde_json::Map<String, Value>), InstallError> {
    read_object(path).map_err(|e| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let commented = text
            .lines()
            .any(|l| l.trim_start().starts_with("//") || l.contains("/*"));
        if commented {
            InstallError::ByHand(format!(
                "{} has comments, which Gemini CLI allows but kg-memory would lose in rewriting it. Nothing was changed. Remove the comments and run this again.",
                path.display()
            ))
        } else {
            e
        }
    })
}

/// Where install notes what uninstall must leave (an entry added by hand).
fn record_path(setup: &Setup) -> PathBuf {
    setup.state_dir.join("gemini-install.json")
}

/// What `kg-memory install gemini` would change. A `kg` entry added by hand (`gemini
/// mcp add`, the very shape install writes) is never taken over: one pointing at this
/// install's server is kept as it is, and uninstall leaves it; one pointing elsewhere
/// stops the install. An entry with our hooks beside it is an earlier install's.
pub fn install(setup: &Setup) -> Result<Vec<FileChange>, InstallError> {
    let path = setup.gemini_settings.clone();
    let (before, mut map) = read_settings(&path)?;
    let record_path = record_path(setup);
    let (record_before, mut record) = read_object(&record_path)?;
    let mut summary = Vec::new();
    let mut record_summary = Vec::new();
    let existing = map
        .get("mcpServers")
        .and_then(|servers| servers.get(GEMINI_SERVER))
        .filter(|entry| is_gemini_entry(entry))
        .cloned();
    let by_hand = existing.is_some() && (recorded_as_hand_added(&record) || !has_our_hooks(&map));
    match existing {
        Some(entry) if by_hand && entry == server_entry(setup) => {
            if !recorded_as_hand_added(&record) {
                record.insert(HAND_ADDED.into(), Value::Bool(true));
                record_summary.push(format!(
                    "keep the MCP server \"{GEMINI_SERVER}\" you added by hand as it is (uninstall leaves it too)"
                ));
            }
        }
        Some(entry) if by_hand => {
            return Err(crate::hand_added::added_by_hand_elsewhere(
                &path,
                "`gemini mcp add`",
                entry["url"].as_str(),
                "gemini",
                &format!("gemini mcp remove -s user {GEMINI_SERVER}"),
                &setup.url(),
            ));
        }
        _ => {
            add_server(
                &mut map,
                GEMINI_SERVER,
                server_entry(setup),
                is_gemini_entry,
                "`gemini mcp remove -s user kg`",
                &mut summary,
            )
            .map_err(in_file(&path))?;
            // A hand-added entry noted earlier is gone: the one added now is ours, and
            // uninstall must take it out again.
            if record.shift_remove(HAND_ADDED).is_some() {
                record_summary.push(format!(
                    "note that the MCP server \"{GEMINI_SERVER}\" is now the installer's"
                ));
            }
        }
    }
    let entries = HOOK_EVENTS
        .iter()
        .map(|(event, name, matcher)| (*event, hook_entry(setup, name, *matcher)));
    merge_hooks(&mut map, entries, &mut summary).map_err(in_file(&path))?;
    let mut changes = vec![change(path, before, &map, summary)];
    if !record_summary.is_empty() {
        changes.push(FileChange {
            path: record_path,
            before: record_before,
            after: Some(pretty(&record)),
            summary: record_summary,
            ours: true,
        });
    }
    Ok(changes)
}

/// What `kg-memory uninstall gemini` would change.
pub fn uninstall(setup: &Setup) -> Result<Vec<FileChange>, InstallError> {
    // A file kg-memory cannot rewrite is said before anything else.
    read_settings(&setup.gemini_settings)?;
    let record_path = record_path(setup);
    let (record_text, record) = read_object(&record_path)?;
    // An entry the person added by hand stays theirs.
    let keep_entry = recorded_as_hand_added(&record);
    let mut changes: Vec<FileChange> = take_out(setup.gemini_settings.clone(), &|m, s| {
        if !keep_entry {
            remove_server(m, GEMINI_SERVER, is_gemini_entry, s);
        }
        remove_hooks(m, s);
    })?
    .into_iter()
    .collect();
    if record_text.is_some() {
        changes.push(FileChange {
            path: record_path,
            before: record_text,
            after: None,
            summary: vec!["forget what install noted".into()],
            ours: true,
        });
    }
    Ok(changes)
}

/// How Gemini CLI reaches KG Memory, read back from its settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GeminiWiring {
    /// No settings file: Gemini CLI has not been set up here.
    Absent,
    /// The file is there but not a JSON object (the reason).
    Unreadable(String),
    Read {
        /// The `kg` entry's URL (`url`, or `httpUrl` as some write it by hand).
        url: Option<String>,
        /// Our courier hooks: Gemini CLI's event and the command read back.
        hooks: Vec<(String, Courier)>,
    },
}

/// Read Gemini CLI's wiring from its settings file at `path`.
pub fn gemini_wiring(path: &Path) -> GeminiWiring {
    let map = match read_settings(path) {
        Ok((None, _)) => return GeminiWiring::Absent,
        Ok((Some(_), map)) => map,
        Err(e) => return GeminiWiring::Unreadable(e.diagnosis()),
    };
    let entry = &map.get("mcpServers").and_then(|s| s.get(GEMINI_SERVER));
    let url = entry
        .and_then(|e| e.get("url").or_else(|| e.get("httpUrl")))
        .and_then(Value::as_str)
        .map(str::to_string);
    let hooks = courier_hooks(&map)
        .filter_map(|hook| Some((hook.event.to_string(), Courier::parse(hook.command)?)))
        .collect();
    GeminiWiring::Read { url, hooks }
}

/// Whether Gemini CLI trusts `folder`, as it decides (measured in 0.61.0): the
/// `GEMINI_CLI_TRUST_WORKSPACE` variable first; every folder when the person turned
/// folder trust off (`security.folderTrust.enabled: false`); else the rule in
/// `trustedFolders.json` with the longest path that holds the folder (`TRUST_FOLDER`:
/// that folder, `TRUST_PARENT`: its parent, `DO_NOT_TRUST`). No rule: not trusted.
/// `None` when the trust file cannot be read as JSON.
pub fn trusts(settings_file: &Path, folder: &Path) -> Option<bool> {
    match std::env::var("GEMINI_CLI_TRUST_WORKSPACE").as_deref() {
        Ok("true") => return Some(true),
        Ok("false") => return Some(false),
        _ => {}
    }
    if let Ok((_, map)) = read_object(settings_file)
        && map
            .get("security")
            .and_then(|s| s.get("folderTrust"))
            .and_then(|t| t.get("enabled"))
            == Some(&Value::Bool(false))
    {
        return Some(true);
    }
    let rules_file = std::env::var_os("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| settings_file.with_file_name("trustedFolders.json"));
    let (_, rules) = read_object(&rules_file).ok()?;
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let folder = real(folder);
    let mut best: Option<(usize, &str)> = None;
    for (rule, level) in &rules {
        let Some(level) = level.as_str() else {
            continue;
        };
        let rule_path = Path::new(rule);
        let covers = if level == "TRUST_PARENT" {
            rule_path.parent().unwrap_or(rule_path)
        } else {
            rule_path
        };
        if folder.starts_with(real(covers)) && best.is_none_or(|(len, _)| rule.len() > len) {
            best = Some((rule.len(), level));
        }
    }
    Some(matches!(best, Some((_, "TRUST_FOLDER" | "TRUST_PARENT"))))
}

/// Gemini CLI's hook events install wires, in order, each with what it brings.
pub fn gemini_hook_events() -> impl Iterator<Item = (&'static str, &'static str)> {
    HOOK_EVENTS.iter().map(|(event, courier, _)| {
        let gives = match *courier {
            "session-start" => "the preload",
            "prompt-submit" => "prompt recall",
            _ => "file recall and capture nudges",
        };
        (*event, gives)
    })
}

/// The server Gemini CLI's installed hooks reach, when they name a port or storage
/// root of their own (for plain `kg-memory status`).
pub fn installed_target(path: &Path) -> Option<InstalledTarget> {
    let GeminiWiring::Read { hooks, .. } = gemini_wiring(path) else {
        return None;
    };
    InstalledTarget::of_couriers(hooks.iter().map(|(_, c)| c), || {
        format!("Gemini CLI's hooks in {}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply;
    use crate::tests::setup;
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
    fn an_entry_added_by_hand_is_kept_by_install_and_left_by_uninstall() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let path = home.path().join(".gemini/settings.json");
        fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        // What `gemini mcp add -s user --transport http kg http://127.0.0.1:8765/` writes.
        let by_hand = "{\n  \"mcpServers\": {\n    \"kg\": {\n      \"url\": \"http://127.0.0.1:8765/\",\n      \"type\": \"http\"\n    }\n  }\n}";
        fs::write(&path, by_hand).expect("write");
        let plan = install(&s).expect("plan");
        let said = crate::describe(&plan, true);
        assert!(said.contains("you added by hand"), "{said}");
        apply(&plan, 1.0, true).expect("install");
        let wired: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(
            wired["hooks"]["SessionStart"].as_array().map(Vec::len),
            Some(1)
        );
        // A second install still knows the entry is the person's.
        assert!(
            install(&s)
                .expect("again")
                .iter()
                .all(|c| c.summary.is_empty())
        );
        apply(&uninstall(&s).expect("plan"), 2.0, false).expect("uninstall");
        assert_eq!(fs::read_to_string(&path).expect("read"), by_hand);

        // One pointing elsewhere stops the install, both ways named.
        let mut elsewhere = s.clone();
        elsewhere.settings.port = 9555;
        let err = install(&elsewhere).expect_err("refused").to_string();
        assert!(
            err.contains("added by hand")
                && err.contains("--port N")
                && err.contains("gemini mcp remove"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&path).expect("read"), by_hand);
    }

    #[test]
    fn a_hand_added_entry_removed_later_makes_the_next_install_the_owner() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let path = home.path().join(".gemini/settings.json");
        fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        let by_hand = "{\n  \"mcpServers\": {\n    \"kg\": {\n      \"url\": \"http://127.0.0.1:8765/\",\n      \"type\": \"http\"\n    }\n  }\n}";
        fs::write(&path, by_hand).expect("write");
        apply(&install(&s).expect("plan"), 1.0, true).expect("install");
        // The person takes their entry out (`gemini mcp remove -s user kg`).
        let mut settings: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        settings["mcpServers"]
            .as_object_mut()
            .expect("servers")
            .remove("kg");
        fs::write(&path, settings.to_string()).expect("write");

        let plan = install(&s).expect("plan");
        let said = crate::describe(&plan, true);
        assert!(said.contains("is now the installer's"), "{said}");
        apply(&plan, 2.0, true).expect("install again");
        apply(&uninstall(&s).expect("plan"), 3.0, false).expect("uninstall");
        // (the file may be gone: it held only what install wrote)
        let left = fs::read_to_string(&path).unwrap_or_default();
        assert!(!left.contains("\"kg\""), "{left}");
    }

    #[test]
    fn trust_follows_the_longest_rule_that_holds_the_folder() {
        let home = tempfile::tempdir().expect("home");
        let settings = home.path().join(".gemini/settings.json");
        let work = home.path().join("work");
        let secret = work.join("secret");
        let app = home.path().join("src/app");
        for dir in [&secret, &app] {
            fs::create_dir_all(dir).expect("mkdir");
        }
        // No trust file: nothing is trusted.
        assert_eq!(trusts(&settings, &work), Some(false));
        fs::create_dir_all(settings.parent().expect("dir")).expect("mkdir");
        fs::write(
            settings.with_file_name("trustedFolders.json"),
            json!({
                work.display().to_string(): "TRUST_FOLDER",
                secret.display().to_string(): "DO_NOT_TRUST",
                app.display().to_string(): "TRUST_PARENT",
            })
            .to_string(),
        )
        .expect("write");
        assert_eq!(trusts(&settings, &work), Some(true));
        assert_eq!(trusts(&settings, &work.join("sub")), Some(true));
        assert_eq!(trusts(&settings, &secret), Some(false));
        assert_eq!(
            trusts(&settings, &home.path().join("src/other")),
            Some(true)
        );
        assert_eq!(trusts(&settings, home.path()), Some(false));
        // Folder trust turned off: every folder.
        fs::write(
            &settings,
            r#"{"security": {"folderTrust": {"enabled": false}}}"#,
        )
        .expect("write");
        assert_eq!(trusts(&settings, home.path()), Some(true));
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
