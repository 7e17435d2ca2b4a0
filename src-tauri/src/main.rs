//! KG Memory tray app: a thin shell over kg-server. It runs the memory server
//! in-process, shows in the tray whether the memory needs tending, notifies when it
//! does, and opens the graph view — the page the server itself serves at `/ui`.

#[cfg(test)]
mod acl;
mod host;
mod login;
mod notify;
mod signals;
mod status;
mod sync_status;
mod window;
mod wrap;

use host::Host;
use kg_core::ChangeKind;
use kg_server::Settings;
use signals::Signals;
use status::{Badge, Status, SyncLines};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sync_status::SyncInfo;
use tauri::image::Image;
use tauri::menu::{CheckMenuItemBuilder, Menu, MenuBuilder, MenuEvent, MenuItemBuilder};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager, RunEvent};
use tauri_plugin_clipboard_manager::ClipboardExt as _;
use tauri_plugin_dialog::{DialogExt as _, MessageDialogButtons};
use tauri_plugin_opener::OpenerExt as _;
use tokio_util::sync::CancellationToken;
use window::Graph;

/// Shared between the tray, the watcher and the quit path.
struct Shell {
    settings: Settings,
    /// The server's clock (`KG_CLOCK_FILE` in tests), so debt is judged at the same "now".
    clock: kg_server::clock::Clock,
    host: Host,
    shutdown: CancellationToken,
    tray: Mutex<Option<TrayIcon>>,
    status: Mutex<Option<Status>>,
    /// File figures of the graphs, for a tray that does not host the store.
    catalogue: kg_core::Catalogue,
    gate: Mutex<notify::DailyGate>,
    /// The storage root's sync state as the server last answered it; `None` while
    /// nothing syncs.
    sync: Mutex<Option<SyncInfo>>,
    /// When this app first saw sync failing in a repository that never synced (the
    /// only date such a failing streak has).
    failing_seen: Mutex<Option<f64>>,
    /// A "Sync now" from the menu is running.
    syncing: AtomicBool,
    /// Wakes the sync watcher early (after "Sync now", or changes that came by sync).
    sync_poke: tokio::sync::Notify,
}

