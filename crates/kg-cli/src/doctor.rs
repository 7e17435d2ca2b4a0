//! `kg-memory doctor`: every piece between an agent and its memory checked in turn,
//! each problem said with the exact command (or edit) that fixes it. The caller exits
//! non-zero when a problem is found; notes (things worth knowing, nothing broken) do
//! not count.
//!
//! The pieces: the programs each agent's entries run; the server and who owns its
//! port; the storage root (there, writable, damaged files moved aside); each agent's
//! wiring (Claude Code's routes, Claude Desktop's bridge, Gemini CLI's entry and
//! hooks); hooks seen recently (a
//! session bound to a Claude Code session); sync; and suspected credentials in the
//! memory.

use crate::route_check::{Answerer, mcp_warnings, who_answers};
use kg_install::{ClaudeConfig, Wiring, wiring, wiring_report};
use kg_server::config::Settings;
use kg_server::launch::{serve_command, server_flags, shell_line};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Days without a hook after which a wired route is worth a note.
const HOOK_QUIET_DAYS: f64 = 7.0;

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    Ok(String),
    Note(String),
    /// What is wrong, and the fix (empty when the first already says it).
    Problem(String, String),
}

/// What the doctor found, in order.
#[derive(Debug, Default)]
pub struct Report {
    pub sections: Vec<(String, Vec<Finding>)>,
}

impl Report {
    fn section(&mut self, name: &str, findings: Vec<Finding>) {
        self.sections.push((name.to_string(), findings));
    }

    pub fn problems(&self) -> usize {
        self.sections
            .iter()
            .flat_map(|(_, f)| f)
            .filter(|f| matches!(f, Finding::Problem(..)))
            .count()
    }

    /// The report as printed.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, findings) in &self.sections {
            let _ = writeln!(out, "{name}:");
            for f in findings {
                match f {
                    Finding::Ok(text) => {
                        let _ = writeln!(out, "  ok    {text}");
                    }
                    Finding::Note(text) => {
                        let _ = writeln!(out, "  note  {text}");
                    }
                    Finding::Problem(what, fix) => {
                        let _ = writeln!(out, "  FAIL  {what}");
                        if !fix.is_empty() {
                            let _ = writeln!(out, "        fix: {fix}");
                        }
                    }
                }
            }
        }
        let _ = match self.problems() {
            0 => writeln!(out, "No problems found."),
            1 => writeln!(out, "1 problem found."),
            n => writeln!(out, "{n} problems found."),
        };
        out
    }
}

/// Where to look: the server's settings (already pointed at the installed wiring by
/// the caller when nothing else said which server), Claude Code's configuration, the
/// folder a session would start in.
#[derive(Debug)]
pub struct Patient<'a> {
    pub settings: &'a Settings,
    pub claude: &'a ClaudeConfig,
    pub project: Option<&'a Path>,
    /// The current time, seconds since the epoch (for "hooks seen recently").
    pub now: f64,
}

