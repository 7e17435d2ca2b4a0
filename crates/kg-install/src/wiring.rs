//! How Claude Code is wired, read back: for `kg-memory status` and the hooks, and to
//! refuse installing a second route beside the plugin.

use crate::InstallError;
use crate::Setup;
use crate::claude_code::CODE_SERVER;
use crate::claude_config::{ClaudeConfig, home_relative};
use crate::courier::{Courier, claude_event, courier_hooks, is_kg_memory};
use crate::desktop::DESKTOP_SERVER;
use crate::files::read_lenient;
use crate::servers::loopback_port;
use kg_server::config::{DEFAULT_PORT, Settings};
use kg_server::launch::{server_flags, shell_line};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The plugin's name in its manifest (`hooks/.claude-plugin/plugin.json`); Claude Code
/// knows it as `knowledge-graph@<marketplace>`.
pub const PLUGIN: &str = "knowledge-graph";

/// One installed copy of the knowledge-graph plugin, from Claude Code's
/// `plugins/installed_plugins.json` (in `~/.claude`, or `$CLAUDE_CONFIG_DIR`).
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
pub fn plugin_installs(claude: &ClaudeConfig) -> Vec<PluginInstall> {
    let file = read_lenient(&claude.installed_plugins());
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
pub(crate) fn settings_files(claude: &ClaudeConfig, project: Option<&Path>) -> Vec<PathBuf> {
    let mut files = vec![claude.settings()];
    // Claude run in the folder holding the user's settings (the home folder, unless
    // CLAUDE_CONFIG_DIR moved them): its project settings are the user's.
    if let Some(p) = project.filter(|p| p.join(".claude") != claude.dir) {
        let same = |a: &Path, b: &Path| match (fs::canonicalize(a), fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same(&p.join(".claude"), &claude.dir) {
            files.push(p.join(".claude/settings.json"));
            files.push(p.join(".claude/settings.local.json"));
        }
    }
    files
}

/// The knowledge-graph plugin's id when it is enabled for `project` (the most specific
/// settings file that says so wins) and installed.
pub fn enabled_plugin(claude: &ClaudeConfig, project: Option<&Path>) -> Option<String> {
    let mut enabled: Map<String, Value> = Map::new();
    for file in settings_files(claude, project) {
        if let Some(Value::Object(e)) = read_lenient(&file).get("enabledPlugins") {
            enabled.extend(e.clone());
        }
    }
    let installed = plugin_installs(claude);
    enabled
        .into_iter()
        .find(|(id, on)| {
            is_our_plugin(id) && *on == Value::Bool(true) && installed.iter().any(|i| i.id == *id)
        })
        .map(|(id, _)| id)
}

/// `install claude-code` next to the plugin would load the memory twice.
pub(crate) fn refuse_beside_plugin(setup: &Setup) -> Result<(), InstallError> {
    let installs = plugin_installs(&setup.claude);
    if installs.is_empty() {
        return Ok(());
    }
    let copies: Vec<String> = installs.iter().map(PluginInstall::describe).collect();
    let removes: Vec<String> = installs
        .iter()
        .map(|i| format!("`{}`", i.uninstall_command()))
        .collect();
    Err(InstallError::NotOurs(format!(
        "the {PLUGIN} plugin is installed in Claude Code: {}. It already connects the MCP server and the hooks; with this installer too, every session would load the memory twice. Nothing was changed. Use one route: keep the plugin (nothing more to do), or remove it with {} and run `kg-memory install claude-code{}` again.",
        copies.join(", "),
        removes.join(" and "),
        install_flags(&setup.settings, setup.settings.port)
    )))
}

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
    /// Where it is configured, in words (`user scope, ~/.claude.json`, or the
    /// `.claude.json` in `$CLAUDE_CONFIG_DIR`).
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
    /// The variables the `env` of Claude Code's settings files sets for its hooks and
    /// the plugin's MCP URL.
    pub env: BTreeMap<String, String>,
}

impl Wiring {
    /// A variable as Claude Code's hooks see it: its settings' `env`, where set.
    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// Every `kg-memory hook` command in the settings files that apply in `project`.
fn found_hooks(claude: &ClaudeConfig, project: Option<&Path>) -> Vec<FoundHook> {
    let mut found = Vec::new();
    for file in settings_files(claude, project) {
        let settings = read_lenient(&file);
        for hook in courier_hooks(&settings) {
            if let Some(courier) = Courier::parse(hook.command) {
                found.push(FoundHook {
                    file: file.clone(),
                    event: hook.event.to_string(),
                    command: hook.command.to_string(),
                    courier,
                });
            }
        }
    }
    found
}

/// The `kg-memory hook` commands that are not the plugin's: the installer's (or
/// written by hand).
pub(crate) fn installer_hooks(claude: &ClaudeConfig, project: Option<&Path>) -> Vec<FoundHook> {
    found_hooks(claude, project)
        .into_iter()
        .filter(|h| !h.courier.via_plugin)
        .collect()
}

/// The variables Claude Code's settings files set for its session (their `env`
/// blocks, user then project then local, the later winning). Claude Code applies them
/// to its hooks and to the `${…}` in a plugin's `.mcp.json`.
pub fn settings_env(files: &[PathBuf]) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for file in files {
        if let Some(Value::Object(vars)) = read_lenient(file).get("env") {
            for (name, value) in vars {
                if let Some(text) = value.as_str() {
                    env.insert(name.clone(), text.to_string());
                }
            }
        }
    }
    env
}

/// `${VAR}` and `${VAR:-default}` expanded as Claude Code expands them in a plugin's
/// `.mcp.json`: from its settings' `env` (`settings_env`), else this process's
/// environment.
fn expand(text: &str, settings_env: &BTreeMap<String, String>) -> String {
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
            &settings_env
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_string()),
        );
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

