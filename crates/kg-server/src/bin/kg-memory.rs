//! `kg-memory`: run the memory server headless and talk to a running one.

use anyhow::Context;
use kg_server::{AppState, Settings, VERSION};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const USAGE: &str = "\
KG Memory — persistent, bounded memory for coding agents

Usage:
  kg-memory serve [--host <addr>] [--port <n>] [--storage <dir>]
      Run the memory server in the foreground (MCP at http://<host>:<port>/,
      REST under /api, live changes at /ws). Stops cleanly on Ctrl-C or SIGTERM.
  kg-memory status [--host <addr>] [--port <n>]
      Is a server up? Its version, sessions and graphs, and which server holds
      the storage root.
  kg-memory hook session-start|prompt-submit|post-tool
      Claude Code hook courier: posts the hook's stdin to the server and prints
      the answer; prints nothing on any failure (a hook never breaks a session).
  kg-memory stdio
      MCP over stdio, relayed to the server (starts one if none answers), for
      clients that only speak stdio such as Claude Desktop.
  kg-memory install claude-code|claude-desktop [--dry-run]
      Register the MCP server (and, for Claude Code, the hooks) in Claude's
      configuration, merging with what is there; each changed file is backed up.
  kg-memory uninstall claude-code|claude-desktop [--dry-run]
      Remove exactly what install added.
  kg-memory --version

Environment (flags win): KG_HTTP_HOST, KG_HTTP_PORT, KG_STORAGE_ROOT,
KG_SAVE_INTERVAL, KG_AUTOCOMMIT_INTERVAL, KG_GRACE_PERIOD_DAYS,
KG_ORPHAN_GRACE_DAYS, KG_LOG_LEVEL.
";

/// Apply `--host`, `--port` and `--storage` on top of the environment.
fn settings(args: &[String]) -> anyhow::Result<Settings> {
    let mut settings = Settings::from_env()?;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .with_context(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--host" => settings.host = value("--host")?,
            "--port" => {
                let v = value("--port")?;
                settings.port = v
                    .parse()
                    .with_context(|| format!("--port {v:?} is not a port number (1-65535)"))?;
            }
            "--storage" => settings.storage_root = value("--storage")?.into(),
            other => anyhow::bail!("unknown option {other:?}\n\n{USAGE}"),
        }
    }
    Ok(settings)
}

fn init_logging() {
    let level = std::env::var("KG_LOG_LEVEL").unwrap_or_else(|_| "info".into());
    let filter = match level.to_ascii_lowercase().as_str() {
        "debug" => log::LevelFilter::Debug,
        "trace" => log::LevelFilter::Trace,
        "warning" | "warn" => log::LevelFilter::Warn,
        "error" | "critical" => log::LevelFilter::Error,
        _ => log::LevelFilter::Info,
    };
    log::set_max_level(filter);
    let _ = log::set_logger(&StderrLogger);
}

/// Logs go to stderr, one line each.
struct StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) && record.target().starts_with("kg_") {
            eprintln!("{} {}", record.level(), record.args());
        }
    }
    fn flush(&self) {}
}

async fn serve(args: &[String]) -> anyhow::Result<()> {
    let mut settings = settings(args)?;
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
            log::warn!("cannot listen for signals; stop with the process manager");
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
    log::info!("stopping: finishing requests and saving");
    shutdown.cancel();
}

async fn status(args: &[String]) -> anyhow::Result<()> {
    let settings = settings(args)?;
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

async fn hook(args: &[String]) -> anyhow::Result<()> {
    use kg_server::hook::{HOOK_BUDGET, HookEvent, read_stdin, run};
    use std::io::Write;
    // The whole run, reading stdin included, stays within the budget.
    let deadline = std::time::Instant::now() + HOOK_BUDGET;
    // Whatever happens, a hook exits 0 and prints nothing unless it has an answer.
    let answer = async {
        let event = args.first().and_then(|a| HookEvent::parse(a))?;
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

fn install(args: &[String], remove: bool) -> anyhow::Result<()> {
    use kg_server::install::{Client, Setup, apply, describe, plan_install, plan_uninstall};
    let client = args
        .first()
        .and_then(|a| Client::parse(a))
        .with_context(|| format!("say which client: claude-code or claude-desktop\n\n{USAGE}"))?;
    let dry_run = args.iter().any(|a| a == "--dry-run");
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
    init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
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
        match args.first().map(String::as_str) {
            Some("serve") => serve(&args[1..]).await,
            Some("status") => status(&args[1..]).await,
            Some("hook") => hook(&args[1..]).await,
            Some("stdio") => match Settings::from_env() {
                Ok(settings) => kg_server::stdio::run(&settings).await,
                Err(e) => Err(e.into()),
            },
            Some("install") => install(&args[1..], false),
            Some("uninstall") => install(&args[1..], true),
            Some("--version" | "-V" | "version") => {
                println!("kg-memory {VERSION}");
                Ok(())
            }
            Some("--help" | "-h" | "help") | None => {
                print!("{USAGE}");
                Ok(())
            }
            Some(other) => Err(anyhow::anyhow!("unknown command {other:?}\n\n{USAGE}")),
        }
    });
    if let Err(e) = result {
        eprintln!("kg-memory: {e:#}");
        std::process::exit(1);
    }
}
