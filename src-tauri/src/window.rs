//! The graph window: the page the server serves at `/ui`, loaded from the server's own
//! URL so the app and a browser show the same page on the same origin. Without a server
//! (the port is taken, the storage root is unusable) it shows a page saying what is
//! wrong instead of a page that never loads. Its size and position are remembered.
//!
//! The window runs in a process of its own: this binary started with [`PROCESS_ARG`],
//! told what to show one JSON line at a time on its standard input. Closing the window
//! ends that process, and with it everything the page took: WebKit's web process (most
//! of it), its network process, and the GTK and WebKit state of the window's side,
//! none of which WebKitGTK gives back while the process that made them lives. The tray's
//! process never makes a webview, so it stays at its idle size. When the tray goes
//! away, the window's standard input ends and it closes too.

use crate::host::Host;
use crate::{lock, shell};
use kg_server::Settings;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use tauri::http::{Response, StatusCode, header};
use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindow, WebviewWindowBuilder, WindowEvent};

const LABEL: &str = "graph";

/// The argument that makes this binary the graph window's process; the next one is the
/// file that remembers the window's geometry.
pub const PROCESS_ARG: &str = "--graph-window";

/// What the window process says on its standard output when its window closes.
const CLOSED: &str = "closed";

/// Where the window was, in logical pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Geometry {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

fn load_geometry(file: &Path) -> Option<Geometry> {
    let text = std::fs::read_to_string(file).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let g = Geometry {
        x: v["x"].as_f64()?,
        y: v["y"].as_f64()?,
        width: v["width"].as_f64()?.max(400.0),
        height: v["height"].as_f64()?.max(300.0),
    };
    Some(g)
}

/// Remember the window's size and position.
fn save_geometry(window: &WebviewWindow, file: &Path) {
    let scale = window.scale_factor().unwrap_or(1.0);
    let (Ok(pos), Ok(size)) = (window.outer_position(), window.inner_size()) else {
        return;
    };
    let pos = pos.to_logical::<f64>(scale);
    let size = size.to_logical::<f64>(scale);
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let text =
        serde_json::json!({"x": pos.x, "y": pos.y, "width": size.width, "height": size.height})
            .to_string();
    if let Err(e) = std::fs::write(file, text) {
        log::warn!("cannot remember the window geometry: {e}");
    }
}

/// Which graph the window opens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Graph<'a> {
    /// Where the person works: the page picks the project of the session used last (or
    /// the last graph looked at); an open window keeps what it shows.
    WhereWorking,
    User,
    Project(&'a str),
}

fn page_url(app: &AppHandle, graph: Graph<'_>) -> String {
    let base = shell(app).settings.base_url();
    match graph {
        Graph::Project(p) => format!("{base}/ui#project={}", kg_client::encode(p)),
        Graph::User => format!("{base}/ui#graph=user"),
        Graph::WhereWorking => format!("{base}/ui"),
    }
}

// ----- the tray's side -----------------------------------------------------------------

/// The window process while its window is open: where its orders go.
struct Running {
    pid: u32,
    orders: ChildStdin,
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);

/// Open the graph window (or focus it), on a graph.
pub fn show(app: &AppHandle, graph: Graph<'_>) {
    let s = shell(app);
    let url = if s.host.failure(&s.settings).is_some() {
        format!("{ERROR_SCHEME}://localhost/")
    } else {
        page_url(app, graph)
    };
    // An open window keeps the graph it shows unless one is named.
    let order = serde_json::json!({"show": url, "navigate": graph != Graph::WhereWorking});
    let mut running = lock(&RUNNING);
    if let Some(window) = running.as_mut()
        && writeln!(window.orders, "{order}").is_ok()
    {
        return;
    }
    let error_page = error_page(&s.host, &s.settings);
    let geometry = s.settings.state_dir().join("window.json");
    *running = match start(&geometry, error_page.as_deref(), &order) {
        Ok(window) => Some(window),
        Err(e) => {
            log::error!("cannot open the graph window: {e}");
            None
        }
    };
}

