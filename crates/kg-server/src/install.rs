//! `kg-memory install | uninstall claude-code | claude-desktop [--dry-run]`: register
//! the memory with Claude's own configuration files, and read back how Claude Code is
//! wired (for `kg-memory status` and for the hooks, which must not answer twice).
//!
//! Installing merges our entries into the existing files and never replaces an entry
//! of someone else's; each file it changes is backed up first, keeping the file's
//! mode. Every entry names the server's host, port and storage root where they are not
//! the defaults, so a hook never depends on the `KG_*` variables of whatever shell
//! started Claude. Uninstalling removes exactly what installing added — and when
//! nothing else changed meanwhile, the file comes back byte for byte (from the backup),
//! or disappears if we created it.

use crate::config::{DEFAULT_HOST, DEFAULT_PORT, Settings};
use crate::launch::{server_flags, shell_line};
use anyhow::Context;
use serde_json::{Map, Value, json};
use std::fs;
use std::io::Write;
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
    /// A file of KG Memory's own (what to restore at uninstall): never backed up.
    pub ours: bool,
}

/// Where things are and what to register.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The server to register (host, port, storage root) and whose home's configuration
    /// files change.
    pub settings: Settings,
    /// The `kg-memory` binary the hooks and Desktop should run.
    pub exe: PathBuf,
    /// `install claude-code --disable-auto-memory`: also turn off Claude Code's own
    /// auto-memory (uninstall puts the user's value back).
    pub disable_auto_memory: bool,
    /// Where install notes what uninstall must restore (the server's state folder).
    pub state_dir: PathBuf,
}

impl Setup {
    pub fn new(settings: &Settings, exe: PathBuf) -> Setup {
        Setup {
            settings: settings.clone(),
            exe,
            disable_auto_memory: false,
            state_dir: settings.state_dir(),
        }
    }

    fn home(&self) -> &Path {
        &self.settings.home
    }

    /// The MCP endpoint clients connect to.
    pub fn url(&self) -> String {
        format!("{}/", self.settings.base_url())
    }

    /// Where install notes what it must restore at uninstall.
    fn record_path(&self) -> PathBuf {
        self.state_dir.join("claude-code-install.json")
    }
}

/// The plugin's name in its manifest (`hooks/.claude-plugin/plugin.json`); Claude Code
/// knows it as `knowledge-graph@<marketplace>`.
pub const PLUGIN: &str = "knowledge-graph";
/// The name of the MCP server `install claude-code` registers (and the plugin too).
const CODE_SERVER: &str = "kg";
/// The name of the MCP server `install claude-desktop` registers.
const DESKTOP_SERVER: &str = "knowledge-graph";
/// Claude Code's setting for its built-in auto-memory (documented in its settings
/// schema: "When false, Claude will not read from or write to the auto-memory
/// directory").
pub const AUTO_MEMORY: &str = "autoMemoryEnabled";

/// Claude Code's hook event, our courier's event name, and the tool matcher.
const HOOK_EVENTS: [(&str, &str, Option<&str>); 3] = [
    ("SessionStart", "session-start", None),
    ("UserPromptSubmit", "prompt-submit", None),
    ("PostToolUse", "post-tool", Some("Read|WebFetch|WebSearch")),
];

/// Claude Code's name for one of our courier events (`session-start` → `SessionStart`).
pub fn claude_event(courier_event: &str) -> Option<&'static str> {
    HOOK_EVENTS
        .iter()
        .find(|(_, ours, _)| *ours == courier_event)
        .map(|(theirs, _, _)| *theirs)
}

fn hook_command(setup: &Setup, event: &str) -> String {
    let mut words: Vec<std::ffi::OsString> =
        vec![setup.exe.clone().into(), "hook".into(), event.into()];
    words.extend(server_flags(&setup.settings));
    shell_line(words)
}

/// A `kg-memory … hook …` command line, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Courier {
    /// The program as written (a path, or a name looked up on `PATH`).
    pub program: String,
    pub event: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub storage: Option<PathBuf>,
    /// `--via plugin`: the knowledge-graph plugin's hooks.
    pub via_plugin: bool,
}

impl Courier {
    /// Read a hook command: `None` unless it runs `kg-memory hook`.
    pub fn parse(command: &str) -> Option<Courier> {
        let words = shlex::split(command)?;
        // `KG_HTTP_PORT=9123 kg-memory hook …`, as one might write it by hand.
        let assignment = |w: &String| {
            w.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        };
        let start = words.iter().take_while(|w| assignment(w)).count();
        let (program, args) = words[start..].split_first()?;
        if !is_kg_memory(program) {
            return None;
        }
        let mut courier = Courier {
            program: program.clone(),
            event: None,
            host: None,
            port: None,
            storage: None,
            via_plugin: false,
        };
        // The variables the hook would see, then its flags over them.
        for (name, value) in words[..start].iter().filter_map(|w| w.split_once('=')) {
            match name {
                "KG_HTTP_HOST" => courier.host = Some(value.to_string()),
                "KG_HTTP_PORT" => courier.port = value.parse().ok(),
                "KG_STORAGE_ROOT" => courier.storage = Some(PathBuf::from(value)),
                _ => {}
            }
        }
        let mut hook = false;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = || inline.clone().or_else(|| args.next().cloned());
            match flag {
                "--host" => courier.host = value(),
                "--port" => courier.port = value().and_then(|p| p.parse().ok()),
                "--storage" => courier.storage = value().map(PathBuf::from),
                "--via" => courier.via_plugin = value().as_deref() == Some("plugin"),
                "hook" if !hook => hook = true,
                _ if hook && courier.event.is_none() && !arg.starts_with('-') => {
                    courier.event = Some(arg.clone());
                }
                _ => {}
            }
        }
        hook.then_some(courier)
    }

    /// The program exists (a bare name is taken to be on `PATH`).
    fn runnable(&self) -> bool {
        !self.program.contains(['/', '\\']) || Path::new(&self.program).is_file()
    }
}

