//! Stale touches (our policy): `touches` entries of active nodes that name a file no
//! longer there, so a reader following them finds nothing. DEBT counts them and the
//! maintenance survey and the graph view list them, with the new path when git knows
//! where the file went (the server asks git; see `kg-server`'s `renames`).
//!
//! Only path-shaped entries count ([`crate::touch_path::PathPart::is_path_shaped`]):
//! `src/a.rs:12-40 (parser)` can be stale, `the parser` cannot. `~` is the home folder,
//! a relative path lies under the project root (a user-graph entry has none, so only
//! its absolute and `~` entries are checked), and a project whose folder is gone
//! reports none: its files cannot be told apart from its folder. One `stat` per
//! distinct path, no walks, nothing opened.

use crate::graph::Graph;
use crate::model::field;
use crate::touch_path::{Presence, TouchPath, exists, inside, path_part};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Distinct paths one check looks at, at most: a hand-edited graph with more touches
/// than any agent writes is checked in part rather than stall its reader.
pub const MAX_PATHS_CHECKED: usize = 10_000;

/// One path-shaped touch of an active node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TouchEntry {
    /// The node's id.
    pub id: String,
    /// The entry as stored (`src/a.rs:12-40 (parser)`).
    pub touch: String,
}

/// A touch whose file is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleTouch {
    /// The node's id.
    pub id: String,
    /// The entry as stored.
    pub touch: String,
    /// Its path as the entry writes it (`src/a.rs` of `src/a.rs:12-40 (parser)`).
    pub file: String,
    /// Where its file would be (resolved against home or the project root).
    pub path: PathBuf,
}

/// The path-shaped touches of a graph's active nodes, in node and entry order.
pub fn path_touches(graph: &Graph) -> Vec<TouchEntry> {
    let mut entries = Vec::new();
    for (id, node) in graph.nodes.iter() {
        if node.is_archived_flag() {
            continue;
        }
        let touches = match node.get(field::TOUCHES) {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(one)) => vec![one.as_str()],
            _ => Vec::new(),
        };
        for touch in touches {
            if path_part(touch).is_some_and(|p| p.is_path_shaped()) {
                entries.push(TouchEntry {
                    id: id.clone(),
                    touch: touch.to_string(),
                });
            }
        }
    }
    entries
}

/// The entries whose file is missing: `~` resolved against `home`, relative paths
/// against `root` (none for the user graph). A `root` that is no folder reports none.
pub fn find_stale(entries: &[TouchEntry], home: &Path, root: Option<&Path>) -> Vec<StaleTouch> {
    ResolvedTouches::new(entries, home, root).missing()
}

/// Path-shaped touches resolved to the files they name. Resolving is pure string and
/// path work, redone only when the touches change; a check of what is on disk now
/// ([`ResolvedTouches::missing`]) is then one `stat` per distinct file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedTouches {
    root: Option<PathBuf>,
    /// The distinct files, in the order the entries first name them, at most
    /// [`MAX_PATHS_CHECKED`].
    files: Vec<PathBuf>,
    /// Each entry whose file is among `files`, with that file's index.
    entries: Vec<(TouchEntry, usize)>,
}

impl ResolvedTouches {
    /// `entries` resolved: `~` against `home`, relative paths against `root`.
    pub fn new(entries: &[TouchEntry], home: &Path, root: Option<&Path>) -> Self {
        let mut index: HashMap<PathBuf, usize> = HashMap::new();
        let mut files = Vec::new();
        let mut resolved = Vec::new();
        for entry in entries {
            let Some(path) = path_part(&entry.touch).and_then(|part| part.resolve(home, root))
            else {
                continue;
            };
            let at = match index.get(&path) {
                Some(&at) => at,
                None if files.len() >= MAX_PATHS_CHECKED => continue,
                None => {
                    index.insert(path.clone(), files.len());
                    files.push(path);
                    files.len() - 1
                }
            };
            resolved.push((entry.clone(), at));
        }
        ResolvedTouches {
            root: root.map(Path::to_path_buf),
            files,
            entries: resolved,
        }
    }

    /// The entries whose file is missing now. A root that is no folder reports none.
    pub fn missing(&self) -> Vec<StaleTouch> {
        self.stale(&self.absent())
    }