/// Run every check.
pub async fn examine(p: &Patient<'_>) -> Report {
    let mut report = Report::default();
    let settings = p.settings;
    // The holder of the storage root, whatever port it chose; else the configured one.
    let (base, _) = kg_server::root_lock::server_of(settings);
    let w = wiring(p.claude, p.project, settings.port);
    let codex = kg_install::CodexHome::from_env(&settings.home);
    let codex_wired = kg_install::codex_wiring(&codex);

    let gemini_path = kg_install::gemini::settings_path(&settings.home);
    let gemini_wired = kg_install::gemini::gemini_wiring(&gemini_path);
    let gemini_hooks = match &gemini_wired {
        kg_install::gemini::GeminiWiring::Read { hooks, .. } => hooks.clone(),
        _ => Vec::new(),
    };
    let mut programs = programs(&w);
    // Codex's and Gemini CLI's hooks run a program too.
    hook_programs(
        &mut programs,
        ("Codex's", "codex"),
        codex_wired
            .hooks
            .iter()
            .filter_map(|(_, command)| kg_install::Courier::parse(command))
            .map(|c| c.program),
    );
    hook_programs(
        &mut programs,
        ("Gemini CLI's", "gemini"),
        gemini_hooks.iter().map(|(_, c)| c.program.clone()),
    );
    report.section("Programs", programs);

    let answerer = who_answers(&base, settings).await;
    report.section("Server", server(&answerer, settings, &base));
    let up = matches!(answerer, Answerer::Ours(_));

    report.section("Storage root", storage(settings, up, &base).await);

    let mut wiring_findings = Vec::new();
    let (lines, mut warnings) = wiring_report(&w, settings, settings.port);
    warnings.extend(mcp_warnings(&w, settings).await);
    let not_connected = lines.iter().any(|l| l.starts_with("not connected"));
    // Claude Code unconnected is no fault when another agent here has the memory.
    let codex_serves = codex_wired.url.as_deref() == Some(&format!("{}/", settings.base_url()));
    if not_connected && (codex_serves || !gemini_hooks.is_empty()) {
        wiring_findings.push(Finding::Note(format!(
            "Claude Code is not connected (`kg-memory{} install claude-code` connects it)",
            flags(settings)
        )));
    } else if not_connected {
        wiring_findings.push(Finding::Problem(
            "Claude Code is not connected to KG Memory".to_string(),
            format!("`kg-memory{} install claude-code`", flags(settings)),
        ));
    } else {
        for line in &lines {
            wiring_findings.push(Finding::Ok(line.clone()));
        }
    }
    for warning in warnings {
        // Each warning names its own fix.
        wiring_findings.push(Finding::Problem(warning, String::new()));
    }
    if !not_connected && w.hooks.is_empty() && w.plugin_enabled.is_none() {
        wiring_findings.push(Finding::Note(
            "only the MCP tools are wired (by hand): no preload, prompt recall or capture nudges. `kg-memory install claude-code` adds the hooks and keeps your entry.".to_string(),
        ));
    }
    report.section("Claude Code", wiring_findings);
    report.section("Claude Desktop", desktop(settings));
    // Only where Codex is: a machine without it needs no line about it.
    if codex.dir.is_dir() {
        report.section("Codex CLI", codex_findings(&codex, settings, true));
    }
    // Likewise Gemini CLI.
    if gemini_wired != kg_install::gemini::GeminiWiring::Absent {
        report.section("Gemini CLI", gemini(settings, &base, p.project).await);
    }
    report.section(
        "Hooks",
        hooks_seen(
            settings,
            &w,
            !codex_wired.hooks.is_empty() || !gemini_hooks.is_empty(),
            p.now,
        ),
    );
    report.section("Sync", sync(settings));
    if up {
        report.section("Secrets", secrets(&base).await);
    }
    report
}

fn flags(settings: &Settings) -> String {
    let f = server_flags(settings);
    if f.is_empty() {
        String::new()
    } else {
        format!(" {}", shell_line(f))
    }
}

/// A program an entry runs: a path that must be an executable file, or a bare name
/// that must be found on `PATH`.
fn program_problem(program: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return (!runnable(Path::new(program)))
            .then(|| format!("{program} is missing or not executable"));
    }
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| runnable(&dir.join(program))))
        .unwrap_or(false);
    (!found).then(|| format!("`{program}` is not on PATH"))
}

/// Add the programs another agent's hooks run to `out`, each checked (`agent`: whose
/// hooks, and its name for `kg-memory install`); "no agent runs kg-memory" goes.
fn hook_programs(
    out: &mut Vec<Finding>,
    (whose, client): (&str, &str),
    programs: impl IntoIterator<Item = String>,
) {
    let mut seen: Vec<String> = Vec::new();
    for program in programs {
        if seen.contains(&program) {
            continue;
        }
        if seen.is_empty() {
            out.retain(|f| !matches!(f, Finding::Note(_)));
        }
        out.push(match program_problem(&program) {
            None => Finding::Ok(format!("{whose} hooks run {program}")),
            Some(problem) => Finding::Problem(
                format!("{whose} hooks run {program}, but {problem}"),
                format!("`kg-memory install {client}` again from the kg-memory you use"),
            ),
        });
        seen.push(program);
    }
}