/// `kg-memory` or `kg-memory.exe`, by any path.
fn is_kg_memory(program: &str) -> bool {
    let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
    name == "kg-memory" || name.eq_ignore_ascii_case("kg-memory.exe")
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

/// A file's object, or an empty one when it is missing or unreadable (for reading the
/// wiring, where a damaged file must not stop a hook).
fn read_lenient(path: &Path) -> Map<String, Value> {
    read_object(path).map(|(_, m)| m).unwrap_or_default()
}

fn pretty_value(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

fn pretty(map: &Map<String, Value>) -> String {
    pretty_value(&Value::Object(map.clone()))
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

/// The port of `http://<loopback>:<port>/`, the only kind of URL this installer writes.
fn loopback_port(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
        .then(|| port.parse().ok())
        .flatten()
}

/// An entry of the shape `install claude-code` writes, to any loopback port: safe to
/// replace or remove, as it can only be ours (or the same thing typed by hand).
fn is_code_entry(entry: &Value) -> bool {
    entry.as_object().is_some_and(|e| {
        e.len() == 2
            && e.get("type") == Some(&json!("http"))
            && e.get("url")
                .and_then(Value::as_str)
                .is_some_and(|u| loopback_port(u).is_some())
    })
}

/// An entry that runs `kg-memory stdio` (what `install claude-desktop` writes).
fn is_desktop_entry(entry: &Value) -> bool {
    entry["command"].as_str().is_some_and(is_kg_memory) && entry["args"] == json!(["stdio"])
}

fn code_entry(setup: &Setup) -> Value {
    json!({"type": "http", "url": setup.url()})
}

fn desktop_entry(setup: &Setup) -> Value {
    let mut entry = json!({"command": setup.exe.to_string_lossy(), "args": ["stdio"]});
    // Claude Desktop starts the bridge without a shell: its environment carries them.
    let s = &setup.settings;
    let mut env = Map::new();
    if s.host != DEFAULT_HOST {
        env.insert("KG_HTTP_HOST".into(), json!(s.host));
    }
    if s.port != DEFAULT_PORT {
        env.insert("KG_HTTP_PORT".into(), json!(s.port.to_string()));
    }
    if s.storage_root != crate::config::default_storage_root(&s.home) {
        env.insert(
            "KG_STORAGE_ROOT".into(),
            json!(s.storage_root.to_string_lossy()),
        );
    }
    if !env.is_empty() {
        entry["env"] = Value::Object(env);
    }
    entry
}

/// An entry in words for a message: its URL, else its JSON with secrets redacted.
fn describe_entry(entry: &Value) -> String {
    match entry["url"].as_str() {
        Some(url) => redact(Value::String(url.to_string()))
            .as_str()
            .unwrap_or_default()
            .to_string(),
        None => redact(entry.clone()).to_string(),
    }
}

/// Add our MCP server entry; an older one of ours is brought up to date, anyone
/// else's is left alone and the install refused.
fn add_server(
    map: &mut Map<String, Value>,
    name: &str,
    entry: Value,
    ours: fn(&Value) -> bool,
    remove_hint: &str,
    summary: &mut Vec<String>,
) -> anyhow::Result<()> {
    let servers = object(map, "mcpServers")?;
    match servers.get(name) {
        Some(existing) if *existing == entry => {}
        Some(existing) if ours(existing) => {
            summary.push(format!(
                "point MCP server \"{name}\" at {} (was {})",
                describe_entry(&entry),
                describe_entry(existing)
            ));
            servers.insert(name.to_string(), entry);
        }
        Some(existing) => anyhow::bail!(
            "an MCP server named \"{name}\" is already configured, and not by KG Memory ({}). Nothing was changed. Remove it ({remove_hint}), then run this again.",
            describe_entry(existing)
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
    ours: fn(&Value) -> bool,
    summary: &mut Vec<String>,
) {
    let Some(Value::Object(servers)) = map.get_mut("mcpServers") else {
        return;
    };
    if servers.get(name).is_some_and(ours) {
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

/// The command of a command hook that runs `kg-memory hook`.
fn courier_command(hook: &Value) -> Option<&str> {
    let command = hook["command"].as_str()?;
    (hook["type"] == "command" && Courier::parse(command).is_some()).then_some(command)
}

/// Take every `kg-memory hook` command out of one event's list of hook groups, except
/// in a group equal to `keep`; groups left empty go. Returns the commands taken out.
fn strip_couriers(list: &mut Vec<Value>, keep: Option<&Value>) -> Vec<String> {
    let mut removed = Vec::new();
    list.retain_mut(|group| {
        if Some(&*group) == keep {
            return true;
        }
        let Some(Value::Array(hooks)) = group.get_mut("hooks") else {
            return true;
        };
        let before = hooks.len();
        hooks.retain(|h| match courier_command(h) {
            Some(command) => {
                removed.push(command.to_string());
                false
            }
            None => true,
        });
        !(hooks.is_empty() && before > 0)
    });
    removed
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
        // An earlier install's hooks (another binary, port or storage root) are
        // replaced: two couriers would answer every event twice.
        let replaced = strip_couriers(list, Some(&entry));
        if !list.contains(&entry) {
            list.push(entry);
            summary.push(match replaced.first() {
                Some(old) => format!("replace {event} hook (was `{old}`)"),
                None => format!("add {event} hook"),
            });
        } else if !replaced.is_empty() {
            summary.push(format!(
                "remove a second {event} hook (`{}`)",
                replaced.join("`, `")
            ));
        }
    }
    Ok(())
}

fn remove_hooks(settings: &mut Map<String, Value>, summary: &mut Vec<String>) {
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return;
    };
    let events: Vec<String> = hooks.keys().cloned().collect();
    for event in events {
        if let Some(Value::Array(list)) = hooks.get_mut(&event) {
            if !strip_couriers(list, None).is_empty() {
                summary.push(format!("remove {event} hook"));
            }
            if list.is_empty() {
                hooks.shift_remove(&event);
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
    // Nothing to add: the file stays as it is, layout included.
    let after = if summary.is_empty() {
        before.clone()
    } else {
        Some(pretty(map))
    };
    FileChange {
        path,
        before,
        after,
        summary,
        ours: false,
    }
}

/// One installed copy of the knowledge-graph plugin, from Claude Code's
/// `~/.claude/plugins/installed_plugins.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInstall {
    /// `knowledge-graph@<marketplace>`.
    pub id: String,
    /// `user`, `project` or `local`.
    pub scope: String,
    /// The project a `project` or `local` install belongs to.
    pub project: Option<PathBuf>,
    pub install_path: Option<PathBuf>,
}

impl PluginInstall {
    /// The command that removes this copy.
    pub fn uninstall_command(&self) -> String {
        let cmd = format!("claude plugin uninstall {}", self.id);
        match (self.scope.as_str(), &self.project) {
            ("user", _) => cmd,
            (scope, Some(project)) => format!(
                "cd {} && {cmd} -s {scope}",
                shell_line([project.as_os_str()])
            ),
            (scope, None) => format!("{cmd} -s {scope}"),
        }
    }

    fn describe(&self) -> String {
        match &self.project {
            Some(p) => format!("{} ({} scope, {})", self.id, self.scope, p.display()),
            None => format!("{} ({} scope)", self.id, self.scope),
        }
    }
}

fn is_our_plugin(id: &str) -> bool {
    id.split_once('@').is_some_and(|(name, _)| name == PLUGIN)
}

/// Every installed copy of the knowledge-graph plugin.
pub fn plugin_installs(home: &Path) -> Vec<PluginInstall> {
    let file = read_lenient(&home.join(".claude/plugins/installed_plugins.json"));
    let Some(Value::Object(plugins)) = file.get("plugins") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (id, entries) in plugins.iter().filter(|(id, _)| is_our_plugin(id)) {
        // Version 2 lists one entry per scope; version 1 held a single object.
        let entries = match entries {
            Value::Array(list) => list.iter().collect(),
            other => vec![other],
        };
        for e in entries {
            found.push(PluginInstall {
                id: id.clone(),
                scope: e["scope"].as_str().unwrap_or("user").to_string(),
                project: e["projectPath"].as_str().map(PathBuf::from),
                install_path: e["installPath"].as_str().map(PathBuf::from),
            });
        }
    }
    found
}

/// Claude Code's settings files that apply in `project`, lowest precedence first:
/// user, project, local.
fn settings_files(home: &Path, project: Option<&Path>) -> Vec<PathBuf> {
    let user = home.join(".claude/settings.json");
    let mut files = vec![user.clone()];
    // Claude run in the home folder itself: its project settings are the user's.
    if let Some(p) = project.filter(|p| p.join(".claude") != home.join(".claude")) {
        let same = |a: &Path, b: &Path| match (fs::canonicalize(a), fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same(&p.join(".claude"), &home.join(".claude")) {
            files.push(p.join(".claude/settings.json"));
            files.push(p.join(".claude/settings.local.json"));
        }
    }
    files
}

/// The knowledge-graph plugin's id when it is enabled for `project` (the most specific
/// settings file that says so wins) and installed.
pub fn enabled_plugin(home: &Path, project: Option<&Path>) -> Option<String> {
    let mut enabled: Map<String, Value> = Map::new();
    for file in settings_files(home, project) {
        if let Some(Value::Object(e)) = read_lenient(&file).get("enabledPlugins") {
            enabled.extend(e.clone());
        }
    }
    let installed = plugin_installs(home);
    enabled
        .into_iter()
        .find(|(id, on)| {
            is_our_plugin(id) && *on == Value::Bool(true) && installed.iter().any(|i| i.id == *id)
        })
        .map(|(id, _)| id)
}

/// `install claude-code` next to the plugin would load the memory twice.
fn refuse_beside_plugin(setup: &Setup) -> anyhow::Result<()> {
    let installs = plugin_installs(setup.home());
    if installs.is_empty() {
        return Ok(());
    }
    let copies: Vec<String> = installs.iter().map(PluginInstall::describe).collect();
    let removes: Vec<String> = installs
        .iter()
        .map(|i| format!("`{}`", i.uninstall_command()))
        .collect();
    anyhow::bail!(
        "the {PLUGIN} plugin is installed in Claude Code: {}. It already connects the MCP server and the hooks; with this installer too, every session would load the memory twice. Nothing was changed. Use one route: keep the plugin (nothing more to do), or remove it with {} and run `kg-memory install claude-code{}` again.",
        copies.join(", "),
        removes.join(" and "),
        install_flags(&setup.settings, setup.settings.port)
    )
}

/// What installing would change.
pub fn plan_install(client: Client, setup: &Setup) -> anyhow::Result<Vec<FileChange>> {
    match client {
        Client::ClaudeCode => {
            refuse_beside_plugin(setup)?;
            let mcp_path = setup.home().join(".claude.json");
            let (before, mut map) = read_object(&mcp_path)?;
            let mut summary = Vec::new();
            add_server(
                &mut map,
                CODE_SERVER,
                code_entry(setup),
                is_code_entry,
                "`claude mcp remove -s user kg`",
                &mut summary,
            )?;
            let mcp = change(mcp_path, before, &map, summary);
            let settings_path = setup.home().join(".claude/settings.json");
            let (before, mut settings) = read_object(&settings_path)?;
            let mut summary = Vec::new();
            add_hooks(&mut settings, setup, &mut summary)?;
            let mut changes = vec![mcp];
            let record = if setup.disable_auto_memory {
                disable_auto_memory(&mut settings, setup, &mut summary)?
            } else {
                None
            };
            changes.push(change(settings_path, before, &settings, summary));
            changes.extend(record);
            Ok(changes)
        }
        Client::ClaudeDesktop => {
            let path = desktop_config(setup.home());
            if !path.parent().is_some_and(Path::is_dir) {
                anyhow::bail!(
                    "Claude Desktop's configuration folder {} does not exist; install and start Claude Desktop once, then run `kg-memory install claude-desktop` again",
                    path.parent().unwrap_or(&path).display()
                );
            }
            let (before, mut map) = read_object(&path)?;
            let mut summary = Vec::new();
            add_server(
                &mut map,
                DESKTOP_SERVER,
                desktop_entry(setup),
                is_desktop_entry,
                &format!("delete \"{DESKTOP_SERVER}\" under \"mcpServers\" in that file"),
                &mut summary,
            )?;
            Ok(vec![change(path, before, &map, summary)])
        }
    }
}

/// Turn auto-memory off, remembering the user's value (absent, or what they set) in a
/// file of ours so that uninstall puts exactly that back.
fn disable_auto_memory(
    settings: &mut Map<String, Value>,
    setup: &Setup,
    summary: &mut Vec<String>,
) -> anyhow::Result<Option<FileChange>> {
    let current = settings.get(AUTO_MEMORY).cloned();
    if current == Some(Value::Bool(false)) {
        // Already off, by the user or by an earlier install: nothing to note.
        return Ok(None);
    }
    settings.insert(AUTO_MEMORY.into(), Value::Bool(false));
    summary.push(format!(
        "turn off Claude Code's auto-memory ({AUTO_MEMORY}: false)"
    ));
    let path = setup.record_path();
    let (before, mut record) = read_object(&path)?;
    let mut previous = Map::new();
    if let Some(value) = current {
        previous.insert("previous".into(), value);
    }
    record.insert(AUTO_MEMORY.into(), Value::Object(previous));
    Ok(Some(FileChange {
        path,
        before,
        after: Some(pretty(&record)),
        summary: vec![format!(
            "remember your {AUTO_MEMORY} setting, for `kg-memory uninstall claude-code` to restore"
        )],
        ours: true,
    }))
}

/// Put back the auto-memory setting install turned off — unless the user changed it
/// since, which wins.
fn restore_auto_memory(
    settings: &mut Map<String, Value>,
    record: &Map<String, Value>,
    summary: &mut Vec<String>,
) {
    let Some(Value::Object(saved)) = record.get(AUTO_MEMORY) else {
        return;
    };
    if settings.get(AUTO_MEMORY) != Some(&Value::Bool(false)) {
        return;
    }
    match saved.get("previous") {
        Some(value) => {
            settings.insert(AUTO_MEMORY.into(), value.clone());
            summary.push(format!("restore {AUTO_MEMORY}: {value}"));
        }
        None => {
            settings.shift_remove(AUTO_MEMORY);
            summary.push(format!(
                "remove {AUTO_MEMORY} (back to Claude Code's default: on)"
            ));
        }
    }
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
            ours: false,
        });
        Ok(())
    };
    match client {
        Client::ClaudeCode => {
            edit(setup.home().join(".claude.json"), &|m, s| {
                remove_server(m, CODE_SERVER, is_code_entry, s)
            })?;
            let record_path = setup.record_path();
            let (record_text, record) = read_object(&record_path)?;
            edit(setup.home().join(".claude/settings.json"), &|m, s| {
                remove_hooks(m, s);
                restore_auto_memory(m, &record, s);
            })?;
            if record_text.is_some() {
                changes.push(FileChange {
                    path: record_path,
                    before: record_text,
                    after: None,
                    summary: vec!["forget what install noted".into()],
                    ours: true,
                });
            }
        }
        Client::ClaudeDesktop => {
            edit(desktop_config(setup.home()), &|m, s| {
                remove_server(m, DESKTOP_SERVER, is_desktop_entry, s)
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

/// Write a new file holding `text` with the permissions of `like`, the file it copies;
/// never replaces a file already there.
fn write_copy(target: &Path, text: &str, like: &fs::Permissions) -> std::io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Private until the copy's own mode is set: never wider than the original.
        options.mode(0o600);
    }
    let mut file = options.open(target)?;
    file.set_permissions(like.clone())?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// Back `path` up next to itself, with its mode (a private `~/.claude.json` must not
/// get a world-readable copy).
fn back_up(path: &Path, text: &str, now: f64) -> anyhow::Result<()> {
    let like = fs::metadata(path)
        .with_context(|| format!("cannot read the permissions of {}", path.display()))?
        .permissions();
    let stamp = crate::clock::iso_utc(now).replace([':', '-'], "");
    let base = format!("{}{stamp}", backup_prefix(path));
    // Two installs within a second: the later copy sorts after the earlier one.
    for n in 0..100 {
        let name = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n:02}")
        };
        match write_copy(&path.with_file_name(name), text, &like) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => anyhow::bail!("cannot back up {}: {e}", path.display()),
        }
    }
    anyhow::bail!(
        "cannot back up {}: too many backups from this second",
        path.display()
    )
}

/// Replace `path`'s content atomically, keeping its mode; through a symbolic link, the
/// file it points at is replaced (a dotfiles link stays a link). A new file is private.
fn write_in_place(path: &Path, text: &str) -> anyhow::Result<()> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let failed = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", path.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".kg-tmp")
        .tempfile_in(dir)
        .map_err(failed)?;
    if let Ok(meta) = fs::metadata(&target) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(failed)?;
    }
    tmp.write_all(text.as_bytes()).map_err(failed)?;
    tmp.as_file().sync_all().map_err(failed)?;
    tmp.persist(&target).map_err(|e| failed(e.error))?;
    #[cfg(unix)]
    if let Ok(d) = fs::File::open(dir) {
        // The rename is durable once the folder is; a failure here loses nothing yet.
        let _ = d.sync_all();
    }
    Ok(())
}

/// Write the planned changes, backing each existing file up first.
pub fn apply(changes: &[FileChange], now: f64, backup: bool) -> anyhow::Result<()> {
    for c in changes {
        if c.after == c.before {
            continue;
        }
        if let (true, false, Some(before)) = (backup, c.ours, &c.before) {
            back_up(&c.path, before, now)?;
        }
        match &c.after {
            Some(text) => write_in_place(&c.path, text)?,
            None => fs::remove_file(&c.path)
                .with_context(|| format!("cannot remove {}", c.path.display()))?,
        }
    }
    Ok(())
}

/// A human-readable account of the planned changes; a dry run adds a diff of each
/// file, secret-looking values redacted.
pub fn describe(changes: &[FileChange], dry_run: bool) -> String {
    let mut out = String::new();
    for c in changes {
        if c.summary.is_empty() {
            out.push_str(&format!("{}: already up to date\n", c.path.display()));
            continue;
        }
        out.push_str(&format!("{}: {}\n", c.path.display(), c.summary.join(", ")));
        if dry_run {
            out.push_str(&diff(c));
        }
    }
    if dry_run {
        out.push_str(
            "(dry run: nothing was written; values that look secret are shown as <redacted>)\n",
        );
    }
    out
}

/// A file's JSON as the diff shows it: one layout whatever the file's own, secret-looking
/// values redacted.
fn shown(text: Option<&str>) -> String {
    match text.map(serde_json::from_str::<Value>) {
        Some(Ok(value)) => pretty_value(&redact(value)),
        _ => String::new(),
    }
}

fn diff(c: &FileChange) -> String {
    let (before, after) = (shown(c.before.as_deref()), shown(c.after.as_deref()));
    let path = c.path.display().to_string();
    let old = if c.before.is_some() {
        format!("{path} (now)")
    } else {
        "/dev/null (a new file)".to_string()
    };
    let new = if c.after.is_some() {
        format!("{path} (after)")
    } else {
        "/dev/null (the file is removed: it only held our entries)".to_string()
    };
    let mut out = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    let relaid =
        |t: &str| serde_json::from_str::<Value>(t).is_ok_and(|v| pretty_value(&v).as_str() != t);
    if c.before.as_deref().is_some_and(relaid) && c.after.as_deref().is_some_and(|t| !relaid(t)) {
        out.push_str("(the file is rewritten with JSON's standard indentation; only the lines above change what it says)\n");
    }
    out
}

const REDACTED: &str = "<redacted>";

/// Parts of a key that mark its value as secret.
const SECRET_KEYS: [&str; 15] = [
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "api_key",
    "api-key",
    "authorization",
    "credential",
    "cookie",
    "privatekey",
    "private_key",
    "accesskey",
    "access_key",
    "oauth",
];

fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key == "auth" || key == "key" || SECRET_KEYS.iter().any(|s| key.contains(s))
}

/// Our own variables: not secret, and the point of an entry's `env`.
fn our_variable(key: &str) -> bool {
    matches!(key, "KG_HTTP_HOST" | "KG_HTTP_PORT" | "KG_STORAGE_ROOT")
}

/// A value that looks like a credential whatever its key: a known token prefix, an
/// `Authorization` scheme, or a long run of token characters with letters and digits.
fn secret_value(value: &str) -> bool {
    const PREFIXES: [&str; 16] = [
        "sk-",
        "sk_",
        "pk_",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "AKIA",
        "AIza",
        "npm_",
        "eyJ",
        "hf_",
    ];
    let v = value.trim();
    if v.starts_with("Bearer ") || v.starts_with("Basic ") || v.starts_with("Token ") {
        return true;
    }
    if v.len() >= 16 && PREFIXES.iter().any(|p| v.starts_with(p)) && !v.contains(' ') {
        return true;
    }
    v.len() >= 32
        && !v.starts_with('/')
        && !v.contains("://")
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+/=.".contains(c))
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

/// A URL's password and secret-looking query values hidden.
fn redact_url(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let mut out = format!("{scheme}://");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut changed = false;
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            changed = true;
            let user = user.split(':').next().unwrap_or_default();
            out.push_str(&format!("{user}:{REDACTED}@{host}"));
        }
        None => out.push_str(authority),
    }
    match path.split_once('?') {
        Some((p, query)) => {
            out.push_str(p);
            out.push('?');
            let parts: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, v)) if secret_key(k) || secret_value(v) => {
                        changed = true;
                        format!("{k}={REDACTED}")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            out.push_str(&parts.join("&"));
        }
        None => out.push_str(path),
    }
    changed.then_some(out)
}

/// A copy of `value` with everything that looks secret replaced by `<redacted>`: values
/// under secret-looking keys, every value of an `env` or `headers` object (an MCP
/// entry's), credential-like strings, and URLs' passwords and tokens.
pub fn redact(value: Value) -> Value {
    fn string(s: String, hidden: bool) -> Value {
        if hidden || secret_value(&s) {
            Value::String(REDACTED.into())
        } else {
            Value::String(redact_url(&s).unwrap_or(s))
        }
    }
    fn walk(value: Value, hidden: bool, env_like: bool) -> Value {
        match value {
            Value::String(s) => string(s, hidden),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let hide = hidden || secret_key(&k) || (env_like && !our_variable(&k));
                        let env = matches!(k.as_str(), "env" | "headers");
                        (k, walk(v, hide, env))
                    })
                    .collect(),
            ),
            Value::Array(items) => {
                // `["--api-key", "…"]`: the word after a secret-looking flag.
                let mut after_flag = false;
                Value::Array(
                    items
                        .into_iter()
                        .map(|item| {
                            let hide = hidden || after_flag;
                            after_flag = item.as_str().is_some_and(|s| {
                                s.starts_with('-') && !s.contains('=') && secret_key(s)
                            });
                            match item {
                                Value::String(s) if s.starts_with('-') && s.contains('=') => {
                                    match s.split_once('=') {
                                        Some((flag, _)) if secret_key(flag) => {
                                            Value::String(format!("{flag}={REDACTED}"))
                                        }
                                        _ => string(s, hide),
                                    }
                                }
                                other => walk(other, hide, false),
                            }
                        })
                        .collect(),
                )
            }
            other if hidden => match other {
                Value::Null => Value::Null,
                _ => Value::String(REDACTED.into()),
            },
            other => other,
        }
    }
    walk(value, false, false)
}

