//! A node's `touches` entry read as a file path: the one place that says which part of
//! an entry names a file and where that file is (spec since-0.9.30 §1.2 and §8). File
//! recall's reverse index, DEBT's stale touches and the rename fix all go through here,
//! so an entry means the same file to each of them.
//!
//! Entries are written by agents in many shapes; the path keeps what names the file
//! and drops what names a place in it (line ranges, symbols, anchors, a comment after
//! a space). URLs name no file. Reading an entry is text work; only [`exists`],
//! [`file_keys`] and [`touch_keys`] look at the disk (`stat` and `realpath`, never a
//! walk, nothing opened).
//!
//! ```text
//! src/a.py:12-40 (parser)   path part `src/a.py`, relative to the project root
//! ./docs/../docs/x.md       relative, normalised to docs/x.md
//! ~/n.md#top                absolute: <home>/n.md
//! /srv/x.py:10:3            absolute: /srv/x.py
//! https://x.org/a.rs        none (a URL)
//! ```

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

/// The path part of one touch entry as the entry writes it, with where it sits in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathPart<'a> {
    entry: &'a str,
    start: usize,
    end: usize,
}

/// The path part of a touch entry: its first whitespace-separated word, cut at the
/// first `#` (an anchor), with trailing `:suffix`es that hold no `/` taken off (line
/// ranges `:12-40`, columns, symbols `:parse`) and then trailing slashes. `None` for an
/// entry that names no path: empty, holding a URL (`://`), or nothing left after the
/// cuts.
pub fn path_part(entry: &str) -> Option<PathPart<'_>> {
    if entry.contains("://") {
        return None;
    }
    let start = entry.len() - entry.trim_start().len();
    let word = entry[start..].split(char::is_whitespace).next()?;
    let mut path = word.split('#').next().unwrap_or("");
    while let Some((before, suffix)) = path.rsplit_once(':')
        && !suffix.contains('/')
        && !before.is_empty()
    {
        path = before;
    }
    // `/` alone stays: it is the root folder, not an empty path.
    let trimmed = path.trim_end_matches('/');
    let path = if trimmed.is_empty() && path.starts_with('/') {
        "/"
    } else {
        trimmed
    };
    if path.is_empty() || path == "." || path.starts_with(':') {
        return None;
    }
    Some(PathPart {
        entry,
        start,
        end: start + path.len(),
    })
}

/// The path a touch entry names, or `None` for an entry that names no file (a URL, an
/// empty entry, `.`, a `~user` path).
pub fn parse(entry: &str, home: &Path) -> Option<TouchPath> {
    path_part(entry)?.place(home)
}

impl<'a> PathPart<'a> {
    /// The path as the entry writes it.
    pub fn as_str(&self) -> &'a str {
        &self.entry[self.start..self.end]
    }

    /// The entry with its path part replaced by `path`, everything around it kept
    /// (`src/a.rs:12-40 (parser)` with `src/b.rs` is `src/b.rs:12-40 (parser)`).
    pub fn with_path(&self, path: &str) -> String {
        format!(
            "{}{path}{}",
            &self.entry[..self.start],
            &self.entry[self.end..]
        )
    }

    /// Whether the path is written from the home folder (`~` or `~/…`).
    pub fn is_home(&self) -> bool {
        self.as_str().starts_with('~')
    }

    /// Whether the entry is meant as a file path rather than prose or a symbol: no
    /// glob characters, and it starts with `/` or `~`, holds a `/`, or ends in a file
    /// extension (1–10 letters and digits, at least one a letter: `a.rs`, `x.mp4`, but
    /// not `v1.2`). Only such entries can be stale.
    pub fn is_path_shaped(&self) -> bool {
        let path = self.as_str();
        if path.contains(['*', '?', '[', ']', '{', '}']) {
            return false;
        }
        if path.starts_with(['/', '~']) || path.contains('/') {
            return true;
        }
        path.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=10).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric())
                && ext.bytes().any(|b| b.is_ascii_alphabetic())
        })
    }

    /// The path, absolute (`~` expanded against `home`) or relative, lexically
    /// normalised; `None` for another user's home (`~name/…`) and for a relative path
    /// that names nothing (`..`).
    pub fn place(&self, home: &Path) -> Option<TouchPath> {
        let path = self.as_str();
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

    /// The file the path names: a relative path under `root` (none without one).
    pub fn resolve(&self, home: &Path, root: Option<&Path>) -> Option<PathBuf> {
        match self.place(home)? {
            TouchPath::Absolute(path) => Some(path),
            TouchPath::Relative(rel) => Some(lexical(&root?.join(rel))),
        }
    }
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

/// What one `stat` of a touch's file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Something is there: a file, a folder, a device (symlinks followed).
    Present,
    /// Nothing is there, or nothing reachable: no such file, a component that is no
    /// folder, a dangling symlink or a symlink loop.
    Missing,
    /// The disk would not say (permission denied, I/O error): counted as neither.
    Unknown,
}

