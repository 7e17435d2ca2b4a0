//! `kg-memory`: run the memory server headless and talk to a running one.

use anyhow::Context;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use kg_server::{AppState, Settings, VERSION};
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// KG Memory — persistent, bounded memory for coding agents
#[derive(Debug, Parser)]
#[command(
    name = "kg-memory",
    version = VERSION,
    // A flag given twice: the last one counts.
    args_override_self = true,
    after_help = "\
Environment (flags win): KG_HTTP_HOST, KG_HTTP_PORT, KG_STORAGE_ROOT,
KG_SAVE_INTERVAL, KG_AUTOCOMMIT_INTERVAL, KG_GRACE_PERIOD_DAYS,
KG_ORPHAN_GRACE_DAYS, KG_LOG_LEVEL."
)]
struct Cli {
    #[command(flatten)]
    server: Where,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the memory server in the foreground
    ///
    /// MCP at http://<host>:<port>/, REST under /api, live changes at /ws. Stops
    /// cleanly on Ctrl-C or SIGTERM.
    Serve,
    /// Is a server up? Its version, sessions and graphs, which server holds the
    /// storage root, and how each agent (Claude Code, Codex CLI, Gemini CLI) reaches it
    Status,
    /// Check every piece between the agents and the memory, and say the fix for each
    /// problem
    ///
    /// The programs the agents run, the server and who owns its port, the storage
    /// root, each agent's wiring, hooks seen recently, sync and suspected credentials.
    /// Exits 1 when something is wrong.
    Doctor,
    /// Hook courier for Claude Code, Codex CLI and Gemini CLI: posts the hook's stdin
    /// to the server and prints the answer
    ///
    /// Prints nothing on any failure and exits 0: a hook never breaks a session. Only
    /// a command line it does not understand gets the usage on stderr and exit 1,
    /// which Claude Code reports without blocking anything (exit 2 would block).
    Hook(HookArgs),
    /// MCP over stdio, relayed to the server (starts one if none answers)
    ///
    /// For clients that only speak stdio, such as Claude Desktop.
    Stdio,
    /// Register the MCP server (and, for Claude Code, Codex CLI and Gemini CLI, the
    /// hooks) in an agent's configuration
    ///
    /// Merges with what is there; each changed file is backed up. The entries name
    /// --host, --port and --storage where they are not the defaults.
    Install(InstallArgs),
    /// Remove exactly what install added
    Uninstall(UninstallArgs),
    /// Find the agents installed here (Claude Code, Codex CLI, Gemini CLI, Claude Desktop), show
    /// what connecting each would change, ask, and connect the chosen ones
    ///
    /// The same changes as `kg-memory install <agent>`: each edited file is backed up
    /// first, and `kg-memory uninstall <agent>` takes them back out.
    Setup(SetupArgs),
    /// Bring existing memory in: the MCP memory server's memory.jsonl, or Claude
    /// Code's CLAUDE.md / MEMORY.md bullets
    ///
    /// Checks the whole file first (a bad line stops it, nothing written), shows what
    /// it would create, and asks before writing. Goes through the running server when
    /// there is one.
    Import(kg_cli::import::ImportArgs),
    /// Print a completion script for a shell
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Git merge driver for graph files: git runs it as
    /// `kg-memory merge-driver %O %A %B %P`
    ///
    /// Merges the common ancestor, ours and theirs node by node and edge by edge, and
    /// writes the result over ours. Exits 1, leaving ours untouched, when a file is
    /// not a graph file, so git marks the file as conflicted.
    MergeDriver(MergeDriverArgs),
    /// Keep this memory in step across machines through a git remote: setup, status,
    /// now, off
    ///
    /// Graph files are merged node by node; sessions, tool events, backups and
    /// quarantined files stay on this machine. `setup` refuses while a server holds the
    /// storage root; `now` asks that server to sync.
    Sync(kg_cli::sync_cli::SyncArgs),
    /// Print the version (as --version does)
    #[command(hide = true)]
    Version,
}

#[derive(Debug, Args)]
struct MergeDriverArgs {
    /// The common ancestor's version (git's %O)
    base: PathBuf,
    /// This checkout's version, replaced by the merged graph (git's %A)
    ours: PathBuf,
    /// The version being merged in (git's %B)
    theirs: PathBuf,
    /// The file's path in the repository, for messages (git's %P)
    path_name: Option<String>,
}