// ---------------------------------------------------------------------------------
// How Claude Code is wired, read back: for `kg-memory status` and the hooks.

/// A `kg-memory hook` command found in a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundHook {
    pub file: PathBuf,
    /// Claude Code's event (`SessionStart`, …).
    pub event: String,
    pub command: String,
    pub courier: Courier,
}

/// An MCP server entry that reaches KG Memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundServer {
    /// Where it is configured, in words (`user scope, ~/.claude.json`).
    pub place: String,
    pub name: String,
    /// The URL of an HTTP entry (with the plugin's `${KG_HTTP_PORT:-8765}` expanded in
    /// this process's environment).
    pub url: Option<String>,
    /// The command line of a stdio entry.
    pub command: Option<String>,
}

impl FoundServer {
    fn port(&self) -> Option<u16> {
        self.url.as_deref().and_then(loopback_port)
    }
}

/// How Claude Code reaches KG Memory, for one project folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wiring {
    /// Installed copies of the knowledge-graph plugin.
    pub plugins: Vec<PluginInstall>,
    /// The plugin's id when it is enabled here.
    pub plugin_enabled: Option<String>,
    /// `kg-memory hook` commands in settings files (the installer's, or by hand).
    pub hooks: Vec<FoundHook>,
    pub servers: Vec<FoundServer>,
}