/// WebKitGTK settings for the window's process and the WebKit processes it starts
/// (unless the environment says otherwise), each of which took much of the open
/// window's memory (BENCHMARKS.md, "The tray window: closed means closed"):
/// - no accelerated compositing: without a GPU (and on most machines the tray app runs
///   on) WebKit composites the page's layers through Mesa's software GL, which held
///   ~140 MiB of the web process with this page; the page draws on a canvas anyway;
/// - JavaScriptCore sizes its heap as if the machine had 256 MiB of RAM, so it collects
///   sooner instead of letting the heap grow with the machine's memory;
/// - no FTL, JavaScriptCore's last compiler tier: what it compiled of the page's hot
///   code (the layout, Cytoscape's drawing) held ~14 MiB of the web process with a
///   2,000-node graph, and the graph drew no slower without it. The tier below, DFG,
///   stays: it compiles the drawing each frame runs (without it, 25 MiB less; with no
///   JIT at all, 34 MiB less but the first draw took 2.7 times as long).
const LEAN_WEBKIT: [(&str, &str); 3] = [
    ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
    ("JSC_forceRAMSize", "268435456"),
    ("JSC_useFTLJIT", "0"),
];

/// Start the window process and give it its first orders.
fn start(
    geometry: &Path,
    error_page: Option<&str>,
    first: &serde_json::Value,
) -> std::io::Result<Running> {
    let mut command = Command::new(this_binary()?);
    command
        .arg(PROCESS_ARG)
        .arg(geometry)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    for (name, value) in LEAN_WEBKIT {
        if std::env::var_os(name).is_none() {
            command.env(name, value);
        }
    }
    let mut child = command.spawn()?;
    let pid = child.id();
    let orders = child.stdin.take();
    std::thread::spawn(move || follow(child, pid));
    let mut orders = orders.ok_or(std::io::ErrorKind::BrokenPipe)?;
    if let Some(page) = error_page {
        writeln!(orders, "{}", serde_json::json!({ "error_page": page }))?;
    }
    writeln!(orders, "{first}")?;
    log::info!("graph window opening (process {pid})");
    Ok(Running { pid, orders })
}

/// This very binary, also after a package upgrade replaced the file it started from
/// (the window process must speak the tray's orders).
fn this_binary() -> std::io::Result<PathBuf> {
    let path = std::env::current_exe()?;
    #[cfg(target_os = "linux")]
    if !path.exists() {
        return Ok(PathBuf::from("/proc/self/exe"));
    }
    Ok(path)
}