    /// Which of the files are missing now: one `stat` per distinct file, and no list
    /// built, so that a look that finds what the last one found costs only the stats.
    pub fn absent(&self) -> Absent {
        if self.root.as_deref().is_some_and(|r| !r.is_dir()) {
            return Absent(vec![false; self.files.len()]);
        }
        Absent(
            self.files
                .iter()
                .map(|file| exists(file) == Presence::Missing)
                .collect(),
        )
    }

    /// The entries whose file `absent` (a look at these touches) found missing.
    pub fn stale(&self, absent: &Absent) -> Vec<StaleTouch> {
        self.entries
            .iter()
            .filter(|(_, at)| absent.0.get(*at).copied().unwrap_or(false))
            .filter_map(|(entry, at)| {
                Some(StaleTouch {
                    id: entry.id.clone(),
                    touch: entry.touch.clone(),
                    file: path_part(&entry.touch)?.as_str().to_string(),
                    path: self.files[*at].clone(),
                })
            })
            .collect()
    }
}

/// One look at a [`ResolvedTouches`]' files: which were missing, by file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Absent(Vec<bool>);

/// How many entries are stale, and on how many nodes.
pub fn stale_counts(stale: &[StaleTouch]) -> (usize, usize) {
    let mut nodes: Vec<&str> = stale.iter().map(|s| s.id.as_str()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    (stale.len(), nodes.len())
}

/// The renames git recorded in one repository, as the server read them: old path →
/// new path, both relative to the repository's top folder, the newest rename of each
/// old path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Renames {
    /// The repository's top folder (resolved).
    pub top: PathBuf,
    /// Old path → the path it was renamed to.
    pub moves: HashMap<String, String>,
}

/// Renames followed from one path at most: a file renamed more often than this
/// within the history read is not followed to its end.
const MAX_RENAME_HOPS: usize = 16;

