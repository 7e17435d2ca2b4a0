//! `kg-memory install | uninstall claude-code | claude-desktop [--dry-run]`: register
//! the memory with Claude's own configuration files.
//!
//! Installing merges our entries into the existing files and never replaces an entry
//! of someone else's; each file it changes is backed up first. Uninstalling removes
//! exactly what installing added — and when nothing else changed meanwhile, the file
//! comes back byte for byte (from the backup), or disappears if we created it.

use serde_json::{Map, Value, json};
use std::fs;
use std::path::{Path, PathBuf};

/// Which client to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeCode,
    ClaudeDesktop,
}

impl Client {
    pub fn parse(name: &str) -> Option<Client> {
        match name {
            "claude-code" => Some(Client::ClaudeCode),
            "claude-desktop" => Some(Client::ClaudeDesktop),
            _ => None,
        }
    }
}

/// One configuration file and the change to it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: PathBuf,
    /// The file's content before (None: it did not exist).
    pub before: Option<String>,
    /// The content to write (None: delete the file).
    pub after: Option<String>,
    /// What changes, in words.
    pub summary: Vec<String>,
}

/// Where things are and what to register.
#[derive(Debug, Clone)]
pub struct Setup {
    pub home: PathBuf,
    /// The `kg-memory` binary the hooks and Desktop should run.
    pub exe: PathBuf,
    pub url: String,
    pub port: u16,
}

const HOOK_EVENTS: [(&str, &str, Option<&str>); 3] = [
    ("SessionStart", "session-start", None),
    ("UserPromptSubmit", "prompt-submit", None),
    ("PostToolUse", "post-tool", Some("Read|WebFetch|WebSearch")),
];

fn quoted(path: &Path) -> String {
    let p = path.to_string_lossy();
    if p.contains(' ') {
        format!("\"{p}\"")
    } else {
        p.into_owned()
    }
}

fn hook_command(setup: &Setup, event: &str) -> String {
    format!("{} hook {event}", quoted(&setup.exe))
}

fn desktop_config(home: &Path) -> PathBuf {
    #[cfg(target_os = "macos")]
    let dir = home.join("Library/Application Support/Claude");
    #[cfg(windows)]
    let dir = std::env::var_os("APPDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join("AppData/Roaming"))
        .join("Claude");
    #[cfg(not(any(target_os = "macos", windows)))]
    let dir = home.join(".config/Claude");
    dir.join("claude_desktop_config.json")
}

fn read_object(path: &Path) -> anyhow::Result<(Option<String>, Map<String, Value>)> {
    match fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok((Some(text), Map::new())),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok((Some(text), map)),
            Ok(_) => anyhow::bail!(
                "{} is not a JSON object; fix it by hand, nothing was changed",
                path.display()
            ),
            Err(e) => anyhow::bail!(
                "{} is not valid JSON ({e}); fix it by hand, nothing was changed",
                path.display()
            ),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((None, Map::new())),
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    }
}

fn pretty(map: &Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Object(map.clone())).unwrap_or_default();
    text.push('\n');
    text
}

fn object<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> anyhow::Result<&'a mut Map<String, Value>> {
    let slot = map.entry(key.to_string()).or_insert_with(|| json!({}));
    slot.as_object_mut().ok_or_else(|| {
        anyhow::anyhow!("\"{key}\" is not an object; fix it by hand, nothing was changed")
    })
}

/// Add an MCP server entry unless an equal one is there; refuse to replace another.
fn add_server(
    map: &mut Map<String, Value>,
    name: &str,
    entry: Value,
    summary: &mut Vec<String>,
) -> anyhow::Result<()> {
    let servers = object(map, "mcpServers")?;
    match servers.get(name) {
        Some(existing) if *existing == entry => {}
        Some(existing) => anyhow::bail!(
            "an MCP server named \"{name}\" is already configured ({existing}); remove it first or keep it — nothing was changed"
        ),
        None => {
            servers.insert(name.to_string(), entry);
            summary.push(format!("add MCP server \"{name}\""));
        }
    }
    Ok(())
}