fn main() {
    few_malloc_arenas();
    kg_server::logging::init();
    let context = tauri::generate_context!();
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(window::PROCESS_ARG) {
        window::run_process(args, context);
        return;
    }
    if let Err(message) = display_available() {
        eprintln!("kg-memory-app: {message}");
        std::process::exit(2);
    }
    let mut settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kg-memory-app: {e}");
            std::process::exit(2);
        }
    };
    let shutdown = CancellationToken::new();
    // Take over SIGTERM/SIGINT before anything else, so a stop request during start-up
    // still drains and saves instead of killing the process.
    let signals = tauri::async_runtime::block_on(async { Signals::install() });
    // The app's setup takes them; if the window system never starts, serving headless
    // needs them instead.
    let signals = Arc::new(Mutex::new(Some(signals)));
    let setup_signals = signals.clone();
    // Git runs `kg-memory merge-driver` when the storage root syncs; this app is not it.
    if let Ok(exe) = kg_memory_binary()
        && exe.is_absolute()
    {
        settings.merge_driver = Some(exe);
    }
    let host = tauri::async_runtime::block_on(host::start(&mut settings, shutdown.clone()));
    log::info!("{}", host.describe(&settings));
    let gate = notify::DailyGate::load(settings.state_dir().join("notified.json"));
    let shell = Arc::new(Shell {
        clock: settings.clock(),
        settings,
        host,
        shutdown,
        tray: Mutex::new(None),
        status: Mutex::new(None),
        catalogue: Default::default(),
        gate: Mutex::new(gate),
        sync: Mutex::new(None),
        failing_seen: Mutex::new(None),
        syncing: AtomicBool::new(false),
        sync_poke: tokio::sync::Notify::new(),
    });
    let kept = shell.clone();

    let builder = tauri::Builder::default()
        // First, so a second launch only focuses this one and never starts a server.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            log::info!("a second launch asked to open the graph view");
            window::show(app, Graph::WhereWorking);
        }))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_clipboard_manager::init())
        .plugin(tauri_plugin_opener::init())
        .manage(shell.clone())
        .setup(move |app| {
            let handle = app.handle().clone();
            if let Some(reason) = shell.host.failure(&shell.settings) {
                notify::show("KG Memory could not start its server", &reason, None);
            }
            match tray_support() {
                Ok(()) => match build_tray(&handle) {
                    Ok(tray) => *lock(&shell.tray) = Some(tray),
                    Err(e) => {
                        log::warn!("no tray icon ({e}); opening the graph view instead");
                        window::show(&handle, Graph::WhereWorking);
                    }
                },
                Err(why) => {
                    log::warn!("no tray icon: {why}; opening the graph view instead");
                    window::show(&handle, Graph::WhereWorking);
                }
            }
            refresh(&handle);
            tauri::async_runtime::spawn(watch(handle.clone()));
            tauri::async_runtime::spawn(watch_sync(handle.clone()));
            if let Some(signals) = lock(&setup_signals).take() {
                tauri::async_runtime::spawn(quit_on_signal(handle, signals));
            }
            Ok(())
        });
    // The server is already up: a window system that cannot start (it panics when the
    // display cannot be opened) must not take it down.
    let app = match quietly(move || builder.build(context)) {
        Ok(Ok(app)) => app,
        Ok(Err(e)) => serve_headless(
            &kept,
            &format!("the app cannot start ({e})"),
            lock(&signals).take(),
        ),
        Err(panic) => serve_headless(
            &kept,
            &window_system_failure(panic.as_ref()),
            lock(&signals).take(),
        ),
    };
    app.run(|_app, event| {
        // A tray app keeps running with every window closed; only Quit ends it.
        if let RunEvent::ExitRequested {
            api, code: None, ..
        } = event
        {
            api.prevent_exit();
        }
    });
}

/// glibc gives each thread that allocates its own arena (up to eight per core), and
/// keeps what is freed in each for reuse; the server's request threads then hold
/// several copies of the peak a large answer needed (the graph view's JSON). Two
/// arenas keep the tray's process ~12 MiB lower while its window shows a 2,000-node
/// graph (BENCHMARKS.md, "The tray window"). The price is allocator lock contention
/// under many concurrent requests, which one person's agents and view do not make;
/// the headless `kg-memory serve`, which the load benches measure, keeps the default.
/// The window's process (this binary too) gets the same cap; it measured the same.
fn few_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets an allocator parameter; it runs before any thread
        // of this process exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

/// Run `f` on this thread, turning a panic into an `Err` without printing its report
/// (the caller says what went wrong in its own words). Panics of other threads are
/// reported as usual.
fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, Box<dyn std::any::Any + Send>> {
    let this = std::thread::current().id();
    let report = Arc::new(std::panic::take_hook());
    let others = report.clone();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() != this {
            others(info);
        }
    }));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(Box::new(move |info| report(info)));
    result
}

/// Why the window system did not start, from the panic it raised.
fn window_system_failure(panic: &(dyn std::any::Any + Send)) -> String {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("no reason given");
    if message.to_ascii_lowercase().contains("gtk") {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut names: Vec<String> = ["WAYLAND_DISPLAY", "DISPLAY", "XAUTHORITY"]
            .iter()
            .filter_map(|name| var(name).map(|v| format!("{name}={v}")))
            .collect();
        if var("XAUTHORITY").is_none() {
            names.push("XAUTHORITY unset".into());
        }
        return format!("cannot open the display ({})", names.join(", "));
    }
    let first = message.lines().next().unwrap_or(message);
    format!("the window system failed to start ({first})")
}

