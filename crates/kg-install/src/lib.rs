//! `kg-memory install | uninstall claude-code | claude-desktop | codex | gemini
//! [--dry-run]`: register the memory in each agent's own configuration files, and read
//! back how each is wired (for `status`, `doctor`, `setup` and for the hooks, which
//! must not answer twice).
//!
//! Installing merges our entries into the existing files and never replaces an entry
//! of someone else's; each file it changes is backed up first, keeping the file's
//! mode. Every entry names the server's host, port and storage root where they are not
//! the defaults, so a hook never depends on the `KG_*` variables of whatever shell
//! started Claude. Uninstalling removes exactly what installing added — and when
//! nothing else changed meanwhile, the file comes back byte for byte (from the backup),
//! or disappears if we created it.
//!
//! The parts, one concept each: `claude_config` says where Claude Code keeps its user
//! configuration (`~/.claude`, or `$CLAUDE_CONFIG_DIR`); `files` reads Claude's configuration files, backs them
//! up and writes them back; `claude_code` and `desktop` hold each client's entries, and
//! `servers` the MCP server entry both merge among the user's own; `courier` writes the
//! `kg-memory hook` command line and reads it back; `auto_memory` is
//! `--disable-auto-memory`; `dry_run` puts a plan in words, with a redacted diff;
//! `wiring` reads back how Claude Code reaches KG Memory, for `kg-memory status`, for
//! the hooks, and to refuse a second route. Planning (`plan_install`, `plan_uninstall`)
//! stays here, where the steps for every client can be read together.

mod auto_memory;
mod claude_code;
mod claude_config;
mod codex;
mod courier;
mod desktop;
mod dry_run;
mod error;
mod files;
pub mod gemini;
mod hand_added;
mod installed;
mod servers;
mod stable;
mod wiring;

pub use auto_memory::AUTO_MEMORY;
pub use claude_config::{CLAUDE_CONFIG_DIR, ClaudeConfig};
pub use codex::{
    CODEX_HOME, CodexHome, CodexWiring, codex_hook_trust, codex_installed_target, codex_server_url,
    codex_wiring,
};
pub use courier::{Courier, claude_event};
pub use dry_run::{DRY_RUN_FOOTER, describe, describe_changes, redact};
pub use files::apply;

/// The name of Claude Desktop's entry for KG Memory.
pub const DESKTOP_SERVER_NAME: &str = DESKTOP_SERVER;

/// Claude Desktop's configuration file under `home`.
pub fn desktop_config_path(home: &Path) -> PathBuf {
    desktop_config(home)
}
pub use installed::{InstalledTarget, installed_target};
pub use stable::{
    ProgramUser, in_build_tree, place_program, program_in_place, release_program, stable_path,
    user_bin_dir,
};
pub use wiring::{
    FoundHook, FoundServer, HookDuty, PLUGIN, PluginInstall, Wiring, enabled_plugin, hook_duty,
    plugin_installs, settings_env, twice_message, wiring, wiring_report,
};

use auto_memory::{disable_auto_memory, restore_auto_memory};
use claude_code::{
    CODE_SERVER, add_hook_events, add_hooks, code_entry, is_code_entry, remove_hooks,
};
use codex::{
    CODEX_HOOK_EVENTS, CODEX_SERVER, codex_server_url as toml_server_url, has_codex_server,
    read_toml, remove_codex_server, same_but_blank_lines, set_codex_server, with_instructions,
    without_instructions,
};
use desktop::{DESKTOP_SERVER, desktop_config, desktop_entry, is_desktop_entry};
pub use error::InstallError;
use files::{in_file, latest_backup, pretty, read_object};
use hand_added::{Existing, HAND_ADDED, existing_entry, recorded_as_hand_added};
use kg_server::config::Settings;
use serde_json::{Map, Value};
use servers::{add_server, remove_server};
use std::path::{Path, PathBuf};
use wiring::refuse_beside_plugin;

/// Which client to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeCode,
    ClaudeDesktop,
    Codex,
    Gemini,
}

impl Client {
    /// Every client the installer knows, in the order `setup` goes through them.
    pub const ALL: [Client; 4] = [
        Client::ClaudeCode,
        Client::Codex,
        Client::Gemini,
        Client::ClaudeDesktop,
    ];

