//! The files sync keeps in the storage root: which files travel (the graphs and what
//! belongs to them, nothing else), how git treats them (our attributes and config, in
//! `.git/info/attributes` and the repository's config, which outrank anything a
//! remote's tree carries), and this machine's record of the last sync.

use kg_core::{GraphFile, WriteMode, atomic_write, parse_graph};
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// The machine-local record of the last sync, inside the root and git-ignored.
pub const STATE_FILE: &str = ".kg-sync-state.json";

/// The merge driver's name in `.gitattributes` and the git config (`merge.kg.*`).
pub const DRIVER_NAME: &str = "kg";

/// Every file is taken byte for byte, through no filter, encoding or line-ending
/// conversion a `.gitattributes` in the tree could ask for; graph files are merged
/// node by node with `kg-memory merge-driver`. In `.git/info/attributes`, which
/// outranks every `.gitattributes` of the tree (a remote's included).
const ATTRIBUTES: &[&str] = &[
    "* -text -filter -working-tree-encoding -ident -eol -export-subst",
    "/user.json merge=kg",
    "/projects/*/graph.json merge=kg",
];
/// The same for a project's own repository.
const PROJECT_ATTRIBUTES: &[&str] = &[
    "* -text -filter -working-tree-encoding -ident -eol -export-subst",
    "/graph.json merge=kg",
];
/// Repository settings sync relies on, set on every sync (a remote cannot set a
/// repository's config; these keep the user's global config from changing what a
/// checkout writes, and keep git's copies of the memory private to its owner).
pub const REPOSITORY_CONFIG: &[(&str, &str)] = &[
    ("core.autocrlf", "false"),
    ("core.symlinks", "false"),
    ("core.fsmonitor", "false"),
    ("core.sharedRepository", "0600"),
];
/// Largest non-graph file that travels (`.gitignore`, a project's recorded remote).
pub const MAX_SMALL_FILE: u64 = 64 * 1024;
/// What a project's own repository never shares: as in the storage root.
const PROJECT_IGNORED: &[&str] = &[
    "/tool_events.json",
    "*.prev",
    "*.prev-tmp",
    "*.corrupt-*",
    "*.tmp",
    "*.held-back.json",
    ".merge_file_*",
    "/.kg-sync-state.json",
];

/// Files that belong to this machine: they describe its sessions, its server, its
/// crash recovery or its own folders, and would only clash with another machine's.
const IGNORED: &[&str] = &[
    // The session registry and each project's repeated reads: this machine's agents.
    "/sessions.json",
    "/projects/*/tool_events.json",
    // Old storage name → new, written when a project folder here was renamed.
    "/aliases.json",
    // Which storage folder each project folder of this machine uses.
    "/project-paths.json",
    // Credential findings a person here allowed as no secret.
    "/secrets-allowed.json",
    // Why recall spoke or stayed silent in this machine's sessions.
    "/recall.jsonl",
    // One-generation backups, quarantined unreadable files, half-written temporaries,
    // content a sync held back, git's temporaries.
    "*.prev",
    "*.prev-tmp",
    "*.corrupt-*",
    "*.tmp",
    "*.held-back.json",
    ".merge_file_*",
    // Which server holds this root, its secret proof of it, and when this machine
    // last synced.
    "/.kg-memory.lock",
    "/.kg-memory.token",
    "/.kg-sync-state.json",
];

const HEADER: &str = "# KG Memory sync (kg-memory sync setup): ";

/// What a file of a synced repository is to sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Travel {
    /// A graph file: merged node by node, screened, taken in through the store.
    Graph,
    /// A small file that belongs with the graphs: `.gitignore` (which projects left
    /// the repository), a project's recorded git remote (`remotes/<name>.json`).
    Small,
    /// Anything else (the lock, sessions, tool events, aliases, path maps, backups,
    /// quarantined files, git's temporaries, files a person or a remote added): never
    /// committed, never taken from a remote.
    No,
}
/// Is `path` (relative to the root, `/`-separated, as git prints it) a graph file?
pub fn is_graph_path(path: &str) -> bool {
    if path == "user.json" {
        return true;
    }
    let mut parts = path.split('/');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some("projects"), Some(slug), Some("graph.json"), None) if !slug.is_empty()
    )
}

/// The graph files now in the root's work tree, relative and `/`-separated.
pub fn graph_files(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    if root.join("user.json").is_file() {
        found.push("user.json".to_string());
    }
    if let Ok(entries) = std::fs::read_dir(root.join("projects")) {
        let mut slugs: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().join("graph.json").is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        slugs.sort();
        found.extend(
            slugs
                .into_iter()
                .map(|s| format!("projects/{s}/graph.json")),
        );
    }
    found
}