/// Without a window system: keep the in-process server running until SIGTERM or
/// SIGINT, then drain and save like Quit does. Without one to keep, exit.
fn serve_headless(shell: &Shell, why: &str, signals: Option<Signals>) -> ! {
    let Host::Hosted { server, .. } = &shell.host else {
        eprintln!(
            "kg-memory-app: {why}, so there is no window or tray icon; {}. Exiting.",
            shell.host.describe(&shell.settings)
        );
        std::process::exit(1);
    };
    eprintln!(
        "kg-memory-app: {why}, so there is no window or tray icon; serving the memory headless on {} until stopped (Ctrl-C)",
        shell.settings.base_url()
    );
    tauri::async_runtime::block_on(async {
        let stop = async {
            match signals {
                Some(signals) => signals.received().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop => log::info!("signal received: quitting"),
            () = finished(server) => {}
        }
        shell.shutdown.cancel();
        finished(server).await;
    });
    log::info!("KG Memory app exits");
    std::process::exit(0);
}

/// The server task drains, stops background work and flushes before it ends.
async fn finished(server: &tokio::task::JoinHandle<Result<(), kg_server::ServeError>>) {
    while !server.is_finished() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn shell(app: &AppHandle) -> Arc<Shell> {
    app.state::<Arc<Shell>>().inner().clone()
}

/// The tray, the window and the webview need a display; say what to run instead.
fn display_available() -> Result<(), String> {
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        let has = |v: &str| std::env::var_os(v).is_some_and(|s| !s.is_empty());
        if !has("DISPLAY") && !has("WAYLAND_DISPLAY") {
            return Err(
                "no display found (DISPLAY and WAYLAND_DISPLAY are unset). On a machine \
                        without a desktop, run the headless server instead: kg-memory serve"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Building a tray icon without the appindicator library aborts the process, so look
/// for it first.
fn tray_support() -> Result<(), String> {
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        let found = ["libayatana-appindicator3.so.1", "libappindicator3.so.1"]
            .iter()
            .any(|name| {
                let c = std::ffi::CString::new(*name).unwrap_or_default();
                // SAFETY: dlopen with a valid C string; the handle is closed at once.
                unsafe {
                    let h = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY);
                    if !h.is_null() {
                        libc::dlclose(h);
                    }
                    !h.is_null()
                }
            });
        if !found {
            return Err("the appindicator library is missing (Debian/Ubuntu: apt install libayatana-appindicator3-1)".into());
        }
    }
    Ok(())
}

fn build_tray(app: &AppHandle) -> tauri::Result<TrayIcon> {
    let menu = menu(app, None)?;
    TrayIconBuilder::with_id("kg-memory")
        .icon(Image::from_bytes(Badge::Healthy.icon())?)
        .tooltip("KG Memory")
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(on_menu)
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                window::show(tray.app_handle(), Graph::WhereWorking);
            }
        })
        .build(app)
}