fn programs(w: &Wiring) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for hook in &w.hooks {
        let program = hook.courier.program.as_str();
        if seen.contains(&program) {
            continue;
        }
        seen.push(program);
        let whose = if hook.courier.via_plugin {
            "the plugin's hooks run"
        } else {
            "Claude Code's hooks run"
        };
        out.push(match program_problem(program) {
            None => Finding::Ok(format!("{whose} {program}")),
            Some(problem) => Finding::Problem(
                format!("{whose} {program}, but {problem}"),
                if hook.courier.via_plugin {
                    "put kg-memory on PATH (e.g. `cp target/release/kg-memory ~/.local/bin/`)"
                        .to_string()
                } else {
                    "`kg-memory install claude-code` again from the kg-memory you use".to_string()
                },
            ),
        });
    }
    // The plugin's hooks are not in the settings files: they run `kg-memory` from PATH.
    if w.plugin_enabled.is_some() && !seen.contains(&"kg-memory") {
        out.push(match program_problem("kg-memory") {
            None => Finding::Ok("the plugin's hooks run kg-memory (found on PATH)".to_string()),
            Some(problem) => Finding::Problem(
                format!("the plugin's hooks run kg-memory, but {problem}"),
                "put kg-memory on PATH (e.g. `cp target/release/kg-memory ~/.local/bin/`)"
                    .to_string(),
            ),
        });
    }
    for server in w.servers.iter().filter(|s| s.command.is_some()) {
        let command = server.command.as_deref().unwrap_or_default();
        let program = shlex::split(command)
            .and_then(|words| words.into_iter().next())
            .unwrap_or_default();
        if let Some(problem) = program_problem(&program) {
            out.push(Finding::Problem(
                format!(
                    "MCP server \"{}\" ({}) runs {program}, but {problem}",
                    server.name, server.place
                ),
                "`kg-memory install claude-desktop` again from the kg-memory you use".to_string(),
            ));
        }
    }
    if out.is_empty() {
        out.push(Finding::Note("no agent runs kg-memory yet".to_string()));
    }
    out
}

fn server(answerer: &Answerer, settings: &Settings, base: &str) -> Vec<Finding> {
    let port = settings.port;
    vec![match answerer {
        Answerer::Ours(version) => Finding::Ok(format!(
            "KG Memory {version} answers at {base} and holds {}",
            settings.storage_root.display()
        )),
        Answerer::Nobody => Finding::Problem(
            format!("no server answers at {base}: sessions start without memory"),
            format!(
                "`{}` before your coding agents start (or the tray app with Start at login)",
                serve_command(settings)
            ),
        ),
        Answerer::OtherProgram => Finding::Problem(
            format!(
                "port {port} is taken by another program, not KG Memory: no server can start there, so sessions start without memory"
            ),
            format!(
                "stop that program, or move KG Memory to a free port: `kg-memory --port <N> --storage {} install <agent>` for each agent you use (claude-code, codex, gemini), then restart them",
                shell_line([&settings.storage_root])
            ),
        ),
        Answerer::Stranger(why) => Finding::Problem(
            format!("the server at {base} {}", why.why(&settings.storage_root)),
            format!(
                "stop that server, or give this storage root a port of its own: `kg-memory --port <N> --storage {} install claude-code`",
                shell_line([&settings.storage_root])
            ),
        ),
    }]
}

async fn storage(settings: &Settings, up: bool, base: &str) -> Vec<Finding> {
    let root = &settings.storage_root;
    let mut out = Vec::new();
    match std::fs::metadata(root) {
        Err(_) => out.push(Finding::Note(format!(
            "{} does not exist yet; the server creates it on its first start",
            root.display()
        ))),
        Ok(m) if !m.is_dir() => out.push(Finding::Problem(
            format!("{} is not a folder", root.display()),
            "move that file away, or choose another root with --storage".to_string(),
        )),
        // Asked of the file system itself: permission bits alone miss a folder owned by
        // another user, a read-only mount or an ACL.
        Ok(_) if tempfile::tempfile_in(root).is_err() => out.push(Finding::Problem(
            format!(
                "{} is not writable for you: nothing can be saved",
                root.display()
            ),
            format!(
                "`chmod u+w {0}` (and, if another user owns it, `sudo chown -R \"$USER\" {0}`)",
                shell_line([root])
            ),
        )),
        Ok(_) => out.push(Finding::Ok(format!(
            "{} is a writable folder",
            root.display()
        ))),
    }
    for moved in quarantined(root) {
        out.push(Finding::Problem(
            format!("{} did not parse and was moved aside", moved.display()),
            "README, \"Restoring a backup\": take what only that copy holds back by hand, then delete it".to_string(),
        ));
    }
    if up
        && let Ok(body) =
            kg_client::get(&format!("{base}/api/view/graphs"), Duration::from_secs(5)).await
        && let Ok(list) = serde_json::from_str::<Value>(&body)
    {
        let damaged = list["graphs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["damaged"]["moved_to"].is_string())
            .count();
        if damaged == 0 {
            out.push(Finding::Ok("every loaded graph parsed".to_string()));
        }
    }
    out
}

/// Files the store moved aside as damaged (`<file>.corrupt-<time>`), in the root and
/// its projects.
fn quarantined(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(projects) = std::fs::read_dir(root.join("projects")) {
        dirs.extend(projects.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let mut found: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".corrupt-"))
        })
        .collect();
    found.sort();
    found
}

