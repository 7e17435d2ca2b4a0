//! `kg-memory`: run the memory server headless and talk to a running one.

use anyhow::Context;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use kg_server::{AppState, Settings, VERSION};
use std::ffi::OsString;
use std::path::PathBuf;
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
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the memory server in the foreground
    ///
    /// MCP at http://<host>:<port>/, REST under /api, live changes at /ws. Stops
    /// cleanly on Ctrl-C or SIGTERM.
    Serve(Where),
    /// Is a server up? Its version, sessions and graphs, and which server holds the
    /// storage root
    Status(Where),
    /// Claude Code hook courier: posts the hook's stdin to the server and prints the
    /// answer
    ///
    /// Prints nothing on any failure and always exits 0 (a hook never breaks a
    /// session).
    Hook(HookArgs),
    /// MCP over stdio, relayed to the server (starts one if none answers)
    ///
    /// For clients that only speak stdio, such as Claude Desktop.
    Stdio,
    /// Register the MCP server (and, for Claude Code, the hooks) in Claude's
    /// configuration
    ///
    /// Merges with what is there; each changed file is backed up.
    Install(InstallArgs),
    /// Remove exactly what install added
    Uninstall(InstallArgs),
    /// Print a completion script for a shell
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the version (as --version does)
    #[command(hide = true)]
    Version,
}