fn menu(app: &AppHandle, status: Option<&Status>) -> tauri::Result<Menu<tauri::Wry>> {
    let s = shell(app);
    let mut builder = MenuBuilder::new(app).text("open", "Open graph view");
    // One line per graph, neediest first, with its DEBT and HEALTH; a line opens its graph.
    if let Some(status) = status.filter(|s| !s.graphs.is_empty()) {
        builder = builder.separator().item(
            &MenuItemBuilder::with_id("graphs", "Graphs (neediest first):")
                .enabled(false)
                .build(app)?,
        );
        for g in &status.graphs {
            builder = builder.text(
                format!("graph:{}", g.project_path.clone().unwrap_or_default()),
                format!("  {}", g.menu_line()).replace('&', "&&"),
            );
        }
    }
    if let Some(sync) = status.and_then(|s| s.sync.as_ref()) {
        builder = builder.separator().item(
            &MenuItemBuilder::with_id(
                "sync-now",
                if sync.running {
                    "Syncing…"
                } else {
                    "Sync now"
                },
            )
            .enabled(!sync.running)
            .build(app)?,
        );
        for (i, line) in sync.menu.iter().enumerate() {
            for (j, part) in wrap::wrap(line, wrap::MENU_WIDTH).iter().enumerate() {
                builder = builder.item(
                    &MenuItemBuilder::with_id(format!("sync:{i}:{j}"), part.replace('&', "&&"))
                        .enabled(false)
                        .build(app)?,
                );
            }
        }
    }
    let autostart = login::is_enabled(&s.settings);
    builder = builder
        .separator()
        .text("copy", "Copy the Claude Code connection command")
        .text("connect", "Connect Claude Code…")
        .item(
            &CheckMenuItemBuilder::with_id("autostart", "Start at login")
                .checked(autostart)
                .build(app)?,
        )
        .text("data", "Open data folder")
        .separator();
    // How the memory is reached; when the server could not start, why and what to do,
    // which is too long for one line. The menu reads `&` as a mnemonic marker.
    let about = wrap::wrap(&s.host.describe(&s.settings), wrap::MENU_WIDTH);
    for (i, line) in about.iter().enumerate() {
        builder = builder.text(format!("about:{i}"), line.replace('&', "&&"));
    }
    builder.separator().text("quit", "Quit").build()
}

/// The by-hand route, for people who want the tools without hooks. `-s user`: the
/// default (local) scope would make the server exist only in the folder it ran in.
fn connection_command(settings: &Settings) -> String {
    format!(
        "claude mcp add -s user --transport http kg {}/",
        settings.base_url()
    )
}

fn on_menu(app: &AppHandle, event: MenuEvent) {
    let id = event.id().as_ref().to_string();
    let s = shell(app);
    match id.as_str() {
        "open" => window::show(app, Graph::WhereWorking),
        "copy" => {
            if let Err(e) = app.clipboard().write_text(connection_command(&s.settings)) {
                log::warn!("cannot copy to the clipboard: {e}");
            }
        }
        "connect" => confirm_connect(app),
        "autostart" => {
            let result = if login::is_enabled(&s.settings) {
                login::disable(&s.settings)
                    .map(|()| "KG Memory no longer starts at login.".to_string())
            } else {
                login::enable(&s.settings)
                    .map(|app| format!("KG Memory starts at login, from {}.", app.display()))
            };
            match result {
                Ok(said) => log::info!("{said}"),
                Err(e) => {
                    log::warn!("cannot change start at login: {e:#}");
                    notify::show("Start at login was not changed", &format!("{e:#}"), None);
                }
            }
            refresh(app);
        }
        "data" => {
            let root = s.settings.storage_root.to_string_lossy().into_owned();
            if let Err(e) = app.opener().open_path(root, None::<&str>) {
                log::warn!("cannot open the data folder: {e}");
            }
        }
        "quit" => quit(app.clone()),
        "sync-now" => sync_now(app.clone()),
        other => {
            if let Some(project) = other.strip_prefix("graph:") {
                window::show(app, graph_of(project));
            }
        }
    }
}

/// The graph a menu line or a notification names: a project's path, or empty for the
/// user graph.
fn graph_of(project: &str) -> Graph<'_> {
    if project.is_empty() {
        Graph::User
    } else {
        Graph::Project(project)
    }
}