fn desktop(settings: &Settings) -> Vec<Finding> {
    let path = kg_install::desktop_config_path(&settings.home);
    let config = std::fs::read_to_string(&path);
    let Ok(text) = config else {
        return vec![Finding::Note(
            "Claude Desktop is not set up here".to_string(),
        )];
    };
    match serde_json::from_str::<Value>(&text) {
        Err(e) => vec![Finding::Problem(
            format!("{} is not valid JSON ({e}); Claude Desktop ignores it", path.display()),
            "repair the file by hand (its .bak-kg-* copies hold earlier versions)".to_string(),
        )],
        Ok(v) => match v["mcpServers"][kg_install::DESKTOP_SERVER_NAME]["command"].as_str() {
            Some(program) => match program_problem(program) {
                None => vec![Finding::Ok(format!("Claude Desktop runs {program} stdio"))],
                Some(problem) => vec![Finding::Problem(
                    format!("Claude Desktop runs {program}, but {problem}"),
                    "`kg-memory install claude-desktop` again".to_string(),
                )],
            },
            None => vec![Finding::Note(
                "Claude Desktop is installed but not connected (`kg-memory install claude-desktop` connects it)"
                    .to_string(),
            )],
        },
    }
}

/// Gemini CLI's wiring: its `kg` entry reaches this memory's server (at `base`), its
/// hooks name this server and a program that runs. `kg-memory status` shows the same.
pub async fn gemini(settings: &Settings, base: &str, project: Option<&Path>) -> Vec<Finding> {
    use kg_install::gemini::{GeminiWiring, gemini_hook_events, gemini_wiring, settings_path};
    let path = settings_path(&settings.home);
    let install = format!("`kg-memory{} install gemini`", flags(settings));
    let (url, hooks) = match gemini_wiring(&path) {
        GeminiWiring::Absent => {
            return vec![Finding::Note(format!(
                "Gemini CLI is not set up here ({install} connects it)"
            ))];
        }
        GeminiWiring::Unreadable(why) => {
            return vec![Finding::Problem(
                why,
                "repair the file by hand (its .bak-kg-* copies hold earlier versions), then run this again".to_string(),
            )];
        }
        GeminiWiring::Read { url, hooks } => (url, hooks),
    };
    let mut found = Vec::new();
    match &url {
        None => found.push(Finding::Note(format!(
            "Gemini CLI has no KG Memory server in {} ({install} connects it)",
            path.display()
        ))),
        Some(url) => {
            let reached = crate::route_check::base_of(url);
            let answerer = match &reached {
                Some(b) => who_answers(b, settings).await,
                None => Answerer::Nobody,
            };
            let entry = format!(
                "Gemini CLI's MCP server \"kg\" in {} reaches {url}",
                path.display()
            );
            match answerer {
                Answerer::Ours(_) => found.push(Finding::Ok(format!("{entry}, this memory's server"))),
                Answerer::Stranger(why) => found.push(Finding::Problem(
                    format!("{entry}, where the KG Memory server {}: its tools read and write that memory, not this one", why.why(&settings.storage_root)),
                    format!("{install}, or stop the other server"),
                )),
                Answerer::OtherProgram => found.push(Finding::Problem(
                    format!("{entry}, where another program (not KG Memory) listens: the tools cannot connect"),
                    install.clone(),
                )),
                // No server at all is said once, in the server's section.
                Answerer::Nobody if reached.as_deref() == Some(base) => {
                    found.push(Finding::Ok(format!("{entry}, this memory's server's address")))
                }
                Answerer::Nobody => found.push(Finding::Problem(
                    format!("{entry}, where nothing listens; this memory's server is at {base}"),
                    install.clone(),
                )),
            }
        }
    }
    let default_storage = kg_server::config::default_storage_root(&settings.home);
    let events: Vec<&str> = hooks.iter().map(|(e, _)| e.as_str()).collect();
    // One line per server the hooks reach, naming its events.
    let mut elsewhere: Vec<((u16, PathBuf), Vec<&str>)> = Vec::new();
    for (event, courier) in &hooks {
        let port = courier.port.unwrap_or(kg_server::config::DEFAULT_PORT);
        let storage = courier
            .storage
            .clone()
            .unwrap_or_else(|| default_storage.clone());
        if port == settings.port && storage == settings.storage_root {
            continue;
        }
        match elsewhere
            .iter_mut()
            .find(|(target, _)| *target == (port, storage.clone()))
        {
            Some((_, events)) => events.push(event),
            None => elsewhere.push(((port, storage), vec![event])),
        }
    }
    for ((port, storage), events) in elsewhere {
        found.push(Finding::Problem(
            format!(
                "Gemini CLI's hooks {} reach port {port} and storage {}, not this memory (port {}, storage {})",
                events.join(", "),
                storage.display(),
                settings.port,
                settings.storage_root.display()
            ),
            install.clone(),
        ));
    }
    let missing: Vec<(&str, &str)> = gemini_hook_events()
        .filter(|(e, _)| !events.contains(e))
        .collect();
    if missing.is_empty() {
        found.push(Finding::Ok(format!(
            "Gemini CLI's hooks {} run kg-memory (preload, prompt recall, file recall)",
            events.join(", ")
        )));
    } else if url.is_some() {
        let lost: Vec<String> = missing
            .iter()
            .map(|(event, gives)| format!("{event} ({gives})"))
            .collect();
        found.push(Finding::Note(format!(
            "Gemini CLI has no KG Memory hook for {}. {install} adds it and keeps your entry.",
            lost.join(", ")
        )));
    }
    // Gemini CLI runs no MCP server and no hook in a folder it does not trust.
    if let Some(folder) = project {
        found.push(match kg_install::gemini::trusts(&path, folder) {
            Some(true) => Finding::Ok(format!(
                "Gemini CLI trusts {}: kg and the hooks run there",
                folder.display()
            )),
            Some(false) => Finding::Note(format!(
                "Gemini CLI does not trust {}: kg shows as Disabled there and the hooks do not run. Trust the folder when Gemini CLI asks, or with /permissions in a session there.",
                folder.display()
            )),
            None => Finding::Note(
                "Gemini CLI runs kg and the hooks only in folders you trust; its trustedFolders.json could not be read here".to_string(),
            ),
        });
    }
    found
}