/// Wait for the window process to say its window closed (or to end), so the next
/// opening starts a new one even while this one is still winding down; then wait for
/// it and WebKit's processes to be gone (they inherit its standard output, so that
/// ends last), reap it, and give back the memory the page's requests took.
fn follow(mut child: Child, pid: u32) {
    let mut said = child.stdout.take().map(|out| BufReader::new(out).lines());
    for line in said.iter_mut().flatten() {
        match line {
            Ok(line) if line == CLOSED => break,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    {
        let mut running = lock(&RUNNING);
        if running.as_ref().is_some_and(|r| r.pid == pid) {
            *running = None;
        }
    }
    let _ = child.wait();
    for _ in said.into_iter().flatten() {}
    give_back_freed_memory();
}

/// Hand back to the system the heap this process's server used while it served the
/// window's page (the views' JSON, the WebSocket's buffers): glibc keeps freed memory
/// in its arenas for reuse, so without this the tray would go on holding much of it.
/// The wait lets the server finish with the page's closed connections first.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        std::thread::sleep(std::time::Duration::from_secs(2));
        // SAFETY: malloc_trim only releases free memory of the allocator's own arenas;
        // it is thread-safe and touches nothing that is in use.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

// ----- the window's process ------------------------------------------------------------

/// An order from the tray, one JSON line.
enum Order {
    /// Show the window on `url`; an open window goes there only when `navigate`.
    Show { url: String, navigate: bool },
    /// The page to show at [`ERROR_SCHEME`], when there is no server.
    ErrorPage(String),
}

impl Order {
    /// `None` for a line that is not an order (said in the log).
    fn parse(line: &str) -> Option<Order> {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            log::warn!("graph window: an order that does not read: {line:?}");
            return None;
        };
        if let Some(page) = v["error_page"].as_str() {
            return Some(Order::ErrorPage(page.to_string()));
        }
        let url = v["show"].as_str()?.to_string();
        let navigate = v["navigate"].as_bool().unwrap_or(false);
        Some(Order::Show { url, navigate })
    }
}

/// The next order on standard input; `None` once the tray is gone.
fn next_order() -> Option<Order> {
    loop {
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        if let Some(order) = Order::parse(&line) {
            return Some(order);
        }
    }
}

/// The window process's life: `args` are the ones after [`PROCESS_ARG`]. Returns when
/// the tray is gone before the window opened; otherwise the process ends with its
/// window.
pub fn run_process(mut args: impl Iterator<Item = String>, context: tauri::Context) {
    let Some(geometry) = args.next().map(PathBuf::from) else {
        log::error!("graph window: {PROCESS_ARG} needs the geometry file");
        return;
    };
    let mut error_page = None;
    let url = loop {
        match next_order() {
            Some(Order::ErrorPage(page)) => error_page = Some(page),
            Some(Order::Show { url, .. }) => break url,
            None => return,
        }
    };
    let app = tauri::Builder::default()
        .register_uri_scheme_protocol(ERROR_SCHEME, move |_ctx, _request| {
            error_response(error_page.as_deref())
        })
        .setup(move |app| {
            let window = build(app.handle(), &url, geometry)?;
            let _ = window.set_focus();
            let handle = app.handle().clone();
            std::thread::spawn(move || {
                while let Some(order) = next_order() {
                    if let Order::Show { url, navigate } = order {
                        show_again(&handle, &url, navigate);
                    }
                }
                // The tray is gone: so is its window (its geometry is saved already).
                handle.exit(0);
            });
            Ok(())
        })
        .build(context);
    match app {
        // With its last window closed, a tauri app exits.
        Ok(app) => app.run(|_, _| {}),
        Err(e) => log::error!("cannot open the graph window: {e}"),
    }
}

fn webview_url(url: &str) -> Result<WebviewUrl, String> {
    let parsed: tauri::Url = url.parse().map_err(|e| format!("bad URL {url}: {e}"))?;
    Ok(if parsed.scheme() == ERROR_SCHEME {
        WebviewUrl::CustomProtocol(parsed)
    } else {
        WebviewUrl::External(parsed)
    })
}

/// Bring the open window forward, on `url` when `navigate`.
fn show_again(app: &AppHandle, url: &str, navigate: bool) {
    let Some(window) = app.get_webview_window(LABEL) else {
        return;
    };
    if navigate
        && let Ok(WebviewUrl::External(page)) = webview_url(url)
        && let Err(e) = window.navigate(page.clone())
    {
        log::warn!("cannot open {page}: {e}");
    }
    let _ = window.show();
    let _ = window.unminimize();
    let _ = window.set_focus();
}

fn build(app: &AppHandle, url: &str, geometry: PathBuf) -> Result<WebviewWindow, String> {
    let mut builder = WebviewWindowBuilder::new(app, LABEL, webview_url(url)?)
        .title("KG Memory")
        .min_inner_size(640.0, 420.0);
    builder = match load_geometry(&geometry) {
        Some(g) => builder.inner_size(g.width, g.height).position(g.x, g.y),
        None => builder.inner_size(1400.0, 900.0).center(),
    };
    if let Some(file) = std::env::var_os(probe::ENV) {
        builder = probe::attach(builder, file.into());
    }
    let window = builder.build().map_err(|e| e.to_string())?;
    let handle = window.clone();
    window.on_window_event(move |event| match event {
        WindowEvent::CloseRequested { .. } => {
            save_geometry(&handle, &geometry);
            // The tray opens a new window from now on, even while this process ends.
            let _ = writeln!(std::io::stdout(), "{CLOSED}");
            log::info!("graph window closed: its process ends");
        }
        WindowEvent::Moved(_) | WindowEvent::Resized(_) => save_geometry(&handle, &geometry),
        _ => {}
    });
    Ok(window)
}

// ----- the error page ------------------------------------------------------------------

/// The app's own URL scheme, for the error page.
const ERROR_SCHEME: &str = "kg-memory";

/// The answer to any request on [`ERROR_SCHEME`]: why there is no graph view.
fn error_response(page: Option<&str>) -> Response<Vec<u8>> {
    let (status, body) = match page {
        Some(page) => (StatusCode::OK, page.to_string()),
        None => (StatusCode::NOT_FOUND, String::from("Not Found")),
    };
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        // A static page: no scripts, nothing loaded from anywhere.
        .header(
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'",
        )
        .body(body.into_bytes())
        .unwrap_or_else(|_| Response::new(Vec::new()))
}

/// The page shown instead of the graph view when there is no server: what is wrong,
/// on which port, and what to do. `None` when the server runs.
fn error_page(host: &Host, settings: &Settings) -> Option<String> {
    let port = settings.port;
    let address = html(&format!("{}:{port}", settings.host));
    let (problem, steps) = match host {
        Host::Hosted { .. } | Host::Attached { .. } => return None,
        Host::PortTaken => (
            format!(
                "<p>Another program is using port <b>{port}</b> ({address}), the port KG \
                 Memory's server listens on. It is not a KG Memory server, so KG Memory \
                 could not start its server: the graph view cannot be shown, and Claude \
                 Code cannot reach its memory.</p>"
            ),
            format!(
                "<li><p>Stop the other program, then quit KG Memory (tray menu, Quit) and \
                 start it again. To see which program it is, run \
                 <code>lsof -nP -iTCP:{port} -sTCP:LISTEN</code> (Linux, macOS) or \
                 <code>netstat -ano | findstr :{port}</code> (Windows).</p></li>\
                 <li><p>Or run KG Memory on another port: set the environment variable \
                 <code>KG_HTTP_PORT</code> to a free port (for example \
                 <code>KG_HTTP_PORT={}</code>) for KG Memory, start it again, \
                 then choose <i>Connect Claude Code…</i> in the tray menu so Claude Code \
                 uses the new port.</p></li>",
                port.wrapping_add(1).max(1024)
            ),
        ),
        Host::Failed { reason } => (
            format!(
                "<p>KG Memory could not start its server (port <b>{port}</b>, {address}), \
                 so the graph view cannot be shown:</p><p class=\"reason\">{}</p>",
                html(reason)
            ),
            String::from(
                "<li><p>Fix the problem above, then quit KG Memory (tray menu, Quit) and \
                 start it again.</p></li>",
            ),
        ),
    };
    Some(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"color-scheme\" content=\"light dark\">\
         <title>KG Memory — no graph view</title><style>{ERROR_STYLE}</style></head>\
         <body><main><h1>KG Memory cannot show the graph view</h1>{problem}\
         <h2>What to do</h2><ul>{steps}</ul></main></body></html>\n"
    ))
}