/// Ask before writing Claude Code's configuration, then run the installer.
fn confirm_connect(app: &AppHandle) {
    let handle = app.clone();
    let claude = kg_install::ClaudeConfig::from_env(&shell(app).settings.home);
    app.dialog()
        .message(format!(
            "KG Memory will add its MCP server and hooks to Claude Code's configuration \
             ({} and {}), keeping everything already there and backing up each file it \
             changes. Continue?",
            claude.show(&claude.json),
            claude.show(&claude.settings())
        ))
        .title("Connect Claude Code")
        .buttons(MessageDialogButtons::OkCancelCustom(
            "Connect".into(),
            "Cancel".into(),
        ))
        .show(move |confirmed| {
            if !confirmed {
                return;
            }
            let s = shell(&handle);
            let result = (|| -> anyhow::Result<String> {
                use kg_install::{Client, Setup, apply, describe, place_program};
                // From a build folder, the hooks name a copy in ~/.local/bin instead.
                let setup = Setup::for_program(&s.settings, &kg_memory_binary()?);
                let plan = kg_install::plan_install(Client::ClaudeCode, &setup)?;
                let placed = place_program(&setup, Client::ClaudeCode, false)?;
                apply(&plan, kg_server::clock::Clock::System.now(), true)?;
                let mut done = placed.map(|p| format!("{p}\n")).unwrap_or_default();
                done.push_str(&describe(&plan, false));
                Ok(done)
            })();
            match result {
                Ok(done) => notify::show(
                    "Claude Code connected",
                    &format!("{done}Restart Claude Code to pick it up."),
                    None,
                ),
                Err(e) => notify::show("Could not connect Claude Code", &format!("{e:#}"), None),
            }
        });
}

/// The `kg-memory` command the hooks run: next to this app, else on PATH.
fn kg_memory_binary() -> anyhow::Result<std::path::PathBuf> {
    let exe = std::env::current_exe()?;
    let sibling = exe.with_file_name(if cfg!(windows) {
        "kg-memory.exe"
    } else {
        "kg-memory"
    });
    if sibling.is_file() {
        return Ok(sibling);
    }
    Ok(std::path::PathBuf::from("kg-memory"))
}

/// Recompute the status from the graphs on disk and show it.
fn refresh(app: &AppHandle) {
    let s = shell(app);
    let failed = s.host.failure(&s.settings).is_some();
    let now = s.clock.now();
    // The hosted store knows its graphs; an attached tray reads the files, whose
    // figures the catalogue keeps until they change.
    let catalogue = match &s.host {
        Host::Hosted { state, .. } => state.store.catalogue(now),
        _ => {
            let layout = kg_core::Layout {
                root: s.settings.storage_root.clone(),
            };
            s.catalogue.on_disk(&layout, now)
        }
    };
    let mut status = Status::of(&catalogue, s.host.describe(&s.settings), failed);
    status.sync = sync_lines(&s, now);
    notify_new_high(app, &s, &status);
    let changed = lock(&s.status).as_ref() != Some(&status);
    if changed {
        log::info!("tray state: {}", status.badge.name());
        log::info!("tray label: {}", status.label());
        if let Some(tray) = lock(&s.tray).as_ref() {
            let icon = Image::from_bytes(status.badge.icon());
            let applied = icon
                .and_then(|i| tray.set_icon(Some(i)))
                .and_then(|()| tray.set_tooltip(Some(status.tooltip())))
                // Linux's app indicators show no tooltip: the label beside the icon
                // carries the numbers there (and in the macOS menu bar).
                .and_then(|()| tray.set_title(Some(status.label())))
                .and_then(|()| menu(app, Some(&status)).and_then(|m| tray.set_menu(Some(m))));
            if let Err(e) = applied {
                log::warn!("cannot update the tray: {e}");
            }
        }
        *lock(&s.status) = Some(status);
    }
}