/// Every `kg-memory hook` command in the settings files that apply in `project`.
fn found_hooks(home: &Path, project: Option<&Path>) -> Vec<FoundHook> {
    let mut found = Vec::new();
    for file in settings_files(home, project) {
        let settings = read_lenient(&file);
        let Some(Value::Object(hooks)) = settings.get("hooks") else {
            continue;
        };
        for (event, groups) in hooks {
            for group in groups.as_array().into_iter().flatten() {
                for hook in group["hooks"].as_array().into_iter().flatten() {
                    if let Some(command) = courier_command(hook)
                        && let Some(courier) = Courier::parse(command)
                    {
                        found.push(FoundHook {
                            file: file.clone(),
                            event: event.clone(),
                            command: command.to_string(),
                            courier,
                        });
                    }
                }
            }
        }
    }
    found
}

/// `${VAR}` and `${VAR:-default}` expanded from this process's environment, as Claude
/// Code expands them in a plugin's `.mcp.json`.
fn expand(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &rest[start + 2..start + end];
        let (name, default) = inner.split_once(":-").unwrap_or((inner, ""));
        out.push_str(
            &std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_string()),
        );
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

fn kg_servers(map: &Map<String, Value>, place: &str, server_port: u16) -> Vec<FoundServer> {
    let Some(Value::Object(servers)) = map.get("mcpServers") else {
        return Vec::new();
    };
    servers
        .iter()
        .filter_map(|(name, entry)| {
            let url = entry["url"].as_str().map(expand);
            let command = entry["command"].as_str().map(|c| {
                let mut words = vec![c.to_string()];
                words.extend(
                    entry["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| a.as_str().map(str::to_string)),
                );
                shell_line(words)
            });
            let ours = name == CODE_SERVER
                || name == DESKTOP_SERVER
                || entry["command"].as_str().is_some_and(is_kg_memory)
                || url.as_deref().and_then(loopback_port) == Some(server_port);
            ours.then(|| FoundServer {
                place: place.to_string(),
                name: name.clone(),
                url,
                command,
            })
        })
        .collect()
}

/// Read how Claude Code is wired for `project` (the folder Claude runs in): the plugin,
/// `kg-memory hook` commands in settings files, and MCP entries that reach KG Memory
/// (named `kg`/`knowledge-graph`, running `kg-memory`, or at `server_port`).
pub fn wiring(home: &Path, project: Option<&Path>, server_port: u16) -> Wiring {
    let plugins = plugin_installs(home);
    let plugin_enabled = enabled_plugin(home, project);
    let mut servers = Vec::new();
    let claude_json = read_lenient(&home.join(".claude.json"));
    servers.extend(kg_servers(
        &claude_json,
        "user scope, ~/.claude.json",
        server_port,
    ));
    if let Some(p) = project {
        if let Some(Value::Object(local)) = claude_json
            .get("projects")
            .and_then(|ps| ps.get(p.to_string_lossy().as_ref()))
        {
            servers.extend(kg_servers(
                local,
                &format!("local scope for {}, ~/.claude.json", p.display()),
                server_port,
            ));
        }
        servers.extend(kg_servers(
            &read_lenient(&p.join(".mcp.json")),
            &format!("project scope, {}", p.join(".mcp.json").display()),
            server_port,
        ));
    }
    if let Some(id) = &plugin_enabled {
        for install in plugins.iter().filter(|i| &i.id == id) {
            if let Some(dir) = &install.install_path {
                servers.extend(kg_servers(
                    &read_lenient(&dir.join(".mcp.json")),
                    &format!("plugin {id}"),
                    server_port,
                ));
            }
        }
    }
    Wiring {
        plugins,
        plugin_enabled,
        hooks: found_hooks(home, project),
        servers,
    }
}

/// What a hook should do, given how Claude Code is wired for its project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDuty {
    /// Answer as usual.
    Answer,
    /// Answer, and tell the user (a `systemMessage`) that the memory is wired twice.
    AnswerAndWarn(String),
    /// Print nothing: the other route's hook answers this event.
    StandAside,
}