fn remove_server(
    map: &mut Map<String, Value>,
    name: &str,
    entry: &Value,
    summary: &mut Vec<String>,
) {
    let Some(Value::Object(servers)) = map.get_mut("mcpServers") else {
        return;
    };
    if servers.get(name) == Some(entry) {
        servers.shift_remove(name);
        summary.push(format!("remove MCP server \"{name}\""));
        if servers.is_empty() {
            map.shift_remove("mcpServers");
        }
    }
}

fn hook_entry(setup: &Setup, event: &str, matcher: Option<&str>) -> Value {
    let mut entry = Map::new();
    if let Some(m) = matcher {
        entry.insert("matcher".into(), Value::String(m.into()));
    }
    entry.insert(
        "hooks".into(),
        json!([{"type": "command", "command": hook_command(setup, event)}]),
    );
    Value::Object(entry)
}

fn add_hooks(
    settings: &mut Map<String, Value>,
    setup: &Setup,
    summary: &mut Vec<String>,
) -> anyhow::Result<()> {
    let hooks = object(settings, "hooks")?;
    for (event, name, matcher) in HOOK_EVENTS {
        let list = hooks.entry(event.to_string()).or_insert_with(|| json!([]));
        let list = list.as_array_mut().ok_or_else(|| {
            anyhow::anyhow!("hooks.{event} is not a list; fix it by hand, nothing was changed")
        })?;
        let entry = hook_entry(setup, name, matcher);
        if !list.contains(&entry) {
            list.push(entry);
            summary.push(format!("add {event} hook"));
        }
    }
    Ok(())
}

fn remove_hooks(settings: &mut Map<String, Value>, setup: &Setup, summary: &mut Vec<String>) {
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return;
    };
    for (event, name, matcher) in HOOK_EVENTS {
        let entry = hook_entry(setup, name, matcher);
        if let Some(Value::Array(list)) = hooks.get_mut(event) {
            let before = list.len();
            list.retain(|e| *e != entry);
            if list.len() != before {
                summary.push(format!("remove {event} hook"));
            }
            if list.is_empty() {
                hooks.shift_remove(event);
            }
        }
    }
    if hooks.is_empty() {
        settings.shift_remove("hooks");
    }
}

fn change(
    path: PathBuf,
    before: Option<String>,
    map: &Map<String, Value>,
    summary: Vec<String>,
) -> FileChange {
    let after = Some(pretty(map));
    FileChange {
        path,
        before,
        after,
        summary,
    }
}

/// What installing would change.
pub fn plan_install(client: Client, setup: &Setup) -> anyhow::Result<Vec<FileChange>> {
    match client {
        Client::ClaudeCode => {
            let mcp_path = setup.home.join(".claude.json");
            let (before, mut map) = read_object(&mcp_path)?;
            let mut summary = Vec::new();
            add_server(
                &mut map,
                "kg",
                json!({"type": "http", "url": setup.url}),
                &mut summary,
            )?;
            let mcp = change(mcp_path, before, &map, summary);
            let settings_path = setup.home.join(".claude/settings.json");
            let (before, mut settings) = read_object(&settings_path)?;
            let mut summary = Vec::new();
            add_hooks(&mut settings, setup, &mut summary)?;
            let hooks = change(settings_path, before, &settings, summary);
            Ok(vec![mcp, hooks])
        }
        Client::ClaudeDesktop => {
            let path = desktop_config(&setup.home);
            if !path.parent().is_some_and(Path::is_dir) {
                anyhow::bail!(
                    "Claude Desktop's configuration folder {} does not exist; install and start Claude Desktop once, then retry",
                    path.parent().unwrap_or(&path).display()
                );
            }
            let (before, mut map) = read_object(&path)?;
            let mut summary = Vec::new();
            add_server(
                &mut map,
                "knowledge-graph",
                desktop_entry(setup),
                &mut summary,
            )?;
            Ok(vec![change(path, before, &map, summary)])
        }
    }
}