/// Where the server listens, or where to find it: on top of the environment.
#[derive(Debug, Args)]
struct Where {
    /// Address to listen on or ask [env: KG_HTTP_HOST]
    #[arg(long, value_name = "ADDR")]
    host: Option<String>,
    /// Port to listen on or ask [env: KG_HTTP_PORT]
    #[arg(long, value_name = "N", value_parser = port)]
    port: Option<u16>,
    /// Storage root [env: KG_STORAGE_ROOT]
    #[arg(long, value_name = "DIR")]
    storage: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct HookArgs {
    /// session-start, prompt-submit or post-tool
    ///
    /// Any other event, or none, makes the hook print nothing and exit 0.
    #[arg(value_name = "EVENT", allow_hyphen_values = true)]
    event: Option<OsString>,
    /// Further arguments are ignored: a hook never fails on its command line.
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    _ignored: Vec<OsString>,
}

#[derive(Debug, Args)]
struct InstallArgs {
    /// Which client's configuration to change
    client: ClientName,
    /// Show what would change, and change nothing
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ClientName {
    ClaudeCode,
    ClaudeDesktop,
}

impl From<ClientName> for kg_server::install::Client {
    fn from(name: ClientName) -> Self {
        match name {
            ClientName::ClaudeCode => Self::ClaudeCode,
            ClientName::ClaudeDesktop => Self::ClaudeDesktop,
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
    kg_server::serve(state, listener).await
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

async fn status(flags: Where) -> anyhow::Result<()> {
    let settings = settings(flags)?;
    // The server that holds the storage root is the one to ask, whatever the port
    // in this shell's settings.
    let (base, held) = kg_server::root_lock::server_of(&settings);
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
    let body = match kg_server::client::get(&format!("{base}/health"), Duration::from_secs(2)).await
    {
        Ok(body) => body,
        Err(e) => {
            println!("No KG Memory server at {base} ({e}).");
            match holder {
                Some(line) => println!("{line}"),
                None => println!("Start one with: kg-memory serve"),
            }
            std::process::exit(1);
        }
    };
    let health: serde_json::Value =
        serde_json::from_str(&body).context("the server's /health is not JSON")?;
    println!(
        "KG Memory {} at {base}: {} session(s), {} graph(s) loaded",
        health["version"].as_str().unwrap_or("?"),
        health["active_sessions"],
        health["loaded_graphs"]
    );
    if let Some(line) = holder {
        println!("{line}");
    }
    if let Ok(body) = kg_server::client::get(
        &format!("{base}/api/maintenance_debt"),
        Duration::from_secs(5),
    )
    .await
        && let Ok(survey) = serde_json::from_str::<serde_json::Value>(&body)
    {
        for row in survey["graphs"].as_array().into_iter().flatten() {
            let debt = &row["debt"];
            println!(
                "  {:<24} DEBT {} ({}), {} active node(s){}",
                row["graph"].as_str().unwrap_or("?"),
                debt["level"].as_str().unwrap_or("?"),
                debt["score"],
                debt["active_nodes"],
                row["project_path"]
                    .as_str()
                    .map(|p| format!(" — {p}"))
                    .unwrap_or_default()
            );
        }
    }
    Ok(())
}

async fn hook(event: Option<OsString>) -> anyhow::Result<()> {
    use kg_server::hook::{HOOK_BUDGET, HookEvent, read_stdin, run};
    use std::io::Write;
    // The whole run, reading stdin included, stays within the budget.
    let deadline = std::time::Instant::now() + HOOK_BUDGET;
    // Whatever happens, a hook exits 0 and prints nothing unless it has an answer.
    let answer = async {
        let event = HookEvent::parse(event?.to_str()?)?;
        let settings = Settings::from_env().ok()?;
        let stdin = read_stdin(deadline)?;
        run(event, &stdin, &settings, deadline).await
    };
    let answer = tokio::time::timeout_at(deadline.into(), answer)
        .await
        .ok()
        .flatten();
    let mut stdout = std::io::stdout();
    if let Some(out) = answer {
        // A closed stdout is not worth failing the hook over.
        let _ = writeln!(stdout, "{out}");
    }
    let _ = stdout.flush();
    // Exit now: a stdin reader still blocked, or a name lookup still running on the
    // runtime's blocking pool, would otherwise keep the process alive past its budget.
    std::process::exit(0)
}

fn install(args: InstallArgs, remove: bool) -> anyhow::Result<()> {
    use kg_server::install::{Client, Setup, apply, describe, plan_install, plan_uninstall};
    let client = Client::from(args.client);
    let dry_run = args.dry_run;
    let settings = Settings::from_env()?;
    let setup = Setup {
        home: settings.home.clone(),
        exe: std::env::current_exe().context("cannot find this program's own path")?,
        url: format!("{}/", settings.base_url()),
        port: settings.port,
    };
    let changes = if remove {
        plan_uninstall(client, &setup)?
    } else {
        plan_install(client, &setup)?
    };
    print!("{}", describe(&changes, dry_run));
    if !dry_run {
        let now = kg_server::clock::Clock::System.now();
        apply(&changes, now, !remove)?;
        if !remove && client == Client::ClaudeCode {
            println!("Done. Start the server (kg-memory serve), then restart Claude Code.");
        }
    }
    Ok(())
}

fn main() {
    kg_server::logging::init();
    let command = match Cli::try_parse() {
        Ok(Cli {
            command: Some(command),
        }) => command,
        // No command: the help, as `--help` prints it.
        Ok(Cli { command: None }) => {
            let _ = Cli::command().print_long_help();
            return;
        }
        Err(e) => {
            // Help and version go to stdout and exit 0; a usage error goes to stderr
            // and exits 1, as every other failure of this program.
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 1 } else { 0 });
        }
    };
    match command {
        Command::Version => {
            println!("kg-memory {VERSION}");
            return;
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "kg-memory",
                &mut std::io::stdout(),
            );
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
            eprintln!("kg-memory: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(async {
        match command {
            Command::Serve(flags) => serve(flags).await,
            Command::Status(flags) => status(flags).await,
            Command::Hook(args) => hook(args.event).await,
            Command::Stdio => match Settings::from_env() {
                Ok(settings) => kg_server::stdio::run(&settings).await,
                Err(e) => Err(e.into()),
            },
            Command::Install(args) => install(args, false),
            Command::Uninstall(args) => install(args, true),
            Command::Version | Command::Completions { .. } => Ok(()),
        }
    });
    if let Err(e) = result {
        eprintln!("kg-memory: {e:#}");
        std::process::exit(1);
    }
}
