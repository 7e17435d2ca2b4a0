//! The graph window: the page the server serves at `/ui`, loaded from the server's own
//! URL so the app and a browser show the same page on the same origin. Closing it only
//! hides it; its size and position are remembered.

use crate::shell;
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

fn page_url(app: &AppHandle, project: Option<&str>) -> String {
    let base = shell(app).settings.base_url();
    match project {
        Some(p) => format!("{base}/ui#project={}", kg_server::client::encode(p)),
        None => format!("{base}/ui"),
    }
}

/// Open the graph window (or focus it), optionally on one project's graph.
pub fn show(app: &AppHandle, project: Option<&str>) {
    let url = page_url(app, project);
    if let Some(window) = app.get_webview_window(LABEL) {
        if project.is_some()
            && let Ok(parsed) = url.parse()
            && let Err(e) = window.navigate(parsed)
        {
            log::warn!("cannot open {url}: {e}");
        }
        let _ = window.show();
        let _ = window.unminimize();
        let _ = window.set_focus();
        return;
    }
    match build(app, &url) {
        Ok(window) => {
            let _ = window.set_focus();
        }
        Err(e) => log::error!("cannot open the graph window: {e}"),
    }
}

fn build(app: &AppHandle, url: &str) -> tauri::Result<WebviewWindow> {
    let parsed = url
        .parse()
        .map_err(|e| tauri::Error::Anyhow(anyhow::anyhow!("bad URL {url}: {e}")))?;
    let mut builder = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::External(parsed))
        .title("KG Memory")
        .min_inner_size(640.0, 420.0);
    builder = match load_geometry(app) {
        Some(g) => builder.inner_size(g.width, g.height).position(g.x, g.y),
        None => builder.inner_size(1400.0, 900.0).center(),
    };
    let window = builder.build()?;
    let handle = app.clone();
    let hide = window.clone();
    window.on_window_event(move |event| match event {
        WindowEvent::CloseRequested { api, .. } => {
            // Closing hides: the app lives in the tray.
            api.prevent_close();
            save_geometry(&handle);
            let _ = hide.hide();
        }
        WindowEvent::Moved(_) | WindowEvent::Resized(_) => save_geometry(&handle),
        _ => {}
    });
    Ok(window)
}