fn desktop_entry(setup: &Setup) -> Value {
    let mut entry = json!({"command": setup.exe.to_string_lossy(), "args": ["stdio"]});
    if setup.port != crate::config::DEFAULT_PORT {
        entry["env"] = json!({"KG_HTTP_PORT": setup.port.to_string()});
    }
    entry
}

/// Takes our entries out of a parsed file, noting what it removed.
type Remover<'a> = dyn Fn(&mut Map<String, Value>, &mut Vec<String>) + 'a;

/// What uninstalling would change.
pub fn plan_uninstall(client: Client, setup: &Setup) -> anyhow::Result<Vec<FileChange>> {
    let mut changes = Vec::new();
    let mut edit = |path: PathBuf, remove: &Remover<'_>| -> anyhow::Result<()> {
        let (before, mut map) = read_object(&path)?;
        let Some(before_text) = before else {
            return Ok(());
        };
        let mut summary = Vec::new();
        remove(&mut map, &mut summary);
        if summary.is_empty() {
            return Ok(());
        }
        // Back to the original bytes when the rest is unchanged since installing.
        let after = match latest_backup(&path) {
            Some(original) => match serde_json::from_str::<Value>(&original) {
                Ok(v) if v == Value::Object(map.clone()) => Some(original),
                _ => Some(pretty(&map)),
            },
            None if map.is_empty() => None, // we created this file
            None => Some(pretty(&map)),
        };
        changes.push(FileChange {
            path,
            before: Some(before_text),
            after,
            summary,
        });
        Ok(())
    };
    match client {
        Client::ClaudeCode => {
            let entry = json!({"type": "http", "url": setup.url});
            edit(setup.home.join(".claude.json"), &|m, s| {
                remove_server(m, "kg", &entry, s)
            })?;
            edit(setup.home.join(".claude/settings.json"), &|m, s| {
                remove_hooks(m, setup, s)
            })?;
        }
        Client::ClaudeDesktop => {
            let entry = desktop_entry(setup);
            edit(desktop_config(&setup.home), &|m, s| {
                remove_server(m, "knowledge-graph", &entry, s)
            })?;
        }
    }
    Ok(changes)
}