/// Whether something exists at `path`: one `stat`, symlinks followed, nothing opened
/// (a FIFO or a device is never read, so nothing can block).
pub fn exists(path: &Path) -> Presence {
    match std::fs::metadata(path) {
        Ok(_) => Presence::Present,
        Err(e) => match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => Presence::Missing,
            // A symlink loop (ELOOP) or a name too long for the system never names a
            // file either; `ErrorKind` has no stable variant for them.
            _ if matches!(
                e.raw_os_error(),
                Some(libc::ELOOP) | Some(libc::ENAMETOOLONG)
            ) =>
            {
                Presence::Missing
            }
            _ => Presence::Unknown,
        },
    }
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

    fn part(entry: &str) -> Option<&str> {
        path_part(entry).map(|p| p.as_str())
    }

    #[test]
    fn the_path_part_drops_ranges_anchors_symbols_and_prose() {
        assert_eq!(part("src/a.py:12-40 (parser)"), Some("src/a.py"));
        assert_eq!(part("src/util.py:10-20 (parser)"), Some("src/util.py"));
        assert_eq!(part("  src/a.rs:12:5"), Some("src/a.rs"));
        assert_eq!(part("src/a.rs:parse_args"), Some("src/a.rs"));
        assert_eq!(part("~/n.md#top"), Some("~/n.md"));
        assert_eq!(part("docs/"), Some("docs"));
        assert_eq!(part("/"), Some("/"));
        assert_eq!(part("./docs/../docs/x.md"), Some("./docs/../docs/x.md"));
        assert_eq!(
            part("C:/x/y.rs"),
            Some("C:/x/y.rs"),
            "a suffix with / stays"
        );
        for none in ["", "   ", "https://x.org/a.rs", ".", ":12", "#top", "./"] {
            assert_eq!(part(none), None, "{none:?}");
        }
    }

    #[test]
    fn with_path_keeps_what_surrounds_the_path() {
        let entry = "  src/a.rs:12-40 (parser)";
        let p = path_part(entry).expect("path");
        assert_eq!(p.with_path("src/b.rs"), "  src/b.rs:12-40 (parser)");
        let p = path_part("~/n.md#top").expect("path");
        assert_eq!(p.with_path("~/m.md"), "~/m.md#top");
    }

    #[test]
    fn only_path_shaped_entries_can_be_stale() {
        let shaped = |e: &str| path_part(e).is_some_and(|p| p.is_path_shaped());
        for yes in [
            "src/a.rs",
            "README.md",
            "/etc/hosts",
            "~",
            "~/x",
            "a/b",
            "x.tar.gz",
            "clip.mp4",
            "Cargo.toml:3",
        ] {
            assert!(shaped(yes), "{yes}");
        }
        for no in [
            "parser",
            "Makefile",
            "v1.2",
            "e.g.",
            "src/*.rs",
            "a.{rs,py}",
            ".gitignore",
            "x.abcdefghijk",
            "the parser module",
        ] {
            assert!(!shaped(no), "{no}");
        }
    }

    #[test]
    fn paths_resolve_against_home_or_the_project_root() {
        let home = Path::new("/home/u");
        let root = Path::new("/home/u/proj");
        let resolve =
            |e: &str, root: Option<&Path>| path_part(e).and_then(|p| p.resolve(home, root));
        assert_eq!(
            resolve("./docs/../docs/x.md", Some(root)),
            Some(PathBuf::from("/home/u/proj/docs/x.md"))
        );
        assert_eq!(
            resolve("~/n.md#top", None),
            Some(PathBuf::from("/home/u/n.md"))
        );
        assert_eq!(resolve("~", None), Some(PathBuf::from("/home/u")));
        assert_eq!(
            resolve("/srv/../etc/x", None),
            Some(PathBuf::from("/etc/x"))
        );
        assert_eq!(resolve("src/a.rs", None), None, "no root, no file");
        assert_eq!(resolve("~bob/x.rs", Some(root)), None);
        assert_eq!(
            resolve("../other/x.rs", Some(root)),
            Some(PathBuf::from("/home/u/other/x.rs"))
        );
        assert_eq!(resolve("..", Some(root)), None, "names nothing");
        assert_eq!(lexical(Path::new("/../..")), PathBuf::from("/"));
        assert_eq!(lexical(Path::new("../../a")), PathBuf::from("../../a"));
    }

    #[test]
    fn inside_is_strictly_below_the_root() {
        let root = Path::new("/home/u/proj");
        let rel = |p: &str| inside(Path::new(p), root).map(|r| r.to_string_lossy().into_owned());
        assert_eq!(rel("/home/u/proj/src/a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(rel("/home/u/projx/a.rs"), None);
        assert_eq!(rel("/home/u/proj"), None);
    }

    #[test]
    fn one_stat_tells_present_from_missing_without_opening_anything() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("a.rs");
        std::fs::write(&file, "x").expect("write");
        assert_eq!(exists(&file), Presence::Present);
        assert_eq!(exists(dir.path()), Presence::Present, "a folder is there");
        assert_eq!(exists(Path::new("/dev/null")), Presence::Present);
        assert_eq!(exists(&dir.path().join("gone.rs")), Presence::Missing);
        assert_eq!(exists(&file.join("below")), Presence::Missing);
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
            // SAFETY: a valid path; mkfifo only creates the node.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert_eq!(
                exists(&fifo),
                Presence::Present,
                "never opened, never blocks"
            );
            let a = dir.path().join("loop-a");
            let b = dir.path().join("loop-b");
            std::os::unix::fs::symlink(&b, &a).expect("link");
            std::os::unix::fs::symlink(&a, &b).expect("link");
            assert_eq!(
                exists(&a),
                Presence::Missing,
                "a symlink loop names no file"
            );
            let dangling = dir.path().join("dangling");
            std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).expect("link");
            assert_eq!(exists(&dangling), Presence::Missing);
        }
    }
}