/// Where git says a stale touch's file went, written as the touch writes its path
/// (relative to the project root when it lies inside it, `~/…` for a home path,
/// absolute otherwise): the renames followed from the touch's file to a file that
/// exists now. `None` when git recorded no rename of it, or the last name is gone
/// too.
pub fn renamed_path(
    stale: &StaleTouch,
    renames: &Renames,
    home: &Path,
    root: Option<&Path>,
) -> Option<String> {
    let mut rel = stale
        .path
        .strip_prefix(&renames.top)
        .ok()?
        .to_str()?
        .to_string();
    let mut hops = 0;
    while let Some(next) = renames.moves.get(&rel) {
        hops += 1;
        if hops > MAX_RENAME_HOPS {
            return None;
        }
        rel = next.clone();
    }
    if hops == 0 {
        return None;
    }
    let new = renames.top.join(&rel);
    if exists(&new) != Presence::Present {
        return None;
    }
    let part = path_part(&stale.touch)?;
    let written = if part.is_home() {
        match inside(&new, home) {
            Some(under) => format!("~/{}", under.to_string_lossy()),
            None => new.to_string_lossy().into_owned(),
        }
    } else {
        match (part.place(home)?, root.and_then(|r| inside(&new, r))) {
            (TouchPath::Relative(_), Some(under)) => under.to_string_lossy().into_owned(),
            _ => new.to_string_lossy().into_owned(),
        }
    };
    Some(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Node;
    use std::fs;

    fn node(id: &str, touches: Value, archived: bool) -> (String, Node) {
        let mut n = Node::new(id);
        n.set(field::GIST, Value::String("g".into()));
        n.set(field::TOUCHES, touches);
        n.set(field::ARCHIVED, Value::Bool(archived));
        (id.to_string(), n)
    }

    #[test]
    fn only_path_shaped_touches_of_active_nodes_are_checked() {
        let mut g = Graph::default();
        for (id, n) in [
            node(
                "a",
                serde_json::json!([
                    "src/a.rs:12-40 (parser)",
                    "the parser",
                    7,
                    "https://x.org/a.rs"
                ]),
                false,
            ),
            node("b", Value::String("README.md".into()), false),
            node("gone", serde_json::json!(["src/old.rs"]), true),
        ] {
            g.nodes.insert(id, n);
        }
        let entries = path_touches(&g);
        let touches: Vec<(&str, &str)> = entries
            .iter()
            .map(|e| (e.id.as_str(), e.touch.as_str()))
            .collect();
        assert_eq!(
            touches,
            [("a", "src/a.rs:12-40 (parser)"), ("b", "README.md")]
        );
    }

    #[test]
    fn missing_files_are_stale_and_everything_else_is_not() {
        let home = tempfile::tempdir().expect("home");
        let home = fs::canonicalize(home.path()).expect("canonical");
        let root = home.join("proj");
        fs::create_dir_all(root.join("src")).expect("src");
        fs::write(root.join("src/a.rs"), "x").expect("file");
        fs::write(home.join("notes.md"), "x").expect("file");
        let entry = |id: &str, touch: &str| TouchEntry {
            id: id.into(),
            touch: touch.into(),
        };
        let entries = [
            entry("n1", "src/a.rs:3"),
            entry("n1", "src/gone.rs"),
            entry("n2", "src/gone.rs#top"),
            entry("n2", "src"),
            entry("n3", "~/notes.md"),
            entry("n3", "~/missing.md"),
            entry("n4", "/dev/null"),
            entry("n4", "../outside/x.rs"),
            entry("n5", "src/a.rs/below.rs"),
            entry("n5", "~bob/x.rs"),
        ];
        let stale = find_stale(&entries, &home, Some(&root));
        let found: Vec<(&str, &str)> = stale
            .iter()
            .map(|s| (s.id.as_str(), s.touch.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("n1", "src/gone.rs"),
                ("n2", "src/gone.rs#top"),
                ("n3", "~/missing.md"),
                ("n4", "../outside/x.rs"),
                ("n5", "src/a.rs/below.rs"),
            ]
        );
        assert_eq!(stale[0].path, root.join("src/gone.rs"));
        assert_eq!(
            stale[1].file, "src/gone.rs",
            "the path as the entry writes it"
        );
        assert_eq!(stale_counts(&stale), (5, 5));
        // The user graph has no root: only `~` and absolute entries are checked.
        let user = find_stale(&entries, &home, None);
        assert_eq!(user.len(), 1, "{user:?}");
        // A project whose folder is gone reports nothing.
        assert!(find_stale(&entries, &home, Some(&home.join("moved"))).is_empty());
    }

    #[test]
    fn a_rename_chain_is_followed_to_a_file_that_exists_and_written_like_the_touch() {
        let home = tempfile::tempdir().expect("home");
        let home = fs::canonicalize(home.path()).expect("canonical");
        let top = home.join("repo");
        let root = top.join("app");
        fs::create_dir_all(root.join("src")).expect("src");
        fs::write(root.join("src/c.rs"), "x").expect("file");
        let moves: HashMap<String, String> = [
            ("app/src/a.rs", "app/src/b.rs"),
            ("app/src/b.rs", "app/src/c.rs"),
            ("app/src/x.rs", "app/src/y.rs"),
            ("app/src/p.rs", "app/src/q.rs"),
            ("app/src/q.rs", "app/src/p.rs"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let renames = Renames {
            top: top.clone(),
            moves,
        };
        let stale = |touch: &str, path: PathBuf| StaleTouch {
            id: "n".into(),
            touch: touch.into(),
            file: String::new(),
            path,
        };
        let offer = |s: &StaleTouch| renamed_path(s, &renames, &home, Some(&root));
        assert_eq!(
            offer(&stale("src/a.rs:3 (main)", root.join("src/a.rs"))).as_deref(),
            Some("src/c.rs")
        );
        let absolute = root.join("src/a.rs");
        assert_eq!(
            offer(&stale(&absolute.to_string_lossy(), absolute.clone())),
            Some(root.join("src/c.rs").to_string_lossy().into_owned())
        );
        assert_eq!(
            offer(&stale("~/repo/app/src/b.rs", root.join("src/b.rs"))).as_deref(),
            Some("~/repo/app/src/c.rs")
        );
        assert_eq!(
            offer(&stale("src/x.rs", root.join("src/x.rs"))),
            None,
            "y.rs is gone too"
        );
        assert_eq!(
            offer(&stale("src/p.rs", root.join("src/p.rs"))),
            None,
            "a loop ends nowhere"
        );
        assert_eq!(
            offer(&stale("src/z.rs", root.join("src/z.rs"))),
            None,
            "never renamed"
        );
        assert_eq!(
            offer(&stale("/elsewhere/a.rs", PathBuf::from("/elsewhere/a.rs"))),
            None
        );
    }
}