fn backup_prefix(path: &Path) -> String {
    format!(
        "{}.bak-kg-",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
}

/// The newest backup this tool made of `path`.
fn latest_backup(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let prefix = backup_prefix(path);
    let mut backups: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    backups.sort();
    fs::read_to_string(backups.last()?).ok()
}

/// Write the planned changes, backing each existing file up first.
pub fn apply(changes: &[FileChange], now: f64, backup: bool) -> anyhow::Result<()> {
    for c in changes {
        if c.after == c.before {
            continue;
        }
        if let (true, Some(before)) = (backup, &c.before) {
            let stamp = crate::clock::iso_utc(now).replace([':', '-'], "");
            let name = format!("{}{stamp}", backup_prefix(&c.path));
            let target = c.path.with_file_name(name);
            fs::write(&target, before)
                .map_err(|e| anyhow::anyhow!("cannot back up {}: {e}", c.path.display()))?;
        }
        match &c.after {
            Some(text) => {
                if let Some(dir) = c.path.parent() {
                    fs::create_dir_all(dir)?;
                }
                kg_core::atomic_write(
                    &c.path,
                    text.as_bytes(),
                    kg_core::WriteMode::DURABLE,
                    None,
                    None,
                )
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            }
            None => fs::remove_file(&c.path)
                .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", c.path.display()))?,
        }
    }
    Ok(())
}

/// A human-readable account of the planned changes.
pub fn describe(changes: &[FileChange], dry_run: bool) -> String {
    let mut out = String::new();
    for c in changes {
        if c.summary.is_empty() {
            out.push_str(&format!("{}: already up to date\n", c.path.display()));
            continue;
        }
        out.push_str(&format!("{}: {}\n", c.path.display(), c.summary.join(", ")));
        if dry_run {
            match &c.after {
                Some(text) => out.push_str(text),
                None => out.push_str("(the file would be removed: it only held our entries)\n"),
            }
        }
    }
    if dry_run {
        out.push_str("(dry run: nothing was written)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(home: &Path) -> Setup {
        Setup {
            home: home.to_path_buf(),
            exe: PathBuf::from("/opt/kg/bin/kg-memory"),
            url: "http://127.0.0.1:8765/".into(),
            port: 8765,
        }
    }

    #[test]
    fn install_merges_and_uninstall_restores_bytes() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let claude_json = "{\n    \"numStartups\": 3,\n    \"mcpServers\": {\"other\": {\"type\": \"stdio\", \"command\": \"x\"}}\n}";
        fs::write(home.path().join(".claude.json"), claude_json).expect("write");
        fs::create_dir_all(home.path().join(".claude")).expect("dir");
        let settings = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}, "theme": "dark"}"#;
        fs::write(home.path().join(".claude/settings.json"), settings).expect("write");

        let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
        let merged: Value =
            serde_json::from_str(plan[0].after.as_deref().unwrap_or("")).expect("json");
        assert_eq!(merged["numStartups"], 3);
        assert_eq!(merged["mcpServers"]["other"]["command"], "x");
        assert_eq!(merged["mcpServers"]["kg"]["url"], "http://127.0.0.1:8765/");
        let hooks: Value =
            serde_json::from_str(plan[1].after.as_deref().unwrap_or("")).expect("json");
        assert_eq!(hooks["theme"], "dark");
        assert_eq!(hooks["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
        assert_eq!(
            hooks["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
            "/opt/kg/bin/kg-memory hook post-tool"
        );
        apply(&plan, 1_795_176_000.0, true).expect("install");
        assert!(
            plan_install(Client::ClaudeCode, &s)
                .expect("again")
                .iter()
                .all(|c| c.summary.is_empty()),
            "idempotent"
        );

        let undo = plan_uninstall(Client::ClaudeCode, &s).expect("plan");
        apply(&undo, 1_795_176_100.0, false).expect("uninstall");
        assert_eq!(
            fs::read_to_string(home.path().join(".claude.json")).expect("read"),
            claude_json
        );
        assert_eq!(
            fs::read_to_string(home.path().join(".claude/settings.json")).expect("read"),
            settings
        );
    }

    #[test]
    fn files_we_created_are_removed_and_foreign_entries_refused() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        apply(
            &plan_uninstall(Client::ClaudeCode, &s).expect("plan"),
            2.0,
            false,
        )
        .expect("uninstall");
        assert!(!home.path().join(".claude.json").exists());
        assert!(!home.path().join(".claude/settings.json").exists());
        fs::write(
            home.path().join(".claude.json"),
            r#"{"mcpServers": {"kg": {"type": "http", "url": "http://elsewhere/"}}}"#,
        )
        .expect("write");
        let err = plan_install(Client::ClaudeCode, &s).expect_err("refused");
        assert!(err.to_string().contains("already configured"), "{err}");
        fs::write(home.path().join(".claude.json"), "{not json").expect("write");
        assert!(plan_install(Client::ClaudeCode, &s).is_err());
    }

    #[test]
    fn desktop_needs_its_folder_and_registers_the_stdio_bridge() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        assert!(
            plan_install(Client::ClaudeDesktop, &s).is_err(),
            "no Claude Desktop folder"
        );
        let config = desktop_config(home.path());
        fs::create_dir_all(config.parent().expect("dir")).expect("mkdir");
        let plan = plan_install(Client::ClaudeDesktop, &s).expect("plan");
        let v: Value = serde_json::from_str(plan[0].after.as_deref().unwrap_or("")).expect("json");
        assert_eq!(v["mcpServers"]["knowledge-graph"]["args"], json!(["stdio"]));
    }
}