/// Codex's wiring against this server: its MCP entry, our hooks in its `hooks.json`,
/// the programs they run, and (with `ask_codex`, for `doctor`: it starts Codex's
/// app-server) whether Codex trusts the hooks. `kg-memory status` prints the same
/// findings, without asking Codex.
pub fn codex_findings(
    codex: &kg_install::CodexHome,
    settings: &Settings,
    ask_codex: bool,
) -> Vec<Finding> {
    use kg_install::{Courier, codex_wiring};
    let w = codex_wiring(codex);
    let again = format!("`kg-memory{} install codex`", flags(settings));
    let mut found = Vec::new();
    if let Some(e) = &w.config_error {
        found.push(Finding::Problem(
            format!("{e}; Codex cannot read it either"),
            "repair the file by hand (its .bak-kg-* copies hold earlier versions)".to_string(),
        ));
    }
    let ours = format!("{}/", settings.base_url());
    match &w.url {
        Some(url) if *url == ours => found.push(Finding::Ok(format!(
            "MCP server \"kg\" in {}: {url}",
            codex.config().display()
        ))),
        Some(url) => found.push(Finding::Problem(
            format!(
                "Codex's MCP server \"kg\" points at {url}, not at this memory's server {ours}"
            ),
            format!("{again} (if it refuses, `codex mcp remove kg` first)"),
        )),
        None if w.config_error.is_none() && w.hooks.is_empty() => {
            found.push(Finding::Note(format!(
                "Codex is here but not connected ({again} connects it)"
            )));
            return found;
        }
        None => found.push(Finding::Problem(
            "Codex has no MCP server \"kg\": its sessions get no memory tools".to_string(),
            again.clone(),
        )),
    }
    let mut events: Vec<&str> = Vec::new();
    for (event, command) in &w.hooks {
        let Some(c) = Courier::parse(command) else {
            continue;
        };
        events.push(event);
        let port = c.port.unwrap_or(kg_server::config::DEFAULT_PORT);
        let storage = c
            .storage
            .clone()
            .unwrap_or_else(|| kg_server::config::default_storage_root(&settings.home));
        if let Some(problem) = program_problem(&c.program) {
            found.push(Finding::Problem(
                format!("Codex's {event} hook runs {}, but {problem}", c.program),
                again.clone(),
            ));
        } else if port != settings.port || storage != settings.storage_root {
            found.push(Finding::Problem(
                format!(
                    "Codex's {event} hook reaches port {port}, storage {}; this memory is port {}, storage {}",
                    storage.display(),
                    settings.port,
                    settings.storage_root.display()
                ),
                again.clone(),
            ));
        }
    }
    if events.is_empty() {
        found.push(Finding::Note(format!(
            "only the MCP tools are wired: no preload, prompt recall or file recall ({again} adds the hooks)"
        )));
    } else {
        found.push(Finding::Ok(format!(
            "hooks {} in {}",
            events.join(", "),
            codex.hooks().display()
        )));
        found.push(codex_trust(settings, ask_codex));
    }
    found
}