/// A graph that rose to HIGH is worth one notification a day.
fn notify_new_high(app: &AppHandle, s: &Shell, status: &Status) {
    let before = lock(&s.status).clone();
    let was_high = |name: &str| {
        before
            .as_ref()
            .and_then(|b| b.graphs.iter().find(|g| g.name == name))
            .is_some_and(|g| g.level == kg_core::DebtLevel::High)
    };
    for g in status
        .graphs
        .iter()
        .filter(|g| g.level == kg_core::DebtLevel::High)
    {
        if was_high(&g.name) || !lock(&s.gate).admit(&g.name, s.clock.now()) {
            continue;
        }
        let handle = app.clone();
        let project = g.project_path.clone();
        notify::show(
            &format!("KG Memory: {} needs tending", g.name),
            &format!(
                "Maintenance debt is HIGH ({}): {}. Run /kg-maintain in Claude Code, or open the graph view.",
                kg_core::float_repr(kg_core::round_to(g.score, 2)),
                g.largest_factor
            ),
            Some(Box::new(move || {
                window::show(&handle, graph_of(project.as_deref().unwrap_or_default()))
            })),
        );
    }
}

/// How long the tray waits between two looks at the sync state (a sync runs every
/// `KG_AUTOCOMMIT_INTERVAL`, and sooner while a remote is unreachable).
const SYNC_POLL: Duration = Duration::from_secs(60);

/// The sync part of the tray, from the last sync state the server gave.
fn sync_lines(s: &Shell, now: f64) -> Option<SyncLines> {
    let info = lock(&s.sync).clone()?;
    let minute: sync_status::Minute = kg_server::clock::local_minute;
    Some(SyncLines {
        tooltip: sync_status::tooltip_line(&info, now, minute)?,
        menu: sync_status::menu_lines(&info, now, minute),
        running: s.syncing.load(Ordering::Relaxed),
    })
}

/// Keep the tray's sync state current: at start, every minute, and when poked.
/// Nothing is asked of the server while the storage root does not sync.
async fn watch_sync(app: AppHandle) {
    let s = shell(&app);
    if matches!(s.host, Host::PortTaken | Host::Failed { .. }) {
        return;
    }
    loop {
        look_at_sync(&app, &s).await;
        tokio::select! {
            () = tokio::time::sleep(SYNC_POLL) => {}
            () = s.sync_poke.notified() => {}
            () = s.shutdown.cancelled() => return,
        }
    }
}

/// Ask the server for the sync state, show it, and notify when sync has failed for
/// a day.
async fn look_at_sync(app: &AppHandle, s: &Shell) {
    let root = s.settings.storage_root.clone();
    // A look at the git config, no network: whether there is anything to ask about.
    let on = tokio::task::spawn_blocking(move || kg_server::sync::any_on(&root))
        .await
        .unwrap_or(false);
    let info = if on {
        let url = format!("{}/api/sync", s.settings.base_url());
        match kg_client::get(&url, Duration::from_secs(10)).await {
            Ok(body) => match serde_json::from_str(&body).and_then(|v| SyncInfo::from_json(&v)) {
                Ok(info) => Some(info),
                Err(e) => {
                    log::warn!("the sync state from {url} does not read: {e}");
                    return;
                }
            },
            Err(e) => {
                // The server's own trouble shows in the badge; keep the last state.
                log::debug!("cannot read the sync state: {e}");
                return;
            }
        }
    } else {
        None
    };
    let now = s.clock.now();
    if let Some(info) = &info {
        notify_stale_sync(s, info, now);
    }
    let changed = *lock(&s.sync) != info;
    if changed {
        let minute: sync_status::Minute = kg_server::clock::local_minute;
        let line = info
            .as_ref()
            .and_then(|i| sync_status::tooltip_line(i, now, minute));
        log::info!("tray sync state: {}", line.as_deref().unwrap_or("off"));
        *lock(&s.sync) = info;
        refresh(app);
    }
}

/// Sync failing for a day is worth one notification per failing streak.
fn notify_stale_sync(s: &Shell, info: &SyncInfo, now: f64) {
    let failing_unsynced = info
        .repos
        .iter()
        .any(|r| r.on && r.last_error.is_some() && r.last_success.is_none());
    let first_seen = {
        let mut seen = lock(&s.failing_seen);
        if failing_unsynced {
            Some(*seen.get_or_insert(now))
        } else {
            *seen = None;
            None
        }
    };
    let minute: sync_status::Minute = kg_server::clock::local_minute;
    if let Some((streak, notice)) = sync_status::stale_notice(info, now, minute, first_seen)
        && lock(&s.gate).admit_once(&streak, now)
    {
        notify::show(&notice.summary, &notice.body, None);
    }
}