const ERROR_STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;margin:0;padding:2.5em}\
    main{max-width:42em}h1{font-size:1.4em;margin:0 0 .8em}h2{font-size:1.1em;margin:1.4em 0 .4em}\
    ul{padding-left:1.2em}code{font-size:.95em;padding:0 .2em;border-radius:3px;\
    background:rgba(127,127,127,.18)}.reason{padding:.6em .8em;border-left:3px solid #b3261e;\
    background:rgba(179,38,30,.08)}";

/// `text` safe to put in HTML.
fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

// ----- tests' window on the page ---------------------------------------------------------

/// Tests only. With `KG_TEST_PAGE_REPORT=<file>`, every page the window finishes loading
/// is asked what it shows (the colours Cytoscape gave the graph's nodes, or the page's
/// text when it is not the graph view) and the answer is appended to the file as one
/// JSON line. A page can call nothing in the app (src/acl.rs), so the page answers by
/// asking to navigate to a URL holding the answer, which the app reads and refuses.
mod probe {
    use std::io::Write as _;
    use std::path::PathBuf;
    use tauri::webview::PageLoadEvent;
    use tauri::{WebviewWindowBuilder, Wry};

    pub const ENV: &str = "KG_TEST_PAGE_REPORT";
    /// Where answers go (`.invalid` is reserved: nothing can answer there).
    const HOST: &str = "kg-test-report.invalid";

