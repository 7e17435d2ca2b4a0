//! Embeds the built graph view (`ui/dist`, made by `cd ui && npm ci && npm run build`)
//! into the binary, so `kg-memory serve` alone serves it at `/ui`.
//!
//! Without `ui/dist/index.html` nothing is embedded and `/ui` explains how to build
//! it: the server still builds and runs on a machine without Node.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let ui = manifest.join("../../ui");
    let dist = ui.join("dist");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("ui_assets.rs");

    let mut files = Vec::new();
    if dist.join("index.html").is_file() {
        collect(&dist, &dist, &mut files);
        files.sort();
        // A directory is scanned recursively by Cargo: any rebuilt asset re-embeds.
        println!("cargo:rerun-if-changed={}", dist.display());
    } else if ui.is_dir() {
        // A checkout built without the page serves one that only says how to build it;
        // say so here too, where whoever built it is looking.
        println!(
            "cargo:warning=the graph view is not built (no ui/dist), so /ui will only say how to build it; \
             to embed it, run `cd ui && npm ci && npm run build`, then build again"
        );
        // Watch the folder the build will appear in (not a missing path, which would
        // re-run this script on every build).
        println!(
            "cargo:rerun-if-changed={}",
            ui.join("package.json").display()
        );
        println!("cargo:rerun-if-changed={}", ui.display());
    }
    println!("cargo:rerun-if-changed=build.rs");

    let mut code = String::from(
        "/// Files of the built graph view: (path under `ui/dist`, contents).\n\
         pub static ASSETS: &[(&str, &[u8])] = &[\n",
    );
    for (rel, abs) in &files {
        let _ = writeln!(code, "    ({rel:?}, include_bytes!({abs:?})),");
    }
    code.push_str("];\n");
    if let Err(e) = std::fs::write(&out, code) {
        panic!("cannot write {}: {e}", out.display());
    }
}

/// Every file under `dir`, as (path relative to `root` with `/`, absolute path).
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let abs = path
                .canonicalize()
                .unwrap_or_else(|_| path.clone())
                .to_string_lossy()
                .into_owned();
            files.push((rel, abs));
        }
    }
}