/// "Sync now" from the menu: through the server (this app's own, or the one it is
/// attached to), then a notification saying what happened.
fn sync_now(app: AppHandle) {
    let s = shell(&app);
    if s.syncing.swap(true, Ordering::Relaxed) {
        return;
    }
    refresh(&app);
    tauri::async_runtime::spawn(async move {
        let url = format!("{}/api/sync/now", s.settings.base_url());
        // A sync waits for one already running and then talks to the remote.
        let answer = kg_client::request("POST", &url, Some("{}"), Duration::from_secs(300)).await;
        let notice = sync_status::sync_now_notice(match &answer {
            Ok(a) => Ok((a.status, a.body.as_str())),
            Err(e) => Err(e.to_string()),
        });
        log::info!("sync now: {}", notice.body);
        notify::show(&notice.summary, &notice.body, None);
        s.syncing.store(false, Ordering::Relaxed);
        look_at_sync(&app, &s).await;
        refresh(&app);
    });
}

/// Follow the memory's changes — the in-process change log, or the attached server's
/// `/ws` — and refresh when something that can move the badge happened. Waits on
/// events only: nothing wakes the CPU while the memory is quiet.
async fn watch(app: AppHandle) {
    let s = shell(&app);
    match &s.host {
        Host::Hosted { state, .. } => {
            let mut changes = state.changes.subscribe();
            let mut orphaned = Orphaned::default();
            loop {
                tokio::select! {
                    change = changes.recv() => match change {
                        Ok(change) => {
                            if arrived_by_sync(change.source_session.as_deref()) {
                                s.sync_poke.notify_one();
                            }
                            if let ChangeKind::Quarantined { path, moved_to, recovered_from_prev, .. } = &change.kind {
                                notify::show(
                                    "KG Memory moved a damaged graph file aside",
                                    &format!(
                                        "{} did not parse; it is kept as {} and {}.",
                                        path.display(),
                                        moved_to.display(),
                                        if *recovered_from_prev { "the previous version was loaded" } else { "the graph started empty" }
                                    ),
                                    None,
                                );
                            }
                            orphaned.count(&change);
                            settle(&mut changes, &mut orphaned).await;
                            refresh(&app);
                            orphaned.tell(&app, &s);
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => refresh(&app),
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    },
                    () = s.shutdown.cancelled() => break,
                }
            }
        }
        Host::Attached { .. } => attached_watch(&app, &s).await,
        Host::PortTaken | Host::Failed { .. } => {}
    }
}

/// Whether a change came in from another machine through git sync (the server marks
/// its source `sync:<origin>`).
fn arrived_by_sync(source_session: Option<&str>) -> bool {
    source_session.is_some_and(|s| s.starts_with("sync:"))
}

/// Let a burst of changes settle before re-surveying the disk, counting what it orphans.
async fn settle(
    changes: &mut tokio::sync::broadcast::Receiver<Arc<kg_core::Change>>,
    orphaned: &mut Orphaned,
) {
    let quiet = tokio::time::sleep(Duration::from_millis(300));
    tokio::pin!(quiet);
    loop {
        tokio::select! {
            () = &mut quiet => return,
            next = changes.recv() => match next {
                Ok(change) => orphaned.count(&change),
                Err(_) => return,
            },
        }
    }
}

/// Nodes maintenance orphaned during a burst of changes, by graph (its project path,
/// none for the user graph): a burst of new nodes can push curated ones out of every
/// read, and the person hears of it where the numbers live.
#[derive(Default)]
struct Orphaned(Vec<(Option<String>, usize)>);

impl Orphaned {
    fn count(&mut self, change: &kg_core::Change) {
        if let ChangeKind::TiersMoved(moves) = &change.kind {
            self.add(change.project_path.as_deref(), moves.orphaned.len());
        }
    }

    /// The same, from a `/ws` message of the server a tray attached to.
    fn count_message(&mut self, message: &serde_json::Value) {
        if message["type"] == "tiers_moved" {
            let n = message["orphaned"].as_array().map_or(0, Vec::len);
            self.add(message["project_path"].as_str(), n);
        }
    }

    fn add(&mut self, project: Option<&str>, n: usize) {
        if n == 0 {
            return;
        }
        match self.0.iter_mut().find(|(p, _)| p.as_deref() == project) {
            Some((_, total)) => *total += n,
            None => self.0.push((project.map(str::to_string), n)),
        }
    }

    /// One notification per graph and day, opening the graph view on that graph (its
    /// box explains the burst and brings the nodes back in one click).
    fn tell(&mut self, app: &AppHandle, s: &Shell) {
        for (project, n) in self.0.drain(..) {
            let name = lock(&s.status)
                .as_ref()
                .and_then(|st| st.graphs.iter().find(|g| g.project_path == project))
                .map_or_else(
                    || project.clone().unwrap_or_else(|| "user".into()),
                    |g| g.name.clone(),
                );
            if !lock(&s.gate).admit(&format!("orphaned:{name}"), s.clock.now()) {
                continue;
            }
            let handle = app.clone();
            notify::show(
                &format!(
                    "KG Memory: {n} node{} of {name} left every read",
                    if n == 1 { "" } else { "s" }
                ),
                &format!(
                    "New nodes took {name}'s budget, so older nodes were archived and the archived ones with the fewest links were orphaned. Open the graph view to see why and bring them back in one click."
                ),
                Some(Box::new(move || {
                    window::show(&handle, graph_of(project.as_deref().unwrap_or_default()))
                })),
            );
        }
    }
}

async fn attached_watch(app: &AppHandle, s: &Shell) {
    use futures_util::StreamExt;
    let url = format!("ws://127.0.0.1:{}/ws?scope=all", s.settings.port);
    loop {
        match tokio_tungstenite::connect_async(url.as_str()).await {
            Ok((mut ws, _)) => {
                refresh(app);
                let mut orphaned = Orphaned::default();
                loop {
                    tokio::select! {
                        msg = ws.next() => match msg {
                            Some(Ok(msg)) => {
                                if let Ok(text) = msg.to_text()
                                    && let Ok(value) = serde_json::from_str::<serde_json::Value>(text)
                                {
                                    if arrived_by_sync(value["source_session"].as_str()) {
                                        s.sync_poke.notify_one();
                                    }
                                    orphaned.count_message(&value);
                                }
                                refresh(app);
                            }
                            _ => break,
                        },
                        // A burst is told once it is over: 300 ms without a message.
                        () = tokio::time::sleep(Duration::from_millis(300)), if !orphaned.0.is_empty() => orphaned.tell(app, s),
                        () = s.shutdown.cancelled() => return,
                    }
                }
            }
            Err(e) => log::warn!("cannot follow the KG Memory server at {url}: {e}"),
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
            () = s.shutdown.cancelled() => return,
        }
    }
}

/// Quit: finish requests, save every graph, then exit.
fn quit(app: AppHandle) {
    tauri::async_runtime::spawn(async move {
        let s = shell(&app);
        // The graph window's process closes its window when this process ends.
        s.shutdown.cancel();
        if let Host::Hosted { server, .. } = &s.host {
            finished(server).await;
        }
        log::info!("KG Memory app exits");
        app.exit(0);
    });
}

async fn quit_on_signal(app: AppHandle, signals: Signals) {
    signals.received().await;
    log::info!("signal received: quitting");
    quit(app);
}