    /// Waits for the graph view's first drawing (`window.kgView.ready`), then reads
    /// what Cytoscape applied to each node (`_cyreg` is where Cytoscape keeps the
    /// instance of a container).
    const SCRIPT: &str = r#"(() => {
  const report = (what) => {
    const answer = JSON.stringify({ url: location.href, ...what });
    location.href = 'http://kg-test-report.invalid/?r=' + encodeURIComponent(answer);
  };
  const started = Date.now();
  const look = () => {
    const view = window.kgView;
    const cy = document.getElementById('cy')?._cyreg?.cy;
    if (!document.getElementById('cy')) return report({ text: document.body ? document.body.innerText : '' });
    if (!view || !view.ready || !cy) {
      if (Date.now() - started < 20000) return void setTimeout(look, 100);
      return report({ error: 'the graph view never became ready' });
    }
    const root = document.documentElement;
    const css = getComputedStyle(root);
    // Each topic colour class (t0, t1, …, tx past the palette) and its theme colour now.
    const palette = { tx: css.getPropertyValue('--t-other').trim() };
    for (let i = 0; css.getPropertyValue('--t' + i).trim(); i++) palette['t' + i] = css.getPropertyValue('--t' + i).trim();
    report({
      theme: root.dataset.theme ?? null,
      palette,
      nodes: cy.nodes()
        .filter((n) => !n.hasClass('band') && !n.hasClass('artifact'))
        .map((n) => ({ id: n.id(), classes: n.classes().join(' '), background: n.style('background-color') })),
    });
  };
  look();
})();"#;

    pub fn attach<'a>(
        builder: WebviewWindowBuilder<'a, Wry, tauri::AppHandle>,
        file: PathBuf,
    ) -> WebviewWindowBuilder<'a, Wry, tauri::AppHandle> {
        builder
            .on_page_load(|window, payload| {
                if payload.event() == PageLoadEvent::Finished
                    && let Err(e) = window.eval(SCRIPT)
                {
                    log::warn!("{ENV}: cannot ask the page: {e}");
                }
            })
            .on_navigation(move |url| {
                if url.host_str() != Some(HOST) {
                    return true;
                }
                let answer = url.query_pairs().find(|(k, _)| k == "r").map(|(_, v)| v);
                let line = format!("{}\n", answer.unwrap_or_default());
                let written = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&file)
                    .and_then(|mut f| f.write_all(line.as_bytes()));
                if let Err(e) = written {
                    log::warn!("{ENV}: cannot write {}: {e}", file.display());
                }
                false
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_page_says_what_is_wrong_which_port_and_what_to_do() {
        let mut settings = Settings::from_env().expect("settings");
        settings.host = "127.0.0.1".into();
        settings.port = 8765;
        let page = error_page(&Host::PortTaken, &settings).expect("a page");
        for must in [
            "Another program is using port <b>8765</b> (127.0.0.1:8765)",
            "Stop the other program",
            "<code>KG_HTTP_PORT</code>",
            "KG_HTTP_PORT=8766",
        ] {
            assert!(page.contains(must), "{must:?} missing from {page}");
        }
        assert!(!page.contains("<script"), "{page}");
        let failed = Host::Failed {
            reason: "cannot open <root> & lock it".into(),
        };
        let page = error_page(&failed, &settings).expect("a page");
        assert!(
            page.contains("cannot open &lt;root&gt; &amp; lock it"),
            "{page}"
        );
        assert!(
            error_page(
                &Host::Attached {
                    version: "1".into()
                },
                &settings
            )
            .is_none()
        );
    }

    #[test]
    fn the_window_process_reads_the_orders_the_tray_writes() {
        let order =
            serde_json::json!({"show": "http://127.0.0.1:8765/ui#graph=user", "navigate": true});
        let Some(Order::Show { url, navigate }) = Order::parse(&format!("{order}\n")) else {
            panic!("a show order");
        };
        assert_eq!(url, "http://127.0.0.1:8765/ui#graph=user");
        assert!(navigate);
        let page = serde_json::json!({"error_page": "<p>no server</p>"}).to_string();
        assert!(
            matches!(Order::parse(&page), Some(Order::ErrorPage(p)) if p == "<p>no server</p>")
        );
        assert!(Order::parse("not json").is_none());
        assert!(Order::parse("{}").is_none());
    }
}