fn kg_servers(
    map: &Map<String, Value>,
    place: &str,
    server_port: u16,
    env: &BTreeMap<String, String>,
) -> Vec<FoundServer> {
    let Some(Value::Object(servers)) = map.get("mcpServers") else {
        return Vec::new();
    };
    servers
        .iter()
        .filter_map(|(name, entry)| {
            let url = entry["url"].as_str().map(|u| expand(u, env));
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
pub fn wiring(claude: &ClaudeConfig, project: Option<&Path>, server_port: u16) -> Wiring {
    let plugins = plugin_installs(claude);
    let plugin_enabled = enabled_plugin(claude, project);
    let env = settings_env(&settings_files(claude, project));
    let mut servers = Vec::new();
    let claude_json = read_lenient(&claude.json);
    let shown_json = claude.show(&claude.json);
    servers.extend(kg_servers(
        &claude_json,
        &format!("user scope, {shown_json}"),
        server_port,
        &env,
    ));
    if let Some(p) = project {
        if let Some(Value::Object(local)) = claude_json
            .get("projects")
            .and_then(|ps| ps.get(p.to_string_lossy().as_ref()))
        {
            servers.extend(kg_servers(
                local,
                &format!("local scope for {}, {shown_json}", p.display()),
                server_port,
                &env,
            ));
        }
        servers.extend(kg_servers(
            &read_lenient(&p.join(".mcp.json")),
            &format!("project scope, {}", p.join(".mcp.json").display()),
            server_port,
            &env,
        ));
    }
    if let Some(id) = &plugin_enabled {
        for install in plugins.iter().filter(|i| &i.id == id) {
            if let Some(dir) = &install.install_path {
                servers.extend(kg_servers(
                    &read_lenient(&dir.join(".mcp.json")),
                    &format!("plugin {id}"),
                    server_port,
                    &env,
                ));
            }
        }
    }
    Wiring {
        plugins,
        plugin_enabled,
        hooks: found_hooks(claude, project),
        servers,
        env,
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
pub fn hook_duty(
    claude: &ClaudeConfig,
    project: Option<&Path>,
    via_plugin: bool,
    event: &str,
) -> HookDuty {
    let Some(claude_event) = claude_event(event) else {
        return HookDuty::Answer;
    };
    if via_plugin {
        let other = found_hooks(claude, project).into_iter().any(|h| {
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
    match enabled_plugin(claude, project) {
        Some(id) => HookDuty::AnswerAndWarn(twice_message(&id, &claude.show(&claude.settings()))),
        None => HookDuty::Answer,
    }
}

/// The plugin and the installer (whose hooks are in `hooks_file`, as shown to the user)
/// are both wired: which to remove.
pub fn twice_message(plugin_id: &str, hooks_file: &str) -> String {
    format!(
        "KG Memory is connected to Claude Code twice: by the {plugin_id} plugin and by `kg-memory install claude-code` (hooks in {hooks_file}). Only the installer's hooks answer, so the memory loads once. Remove one: run `kg-memory uninstall claude-code`, or `claude plugin uninstall {plugin_id}`."
    )
}

/// `kg-memory status`'s account of the wiring: lines to print, and warnings (duplicates,
/// entries that miss the server on `port` over `settings`' storage root).
pub fn wiring_report(w: &Wiring, settings: &Settings, port: u16) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    let default_storage = kg_server::config::default_storage_root(&settings.home);
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
        // A hook without flags reads the variables Claude Code's settings give it.
        let env_port = w.var("KG_HTTP_PORT").and_then(|p| p.trim().parse().ok());
        let env_storage = w.var("KG_STORAGE_ROOT").map(PathBuf::from);
        let hook_port = c.port.or(env_port).unwrap_or(DEFAULT_PORT);
        let hook_storage = c
            .storage
            .clone()
            .or_else(|| env_storage.clone())
            .unwrap_or_else(|| default_storage.clone());
        let hook_storage = hook_storage.as_path();
        let from_settings = "from the env in Claude Code's settings";
        lines.push(format!(
            "hooks {} in {}: `{command}` (port {}, storage {})",
            events.join(", "),
            h.file.display(),
            match (c.port, env_port) {
                (Some(p), _) => p.to_string(),
                (None, Some(p)) => format!("{p}, KG_HTTP_PORT {from_settings}"),
                (None, None) => format!("{DEFAULT_PORT} unless KG_HTTP_PORT says otherwise"),
            },
            match (&c.storage, &env_storage) {
                (Some(s), _) => s.display().to_string(),
                (None, Some(s)) => format!("{}, KG_STORAGE_ROOT {from_settings}", s.display()),
                (None, None) => format!(
                    "{} unless KG_STORAGE_ROOT says otherwise",
                    default_storage.display()
                ),
            },
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
    let installer_hook = w.hooks.iter().find(|h| !h.courier.via_plugin);
    let installer_hooks = installer_hook.is_some();
    if let Some(id) = &w.plugin_enabled
        && let Some(hook) = installer_hook
    {
        warnings.push(twice_message(
            id,
            &home_relative(&hook.file, &settings.home),
        ));
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
    use crate::tests::setup;
    use crate::{Client, apply, plan_install};
    use serde_json::json;
    use std::fs;

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

    /// Install for Claude Code with `s`, its program a file that exists in `home`.
    fn install_with_program(s: &mut Setup, home: &Path) {
        let exe = home.join("kg-memory");
        fs::write(&exe, "").expect("exe");
        s.exe = exe;
        apply(
            &plan_install(Client::ClaudeCode, s).expect("plan"),
            1.0,
            true,
        )
        .expect("install");
    }

    #[test]
    fn the_plugin_stands_aside_for_the_installers_hooks_which_warn() {
        let home = tempfile::tempdir().expect("home");
        let project = home.path().join("work");
        fs::create_dir_all(&project).expect("mkdir");
        let s = setup(home.path());
        let p = Some(project.as_path());
        assert_eq!(
            hook_duty(&s.claude, p, true, "session-start"),
            HookDuty::Answer
        );
        // The installer's hooks, with a binary that exists.
        install_with_program(&mut s.clone(), home.path());
        for event in ["session-start", "prompt-submit", "post-tool"] {
            assert_eq!(hook_duty(&s.claude, p, true, event), HookDuty::StandAside);
        }
        assert_eq!(
            hook_duty(&s.claude, p, false, "session-start"),
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
        match hook_duty(&s.claude, p, false, "session-start") {
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
            hook_duty(&s.claude, p, false, "prompt-submit"),
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
            hook_duty(&s.claude, p, false, "session-start"),
            HookDuty::Answer
        );
        // An installer hook whose binary is gone does not silence the plugin.
        let _ = fs::remove_file(home.path().join("kg-memory"));
        assert_eq!(
            hook_duty(&s.claude, p, true, "session-start"),
            HookDuty::Answer
        );
    }

    #[test]
    fn the_report_warns_about_twice_and_mismatched_ports() {
        let home = tempfile::tempdir().expect("home");
        let mut s = setup(home.path());
        install_with_program(&mut s, home.path());
        let w = wiring(&s.claude, None, 8765);
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
        let w = wiring(&s.claude, None, 8765);
        let (_, warnings) = wiring_report(&w, &s.settings, 8765);
        assert!(
            warnings
                .iter()
                .any(|l| l.contains("connected to Claude Code twice")),
            "{warnings:?}"
        );
    }

    #[test]
    fn with_claude_config_dir_hooks_and_plugins_are_found_there_only() {
        let home = tempfile::tempdir().expect("home");
        // `<tmp>/.claude` as CLAUDE_CONFIG_DIR, so that Claude run in `<tmp>` reads it
        // both as user and as project settings.
        let outer = tempfile::tempdir().expect("outer");
        let config = outer.path().join(".claude");
        fs::create_dir_all(&config).expect("mkdir");
        let mut s = setup(home.path());
        s.claude = ClaudeConfig::new(home.path(), Some(config.as_os_str()));
        install_with_program(&mut s, home.path());

        let w = wiring(&s.claude, None, 8765);
        assert_eq!(w.hooks.len(), 3, "{w:?}");
        assert!(
            w.hooks
                .iter()
                .all(|h| h.file == config.join("settings.json"))
        );
        let place = format!("user scope, {}", config.join(".claude.json").display());
        assert_eq!(
            w.servers
                .iter()
                .map(|f| f.place.as_str())
                .collect::<Vec<_>>(),
            [place.as_str()]
        );
        // Run in the folder holding CLAUDE_CONFIG_DIR: the same file, counted once.
        assert_eq!(wiring(&s.claude, Some(outer.path()), 8765).hooks.len(), 3);
        // Run in the home folder: ~/.claude is a project's settings there, not the user's.
        fs::create_dir_all(home.path().join(".claude")).expect("mkdir");
        fs::copy(
            config.join("settings.json"),
            home.path().join(".claude/settings.json"),
        )
        .expect("copy");
        assert_eq!(
            wiring(&s.claude, Some(home.path()), 8765).hooks.len(),
            6,
            "user and project settings"
        );
        fs::remove_dir_all(home.path().join(".claude")).expect("rm");
        // The default place holds nothing.
        assert_eq!(
            wiring(&ClaudeConfig::in_home(home.path()), None, 8765),
            Wiring::default()
        );

        // The plugin, installed and enabled in CLAUDE_CONFIG_DIR.
        fs::create_dir_all(config.join("plugins")).expect("mkdir");
        fs::write(
            config.join("plugins/installed_plugins.json"),
            r#"{"version": 2, "plugins": {"knowledge-graph@kg-memory": [{"scope": "user"}]}}"#,
        )
        .expect("write");
        let path = config.join("settings.json");
        let mut settings: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
        settings["enabledPlugins"] = json!({"knowledge-graph@kg-memory": true});
        fs::write(&path, settings.to_string()).expect("write");
        assert_eq!(
            enabled_plugin(&s.claude, None).as_deref(),
            Some("knowledge-graph@kg-memory")
        );
        assert_eq!(plugin_installs(&s.claude).len(), 1);
        assert_eq!(
            hook_duty(&s.claude, None, true, "session-start"),
            HookDuty::StandAside
        );
        match hook_duty(&s.claude, None, false, "session-start") {
            HookDuty::AnswerAndWarn(m) => {
                assert!(m.contains(&format!("(hooks in {})", path.display())), "{m}")
            }
            other => panic!("{other:?}"),
        }
        let (_, warnings) = wiring_report(&wiring(&s.claude, None, 8765), &s.settings, 8765);
        assert!(
            warnings
                .iter()
                .any(|l| l.contains(&format!("(hooks in {})", path.display()))),
            "{warnings:?}"
        );
        // And installing again is refused, the plugin being there.
        let err = plan_install(Client::ClaudeCode, &s).expect_err("refused");
        assert!(
            format!("{err:#}").contains("plugin is installed"),
            "{err:#}"
        );
        // Seen from the default place, none of it exists.
        let plain = ClaudeConfig::in_home(home.path());
        assert_eq!(enabled_plugin(&plain, None), None);
        assert_eq!(
            hook_duty(&plain, None, true, "session-start"),
            HookDuty::Answer
        );
    }

    #[test]
    fn plugin_urls_expand_like_claude_code() {
        let none = BTreeMap::new();
        assert_eq!(
            expand("http://127.0.0.1:${KG_TEST_SURELY_UNSET_VAR:-8765}/", &none),
            "http://127.0.0.1:8765/"
        );
        assert_eq!(expand("a${B", &none), "a${B");
        // The settings' `env` wins, as Claude Code applies it to its own environment.
        let settings =
            BTreeMap::from([("KG_TEST_SURELY_UNSET_VAR".to_string(), "9124".to_string())]);
        assert_eq!(
            expand(
                "http://127.0.0.1:${KG_TEST_SURELY_UNSET_VAR:-8765}/",
                &settings
            ),
            "http://127.0.0.1:9124/"
        );
    }
}
