//! What file a `touches` entry names, as one comparable key (spec since-0.9.30
//! §1.2): `src/a.py:12-40 (parser)` → `src/a.py`, `./docs/../docs/x.md` →
//! `docs/x.md`, `~/n.md#top` → `<home>/n.md`.
//!
//! Entries are written by agents in many shapes; the key keeps what names the file
//! and drops what names a place in it (line ranges, symbols, anchors, a comment after
//! a space). URLs name no file.

use crate::namespace::resolve_path;
use std::path::{Component, Path, PathBuf};

/// The file a touch entry names, before it is placed on the file system: absolute
/// (with `~` expanded) or relative to the project root, lexically normalised.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TouchPath {
    /// `/…` or `~/…`.
    Absolute(PathBuf),
    /// Relative to the project root; never empty, `.` or `..`-only.
    Relative(PathBuf),
}

/// The path a touch entry names, or `None` for an entry that names no file (a URL, an
/// empty entry, `.`, a `~user` path).
pub fn parse(entry: &str, home: &Path) -> Option<TouchPath> {
    if entry.contains("://") {
        return None;
    }
    let token = entry.split_whitespace().next()?;
    let mut path = token.split('#').next().unwrap_or("");
    // Line ranges and symbols: `a.rs:12-40`, `a.rs:fn_name`, `a.rs:12:3`.
    while let Some((head, tail)) = path.rsplit_once(':') {
        if tail.contains('/') {
            break;
        }
        path = head;
    }
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        return None;
    }
    if path == "~" {
        return Some(TouchPath::Absolute(home.to_path_buf()));
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return Some(TouchPath::Absolute(lexical(&home.join(rest))));
    }
    if path.starts_with('~') {
        return None; // `~user/…`: another person's home
    }
    if path.starts_with('/') {
        return Some(TouchPath::Absolute(lexical(Path::new(path))));
    }
    let relative = lexical(Path::new(path));
    let names_something = relative
        .components()
        .any(|c| matches!(c, Component::Normal(_)));
    names_something.then_some(TouchPath::Relative(relative))
}

/// `.` dropped and `..` applied without touching the file system; a relative path
/// keeps the `..` it cannot apply.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_name =
                    matches!(out.components().next_back(), Some(Component::Normal(_)));
                if last_is_name {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` relative to `root` when it lies inside it (`root` itself is not inside).
pub fn inside<'p>(path: &'p Path, root: &Path) -> Option<&'p Path> {
    path.strip_prefix(root)
        .ok()
        .filter(|rest| !rest.as_os_str().is_empty())
}

/// The keys under which a file is known, most specific first: relative to the
/// project `root` when the file lies inside it, and absolute. `file` is resolved
/// (symlinks followed) as far as it exists.
pub fn file_keys(file: &Path, root: Option<&Path>) -> Vec<String> {
    let real = resolve_path(file);
    let mut keys = Vec::with_capacity(2);
    if let Some(rel) = root.and_then(|r| inside(&real, r)) {
        keys.push(rel.to_string_lossy().into_owned());
    }
    keys.push(real.to_string_lossy().into_owned());
    keys
}

/// The keys a touch entry is indexed under, for a graph whose project folder is
/// `root` (`None` for the user graph, which knows absolute paths only): its lexical
/// form, and the form its file resolves to (symlinks inside the project followed).
pub fn touch_keys(entry: &str, home: &Path, root: Option<&Path>) -> Vec<String> {
    let mut keys: Vec<String> = Vec::with_capacity(2);
    let placed = match parse(entry, home) {
        Some(TouchPath::Absolute(path)) => Some(path),
        Some(TouchPath::Relative(rel)) => root.map(|r| r.join(rel)),
        None => None,
    };
    // A folder, device or FIFO is not a file an agent reads or edits: such an entry
    // is never recalled. A missing file still is (it may come back, or be created).
    // `metadata` stats without opening, so no device or FIFO can block it.
    if placed.is_some_and(|p| std::fs::metadata(p).is_ok_and(|m| !m.is_file())) {
        return keys;
    }
    let mut add = |key: String| {
        if !keys.contains(&key) {
            keys.push(key);
        }
    };
    match parse(entry, home) {
        None => {}
        Some(TouchPath::Absolute(path)) => {
            for key in file_keys(&path, root) {
                add(key);
            }
            add(path.to_string_lossy().into_owned());
        }
        Some(TouchPath::Relative(rel)) => {
            let Some(root) = root else {
                return keys;
            };
            add(rel.to_string_lossy().into_owned());
            for key in file_keys(&root.join(&rel), Some(root)) {
                add(key);
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(entry: &str) -> Option<TouchPath> {
        parse(entry, Path::new("/home/u"))
    }

    #[test]
    fn entries_are_cut_to_the_file_they_name() {
        let rel = |p: &str| Some(TouchPath::Relative(PathBuf::from(p)));
        let abs = |p: &str| Some(TouchPath::Absolute(PathBuf::from(p)));
        assert_eq!(key("src/a.py:12-40 (parser)"), rel("src/a.py"));
        assert_eq!(key("./docs/../docs/x.md"), rel("docs/x.md"));
        assert_eq!(key("~/n.md#top"), abs("/home/u/n.md"));
        assert_eq!(
            key("crates/api/src/billing/webhook.rs:20-75 (async fn stripe_webhook)"),
            rel("crates/api/src/billing/webhook.rs")
        );
        assert_eq!(key("src/lib.rs:10:4"), rel("src/lib.rs"));
        assert_eq!(key("src/"), rel("src"));
        assert_eq!(key("../sibling/x.rs"), rel("../sibling/x.rs"));
        assert_eq!(key("/etc/../etc/hosts"), abs("/etc/hosts"));
        for none in [
            "",
            "   ",
            ".",
            "./",
            "https://example.com/a.rs",
            "~other/x",
            "#anchor",
            ":12",
        ] {
            assert_eq!(key(none), None, "{none:?}");
        }
    }

    #[test]
    fn files_are_known_relative_to_the_project_and_absolute() {
        let root = Path::new("/kg-core-nonexistent/p");
        assert_eq!(
            file_keys(&root.join("src/a.rs"), Some(root)),
            ["src/a.rs", "/kg-core-nonexistent/p/src/a.rs"]
        );
        assert_eq!(
            file_keys(Path::new("/kg-core-nonexistent/q/a.rs"), Some(root)),
            ["/kg-core-nonexistent/q/a.rs"]
        );
        assert_eq!(
            touch_keys("src/a.rs:1-2", Path::new("/h"), Some(root)),
            ["src/a.rs", "/kg-core-nonexistent/p/src/a.rs"]
        );
        // The user graph has no project folder: relative entries name nothing there.
        assert!(touch_keys("src/a.rs", Path::new("/h"), None).is_empty());
    }

    #[test]
    fn symlinks_inside_the_project_meet_their_target() {
        let dir = tempfile::tempdir().expect("dir");
        let root = std::fs::canonicalize(dir.path()).expect("real");
        std::fs::create_dir(root.join("real")).expect("mkdir");
        std::fs::write(root.join("real/a.rs"), "").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).expect("link");
        let keys = touch_keys("link/a.rs", Path::new("/h"), Some(&root));
        assert!(keys.contains(&"real/a.rs".to_string()), "{keys:?}");
        // Folders and devices are never keys.
        assert!(touch_keys("real/", Path::new("/h"), Some(&root)).is_empty());
        assert!(touch_keys("/dev/zero", Path::new("/h"), Some(&root)).is_empty());
        let file = file_keys(&root.join("link/a.rs"), Some(&root));
        assert_eq!(file[0], "real/a.rs");
    }
}
