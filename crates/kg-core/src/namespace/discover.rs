//! Which project a session's folder belongs to (our policy): a session started in a
//! subfolder of a project, or in a linked git worktree of its repository, uses that
//! project's graph rather than starting an empty one of its own.
//!
//! The rule, from the session's folder up to (not including) the allowed folder it
//! lies in (home, or a `KG_PROJECT_ROOTS` folder):
//! 1. the nearest folder that has a project graph;
//! 2. else the top of the git checkout the folder lies in, or, for a linked worktree,
//!    its repository's main checkout (so all worktrees share one graph);
//! 3. else the folder itself: a new project.
//!
//! When another folder could as well have been the project (an enclosing folder with a
//! graph of its own, the repository's top or main checkout, a repository nested inside
//! the chosen project), the choice is ambiguous and [`Discovered::alternatives`] names
//! the other folders, nearest first, so the session start can say so.

use super::git_files::enclosing_checkout;
use std::path::{Path, PathBuf};

/// Why another folder could have been the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlternativeKind {
    /// A folder enclosing the chosen one that has a project graph too.
    EnclosingGraph,
    /// The top of the git checkout that encloses the chosen folder.
    RepositoryTop,
    /// The main checkout of the repository whose linked worktree was chosen.
    MainCheckout,
    /// A git repository of its own, inside the chosen project, that the session's
    /// folder lies in.
    NestedRepository,
}

impl AlternativeKind {
    /// The kind as payloads spell it: `enclosing_graph`, `repository_top`,
    /// `main_checkout` or `nested_repository`.
    pub fn as_str(self) -> &'static str {
        match self {
            AlternativeKind::EnclosingGraph => "enclosing_graph",
            AlternativeKind::RepositoryTop => "repository_top",
            AlternativeKind::MainCheckout => "main_checkout",
            AlternativeKind::NestedRepository => "nested_repository",
        }
    }
}

/// A folder that could also have been the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    /// The folder (resolved).
    pub folder: PathBuf,
    /// Why it could have been.
    pub kind: AlternativeKind,
}

/// The project a folder belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The project root: the folder whose graph the session uses.
    pub root: PathBuf,
    /// Whether `root` has a project graph already (else the session starts one).
    pub has_graph: bool,
    /// Other folders that could have been the project, nearest first; empty when the
    /// choice is clear.
    pub alternatives: Vec<Alternative>,
}