/// The plugin's hooks stand aside when hooks of the installer (or by hand) are also
/// configured for the same event, so only one answers and the preload comes once; the
/// installer's hooks then warn at session start. Settings files decide, not timing:
/// Claude Code runs both at the same moment.
pub fn hook_duty(home: &Path, project: Option<&Path>, via_plugin: bool, event: &str) -> HookDuty {
    let Some(claude_event) = claude_event(event) else {
        return HookDuty::Answer;
    };
    if via_plugin {
        let other = found_hooks(home, project).into_iter().any(|h| {
            h.event == claude_event
                && !h.courier.via_plugin
                && h.courier.event.as_deref() == Some(event)
                && h.courier.runnable()
        });
        return if other {
            HookDuty::StandAside
        } else {
            HookDuty::Answer
        };
    }
    // Once per session is enough (and spares every other event the reading).
    if event != "session-start" {
        return HookDuty::Answer;
    }
    match enabled_plugin(home, project) {
        Some(id) => HookDuty::AnswerAndWarn(twice_message(&id)),
        None => HookDuty::Answer,
    }
}

/// The plugin and the installer are both wired: which to remove.
pub fn twice_message(plugin_id: &str) -> String {
    format!(
        "KG Memory is connected to Claude Code twice: by the {plugin_id} plugin and by `kg-memory install claude-code` (hooks in ~/.claude/settings.json). Only the installer's hooks answer, so the memory loads once. Remove one: run `kg-memory uninstall claude-code`, or `claude plugin uninstall {plugin_id}`."
    )
}

