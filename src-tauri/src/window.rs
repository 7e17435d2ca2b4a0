//! The graph window: the page the server serves at `/ui`, loaded from the server's own
//! URL so the app and a browser show the same page on the same origin. Closing it
//! destroys it, webview and all, so the app gives back the few hundred megabytes a
//! web process holds (the app lives on in the tray; the next open builds a new window
//! in well under a second); its size and position are remembered. Without a server (the port is taken,
//! the storage root is unusable) it shows a page saying what is wrong instead of a page
//! that never loads.

use crate::host::Host;
use crate::shell;
use kg_server::Settings;
use tauri::http::{Response, StatusCode, header};
use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindow, WebviewWindowBuilder, WindowEvent};

const LABEL: &str = "graph";

/// Where the window was, in logical pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Geometry {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

fn geometry_file(app: &AppHandle) -> std::path::PathBuf {
    shell(app).settings.state_dir().join("window.json")
}

fn load_geometry(app: &AppHandle) -> Option<Geometry> {
    let text = std::fs::read_to_string(geometry_file(app)).ok()?;
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
pub fn save_geometry(app: &AppHandle) {
    let Some(window) = app.get_webview_window(LABEL) else {
        return;
    };
    let scale = window.scale_factor().unwrap_or(1.0);
    let (Ok(pos), Ok(size)) = (window.outer_position(), window.inner_size()) else {
        return;
    };
    let pos = pos.to_logical::<f64>(scale);
    let size = size.to_logical::<f64>(scale);
    let path = geometry_file(app);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let text =
        serde_json::json!({"x": pos.x, "y": pos.y, "width": size.width, "height": size.height})
            .to_string();
    if let Err(e) = std::fs::write(&path, text) {
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

/// What the window shows: the graph view, or the error page when there is no server.
fn target(app: &AppHandle, graph: Graph<'_>) -> Result<WebviewUrl, String> {
    let s = shell(app);
    let (url, failed) = if s.host.failure(&s.settings).is_some() {
        (format!("{ERROR_SCHEME}://localhost/"), true)
    } else {
        (page_url(app, graph), false)
    };
    let parsed = url.parse().map_err(|e| format!("bad URL {url}: {e}"))?;
    Ok(if failed {
        WebviewUrl::CustomProtocol(parsed)
    } else {
        WebviewUrl::External(parsed)
    })
}

/// Open the graph window (or focus it), on a graph.
pub fn show(app: &AppHandle, graph: Graph<'_>) {
    let url = match target(app, graph) {
        Ok(url) => url,
        Err(e) => {
            log::error!("cannot open the graph window: {e}");
            return;
        }
    };
    if let Some(window) = app.get_webview_window(LABEL) {
        if graph != Graph::WhereWorking
            && let WebviewUrl::External(page) = url
            && let Err(e) = window.navigate(page.clone())
        {
            log::warn!("cannot open {page}: {e}");
        }
        let _ = window.show();
        let _ = window.unminimize();
        let _ = window.set_focus();
        return;
    }
    match build(app, url) {
        Ok(window) => {
            let _ = window.set_focus();
        }
        Err(e) => log::error!("cannot open the graph window: {e}"),
    }
}

fn build(app: &AppHandle, url: WebviewUrl) -> tauri::Result<WebviewWindow> {
    let mut builder = WebviewWindowBuilder::new(app, LABEL, url)
        .title("KG Memory")
        .min_inner_size(640.0, 420.0);
    builder = match load_geometry(app) {
        Some(g) => builder.inner_size(g.width, g.height).position(g.x, g.y),
        None => builder.inner_size(1400.0, 900.0).center(),
    };
    if let Some(file) = std::env::var_os(probe::ENV) {
        builder = probe::attach(builder, file.into());
    }
    let window = builder.build()?;
    let handle = app.clone();
    window.on_window_event(move |event| match event {
        // Closing destroys the window and its webview (not just hides them): WebKit's
        // web process is most of what the app holds while the window is open, and it
        // exits with its last view. The app stays in the tray (main.rs keeps it
        // running with no window); opening the view again builds a new window.
        WindowEvent::CloseRequested { .. } => {
            save_geometry(&handle);
            log::info!("graph window closed: its webview is destroyed");
        }
        WindowEvent::Destroyed => give_back_freed_memory(),
        WindowEvent::Moved(_) | WindowEvent::Resized(_) => save_geometry(&handle),
        _ => {}
    });
    Ok(window)
}

/// Hand the heap the closed window's webview freed back to the system. glibc keeps
/// freed memory in its arenas for reuse, so without this the app would go on holding
/// much of what the window took while it was open. WebKit frees some of it only after
/// the window is gone, hence the short wait.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_secs(2));
        // SAFETY: malloc_trim only releases free memory of the allocator's own arenas;
        // it is thread-safe and touches nothing that is in use.
        unsafe {
            libc::malloc_trim(0);
        }
    });
}

// ----- the error page ------------------------------------------------------------------

/// The app's own URL scheme, for the error page (registered in main.rs).
pub const ERROR_SCHEME: &str = "kg-memory";

/// The answer to any request on [`ERROR_SCHEME`]: why there is no graph view.
pub fn error_response(app: &AppHandle) -> Response<Vec<u8>> {
    let s = shell(app);
    let (status, body) = match error_page(&s.host, &s.settings) {
        Some(page) => (StatusCode::OK, page),
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
}
