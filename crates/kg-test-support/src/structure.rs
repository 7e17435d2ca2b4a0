//! The size check every Rust file passes: none over [`MAX_CODE_LINES`] lines of code,
//! tests and benches included, so each file can be read whole. The graph view's
//! `ui/scripts/structure.mjs` holds its `.ts` files to the same limit, counted the
//! same way.
//!
//! A line of code is one that is neither blank nor only a comment: `//`, `///` and
//! `//!` lines do not count, nor lines inside a `/* … */` that opens a line (the
//! workspace writes no block comments; they are counted as the view's check counts
//! them). A line with code before a comment counts.

use std::path::{Path, PathBuf};

/// The most lines of code a file may hold.
pub const MAX_CODE_LINES: usize = 800;

/// The folders of the workspace that hold Rust files, those absent skipped.
pub const RUST_FOLDERS: [&str; 3] = ["crates", "src-tauri", "fuzz"];

/// Lines of `text` that are neither blank nor only a comment.
pub fn code_lines(text: &str) -> usize {
    let mut count = 0;
    let mut in_block = false;
    for raw in text.lines() {
        let mut line = raw.trim();
        if in_block {
            let Some(end) = line.find("*/") else { continue };
            in_block = false;
            line = line[end + 2..].trim();
        }
        while let Some(rest) = line.strip_prefix("/*") {
            let Some(end) = rest.find("*/") else {
                in_block = true;
                line = "";
                break;
            };
            line = rest[end + 2..].trim();
        }
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        count += 1;
    }
    count
}

/// The `.rs` files under `dir`, sorted; build output (`target/`) and hidden folders
/// aside.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", folder.display()));
        for entry in entries {
            let path = entry.expect("a folder entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if path.is_dir() {
                if name != "target" && name != "node_modules" && !name.starts_with('.') {
                    folders.push(path);
                }
            } else if name.ends_with(".rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The Rust files of the workspace at `root` with more than `max` lines of code, each
/// with its count (paths relative to `root`), and how many files were read.
pub fn over_limit(root: &Path, max: usize) -> (Vec<(String, usize)>, usize) {
    let mut over = Vec::new();
    let mut read = 0;
    for folder in RUST_FOLDERS.map(|f| root.join(f)) {
        if !folder.is_dir() {
            continue;
        }
        for path in rust_files(&folder) {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            read += 1;
            let n = code_lines(&text);
            if n > max {
                let shown = path.strip_prefix(root).unwrap_or(&path);
                over.push((shown.display().to_string(), n));
            }
        }
    }
    (over, read)
}

/// Panics naming each Rust file of the workspace at `root` over `max` lines of code,
/// with its count. Returns how many files were read, so a caller can tell the scan
/// looked in the right place.
pub fn assert_files_within(root: &Path, max: usize) -> usize {
    let (over, read) = over_limit(root, max);
    let list: Vec<String> = over
        .iter()
        .map(|(file, n)| format!("{file} has {n} lines of code"))
        .collect();
    assert!(
        over.is_empty(),
        "over {max} lines of code (blank lines and comments aside), split by concern:\n{}",
        list.join("\n")
    );
    read
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_and_comments_do_not_count() {
        let text = "//! About the module.\n\n/// A thing.\nfn f() {\n    // why\n    \
                    let x = 1; // trailing\n}\n/* a block\n   still */\nlet y = /* inline */ 2;\n";
        assert_eq!(code_lines(text), 4);
    }

    #[test]
    fn a_file_over_the_limit_is_named_with_its_count() {
        let root = tempfile::tempdir().expect("a temporary folder");
        let src = root.path().join("crates/big/src");
        std::fs::create_dir_all(&src).expect("folders");
        let long: String = (0..12)
            .map(|i| format!("const C{i}: u8 = {i};\n\n// note\n"))
            .collect();
        std::fs::write(src.join("long.rs"), long).expect("a long file");
        std::fs::write(src.join("short.rs"), "fn f() {}\n").expect("a short file");
        let target = root.path().join("crates/big/target");
        std::fs::create_dir_all(&target).expect("a build folder");
        std::fs::write(target.join("built.rs"), "x\n".repeat(50)).expect("build output");
        let (over, read) = over_limit(root.path(), 10);
        assert_eq!(read, 2, "build output is not read");
        assert_eq!(over, [("crates/big/src/long.rs".to_string(), 12)]);
        let panicked = std::panic::catch_unwind(|| assert_files_within(root.path(), 10));
        let message = panicked.expect_err("a long file passed");
        let text = message.downcast_ref::<String>().expect("a message");
        assert!(
            text.contains("crates/big/src/long.rs has 12 lines of code"),
            "{text}"
        );
        assert_eq!(assert_files_within(root.path(), 12), 2);
    }
}