    pub fn parse(name: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its name on the command line (`kg-memory install <name>`).
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// The agent's own name, for people.
    pub fn title(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Codex => "Codex CLI",
            Client::Gemini => "Gemini CLI",
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
    /// The build output `place_program` copies to `exe` first (None: `exe` is an
    /// installed program).
    pub copy_from: Option<PathBuf>,
    /// `install claude-code --disable-auto-memory`: also turn off Claude Code's own
    /// auto-memory (uninstall puts the user's value back).
    pub disable_auto_memory: bool,
    /// Where install notes what uninstall must restore (the server's state folder).
    pub state_dir: PathBuf,
    /// Where Claude Code keeps its user configuration (`CLAUDE_CONFIG_DIR` honoured).
    pub claude: ClaudeConfig,
    /// Codex CLI's home (`CODEX_HOME` honoured).
    pub codex: CodexHome,
    /// Gemini CLI's user settings file (`GEMINI_CLI_HOME` honoured).
    pub gemini_settings: PathBuf,
}

impl Setup {
    pub fn new(settings: &Settings, exe: PathBuf) -> Setup {
        Setup {
            settings: settings.clone(),
            exe,
            copy_from: None,
            disable_auto_memory: false,
            state_dir: settings.state_dir(),
            claude: ClaudeConfig::from_env(&settings.home),
            codex: CodexHome::from_env(&settings.home),
            gemini_settings: gemini::settings_path(&settings.home),
        }
    }

    /// The setup for the program at `current` (this process's own path): it names
    /// itself when installed, and a copy in `~/.local/bin` when it runs from a build
    /// folder (`place_program` makes the copy).
    /// This setup with the state folder and every agent's files inside `home`,
    /// whatever `XDG_STATE_HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME` and
    /// `GEMINI_CLI_HOME` say (tests in a temporary home).
    pub fn inside(self, home: &Path) -> Setup {
        Setup {
            state_dir: home.join(".state"),
            claude: ClaudeConfig::in_home(home),
            codex: CodexHome::in_home(home),
            gemini_settings: home.join(".gemini/settings.json"),
            ..self
        }
    }

    pub fn for_program(settings: &Settings, current: &Path) -> Setup {
        let (exe, copy_from) = stable_path(current, &settings.home);
        Setup {
            copy_from,
            ..Setup::new(settings, exe)
        }
    }

    fn home(&self) -> &Path {
        &self.settings.home
    }

    /// The MCP endpoint clients connect to.
    pub fn url(&self) -> String {
        format!("{}/", self.settings.base_url())
    }

    /// Where install notes what it must restore at uninstall: one record per Claude
    /// Code configuration, as each `CLAUDE_CONFIG_DIR` has its own settings to restore.
    fn record_path(&self) -> PathBuf {
        self.record_for(
            "claude-code",
            &self.claude.dir,
            self.claude != ClaudeConfig::in_home(self.home()),
        )
    }

    /// The same for Codex: one record per Codex home.
    fn codex_record_path(&self) -> PathBuf {
        self.record_for(
            "codex",
            &self.codex.dir,
            self.codex != CodexHome::in_home(self.home()),
        )
    }

    fn record_for(&self, client: &str, dir: &Path, moved: bool) -> PathBuf {
        if !moved {
            return self.state_dir.join(format!("{client}-install.json"));
        }
        // The folder in the name, every other character a dash (as Claude Code names
        // a project's folder after its path).
        let folder: String = dir
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.state_dir
            .join(format!("{client}-install{folder}.json"))
    }
}

/// What installing would change.
pub fn plan_install(client: Client, setup: &Setup) -> Result<Vec<FileChange>, InstallError> {
    match client {
        Client::ClaudeCode => {
            refuse_beside_plugin(setup)?;
            let mcp_path = setup.claude.json.clone();
            let (before, mut map) = read_object(&mcp_path)?;
            let settings_path = setup.claude.settings();
            let (settings_before, mut settings) = read_object(&settings_path)?;
            let record_path = setup.record_path();
            let (record_before, mut record) = read_object(&record_path)?;
            let mut record_summary = Vec::new();
            let mut summary = Vec::new();
            match existing_entry(&map, &settings, &record, setup)? {
                Existing::Ours => {
                    add_server(
                        &mut map,
                        CODE_SERVER,
                        code_entry(setup),
                        is_code_entry,
                        "`claude mcp remove -s user kg`",
                        &mut summary,
                    )
                    .map_err(in_file(&mcp_path))?;
                    // The hand-added entry is gone: the one added now is ours.
                    if record.shift_remove(HAND_ADDED).is_some() {
                        record_summary.push(format!(
                            "note that the MCP server \"{CODE_SERVER}\" is now the installer's"
                        ));
                    }
                }
                Existing::KeptAsAdded if recorded_as_hand_added(&record) => {}
                Existing::KeptAsAdded => {
                    record.insert(HAND_ADDED.into(), Value::Bool(true));
                    record_summary.push(format!(
                        "keep the MCP server \"{CODE_SERVER}\" you added by hand as it is (uninstall leaves it too)"
                    ));
                }
            }
            let mcp = change(mcp_path, before, &map, summary);
            let mut summary = Vec::new();
            add_hooks(&mut settings, setup, &mut summary).map_err(in_file(&settings_path))?;
            if setup.disable_auto_memory {
                disable_auto_memory(
                    &mut settings,
                    &mut record,
                    &mut summary,
                    &mut record_summary,
                );
            }
            let mut changes = vec![
                mcp,
                change(settings_path, settings_before, &settings, summary),
            ];
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
        Client::Codex => plan_codex_install(setup),
        Client::ClaudeDesktop => {
            let path = desktop_config(setup.home());
            if !path.parent().is_some_and(Path::is_dir) {
                return Err(InstallError::NotOurs(format!(
                    "Claude Desktop's configuration folder {} does not exist; install and start Claude Desktop once, then run `kg-memory install claude-desktop` again",
                    path.parent().unwrap_or(&path).display()
                )));
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
            )
            .map_err(in_file(&path))?;
            Ok(vec![change(path, before, &map, summary)])
        }
        Client::Gemini => gemini::install(setup),
    }
}

pub(crate) fn change(
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

/// Takes our entries out of a parsed file, noting what it removed.
pub(crate) type Remover<'a> = dyn Fn(&mut Map<String, Value>, &mut Vec<String>) + 'a;

/// The change that takes our entries out of the JSON file at `path` (`None` when it
/// holds none): back to the bytes it had before install when nothing else changed
/// since (from the backup), gone when install created it, else the rest kept.
pub(crate) fn take_out(
    path: PathBuf,
    remove: &Remover<'_>,
) -> Result<Option<FileChange>, InstallError> {
    let (before, mut map) = read_object(&path)?;
    let Some(before_text) = before else {
        return Ok(None);
    };
    let mut summary = Vec::new();
    remove(&mut map, &mut summary);
    if summary.is_empty() {
        return Ok(None);
    }
    let after = match latest_backup(&path) {
        Some(original) => match serde_json::from_str::<Value>(&original) {
            Ok(v) if v == Value::Object(map.clone()) => Some(original),
            _ => Some(pretty(&map)),
        },
        None if map.is_empty() => None, // we created this file
        None => Some(pretty(&map)),
    };
    Ok(Some(FileChange {
        path,
        before: Some(before_text),
        after,
        summary,
        ours: false,
    }))
}

/// What uninstalling would change.
pub fn plan_uninstall(client: Client, setup: &Setup) -> Result<Vec<FileChange>, InstallError> {
    let mut changes = Vec::new();
    let mut edit = |path: PathBuf, remove: &Remover<'_>| -> Result<(), InstallError> {
        changes.extend(take_out(path, remove)?);
        Ok(())
    };
    match client {
        Client::ClaudeCode => {
            let record_path = setup.record_path();
            let (record_text, record) = read_object(&record_path)?;
            // An entry the person added by hand stays theirs.
            if !recorded_as_hand_added(&record) {
                edit(setup.claude.json.clone(), &|m, s| {
                    remove_server(m, CODE_SERVER, is_code_entry, s)
                })?;
            }
            edit(setup.claude.settings(), &|m, s| {
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
        Client::Codex => {
            // Codex's trust in our hooks is keyed by where they sit: read before they go.
            let trusted = codex::trust_keys(
                &setup.codex.hooks(),
                &files::read_lenient(&setup.codex.hooks()),
            );
            edit(setup.codex.hooks(), &|m, s| remove_hooks(m, s))?;
            let record_path = setup.codex_record_path();
            let (record_text, record) = read_object(&record_path)?;
            let path = setup.codex.config();
            let (before, mut doc) = read_toml(&path)?;
            let mut summary = Vec::new();
            codex::remove_hook_trust(&mut doc, &trusted, &mut summary);
            // An entry the person added by hand stays theirs.
            if !recorded_as_hand_added(&record) {
                remove_codex_server(&mut doc, &mut summary);
            }
            if let (Some(before), false) = (before, summary.is_empty()) {
                let after = doc.to_string();
                changes.push(FileChange {
                    after: restored(&path, &after),
                    path,
                    before: Some(before),
                    summary,
                    ours: false,
                });
            }
            let path = setup.codex.agents();
            if let Ok(before) = std::fs::read_to_string(&path)
                && let Some(after) = without_instructions(&before)
            {
                changes.push(FileChange {
                    after: restored(&path, &after),
                    path,
                    before: Some(before),
                    summary: vec!["remove the KG Memory instructions".into()],
                    ours: false,
                });
            }
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
        Client::Gemini => return gemini::uninstall(setup),
    }
    Ok(changes)
}

/// A text file with our part taken out: its original bytes when nothing but blank
/// lines differs from the backup install made, nothing (delete it) when install
/// created it and nothing else is in it, else what is left.
fn restored(path: &Path, after: &str) -> Option<String> {
    match latest_backup(path) {
        Some(original) if same_but_blank_lines(&original, after) => Some(original),
        None if after.trim().is_empty() => None,
        _ => Some(after.to_string()),
    }
}

/// What `install codex` would change: the MCP server in `config.toml` (a hand-added
/// `kg` entry at this server's address is kept as it is, one elsewhere stops the
/// install), the courier hooks in `hooks.json`, the instructions in `AGENTS.md`.
fn plan_codex_install(setup: &Setup) -> Result<Vec<FileChange>, InstallError> {
    let url = setup.url();
    let config_path = setup.codex.config();
    let (config_before, mut doc) = read_toml(&config_path)?;
    let record_path = setup.codex_record_path();
    let (record_before, mut record) = read_object(&record_path)?;
    let mut record_summary = Vec::new();
    let mut summary = Vec::new();
    // Ours when install's record is there and says nothing of a hand-added entry.
    let ours = record_before.is_some() && !recorded_as_hand_added(&record);
    match toml_server_url(&doc) {
        _ if !has_codex_server(&doc) || ours => {
            set_codex_server(&mut doc, &url, &mut summary)?;
            if record.shift_remove(HAND_ADDED).is_some() || record_before.is_none() {
                record.insert("mcpServer".into(), Value::String(CODEX_SERVER.into()));
                record_summary.push(format!(
                    "note that the MCP server \"{CODEX_SERVER}\" is the installer's"
                ));
            }
        }
        Some(theirs) if theirs == url => {
            if !recorded_as_hand_added(&record) {
                record.insert(HAND_ADDED.into(), Value::Bool(true));
                record_summary.push(format!(
                    "keep the MCP server \"{CODEX_SERVER}\" you added by hand as it is (uninstall leaves it too)"
                ));
            }
        }
        theirs => {
            return Err(hand_added::added_by_hand_elsewhere(
                &config_path,
                "`codex mcp add`, or an edit of config.toml",
                theirs.as_deref(),
                "codex",
                &format!("codex mcp remove {CODEX_SERVER}"),
                &url,
            ));
        }
    }
    let config_after = if summary.is_empty() {
        config_before.clone()
    } else {
        Some(doc.to_string())
    };
    let mut changes = vec![FileChange {
        path: config_path,
        before: config_before,
        after: config_after,
        summary,
        ours: false,
    }];
    let hooks_path = setup.codex.hooks();
    let (hooks_before, mut hooks) = read_object(&hooks_path)?;
    let mut summary = Vec::new();
    add_hook_events(
        &mut hooks,
        setup,
        &CODEX_HOOK_EVENTS,
        Some(codex::VIA_CODEX),
        &mut summary,
    )
    .map_err(in_file(&hooks_path))?;
    changes.push(change(hooks_path, hooks_before, &hooks, summary));
    let agents_path = setup.codex.agents();
    let agents_before = match std::fs::read_to_string(&agents_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(InstallError::io("cannot read", &agents_path, &e)),
    };
    let agents_after = with_instructions(agents_before.as_deref());
    let summary = if agents_before.as_deref() == Some(agents_after.as_str()) {
        Vec::new()
    } else if agents_before
        .as_deref()
        .is_some_and(codex::instructions_current)
        || agents_before
            .as_deref()
            .and_then(without_instructions)
            .is_some()
    {
        vec!["bring the KG Memory instructions up to date".into()]
    } else {
        vec!["add the KG Memory instructions (how to use the memory's tools)".into()]
    };
    changes.push(FileChange {
        after: if summary.is_empty() {
            agents_before.clone()
        } else {
            Some(agents_after)
        },
        path: agents_path,
        before: agents_before,
        summary,
        ours: false,
    });
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use kg_server::config::{DEFAULT_HOST, DEFAULT_PORT};
    use serde_json::json;
    use std::fs;

    fn settings(home: &Path) -> Settings {
        let mut s = Settings::from_env().expect("settings");
        s.home = home.to_path_buf();
        s.host = DEFAULT_HOST.into();
        s.port = DEFAULT_PORT;
        s.storage_root = kg_server::config::default_storage_root(home);
        s
    }

    /// A setup inside a temporary home: the tests beside each part of the installer share it.
    pub(crate) fn setup(home: &Path) -> Setup {
        Setup::new(&settings(home), PathBuf::from("/opt/kg/bin/kg-memory")).inside(home)
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

    /// Every `.claude*` name directly in `home`.
    fn claude_names_in(home: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(home)
            .expect("read home")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".claude"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn with_claude_config_dir_install_and_uninstall_touch_only_that_folder() {
        let home = tempfile::tempdir().expect("home");
        let config = tempfile::tempdir().expect("CLAUDE_CONFIG_DIR");
        let mut s = setup(home.path());
        s.claude = ClaudeConfig::new(home.path(), Some(config.path().as_os_str()));
        s.disable_auto_memory = true;
        let settings_path = config.path().join("settings.json");
        let claude_json = config.path().join(".claude.json");
        // The user's own file there: kept, and back byte for byte after uninstall.
        let users = "{\"numStartups\": 7}";
        fs::write(&claude_json, users).expect("write");

        let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
        let paths: Vec<&Path> = plan.iter().map(|c| c.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                claude_json.as_path(),
                settings_path.as_path(),
                s.record_path().as_path()
            ]
        );
        apply(&plan, 1.0, true).expect("install");
        let mcp: Value =
            serde_json::from_str(&fs::read_to_string(&claude_json).expect("read")).expect("json");
        assert_eq!(mcp["numStartups"], 7);
        assert_eq!(mcp["mcpServers"]["kg"]["url"], "http://127.0.0.1:8765/");
        let hooks: Value =
            serde_json::from_str(&fs::read_to_string(&settings_path).expect("read")).expect("json");
        assert_eq!(
            hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "/opt/kg/bin/kg-memory hook session-start"
        );
        assert_eq!(hooks[AUTO_MEMORY], false);
        assert_eq!(claude_names_in(home.path()), Vec::<String>::new());

        let undo = plan_uninstall(Client::ClaudeCode, &s).expect("plan");
        apply(&undo, 2.0, false).expect("uninstall");
        assert_eq!(fs::read_to_string(&claude_json).expect("read"), users);
        assert!(!settings_path.exists(), "install created it");
        assert!(!s.record_path().exists());
        assert_eq!(claude_names_in(home.path()), Vec::<String>::new());

        // The default place is a different Claude Code configuration: installing
        // there leaves CLAUDE_CONFIG_DIR's files alone, and uninstalling there finds
        // nothing of the other.
        apply(
            &plan_install(Client::ClaudeCode, &s).expect("plan"),
            3.0,
            true,
        )
        .expect("install again");
        let plain = setup(home.path());
        assert_ne!(
            plain.record_path(),
            s.record_path(),
            "one record per configuration"
        );
        assert!(
            plan_uninstall(Client::ClaudeCode, &plain)
                .expect("plan")
                .is_empty(),
            "nothing of ours in ~/.claude"
        );
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
}
