//! A node's `touches` entry read as a file path: the one place that says which part of
//! an entry names a file and where that file is. DEBT's stale touches, the rename fix
//! and file recall's reverse index all go through here, so an entry means the same
//! file to each of them.
//!
//! Entries are free text written by agents: `src/a.rs`, `src/a.rs:12-40 (parser)`,
//! `./docs/../docs/x.md`, `~/notes.md#top`, `/etc/hosts`, or no path at all
//! (`the parser`, `https://…`). Reading one is pure text work; only [`exists`] looks
//! at the disk (one `stat`, never a walk).
//!
//! ```text
//! src/a.rs:12-40 (parser)   path part `src/a.rs`, relative: joined to the project root
//! ./docs/../docs/x.md       `./docs/../docs/x.md`, relative: normalised to docs/x.md
//! ~/n.md#top                `~/n.md`, home: /home/u/n.md
//! /srv/x.py:10:3            `/srv/x.py`, absolute
//! https://x.org/a.rs        none (a URL)
//! ```

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

/// Where a touch's path starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// `/…`: the path as written.
    Absolute,
    /// `~` or `~/…`: under the home folder.
    Home,
    /// Anything else: under the project root (a user-graph touch has no root, so a
    /// relative one names no file).
    Relative,
    /// `~name/…`: another user's home, which is not looked up.
    OtherHome,
}

/// The path part of one touch entry, borrowed from the entry, with where it sits in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TouchPath<'a> {
    entry: &'a str,
    start: usize,
    end: usize,
}

/// The path part of a touch entry: its first whitespace-separated word, cut at the
/// first `#` (an anchor), with trailing `:suffix`es that hold no `/` taken off (line
/// ranges `:12-40`, columns, symbols `:parse`) and then trailing slashes. `None` for an
/// entry that names no path: empty, a URL (`://`), or nothing left after the cuts.
pub fn path_part(entry: &str) -> Option<TouchPath<'_>> {
    let start = entry.len() - entry.trim_start().len();
    let word = entry[start..].split(char::is_whitespace).next()?;
    if word.contains("://") {
        return None;
    }
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
    Some(TouchPath {
        entry,
        start,
        end: start + path.len(),
    })
}

impl<'a> TouchPath<'a> {
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

    /// Where the path starts from.
    pub fn anchor(&self) -> Anchor {
        let path = self.as_str();
        match path.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => Anchor::Home,
            Some(_) => Anchor::OtherHome,
            None if path.starts_with('/') => Anchor::Absolute,
            None => Anchor::Relative,
        }
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

    /// The file the path names: `~` under `home`, a relative path under `root`,
    /// normalised lexically (`.` and `..` applied, symlinks not followed). `None` for a
    /// relative path without a root and for another user's home.
    pub fn resolve(&self, home: &Path, root: Option<&Path>) -> Option<PathBuf> {
        let path = self.as_str();
        let joined = match self.anchor() {
            Anchor::Absolute => PathBuf::from(path),
            Anchor::Home => home.join(path.trim_start_matches('~').trim_start_matches('/')),
            Anchor::Relative => root?.join(path),
            Anchor::OtherHome => return None,
        };
        Some(normalise(&joined))
    }
}

/// `path` with `.` dropped and each `..` taking off the component before it (never
/// above the root), as text; symlinks are not followed.
pub fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `..` of a relative path with nothing left to take off stays.
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// How a file path is written in a touch of a project rooted at `root`: relative to the
/// root when it lies inside it, else as given (absolute).
pub fn key_for<'p>(path: &'p Path, root: Option<&Path>) -> Cow<'p, str> {
    match root.and_then(|r| path.strip_prefix(r).ok()) {
        Some(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy(),
        _ => path.to_string_lossy(),
    }
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
        assert_eq!(normalise(Path::new("/../..")), PathBuf::from("/"));
        assert_eq!(normalise(Path::new("../a")), PathBuf::from("../a"));
    }

    #[test]
    fn keys_are_relative_inside_the_root_and_absolute_outside() {
        let root = Path::new("/home/u/proj");
        assert_eq!(
            key_for(Path::new("/home/u/proj/src/a.rs"), Some(root)),
            "src/a.rs"
        );
        assert_eq!(
            key_for(Path::new("/home/u/projx/a.rs"), Some(root)),
            "/home/u/projx/a.rs"
        );
        assert_eq!(
            key_for(Path::new("/home/u/proj"), Some(root)),
            "/home/u/proj"
        );
        assert_eq!(key_for(Path::new("/etc/hosts"), None), "/etc/hosts");
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