/// Read a graph file as the merge driver reads each side: it must parse, and hold
/// something a graph file holds (JSON that is no graph would otherwise read as an
/// empty one and wipe the other side's nodes).
pub fn read_graph(bytes: &[u8]) -> Result<GraphFile, String> {
    let file = parse_graph(bytes)?;
    if file.level.is_none() && file.graph.nodes.is_empty() && file.graph.edges.is_empty() {
        return Err("it holds no nodes, no edges and no _meta.namespace".into());
    }
    Ok(file)
}

/// A repository sync works on: the storage root (the user graph, and every project
/// graph without a remote of its own), or one project's folder in it, synced with a
/// team's remote while the person's user graph stays private.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The repository: the storage root, or `projects/<slug>` in it.
    pub dir: PathBuf,
    /// The project's storage folder (slug) when this is a project's own repository.
    pub project: Option<String>,
}

impl Scope {
    /// The storage root's repository.
    pub fn storage_root(root: &Path) -> Scope {
        Scope {
            dir: root.to_path_buf(),
            project: None,
        }
    }

    /// The repository of one project's storage folder.
    pub fn project(root: &Path, slug: &str) -> Scope {
        Scope {
            dir: root.join("projects").join(slug),
            project: Some(slug.to_string()),
        }
    }

    /// The project folders under `root` that are repositories of their own.
    pub fn projects(root: &Path) -> Vec<Scope> {
        let mut slugs: Vec<String> = std::fs::read_dir(root.join("projects"))
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().join(".git").is_dir())
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        slugs.sort();
        slugs
            .iter()
            .map(|slug| Scope::project(root, slug))
            .collect()
    }

    /// Where a graph file of this repository (`path` as git names it) lies in the
    /// storage root: `user.json` or `projects/<slug>/graph.json`; `None` for a file
    /// that is not a graph.
    pub fn graph_in_store(&self, path: &str) -> Option<String> {
        match &self.project {
            None => is_graph_path(path).then(|| path.to_string()),
            Some(slug) => (path == "graph.json").then(|| format!("projects/{slug}/graph.json")),
        }
    }

    /// The graph files in this repository's work tree, as git names them. The storage
    /// root's leaves out the projects that are repositories of their own.
    pub fn graph_files(&self) -> Vec<String> {
        match &self.project {
            Some(_) if self.dir.join("graph.json").is_file() => vec!["graph.json".to_string()],
            Some(_) => Vec::new(),
            None => graph_files(&self.dir)
                .into_iter()
                .filter(|path| {
                    let folder = Path::new(path).parent().unwrap_or(Path::new(""));
                    path == "user.json" || !self.dir.join(folder).join(".git").is_dir()
                })
                .collect(),
        }
    }

    /// What `path` (as git names it in this repository) is to sync.
    pub fn travels(&self, path: &str) -> Travel {
        if self.graph_in_store(path).is_some() {
            return Travel::Graph;
        }
        let parts: Vec<&str> = path.split('/').collect();
        let remote_record = |name: &str| {
            name.ends_with(".json")
                && name.len() <= 200
                && !name.starts_with('.')
                && kg_core::validate_ident(kg_core::IdentKind::NodeId, name).is_ok()
        };
        let plain_slug = |slug: &str| !matches!(slug, "" | "." | "..");
        let small = match (&self.project, parts.as_slice()) {
            (_, [".gitignore"]) => true,
            (None, ["projects", slug, "remotes", name]) => plain_slug(slug) && remote_record(name),
            (Some(_), ["remotes", name]) => remote_record(name),
            _ => false,
        };
        if small { Travel::Small } else { Travel::No }
    }

    /// The files of this repository's work tree that travel, as git names them:
    /// regular files only (a symbolic link or anything else in their place stays
    /// out). Graph files first.
    pub fn travelling_files(&self) -> Vec<String> {
        let mut found = self.graph_files();
        let mut small = vec![".gitignore".to_string()];
        let remote_dirs: Vec<(String, PathBuf)> = match &self.project {
            Some(_) => vec![("remotes".to_string(), self.dir.join("remotes"))],
            None => std::fs::read_dir(self.dir.join("projects"))
                .map(|entries| {
                    entries
                        .flatten()
                        // A project with a repository of its own is not this one's.
                        .filter(|e| !e.path().join(".git").exists())
                        .filter_map(|e| e.file_name().to_str().map(str::to_string))
                        .map(|slug| {
                            (
                                format!("projects/{slug}/remotes"),
                                self.dir.join("projects").join(&slug).join("remotes"),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        for (prefix, dir) in remote_dirs {
            if let Ok(entries) = std::fs::read_dir(dir) {
                let mut names: Vec<String> = entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect();
                names.sort();
                small.extend(names.into_iter().map(|name| format!("{prefix}/{name}")));
            }
        }
        found.extend(
            small
                .into_iter()
                .filter(|p| self.travels(p) == Travel::Small),
        );
        found.retain(|path| {
            std::fs::symlink_metadata(self.dir.join(path)).is_ok_and(|m| m.file_type().is_file())
        });
        found
    }

    /// How messages name it.
    pub fn describe(&self) -> String {
        match &self.project {
            None => format!("the storage root {}", self.dir.display()),
            Some(slug) => format!("the project memory {slug} ({})", self.dir.display()),
        }
    }

    /// Write our attributes to `.git/info/attributes` (which outranks any
    /// `.gitattributes` in the tree) and this machine's own files to `.gitignore` and
    /// `.git/info/exclude`, keeping whatever the user wrote there. Returns whether
    /// `.gitignore` changed.
    pub fn write_git_files(&self) -> io::Result<bool> {
        let (attributes, ignored) = match self.project {
            None => (ATTRIBUTES, IGNORED),
            Some(_) => (PROJECT_ATTRIBUTES, PROJECT_IGNORED),
        };
        let info = self.dir.join(".git").join("info");
        std::fs::create_dir_all(&info)?;
        add_lines(
            &info.join("attributes"),
            "files are taken as they are; graph files are merged node by node",
            attributes,
        )?;
        add_lines(&info.join("exclude"), "this machine's own files", ignored)?;
        add_lines(
            &self.dir.join(".gitignore"),
            "this machine's own files, never synced",
            ignored,
        )
    }
}

/// Keep a project folder that syncs on its own out of the storage root's repository.
pub fn ignore_in_storage_root(root: &Path, slug: &str) -> io::Result<bool> {
    add_lines(
        &root.join(".gitignore"),
        "a project memory with a remote of its own",
        &[&format!("/projects/{slug}/")],
    )
}

/// Append the `lines` a file lacks, under a comment saying why.
fn add_lines(path: &Path, why: &str, lines: &[&str]) -> io::Result<bool> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let present: Vec<&str> = text.lines().map(str::trim).collect();
    let missing: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| !present.contains(line))
        .collect();
    if missing.is_empty() {
        return Ok(false);
    }
    let mut out = text;
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("{HEADER}{why}\n"));
    for line in missing {
        out.push_str(line);
        out.push('\n');
    }
    write_small(path, out.as_bytes())?;
    Ok(true)
}

/// Replace a small file atomically (a crash leaves the old or the new one).
fn write_small(path: &Path, bytes: &[u8]) -> io::Result<()> {
    atomic_write(path, bytes, WriteMode::DURABLE, None, None)
        .map(|_| ())
        .map_err(io::Error::other)
}

/// This machine's record of its syncs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncState {
    /// When the last sync succeeded (seconds since the epoch).
    #[serde(default)]
    pub last_success: Option<f64>,
    /// When the last sync was tried.
    #[serde(default)]
    pub last_attempt: Option<f64>,
    /// Why the last attempt failed; `None` when it succeeded.
    #[serde(default)]
    pub last_error: Option<String>,
    /// Since when the remote has been unreachable, while it is.
    #[serde(default)]
    pub offline_since: Option<f64>,
}

impl SyncState {
    /// The record in `root`; a missing or unreadable one is an empty record (it is
    /// only ever informative).
    pub fn load(root: &Path) -> SyncState {
        std::fs::read(root.join(STATE_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Write the record; a failure is logged, never raised (the sync itself is done).
    pub fn save(&self, root: &Path) {
        let text = match serde_json::to_string_pretty(self) {
            Ok(text) => text,
            Err(e) => {
                log::warn!("sync: cannot encode the sync record: {e}");
                return;
            }
        };
        if let Err(e) = write_small(&root.join(STATE_FILE), text.as_bytes()) {
            log::warn!(
                "sync: cannot write {}: {e}",
                root.join(STATE_FILE).display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_paths_are_the_user_graph_and_project_graphs_only() {
        for yes in ["user.json", "projects/shop/graph.json"] {
            assert!(is_graph_path(yes), "{yes}");
        }
        for no in [
            "sessions.json",
            "projects/shop/tool_events.json",
            "projects/graph.json",
            "projects//graph.json",
            "projects/a/b/graph.json",
            "user.prev",
        ] {
            assert!(!is_graph_path(no), "{no}");
        }
    }

    #[test]
    fn our_lines_are_added_once_and_the_users_lines_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(".gitignore"), "notes.txt").expect("write");
        let scope = Scope::storage_root(dir.path());
        assert!(scope.write_git_files().expect("first"));
        assert!(!scope.write_git_files().expect("second"));
        let ignore = std::fs::read_to_string(dir.path().join(".gitignore")).expect("read");
        assert!(
            ignore.starts_with("notes.txt\n# KG Memory sync"),
            "{ignore}"
        );
        assert_eq!(ignore.matches("/sessions.json").count(), 1, "{ignore}");
        let attributes =
            std::fs::read_to_string(dir.path().join(".git/info/attributes")).expect("read");
        assert!(attributes.contains("/user.json merge=kg\n"), "{attributes}");
        assert!(
            attributes.contains("* -text -filter -working-tree-encoding"),
            "{attributes}"
        );
        assert!(!dir.path().join(".gitattributes").exists());
    }
}