/// Run the merge driver; its exit code for git. It needs no server or settings: git
/// runs it in the repository with three temporary files.
fn merge_driver(args: &MergeDriverArgs) -> i32 {
    let path_name = args
        .path_name
        .clone()
        .unwrap_or_else(|| args.ours.display().to_string());
    match kg_sync::merge_driver(&args.base, &args.ours, &args.theirs, &path_name) {
        Ok(outcome) => {
            // Git shows the driver's output during the merge; a clean merge says nothing.
            if !matches!(outcome, kg_sync::DriverOutcome::Merged { conflicts: 0, .. }) {
                let said = outcome.to_string();
                let _ = writeln!(
                    std::io::stderr(),
                    "kg-memory: {}",
                    kg_server::terminal::safe(&said)
                );
            }
            outcome.exit_code()
        }
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "kg-memory: cannot merge {path_name}: {e}; git marks it as conflicted"
            );
            1
        }
    }
}

/// Which server: where it listens (serve), or where to find it (every other
/// command). On top of the environment; accepted before or after the command.
#[derive(Debug, Args)]
struct Where {
    /// Address to listen on or ask [env: KG_HTTP_HOST]
    #[arg(long, value_name = "ADDR", global = true)]
    host: Option<String>,
    /// Port to listen on or ask [env: KG_HTTP_PORT]
    #[arg(long, value_name = "N", value_parser = port, global = true)]
    port: Option<u16>,
    /// Storage root [env: KG_STORAGE_ROOT]
    #[arg(long, value_name = "DIR", global = true)]
    storage: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct HookArgs {
    /// session-start, prompt-submit or post-tool
    ///
    /// Any other event, or none, makes the hook print nothing and exit 0.
    #[arg(value_name = "EVENT")]
    event: Option<OsString>,
    /// Which route runs this hook: `plugin` in the knowledge-graph plugin's hooks.json
    /// (it stays silent when `kg-memory install claude-code` wired the same event, so
    /// Claude Code gets one answer); `codex` in Codex CLI's hooks.json; `gemini` in
    /// Gemini CLI's settings.
    #[arg(long, value_enum, value_name = "ROUTE")]
    via: Option<Via>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Via {
    Plugin,
    /// Gemini CLI's hooks (`kg-memory install gemini`): Claude Code's routes are not
    /// consulted, and a session without memory is told Gemini CLI's way back.
    Gemini,
    /// Codex CLI's hooks (`kg-memory install codex`), likewise in Codex's words.
    Codex,
}

#[derive(Debug, Args)]
struct InstallArgs {
    /// Which client's configuration to change
    client: ClientName,
    /// Show what would change (a diff, secrets redacted), and change nothing
    #[arg(long)]
    dry_run: bool,
    /// Claude Code only: also turn off Claude Code's built-in auto-memory
    /// (autoMemoryEnabled: false in ~/.claude/settings.json), so one memory speaks;
    /// uninstall restores your previous value
    #[arg(long)]
    disable_auto_memory: bool,
}

#[derive(Debug, Args)]
struct SetupArgs {
    /// Connect without asking
    #[arg(long)]
    yes: bool,
    /// Only these agents, comma-separated (set up even when not found here)
    #[arg(long, value_delimiter = ',', value_name = "AGENTS")]
    only: Vec<ClientName>,
    /// Show what would change (a diff per file, secrets redacted), and change nothing
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Args)]
struct UninstallArgs {
    /// Which client's configuration to change
    client: ClientName,
    /// Show what would change (a diff, secrets redacted), and change nothing
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ClientName {
    ClaudeCode,
    ClaudeDesktop,
    Codex,
    Gemini,
}

impl From<ClientName> for kg_install::Client {
    fn from(name: ClientName) -> Self {
        match name {
            ClientName::ClaudeCode => Self::ClaudeCode,
            ClientName::ClaudeDesktop => Self::ClaudeDesktop,
            ClientName::Codex => Self::Codex,
            ClientName::Gemini => Self::Gemini,
        }
    }
}

fn port(v: &str) -> Result<u16, String> {
    v.parse()
        .map_err(|_| "not a port number (1-65535)".to_string())
}

/// Apply `--host`, `--port` and `--storage` on top of the environment.
fn settings(flags: Where) -> anyhow::Result<Settings> {
    let mut settings = Settings::from_env()?;
    if let Some(host) = flags.host {
        settings.host = host;
    }
    if let Some(port) = flags.port {
        settings.port = port;
    }
    if let Some(storage) = flags.storage {
        settings.storage_root = storage;
    }
    // A relative root means this folder: the installer writes it into hooks that run
    // in every project's folder, and the lock and messages name it whole.
    settings.storage_root = std::path::absolute(&settings.storage_root).with_context(|| {
        format!(
            "cannot resolve the storage root {}",
            settings.storage_root.display()
        )
    })?;
    Ok(settings)
}

async fn serve(flags: Where) -> anyhow::Result<()> {
    let mut settings = settings(flags)?;
    let listener = kg_server::bind(&settings).await?;
    // The root's lock records the port clients should use: the one actually bound.
    settings.port = listener
        .local_addr()
        .context("the bound socket has no address")?
        .port();
    let shutdown = CancellationToken::new();
    let state = AppState::open(settings, shutdown.clone())?;
    tokio::spawn(stop_on_signal(shutdown));
    Ok(kg_server::serve(state, listener).await?)
}

async fn stop_on_signal(shutdown: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!("cannot listen for signals; stop with the process manager");
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("stopping: finishing requests and saving");
    shutdown.cancel();
}

/// The settings of a command that asks a server: the flags and environment, else
/// (when neither names a port or storage root) the server the installed wiring reaches,
/// which is said first.
fn asked_settings(flags: Where) -> anyhow::Result<Settings> {
    let pinned = flags.port.is_some()
        || flags.storage.is_some()
        || std::env::var_os("KG_HTTP_PORT").is_some()
        || std::env::var_os("KG_STORAGE_ROOT").is_some();
    let mut settings = settings(flags)?;
    let claude = kg_install::ClaudeConfig::from_env(&settings.home);
    let project = std::env::current_dir().ok();
    // Claude Code's wiring first, else Codex's, else Gemini CLI's.
    let codex = kg_install::CodexHome::from_env(&settings.home);
    let installed = kg_install::installed_target(&claude, project.as_deref())
        .or_else(|| kg_install::codex_installed_target(&codex))
        .or_else(|| {
            kg_install::gemini::installed_target(&kg_install::gemini::settings_path(&settings.home))
        });
    if !pinned && let Some(target) = installed {
        settings.port = target.port.unwrap_or(settings.port);
        settings.storage_root = target.storage.unwrap_or(settings.storage_root);
        say(&format!(
            "Asking the server named by {} ({}).\n",
            target.source,
            kg_server::launch::shell_line(kg_server::launch::server_flags(&settings))
        ));
    }
    Ok(settings)
}

async fn doctor(flags: Where) -> anyhow::Result<()> {
    let settings = asked_settings(flags)?;
    let claude = kg_install::ClaudeConfig::from_env(&settings.home);
    let project = std::env::current_dir().ok();
    let patient = kg_cli::doctor::Patient {
        settings: &settings,
        claude: &claude,
        project: project.as_deref(),
        now: kg_server::clock::Clock::System.now(),
    };
    let report = kg_cli::doctor::examine(&patient).await;
    say(&report.render());
    if report.problems() > 0 {
        std::process::exit(1);
    }
    Ok(())
}

async fn status(flags: Where) -> anyhow::Result<()> {
    let settings = asked_settings(flags)?;
    let claude = kg_install::ClaudeConfig::from_env(&settings.home);
    let project = std::env::current_dir().ok();
    // The server that holds the storage root is the one to ask, whatever the port
    // in this shell's settings.
    let (base, held) = kg_server::root_lock::server_of(&settings);
    let held_root = held.as_ref().map(|h| h.root.clone());
    let port = held
        .as_ref()
        .and_then(|h| h.holder.as_ref())
        .map_or(settings.port, |h| h.port);
    let holder = held.map(|held| match held.holder {
        Some(h) => format!(
            "Storage root {}: held by the KG Memory server with pid {} at {}",
            held.root.display(),
            h.pid,
            h.base_url()
        ),
        None => format!(
            "Storage root {}: held by another KG Memory server",
            held.root.display()
        ),
    });
    let up = match kg_client::get(&format!("{base}/health"), Duration::from_secs(2)).await {
        Ok(body) => {
            let health: serde_json::Value =
                serde_json::from_str(&body).context("the server's /health is not JSON")?;
            say(&format!(
                "KG Memory {} at {base}: {} session(s), {} graph(s) loaded\n",
                health["version"].as_str().unwrap_or("?"),
                health["active_sessions"],
                health["loaded_graphs"]
            ));
            if let Some(line) = &holder {
                say(&format!("{line}\n"));
            }
            let elsewhere = match held_root {
                Some(_) => None,
                None => kg_server::root_lock::serves_another_root(&base, &settings).await,
            };
            if let Ok(body) =
                kg_client::get(&format!("{base}/api/server"), Duration::from_secs(2)).await
                && let Ok(info) = serde_json::from_str::<serde_json::Value>(&body)
                && let Some(doubt) = info["clock_doubt"].as_str()
            {
                say(&format!(
                    "! The clock: {doubt}. Orphaned nodes are not deleted for good until the clock and the memory agree.\n"
                ));
            }
            if let Some(stranger) = &elsewhere {
                say(&format!(
                    "It {}: nothing serves that one. Stop the server at {base}, or give this storage root a port of its own (--port N).\n",
                    stranger.why(&settings.storage_root)
                ));
            }
            elsewhere.is_none()
        }
        Err(e) => {
            use kg_cli::route_check::{Answerer, port_taken_words, who_answers};
            match who_answers(&base, &settings).await {
                // Nothing can start there: no "start one" advice.
                Answerer::OtherProgram => say(&format!(
                    "No KG Memory server at {base}. {}\n",
                    port_taken_words(port)
                )),
                answerer => {
                    match answerer {
                        Answerer::Nobody => say(&format!(
                            "No KG Memory server at {base}: nothing listens on port {port}.\n"
                        )),
                        _ => say(&format!("No KG Memory server at {base} ({e}).\n")),
                    }
                    match &holder {
                        Some(line) => say(&format!("{line}\n")),
                        None => say(&format!(
                            "Start one with: {}\n",
                            kg_server::launch::serve_command(&settings)
                        )),
                    }
                }
            }
            false
        }
    };
    if up
        && let Ok(body) = kg_client::get(
            &format!("{base}/api/maintenance_debt"),
            Duration::from_secs(5),
        )
        .await
        && let Ok(survey) = serde_json::from_str::<serde_json::Value>(&body)
    {
        for row in survey["graphs"].as_array().into_iter().flatten() {
            let debt = &row["debt"];
            // The survey names merge conflicts only when there are some.
            let conflicts = debt["merge_conflicts"]
                .as_u64()
                .map(|n| format!(", merged with conflicts: {n}"))
                .unwrap_or_default();
            say(&format!(
                "  {:<24} DEBT {} ({}), {} active node(s){conflicts}{}\n",
                row["graph"].as_str().unwrap_or("?"),
                debt["level"].as_str().unwrap_or("?"),
                debt["score"],
                debt["active_nodes"],
                row["project_path"]
                    .as_str()
                    .map(|p| format!(" — {p}"))
                    .unwrap_or_default()
            ));
        }
        for found in survey["suspected_credentials"]
            .as_array()
            .into_iter()
            .flatten()
        {
            say(&format!(
                "  ! {} graph, node {}: {} holds what looks like a credential ({}). Remove it (or allow it in the graph view if it is no secret) before the memory syncs anywhere.\n",
                found["graph"].as_str().unwrap_or("?"),
                found["id"].as_str().unwrap_or("?"),
                found["field"].as_str().unwrap_or("?"),
                found["kind"].as_str().unwrap_or("?")
            ));
        }
    }
    // Which of those graphs a session started here would use.
    if up && let Ok(here) = std::env::current_dir() {
        let url = format!(
            "{base}/api/project_of?cwd={}",
            kg_client::encode(&here.to_string_lossy())
        );
        if let Ok(body) = kg_client::get(&url, Duration::from_secs(5)).await
            && let Ok(project) = serde_json::from_str::<serde_json::Value>(&body)
            && let Some(root) = project["root"].as_str()
        {
            say(&format!("{}\n", this_folder_line(&here, root, &project)));
        }
    }
    // A graph whose file was moved aside as damaged looks merely small or empty above.
    if up
        && let Ok(body) =
            kg_client::get(&format!("{base}/api/view/graphs"), Duration::from_secs(5)).await
        && let Ok(list) = serde_json::from_str::<serde_json::Value>(&body)
    {
        for row in list["graphs"].as_array().into_iter().flatten() {
            let damaged = &row["damaged"];
            let Some(moved_to) = damaged["moved_to"].as_str() else {
                continue;
            };
            let fallback = match damaged["backup"].as_str() {
                Some(backup) => format!("it was loaded from the backup {backup}"),
                None => "there was no valid backup, so it started empty".to_string(),
            };
            say(&format!(
                "  ! {}: its file did not parse ({}) and was moved aside to {moved_to}; {fallback}. README, \"Restoring a backup\", says how to get back what only the damaged copy holds.\n",
                row["graph"].as_str().unwrap_or("?"),
                damaged["cause"].as_str().unwrap_or("?")
            ));
        }
    }
    // How Claude Code reaches this server, from this folder.
    let wiring = kg_install::wiring(&claude, project.as_deref(), port);
    let (lines, mut warnings) = kg_install::wiring_report(&wiring, &settings, port);
    warnings.extend(kg_cli::route_check::mcp_warnings(&wiring, &settings).await);
    say("Claude Code:\n");
    for line in lines {
        say(&format!("  {line}\n"));
    }
    for warning in warnings {
        say(&format!("  ! {warning}\n"));
    }
    use kg_cli::doctor::Finding;
    let show = |findings: Vec<Finding>| {
        for finding in findings {
            match finding {
                Finding::Ok(text) | Finding::Note(text) => say(&format!("  {text}\n")),
                Finding::Problem(what, fix) if fix.is_empty() => say(&format!("  ! {what}\n")),
                Finding::Problem(what, fix) => say(&format!("  ! {what}. Fix: {fix}\n")),
            }
        }
    };
    // How Codex reaches it, where Codex is.
    let codex = kg_install::CodexHome::from_env(&settings.home);
    if codex.dir.is_dir() {
        say("Codex CLI:\n");
        show(kg_cli::doctor::codex_findings(&codex, &settings, false));
    }
    // Gemini CLI, where it has been set up.
    use kg_install::gemini::{GeminiWiring, gemini_wiring, settings_path};
    if gemini_wiring(&settings_path(&settings.home)) != GeminiWiring::Absent {
        say("Gemini CLI:\n");
        show(kg_cli::doctor::gemini(&settings, &base, project.as_deref()).await);
    }
    if !up {
        std::process::exit(1);
    }
    Ok(())
}

/// Which project graph a session started in `here` uses, from `/api/project_of`.
fn this_folder_line(here: &Path, root: &str, project: &serde_json::Value) -> String {
    let graph = match project["graph"].as_str() {
        Some(graph) => format!("the project graph '{graph}' of {root}"),
        None => format!("a new project graph for {root}"),
    };
    let mut line = format!("Sessions started in {} use {graph}.", here.display());
    if let Some(notice) = project["notice"].as_str() {
        line.push(' ');
        line.push_str(notice);
    }
    line
}

/// The folder a hook's session runs in: the payload's `cwd`, else this process's.
fn hook_project(stdin: &str) -> Option<PathBuf> {
    serde_json::from_str::<serde_json::Value>(stdin)
        .ok()
        .and_then(|v| {
            v["cwd"]
                .as_str()
                .filter(|c| !c.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| std::env::current_dir().ok())
}

/// A hook's answer with a `systemMessage` for the user added (kept beside any the
/// answer already carries); a plain-text answer becomes the event's context.
fn with_system_message(answer: Option<String>, message: &str, event: &str) -> String {
    use serde_json::{Value, json};
    let mut out = match answer.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(Value::Object(map))) => map,
        Some(_) => {
            let mut map = serde_json::Map::new();
            map.insert(
                "hookSpecificOutput".into(),
                json!({"hookEventName": event, "additionalContext": answer.unwrap_or_default()}),
            );
            map
        }
        None => serde_json::Map::new(),
    };
    let text = match out.get("systemMessage").and_then(Value::as_str) {
        Some(first) => format!("{first}\n{message}"),
        None => message.to_string(),
    };
    out.insert("systemMessage".into(), Value::String(text));
    Value::Object(out).to_string()
}

async fn hook(args: HookArgs, flags: Where) -> anyhow::Result<()> {
    use kg_cli::hook::{HOOK_BUDGET, HookEvent, read_stdin, run};
    use kg_cli::session_notice::Agent;
    use kg_install::{ClaudeConfig, HookDuty, claude_event, hook_duty};
    // The whole run, reading stdin included, stays within the budget.
    let deadline = std::time::Instant::now() + HOOK_BUDGET;
    let via_plugin = args.via == Some(Via::Plugin);
    // Whatever happens, a hook exits 0 and prints nothing unless it has an answer.
    let answer = async {
        let name = args.event?.to_str()?.to_string();
        let event = HookEvent::parse(&name)?;
        let settings = settings(flags).ok()?;
        let stdin = read_stdin(deadline)?;
        match args.via {
            Some(Via::Gemini) => {
                return run(event, Agent::Gemini, &stdin, &settings, deadline).await;
            }
            Some(Via::Codex) => return run(event, Agent::Codex, &stdin, &settings, deadline).await,
            _ => {}
        }
        // One answer per event, however many routes wire it.
        let project = hook_project(&stdin);
        // Claude Code passes its CLAUDE_CONFIG_DIR on to its hooks.
        let claude = ClaudeConfig::from_env(&settings.home);
        let duty = hook_duty(&claude, project.as_deref(), via_plugin, &name);
        if duty == HookDuty::StandAside {
            return None;
        }
        let answer = run(event, Agent::ClaudeCode, &stdin, &settings, deadline).await;
        match duty {
            HookDuty::AnswerAndWarn(message) => Some(with_system_message(
                answer,
                &message,
                claude_event(&name).unwrap_or_default(),
            )),
            _ => answer,
        }
    };
    let answer = tokio::time::timeout_at(deadline.into(), answer)
        .await
        .ok()
        .flatten();
    if let Some(out) = answer {
        say(&format!("{out}\n"));
    }
    // Exit now: a stdin reader still blocked, or a name lookup still running on the
    // runtime's blocking pool, would otherwise keep the process alive past its budget.
    std::process::exit(0)
}

fn install(
    client: ClientName,
    dry_run: bool,
    disable_auto_memory: bool,
    remove: bool,
    flags: Where,
) -> anyhow::Result<()> {
    use kg_install::{
        Client, Setup, apply, describe, place_program, plan_install, plan_uninstall,
        release_program,
    };
    let client = Client::from(client);
    if disable_auto_memory && client != Client::ClaudeCode {
        anyhow::bail!(
            "--disable-auto-memory is a Claude Code setting; run `kg-memory install claude-code --disable-auto-memory`"
        );
    }
    let settings = settings(flags)?;
    // Run from a build folder, the entries name a copy in ~/.local/bin instead.
    let mut setup = Setup::for_program(
        &settings,
        &std::env::current_exe().context("cannot find this program's own path")?,
    );
    setup.disable_auto_memory = disable_auto_memory;
    let changes = if remove {
        plan_uninstall(client, &setup)?
    } else {
        plan_install(client, &setup)?
    };
    // The program goes in place before any entry names it, and away after the
    // last entry naming it is gone.
    let program = |dry: bool| -> anyhow::Result<Vec<String>> {
        Ok(if remove {
            release_program(&setup, client, dry)?
        } else {
            place_program(&setup, client, dry)?.into_iter().collect()
        })
    };
    if dry_run {
        say(&describe(&changes, true));
        for line in program(true)? {
            say(&format!("{line}\n"));
        }
        return Ok(());
    }
    let now = kg_server::clock::Clock::System.now();
    // Said once done: a refusal (a program in the way) must not read as changes made.
    let (said, program_said) = if remove {
        apply(&changes, now, false)?;
        (describe(&changes, false), program(false)?)
    } else {
        let copy_was_there = setup.exe.exists();
        let placed = program(false)?;
        if let Err(e) = apply(&changes, now, true) {
            // Nothing names a copy made just now: it goes too. (One that was there
            // already serves an earlier install.)
            if !copy_was_there && !placed.is_empty() {
                let _ = release_program(&setup, client, false);
            }
            return Err(e.into());
        }
        (describe(&changes, false), placed)
    };
    if remove && changes.iter().all(|c| c.summary.is_empty()) && program_said.is_empty() {
        say(&format!(
            "Nothing to remove: KG Memory was not set up for {} here.\n",
            client.title()
        ));
        return Ok(());
    }
    say(&said);
    for line in program_said {
        say(&format!("{line}\n"));
    }
    let serve = kg_server::launch::serve_command(&settings);
    say(match (client, remove) {
        (Client::ClaudeCode, false) => kg_cli::session_notice::install_closing_words(&serve),
        (Client::ClaudeDesktop, false) => {
            "Done. Restart Claude Desktop; it starts the server when none answers.\n".to_string()
        }
        (Client::Codex, false) => kg_cli::session_notice::codex_closing_words(&serve),
        (Client::Gemini, false) => kg_cli::session_notice::gemini_closing_words(&serve),
        (Client::Codex, true) => "Done. Start a new Codex session.\n".to_string(),
        (_, true) => format!("Done. Restart {}.\n", client.title()),
    }
    .as_str());
    Ok(())
}

fn setup(args: SetupArgs, flags: Where) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    let settings = settings(flags)?;
    let setup = kg_install::Setup::for_program(
        &settings,
        &std::env::current_exe().context("cannot find this program's own path")?,
    );
    let request = kg_cli::setup_cli::SetupRequest {
        yes: args.yes,
        only: args.only.into_iter().map(Into::into).collect(),
        dry_run: args.dry_run,
    };
    let mut ask = |question: &str| kg_cli::import::confirm(question, say);
    Ok(kg_cli::setup_cli::run(
        &request,
        &setup,
        kg_server::clock::Clock::System.now(),
        say,
        &mut ask,
        std::io::stdin().is_terminal(),
    )?)
}

/// Print to standard output. A reader that went away (`kg-memory … | head`) is no
/// failure: whatever the command does, it has done or still does, so it must not
/// panic the way `println!` does on a broken pipe. Everything printed passes through
/// [`kg_server::terminal::safe`]: a gist, an id or a file's text shown here cannot
/// move the cursor, rewrite a line, set the clipboard or reorder what is shown.
fn say(text: &str) {
    use std::io::{ErrorKind, Write};
    let text = kg_server::terminal::safe(text);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
        && e.kind() != ErrorKind::BrokenPipe
    {
        let _ = writeln!(
            std::io::stderr(),
            "kg-memory: cannot write to standard output: {e}"
        );
    }
}

fn main() {
    kg_server::logging::init();
    let (server, command) = match Cli::try_parse() {
        Ok(Cli {
            server,
            command: Some(command),
        }) => (server, command),
        // No command: the help, as `--help` prints it.
        Ok(Cli { command: None, .. }) => {
            let _ = Cli::command().print_long_help();
            return;
        }
        Err(e) => {
            // Help and version go to stdout and exit 0; a usage error goes to stderr
            // and exits 1, as every other failure of this program (never 2: a Claude
            // Code hook exiting 2 would block the prompt).
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 1 } else { 0 });
        }
    };
    match command {
        Command::Version => {
            say(&format!("kg-memory {VERSION}\n"));
            return;
        }
        Command::MergeDriver(args) => std::process::exit(merge_driver(&args)),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "kg-memory", &mut script);
            say(&String::from_utf8_lossy(&script));
            return;
        }
        _ => {}
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "kg-memory: cannot start the async runtime: {e}"
            );
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(async {
        match command {
            Command::Serve => serve(server).await,
            Command::Status => status(server).await,
            Command::Doctor => doctor(server).await,
            Command::Hook(args) => hook(args, server).await,
            Command::Stdio => match settings(server) {
                Ok(settings) => Ok(kg_cli::stdio::run(&settings).await?),
                Err(e) => Err(e),
            },
            Command::Install(a) => {
                install(a.client, a.dry_run, a.disable_auto_memory, false, server)
            }
            Command::Uninstall(a) => install(a.client, a.dry_run, false, true, server),
            Command::Setup(a) => setup(a, server),
            Command::Import(args) => match settings(server) {
                Ok(settings) => Ok(kg_cli::import::run(args, &settings, say).await?),
                Err(e) => Err(e),
            },
            Command::Sync(args) => match settings(server) {
                Ok(settings) => {
                    let now = settings.clock().now();
                    Ok(kg_cli::sync_cli::run(args, &settings, now, say).await?)
                }
                Err(e) => Err(e),
            },
            Command::Version | Command::Completions { .. } | Command::MergeDriver(_) => Ok(()),
        }
    });
    if let Err(e) = result {
        let said = format!("{e:#}");
        let _ = writeln!(
            std::io::stderr(),
            "kg-memory: {}",
            kg_server::terminal::safe(&said)
        );
        std::process::exit(1);
    }
}