/// The project `folder` belongs to (both resolved), by the rule above. `boundary` is
/// the allowed folder `folder` lies in; nothing at or above it is considered (a graph
/// or a git repository of the whole home folder is no project every folder inside it
/// belongs to), except `folder` itself. `has_graph` says whether a folder has a
/// project graph; `allowed` bounds where git's pointer files are followed.
pub fn discover(
    folder: &Path,
    boundary: &Path,
    allowed: &[PathBuf],
    has_graph: &dyn Fn(&Path) -> bool,
) -> Discovered {
    let candidates = folder
        .ancestors()
        .take_while(|dir| *dir == folder || (dir.starts_with(boundary) && *dir != boundary));
    let mut graphs = candidates.filter(|dir| has_graph(dir));
    let nearest_graph = graphs.next();
    let enclosing_graph = nearest_graph.and_then(|_| graphs.next());
    let checkout = enclosing_checkout(folder, boundary, allowed);
    let mut alternatives = Vec::new();
    let mut add = |folder: &Path, kind: AlternativeKind| {
        if !alternatives
            .iter()
            .any(|a: &Alternative| a.folder == folder)
        {
            alternatives.push(Alternative {
                folder: folder.to_path_buf(),
                kind,
            });
        }
    };
    let Some(root) = nearest_graph else {
        // No graph anywhere up: the checkout's project, or a new one here.
        let root = checkout.map_or_else(|| folder.to_path_buf(), |c| c.main);
        let has_graph = has_graph(&root);
        return Discovered {
            root,
            has_graph,
            alternatives,
        };
    };
    // A checkout whose project is the chosen one (its top, or a worktree of it) leaves
    // nothing to choose.
    if let Some(checkout) = checkout.as_ref().filter(|c| c.main != root) {
        if checkout.top == root {
            // A worktree that has a graph of its own, beside its main checkout.
            add(&checkout.main, AlternativeKind::MainCheckout);
        } else if checkout.top.starts_with(root) {
            // The session's folder is in a repository of its own inside the project.
            add(&checkout.top, AlternativeKind::NestedRepository);
        } else {
            // A folder with a graph inside a repository: the repository's top (or its
            // main checkout) could be the project.
            let kind = if checkout.is_linked() {
                AlternativeKind::MainCheckout
            } else {
                AlternativeKind::RepositoryTop
            };
            add(&checkout.main, kind);
        }
    }
    if let Some(outer) = enclosing_graph {
        add(outer, AlternativeKind::EnclosingGraph);
    }
    Discovered {
        root: root.to_path_buf(),
        has_graph: true,
        alternatives,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::fs;

    struct Home {
        _dir: tempfile::TempDir,
        path: PathBuf,
    }

    impl Home {
        fn new() -> Home {
            let dir = tempfile::tempdir().expect("home");
            let path = fs::canonicalize(dir.path()).expect("canonical");
            Home { _dir: dir, path }
        }
        fn dir(&self, rel: &str) -> PathBuf {
            let p = self.path.join(rel);
            fs::create_dir_all(&p).expect("mkdir");
            p
        }
        fn find(&self, rel: &str, graphs: &[&str]) -> Discovered {
            let graphs: HashSet<PathBuf> = graphs.iter().map(|g| self.path.join(g)).collect();
            let allowed = [self.path.clone()];
            discover(&self.dir(rel), &self.path, &allowed, &|p| {
                graphs.contains(p)
            })
        }
    }

    fn kinds(d: &Discovered) -> Vec<(String, AlternativeKind)> {
        d.alternatives
            .iter()
            .map(|a| {
                let name = a
                    .folder
                    .file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned());
                (name, a.kind)
            })
            .collect()
    }

    #[test]
    fn a_subfolder_uses_the_nearest_graph_above_it() {
        let home = Home::new();
        home.dir("proj/src/deep");
        let found = home.find("proj/src/deep", &["proj"]);
        assert_eq!(found.root, home.path.join("proj"));
        assert!(found.has_graph && found.alternatives.is_empty());
        // Nested graphs: the nearest wins, the enclosing one is named.
        let nested = home.find("proj/src/deep", &["proj", "proj/src"]);
        assert_eq!(nested.root, home.path.join("proj/src"));
        assert_eq!(
            kinds(&nested),
            [("proj".to_string(), AlternativeKind::EnclosingGraph)]
        );
        // No graph, no git: the folder itself is a new project.
        let new = home.find("loose/notes", &[]);
        assert_eq!(new.root, home.path.join("loose/notes"));
        assert!(!new.has_graph && new.alternatives.is_empty());
        // A graph of the whole home folder claims nothing inside it.
        let under_home = home.find("other", &[""]);
        assert_eq!(under_home.root, home.path.join("other"));
    }

    #[test]
    fn without_a_graph_the_git_top_level_is_the_project() {
        let home = Home::new();
        home.dir("repo/.git");
        let found = home.find("repo/src/mod", &[]);
        assert_eq!(found.root, home.path.join("repo"));
        assert!(!found.has_graph && found.alternatives.is_empty());
    }

    #[test]
    fn ambiguous_choices_name_the_other_folder() {
        let home = Home::new();
        home.dir("mono/.git");
        // A package with a graph of its own inside a repository.
        let pkg = home.find("mono/packages/api/src", &["mono/packages/api"]);
        assert_eq!(pkg.root, home.path.join("mono/packages/api"));
        assert_eq!(
            kinds(&pkg),
            [("mono".to_string(), AlternativeKind::RepositoryTop)]
        );
        // ... whose repository has a graph too: named once.
        let both = home.find("mono/packages/api", &["mono/packages/api", "mono"]);
        assert_eq!(
            kinds(&both),
            [("mono".to_string(), AlternativeKind::RepositoryTop)]
        );
        // A repository nested inside a project that has a graph.
        home.dir("proj/vendor/lib/.git");
        let vendored = home.find("proj/vendor/lib/src", &["proj"]);
        assert_eq!(vendored.root, home.path.join("proj"));
        assert_eq!(
            kinds(&vendored),
            [("lib".to_string(), AlternativeKind::NestedRepository)]
        );
        // The repository's top itself: nothing ambiguous.
        let top = home.find("mono/src", &["mono"]);
        assert!(top.alternatives.is_empty(), "{top:?}");
    }

    #[test]
    fn a_worktree_uses_its_main_checkouts_graph_and_one_of_its_own_is_named() {
        let home = Home::new();
        let main = home.dir("app/.git").parent().expect("main").to_path_buf();
        let link = |wt: &Path, name: &str| {
            let admin = main.join(".git/worktrees").join(name);
            fs::create_dir_all(&admin).expect("admin");
            fs::create_dir_all(wt).expect("worktree");
            fs::write(admin.join("commondir"), "../..\n").expect("commondir");
            fs::write(
                admin.join("gitdir"),
                format!("{}\n", wt.join(".git").display()),
            )
            .expect("gitdir");
            fs::write(wt.join(".git"), format!("gitdir: {}\n", admin.display())).expect(".git");
        };
        let beside = home.path.join("app-fix");
        link(&beside, "app-fix");
        let inner = main.join(".worktrees/feat");
        link(&inner, "feat");
        home.dir("app-fix/src");
        // No graph yet: the main checkout is the project, so every worktree shares it.
        let new = home.find("app-fix/src", &[]);
        assert_eq!((new.root.as_path(), new.has_graph), (main.as_path(), false));
        let shared = home.find("app-fix/src", &["app"]);
        assert_eq!(
            (shared.root.as_path(), shared.has_graph),
            (main.as_path(), true)
        );
        assert!(shared.alternatives.is_empty());
        let within = home.find("app/.worktrees/feat", &["app"]);
        assert_eq!(within.root, main);
        assert!(
            within.alternatives.is_empty(),
            "a worktree of the project is no other repository"
        );
        // A worktree that got a graph of its own before: kept, the main checkout named.
        let own = home.find("app-fix/src", &["app", "app-fix"]);
        assert_eq!(own.root, beside);
        assert_eq!(
            kinds(&own),
            [("app".to_string(), AlternativeKind::MainCheckout)]
        );
    }
}