/// Whether Codex runs our hooks: asked of Codex itself when it is on `PATH`.
fn codex_trust(settings: &Settings, ask_codex: bool) -> Finding {
    let program = crate::setup_cli::on_path("codex").filter(|_| ask_codex);
    let asked = program.and_then(|codex| {
        kg_install::codex_hook_trust(&codex, &settings.home, std::time::Duration::from_secs(8))
    });
    let Some(hooks) = asked.filter(|h| !h.is_empty()) else {
        return Finding::Note(
            "Codex runs a hook only once you trust it: /hooks in a Codex session lists them"
                .to_string(),
        );
    };
    let waiting = hooks
        .iter()
        .filter(|(_, status)| status != "trusted")
        .count();
    if waiting == 0 {
        Finding::Ok("Codex trusts the KG Memory hooks".to_string())
    } else {
        Finding::Problem(
            format!(
                "Codex does not run {waiting} of the {} KG Memory hooks: it has not trusted them (or they changed since), so its sessions get no preload or recall",
                hooks.len()
            ),
            "type /hooks in a Codex session and trust the KG Memory hooks".to_string(),
        )
    }
}

/// The newest session a Claude Code hook bound, from the root's `sessions.json`.
fn hooks_seen(settings: &Settings, w: &Wiring, codex_hooks: bool, now: f64) -> Vec<Finding> {
    let wired = !w.hooks.is_empty() || w.plugin_enabled.is_some() || codex_hooks;
    let sessions: Value = std::fs::read(settings.storage_root.join("sessions.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let newest = sessions
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .filter(|r| r["claude_sid"].is_string())
        .filter_map(|r| r["last_activity"].as_f64())
        .fold(None::<f64>, |a, b| Some(a.map_or(b, |a| a.max(b))));
    vec![match (wired, newest) {
        (false, _) => Finding::Note("no hooks are wired, so none is expected".to_string()),
        (true, None) => Finding::Note(
            "no agent's session has reached this memory through its hooks lately".to_string(),
        ),
        (true, Some(ts)) => {
            let age = (now - ts).max(0.0);
            let said = format!("the last hook reached this memory {}", ago(age));
            if age / 86_400.0 > HOOK_QUIET_DAYS {
                Finding::Note(said)
            } else {
                Finding::Ok(said)
            }
        }
    }]
}

/// How long ago, in the largest whole unit: "just now", "5 min ago", "3 h ago", "4 days ago".
fn ago(seconds: f64) -> String {
    match seconds {
        s if s < 60.0 => "just now".to_string(),
        s if s < 3_600.0 => format!("{:.0} min ago", (s / 60.0).floor()),
        s if s < 86_400.0 => format!("{:.0} h ago", (s / 3_600.0).floor()),
        s if s < 2.0 * 86_400.0 => "1 day ago".to_string(),
        s => format!("{:.0} days ago", (s / 86_400.0).floor()),
    }
}

fn sync(settings: &Settings) -> Vec<Finding> {
    let scopes = kg_server::sync::synced_scopes(&settings.storage_root);
    if scopes.is_empty() {
        return vec![Finding::Note("sync is off".to_string())];
    }
    let mut out = Vec::new();
    for scope in scopes {
        let name = scope
            .project
            .clone()
            .unwrap_or_else(|| "storage root".to_string());
        match kg_server::sync::status(&scope) {
            Err(e) => out.push(Finding::Problem(
                format!("sync of {name}: {e}"),
                "`kg-memory sync status` says more".to_string(),
            )),
            Ok(s) => {
                if let Some(error) = &s.state.last_error {
                    out.push(Finding::Problem(
                        format!("the last sync of {name} failed: {error}"),
                        "`kg-memory sync now` once the cause is fixed".to_string(),
                    ));
                } else if s.conflict_count() > 0 {
                    out.push(Finding::Problem(
                        format!("{name} holds {} merge conflict(s)", s.conflict_count()),
                        "open the graph view: each conflict is shown with both sides to keep"
                            .to_string(),
                    ));
                } else {
                    out.push(Finding::Ok(format!(
                        "{name} syncs with {}",
                        s.remote.unwrap_or_default()
                    )));
                }
            }
        }
    }
    out
}

async fn secrets(base: &str) -> Vec<Finding> {
    let Ok(body) = kg_client::get(
        &format!("{base}/api/maintenance_debt"),
        Duration::from_secs(5),
    )
    .await
    else {
        return Vec::new();
    };
    let Ok(survey) = serde_json::from_str::<Value>(&body) else {
        return Vec::new();
    };
    let found: Vec<Finding> = survey["suspected_credentials"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            Finding::Problem(
                format!(
                    "{} graph, node {}: {} holds what looks like a credential ({})",
                    f["graph"].as_str().unwrap_or("?"),
                    f["id"].as_str().unwrap_or("?"),
                    f["field"].as_str().unwrap_or("?"),
                    f["kind"].as_str().unwrap_or("?")
                ),
                "remove it from the node (or allow it in the graph view if it is no secret)"
                    .to_string(),
            )
        })
        .collect();
    if found.is_empty() {
        vec![Finding::Ok(
            "no credential-like text in the memory".to_string(),
        )]
    } else {
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_files_moved_aside_are_found_in_the_root_and_its_projects() {
        let root = tempfile::tempdir().expect("root");
        let project = root.path().join("projects/shop");
        std::fs::create_dir_all(&project).expect("mkdir");
        std::fs::write(project.join("graph.json.corrupt-1795000000"), "{").expect("write");
        std::fs::write(root.path().join("user.json.corrupt-1795000001-1"), "{").expect("write");
        std::fs::write(project.join("graph.json"), "{}").expect("write");
        assert_eq!(
            quarantined(root.path()),
            vec![
                project.join("graph.json.corrupt-1795000000"),
                root.path().join("user.json.corrupt-1795000001-1"),
            ]
        );
    }

    #[test]
    fn a_report_counts_problems_only_and_prints_each_fix() {
        let mut report = Report::default();
        report.section(
            "Server",
            vec![
                Finding::Ok("up".into()),
                Finding::Note("by the way".into()),
                Finding::Problem("down".into(), "`kg-memory serve`".into()),
            ],
        );
        assert_eq!(report.problems(), 1);
        assert_eq!(
            report.render(),
            "Server:\n  ok    up\n  note  by the way\n  FAIL  down\n        fix: `kg-memory serve`\n1 problem found.\n"
        );
        assert!(program_problem("/nonexistent/kg-memory").is_some());
        assert!(program_problem("sh").is_none(), "found on PATH");
    }
}