/// `kg-memory status`'s account of the wiring: lines to print, and warnings (duplicates,
/// entries that miss the server on `port` over `settings`' storage root).
pub fn wiring_report(w: &Wiring, settings: &Settings, port: u16) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    let default_storage = crate::config::default_storage_root(&settings.home);
    for p in &w.plugins {
        let state = if w.plugin_enabled.as_deref() == Some(&p.id) {
            "enabled"
        } else {
            "installed, not enabled here"
        };
        lines.push(format!("plugin {}: {state}", p.describe()));
    }
    // One line per set of hooks that differ only in their event.
    let mut groups: Vec<(&FoundHook, Vec<&str>)> = Vec::new();
    for h in &w.hooks {
        let same = |g: &&FoundHook| {
            g.file == h.file
                && Courier {
                    event: h.courier.event.clone(),
                    ..g.courier.clone()
                } == h.courier
        };
        match groups.iter_mut().find(|(g, _)| same(g)) {
            Some((_, events)) => events.push(&h.event),
            None => groups.push((h, vec![&h.event])),
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut doubled: Vec<&str> = Vec::new();
    for (h, events) in &groups {
        let c = &h.courier;
        let command = match &c.event {
            Some(e) => h.command.replacen(&format!(" {e}"), " <event>", 1),
            None => h.command.clone(),
        };
        let hook_port = c.port.unwrap_or(DEFAULT_PORT);
        let hook_storage = c.storage.as_deref().unwrap_or(&default_storage);
        lines.push(format!(
            "hooks {} in {}: `{command}` (port {}, storage {})",
            events.join(", "),
            h.file.display(),
            c.port.map_or_else(
                || format!("{DEFAULT_PORT} unless KG_HTTP_PORT says otherwise"),
                |p| p.to_string()
            ),
            c.storage.as_deref().map_or_else(
                || format!(
                    "{} unless KG_STORAGE_ROOT says otherwise",
                    default_storage.display()
                ),
                |s| s.display().to_string()
            ),
        ));
        if !c.via_plugin {
            for e in events {
                if seen.contains(e) && !doubled.contains(e) {
                    doubled.push(e);
                }
                seen.push(e);
            }
        }
        if hook_port != port || hook_storage != settings.storage_root {
            let mut theirs = settings.clone();
            theirs.port = hook_port;
            theirs.storage_root = hook_storage.to_path_buf();
            let their_flags = server_flags(&theirs);
            let status = if their_flags.is_empty() {
                "kg-memory status".to_string()
            } else {
                format!("kg-memory {} status", shell_line(their_flags))
            };
            warnings.push(format!(
                "the hooks in {} reach port {hook_port} over {}, but the server asked here is port {port} over {}. If this server is the one you use, point them at it with `kg-memory install claude-code{}`; otherwise check theirs with `{status}`.",
                h.file.display(),
                hook_storage.display(),
                settings.storage_root.display(),
                install_flags(settings, port),
            ));
        }
    }
    if !doubled.is_empty() {
        warnings.push(format!(
            "{} run `kg-memory hook` more than once, so every answer comes twice. Run `kg-memory install claude-code{}` again to keep one.",
            doubled.join(", "),
            install_flags(settings, port)
        ));
    }
    for s in &w.servers {
        let target = s
            .url
            .clone()
            .or_else(|| s.command.clone())
            .unwrap_or_default();
        lines.push(format!("MCP server \"{}\" ({}): {target}", s.name, s.place));
        if let Some(p) = s.port()
            && p != port
        {
            warnings.push(format!(
                "MCP server \"{}\" ({}) points at port {p}, but the server asked here listens on {port}.",
                s.name, s.place
            ));
        }
    }
    let installer_hooks = w.hooks.iter().any(|h| !h.courier.via_plugin);
    if let Some(id) = &w.plugin_enabled
        && installer_hooks
    {
        warnings.push(twice_message(id));
    }
    let http: Vec<&FoundServer> = w.servers.iter().filter(|s| s.url.is_some()).collect();
    if http.len() > 1 && !(w.plugin_enabled.is_some() && installer_hooks) {
        warnings.push(format!(
            "{} MCP entries reach KG Memory ({}): Claude Code lists the tools once per entry. Keep one.",
            http.len(),
            http.iter()
                .map(|s| format!("\"{}\" in {}", s.name, s.place))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if lines.is_empty() {
        lines.push(format!(
            "not connected: run `kg-memory install claude-code{}`",
            install_flags(settings, port)
        ));
    }
    (lines, warnings)
}

/// ` --port N --storage DIR` for the server on `port` over `settings`' storage root,
/// where those are not the defaults.
fn install_flags(settings: &Settings, port: u16) -> String {
    let mut s = settings.clone();
    s.port = port;
    let flags = server_flags(&s);
    if flags.is_empty() {
        String::new()
    } else {
        format!(" {}", shell_line(flags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(home: &Path) -> Settings {
        let mut s = Settings::from_env().expect("settings");
        s.home = home.to_path_buf();
        s.host = DEFAULT_HOST.into();
        s.port = DEFAULT_PORT;
        s.storage_root = crate::config::default_storage_root(home);
        s
    }

    fn setup(home: &Path) -> Setup {
        let mut s = Setup::new(&settings(home), PathBuf::from("/opt/kg/bin/kg-memory"));
        // Whatever XDG_STATE_HOME says, the record stays inside the test's home.
        s.state_dir = home.join(".state");
        s
    }

    fn record(s: &Setup) -> PathBuf {
        s.record_path()
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
        assert!(
            err.to_string().contains("claude mcp remove -s user kg"),
            "{err}"
        );
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
        assert!(v["mcpServers"]["knowledge-graph"].get("env").is_none());
    }

    #[test]
    fn every_entry_names_a_port_and_storage_root_that_are_not_the_defaults() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        s.settings.port = 9123;
        s.settings.storage_root = home.path().join("my memory");
        let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
        let mcp: Value =
            serde_json::from_str(plan[0].after.as_deref().unwrap_or("")).expect("json");
        assert_eq!(mcp["mcpServers"]["kg"]["url"], "http://127.0.0.1:9123/");
        let hooks: Value =
            serde_json::from_str(plan[1].after.as_deref().unwrap_or("")).expect("json");
        let command = hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            .as_str()
            .expect("command");
        let storage = home.path().join("my memory");
        assert_eq!(
            command,
            format!(
                "/opt/kg/bin/kg-memory hook session-start --port 9123 --storage '{}'",
                storage.display()
            )
        );
        // Read back as a shell would.
        let courier = Courier::parse(command).expect("a courier");
        assert_eq!(
            (
                courier.port,
                courier.storage.as_deref(),
                courier.event.as_deref()
            ),
            (Some(9123), Some(storage.as_path()), Some("session-start"))
        );

        let config = desktop_config(home.path());
        fs::create_dir_all(config.parent().expect("dir")).expect("mkdir");
        let plan = plan_install(Client::ClaudeDesktop, &s).expect("plan");
        let v: Value = serde_json::from_str(plan[0].after.as_deref().unwrap_or("")).expect("json");
        assert_eq!(
            v["mcpServers"]["knowledge-graph"]["env"],
            json!({"KG_HTTP_PORT": "9123", "KG_STORAGE_ROOT": storage.to_string_lossy()})
        );
    }

    #[test]
    fn a_second_install_replaces_its_own_hooks_and_uninstall_finds_them_by_shape() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("first");
        s.exe = PathBuf::from("/usr/local/bin/kg-memory");
        s.settings.port = 9200;
        let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
        assert!(
            plan[0].summary[0].starts_with("point MCP server \"kg\" at http://127.0.0.1:9200/"),
            "{:?}",
            plan[0].summary
        );
        assert!(
            plan[1].summary[0].starts_with(
                "replace SessionStart hook (was `/opt/kg/bin/kg-memory hook session-start`)"
            ),
            "{:?}",
            plan[1].summary
        );
        apply(&plan, 2.0, true).expect("second");
        let settings: Value = serde_json::from_str(
            &fs::read_to_string(home.path().join(".claude/settings.json")).expect("read"),
        )
        .expect("json");
        for (event, _, _) in HOOK_EVENTS {
            assert_eq!(settings["hooks"][event].as_array().map(Vec::len), Some(1));
        }
        // Uninstall with default settings still finds them. (The second install backed
        // up the first one's files, so emptied files stay rather than vanish.)
        let plain = setup(home.path());
        apply(
            &plan_uninstall(Client::ClaudeCode, &plain).expect("plan"),
            3.0,
            false,
        )
        .expect("uninstall");
        for file in [".claude.json", ".claude/settings.json"] {
            assert_eq!(
                fs::read_to_string(home.path().join(file)).expect("read"),
                "{}\n"
            );
        }
    }

    #[test]
    fn refuses_beside_the_plugin_and_names_the_command_that_removes_it() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        fs::create_dir_all(home.path().join(".claude/plugins")).expect("mkdir");
        fs::write(
            home.path().join(".claude/plugins/installed_plugins.json"),
            r#"{"version": 2, "plugins": {"knowledge-graph@kg-memory": [{"scope": "user", "installPath": "/x"}]}}"#,
        )
        .expect("write");
        let err = plan_install(Client::ClaudeCode, &s).expect_err("refused");
        let text = format!("{err:#}");
        assert!(
            text.contains("claude plugin uninstall knowledge-graph@kg-memory`"),
            "{text}"
        );
        assert!(text.contains("Nothing was changed"), "{text}");
        assert!(!home.path().join(".claude.json").exists());
    }

    #[test]
    fn the_plugin_stands_aside_for_the_installers_hooks_which_warn() {
        let home = tempfile::tempdir().expect("home");
        let project = home.path().join("work");
        fs::create_dir_all(&project).expect("mkdir");
        let s = setup(home.path());
        let p = Some(project.as_path());
        assert_eq!(
            hook_duty(home.path(), p, true, "session-start"),
            HookDuty::Answer
        );
        // The installer's hooks, with a binary that exists.
        let exe = home.path().join("kg-memory");
        fs::write(&exe, "").expect("exe");
        let mut s2 = s.clone();
        s2.exe = exe;
        apply(
            &plan_install(Client::ClaudeCode, &s2).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        for event in ["session-start", "prompt-submit", "post-tool"] {
            assert_eq!(hook_duty(home.path(), p, true, event), HookDuty::StandAside);
        }
        assert_eq!(
            hook_duty(home.path(), p, false, "session-start"),
            HookDuty::Answer,
            "no plugin: nothing to warn about"
        );
        // Now the plugin is installed and enabled as well.
        fs::create_dir_all(home.path().join(".claude/plugins")).expect("mkdir");
        fs::write(
            home.path().join(".claude/plugins/installed_plugins.json"),
            r#"{"version": 2, "plugins": {"knowledge-graph@kg-memory": [{"scope": "user", "installPath": "/x"}]}}"#,
        )
        .expect("write");
        let path = home.path().join(".claude/settings.json");
        let mut settings: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        settings["enabledPlugins"] = json!({"knowledge-graph@kg-memory": true});
        fs::write(&path, settings.to_string()).expect("write");
        match hook_duty(home.path(), p, false, "session-start") {
            HookDuty::AnswerAndWarn(m) => {
                assert!(m.contains("`kg-memory uninstall claude-code`"), "{m}");
                assert!(
                    m.contains("`claude plugin uninstall knowledge-graph@kg-memory`"),
                    "{m}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            hook_duty(home.path(), p, false, "prompt-submit"),
            HookDuty::Answer
        );
        // A project that disables the plugin: no warning there.
        fs::create_dir_all(project.join(".claude")).expect("mkdir");
        fs::write(
            project.join(".claude/settings.local.json"),
            r#"{"enabledPlugins": {"knowledge-graph@kg-memory": false}}"#,
        )
        .expect("write");
        assert_eq!(
            hook_duty(home.path(), p, false, "session-start"),
            HookDuty::Answer
        );
        // An installer hook whose binary is gone does not silence the plugin.
        let _ = fs::remove_file(home.path().join("kg-memory"));
        assert_eq!(
            hook_duty(home.path(), p, true, "session-start"),
            HookDuty::Answer
        );
    }

    #[test]
    fn auto_memory_is_turned_off_and_the_users_own_value_comes_back() {
        for (label, users) in [
            ("absent", None),
            ("true", Some(json!(true))),
            ("odd", Some(json!("yes"))),
        ] {
            let home = tempfile::tempdir().expect("home");
            let mut s = setup(home.path());
            s.disable_auto_memory = true;
            fs::create_dir_all(home.path().join(".claude")).expect("mkdir");
            let mut original = json!({"theme": "dark"});
            if let Some(v) = &users {
                original[AUTO_MEMORY] = v.clone();
            }
            let text = format!(
                "{}\n",
                serde_json::to_string_pretty(&original).expect("json")
            );
            let path = home.path().join(".claude/settings.json");
            fs::write(&path, &text).expect("write");
            let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
            assert!(
                plan[1].summary.iter().any(|l| l.contains("auto-memory")),
                "{label}: {:?}",
                plan[1].summary
            );
            apply(&plan, 1.0, true).expect("install");
            let now: Value =
                serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
            assert_eq!(now[AUTO_MEMORY], json!(false), "{label}");
            assert!(record(&s).is_file(), "{label}: the user's value is noted");

            apply(
                &plan_uninstall(Client::ClaudeCode, &s).expect("plan"),
                2.0,
                false,
            )
            .expect("uninstall");
            assert_eq!(fs::read_to_string(&path).expect("read"), text, "{label}");
            assert!(!record(&s).exists(), "{label}");
        }
    }

    #[test]
    fn auto_memory_changed_by_the_user_after_install_is_left_alone() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        s.disable_auto_memory = true;
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        let path = home.path().join(".claude/settings.json");
        let mut v: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        v[AUTO_MEMORY] = json!(true);
        fs::write(&path, v.to_string()).expect("write");
        apply(
            &plan_uninstall(Client::ClaudeCode, &s).expect("plan"),
            2.0,
            false,
        )
        .expect("uninstall");
        let v: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(v, json!({AUTO_MEMORY: true}));
    }

    #[cfg(unix)]
    #[test]
    fn backups_and_rewritten_files_keep_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let claude_json = home.path().join(".claude.json");
        fs::write(&claude_json, r#"{"numStartups": 1}"#).expect("write");
        fs::set_permissions(&claude_json, fs::Permissions::from_mode(0o600)).expect("chmod");
        fs::create_dir_all(home.path().join(".claude")).expect("mkdir");
        let settings = home.path().join(".claude/settings.json");
        fs::write(&settings, "{}").expect("write");
        fs::set_permissions(&settings, fs::Permissions::from_mode(0o644)).expect("chmod");
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        let mode = |p: &Path| fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&claude_json), 0o600);
        assert_eq!(mode(&settings), 0o644);
        let backups: Vec<PathBuf> = fs::read_dir(home.path())
            .expect("ls")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(".claude.json.bak-kg-"))
            .collect();
        assert_eq!(backups.len(), 1);
        assert_eq!(mode(&backups[0]), 0o600);
        let backup = fs::read_dir(home.path().join(".claude"))
            .expect("ls")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("settings.json.bak-kg-"))
            .expect("settings backup");
        assert_eq!(mode(&backup), 0o644);
        // A second install in the same second keeps the first backup.
        let mut s2 = s.clone();
        s2.settings.port = 9300;
        apply(
            &plan_install(Client::ClaudeCode, &s2).expect("plan"),
            1.0,
            true,
        )
        .expect("again");
        let count = fs::read_dir(home.path())
            .expect("ls")
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .contains(".claude.json.bak-kg-")
            })
            .count();
        assert_eq!(count, 2);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_settings_file_stays_a_link() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let real = home.path().join("dotfiles-claude.json");
        fs::write(&real, "{}").expect("write");
        std::os::unix::fs::symlink(&real, home.path().join(".claude.json")).expect("link");
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        assert!(
            fs::symlink_metadata(home.path().join(".claude.json"))
                .expect("stat")
                .file_type()
                .is_symlink()
        );
        assert!(fs::read_to_string(&real).expect("read").contains("\"kg\""));
    }

    #[test]
    fn dry_run_shows_a_diff_with_secrets_redacted() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let claude_json = json!({
            "numStartups": 3,
            "primaryApiKey": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
            "oauthAccount": {"emailAddress": "a@b.c", "accountUuid": "1234"},
            "mcpServers": {
                "github": {"type": "http", "url": "https://api.example.com/mcp?token=abc123def456",
                           "headers": {"Authorization": "Bearer ghp_0123456789abcdefghijklmnopqrstuvwxyz"}},
                "db": {"command": "db-mcp", "args": ["--password", "hunter2", "--api-key=xyz"],
                       "env": {"DB_URL": "postgres://me:pa55@localhost/db", "LOG": "1"}}
            },
            "userID": "4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f"
        });
        fs::write(home.path().join(".claude.json"), claude_json.to_string()).expect("write");
        let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
        let out = describe(&plan, true);
        for secret in [
            "sk-ant-api03",
            "ghp_0123",
            "abc123def456",
            "hunter2",
            "xyz",
            "pa55",
            "4f2a9c1e8b7d",
            "a@b.c",
        ] {
            assert!(!out.contains(secret), "{secret} shown:\n{out}");
        }
        assert!(out.contains("+    \"kg\": {"), "{out}");
        assert!(
            out.contains("+      \"url\": \"http://127.0.0.1:8765/\""),
            "{out}"
        );
        assert!(out.contains("hook session-start"), "{out}");
        assert!(out.contains("/dev/null (a new file)"), "{out}");
        assert!(
            out.contains("rewritten with JSON's standard indentation"),
            "{out}"
        );
        assert!(!out.contains("numStartups"), "far from any change:\n{out}");
        assert!(out.contains("dry run: nothing was written"), "{out}");
        // The redaction is for display only.
        let written: Value =
            serde_json::from_str(plan[0].after.as_deref().unwrap_or("")).expect("json");
        assert_eq!(
            written["mcpServers"]["db"]["args"],
            json!(["--password", "hunter2", "--api-key=xyz"])
        );
    }

    #[test]
    fn redaction_keeps_ordinary_values() {
        let v = redact(json!({
            "theme": "dark",
            "command": "/home/me/.local/bin/kg-memory",
            "url": "http://127.0.0.1:8765/",
            "env": {"KG_HTTP_PORT": "9123", "OTHER": "x"},
            "author": "me",
        }));
        assert_eq!(
            v,
            json!({
                "theme": "dark",
                "command": "/home/me/.local/bin/kg-memory",
                "url": "http://127.0.0.1:8765/",
                "env": {"KG_HTTP_PORT": "9123", "OTHER": REDACTED},
                "author": "me",
            })
        );
    }

    #[test]
    fn couriers_are_read_back_in_any_order_and_others_are_not() {
        let c = Courier::parse("kg-memory --port=9 hook prompt-submit --via plugin").expect("ours");
        assert_eq!(
            (c.port, c.event.as_deref(), c.via_plugin),
            (Some(9), Some("prompt-submit"), true)
        );
        assert!(Courier::parse("\"C:\\kg\\kg-memory.exe\" hook post-tool").is_some());
        let by_hand = Courier::parse("KG_HTTP_PORT=9 kg-memory hook session-start").expect("ours");
        assert_eq!(
            (by_hand.event.as_deref(), by_hand.port),
            (Some("session-start"), Some(9))
        );
        for other in [
            "say done",
            "kg-memory serve",
            "my-kg-memory hook x",
            "'unclosed",
        ] {
            assert!(Courier::parse(other).is_none(), "{other}");
        }
    }

    #[test]
    fn the_report_warns_about_twice_and_mismatched_ports() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        let exe = home.path().join("kg-memory");
        fs::write(&exe, "").expect("exe");
        s.exe = exe;
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
        let w = wiring(home.path(), None, 8765);
        assert_eq!(w.hooks.len(), 3);
        assert_eq!(w.servers.len(), 1);
        let (lines, warnings) = wiring_report(&w, &s.settings, 8765);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("MCP server \"kg\"") && l.contains("http://127.0.0.1:8765/")),
            "{lines:?}"
        );
        // The server runs elsewhere: every entry misses it.
        let (_, warnings) = wiring_report(&w, &s.settings, 9400);
        assert!(
            warnings
                .iter()
                .any(|l| l
                    .contains("points at port 8765, but the server asked here listens on 9400")),
            "{warnings:?}"
        );
        assert!(
            warnings
                .iter()
                .any(|l| l.contains("kg-memory install claude-code --port 9400")),
            "{warnings:?}"
        );
        // And the plugin too.
        fs::create_dir_all(home.path().join(".claude/plugins")).expect("mkdir");
        fs::write(
            home.path().join(".claude/plugins/installed_plugins.json"),
            r#"{"version": 2, "plugins": {"knowledge-graph@kg-memory": [{"scope": "user"}]}}"#,
        )
        .expect("write");
        let path = home.path().join(".claude/settings.json");
        let mut settings: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        settings["enabledPlugins"] = json!({"knowledge-graph@kg-memory": true});
        fs::write(&path, settings.to_string()).expect("write");
        let w = wiring(home.path(), None, 8765);
        let (_, warnings) = wiring_report(&w, &s.settings, 8765);
        assert!(
            warnings
                .iter()
                .any(|l| l.contains("connected to Claude Code twice")),
            "{warnings:?}"
        );
    }

    #[test]
    fn plugin_urls_expand_like_claude_code() {
        assert_eq!(
            expand("http://127.0.0.1:${KG_TEST_SURELY_UNSET_VAR:-8765}/"),
            "http://127.0.0.1:8765/"
        );
        assert_eq!(expand("a${B"), "a${B");
    }
}
