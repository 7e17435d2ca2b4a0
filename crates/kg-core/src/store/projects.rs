//! Which project a client's folder belongs to (`namespace::discover` under our policy;
//! the folder itself under the reference's), remembered for a few seconds because
//! hooks ask on every prompt and tool call.

use super::*;
use crate::namespace::{Alternative, discover, enclosing_checkout};
use crate::wording::OtherProject;
use std::time::{Duration, Instant};

/// How long a folder's project is remembered. Long enough that a burst of hook
/// events asks the disk once; short enough that a graph made meanwhile for an
/// enclosing folder is soon found.
const REMEMBER_FOR: Duration = Duration::from_secs(10);
/// Folders remembered at most; past that the memory starts over.
const REMEMBER_AT_MOST: usize = 256;

/// The project a folder belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectChoice {
    /// The folder as the client named it, resolved (symlinks followed).
    pub folder: String,
    /// The project root whose graph sessions started in `folder` use.
    pub root: String,
    /// Whether `root` has a project graph already (else a session starts one).
    pub has_graph: bool,
    /// Other folders that could as well have been the project, nearest first: the
    /// session start names them (see [`crate::namespace::Alternative`]).
    pub alternatives: Vec<Alternative>,
}

impl ProjectChoice {
    /// What the start of a session in this folder tells the model when the choice is
    /// ambiguous: the folder whose graph it uses and the other candidates; `None` when
    /// the choice is clear.
    pub fn note(&self) -> Option<String> {
        self.worded(crate::wording::ambiguous_project)
    }

    /// The same for the person (the session-start notice).
    pub fn notice(&self) -> Option<String> {
        self.worded(crate::wording::ambiguous_project_notice)
    }

    fn worded(&self, say: fn(&str, &[(&str, OtherProject)]) -> String) -> Option<String> {
        use crate::namespace::AlternativeKind as Kind;
        if self.alternatives.is_empty() {
            return None;
        }
        let folders: Vec<String> = self
            .alternatives
            .iter()
            .map(|a| a.folder.to_string_lossy().into_owned())
            .collect();
        let others: Vec<(&str, OtherProject)> = folders
            .iter()
            .zip(&self.alternatives)
            .map(|(folder, a)| {
                let why = match a.kind {
                    Kind::EnclosingGraph => OtherProject::EnclosingGraph,
                    Kind::RepositoryTop => OtherProject::RepositoryTop,
                    Kind::MainCheckout => OtherProject::MainCheckout,
                    Kind::NestedRepository => OtherProject::NestedRepository,
                };
                (folder.as_str(), why)
            })
            .collect();
        Some(say(&self.root, &others))
    }
}

/// Recent answers of [`Store::project_of`], by resolved folder.
#[derive(Debug, Default)]
pub(super) struct RecentChoices(Mutex<HashMap<String, (Instant, ProjectChoice)>>);

impl RecentChoices {
    fn get(&self, folder: &str) -> Option<ProjectChoice> {
        let recent = self.0.lock().unwrap_or_else(|e| e.into_inner());
        recent
            .get(folder)
            .filter(|(at, _)| at.elapsed() < REMEMBER_FOR)
            .map(|(_, choice)| choice.clone())
    }

    fn put(&self, choice: &ProjectChoice) {
        let mut recent = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() >= REMEMBER_AT_MOST {
            recent.clear();
        }
        recent.insert(choice.folder.clone(), (Instant::now(), choice.clone()));
    }

    /// Forget every answer: a project graph was just made, which may change them.
    pub(super) fn forget(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl Store {
    /// `file`'s path inside a linked git worktree of the project at `root`, or `None`
    /// when it lies in none. A session in a worktree uses the main checkout's graph,
    /// whose touches name files relative to the main checkout: the same path in the
    /// worktree is the same file of the project.
    pub(crate) fn worktree_path(&self, root: &Path, file: &Path) -> Option<String> {
        let dir = file.parent()?;
        let boundary = self
            .allowed_roots
            .iter()
            .filter(|allowed| dir.starts_with(allowed))
            .max_by_key(|allowed| allowed.components().count())?;
        let checkout = enclosing_checkout(dir, boundary, &self.allowed_roots)?;
        if !checkout.is_linked() || checkout.main != root {
            return None;
        }
        let rel = crate::touch_path::inside(file, &checkout.top)?;
        Some(rel.to_string_lossy().into_owned())
    }

    /// The project a client's folder belongs to. Under our policy: the nearest
    /// enclosing folder with a project graph, else the top of its git checkout (a
    /// linked worktree's main checkout), else the folder itself; see
    /// `namespace::discover`. Under the reference's: the folder itself. The folder
    /// must be absolute and inside home or a `KG_PROJECT_ROOTS` folder.
    pub fn project_of(&self, path: &str) -> Result<ProjectChoice, StoreError> {
        let folder = self.resolve_root(path)?;
        if self.config.policy == Policy::Reference {
            let has_graph = self.has_graph(Path::new(&folder));
            return Ok(ProjectChoice {
                root: folder.clone(),
                folder,
                has_graph,
                alternatives: Vec::new(),
            });
        }
        if let Some(known) = self.recent_choices.get(&folder) {
            return Ok(known);
        }
        let at = Path::new(&folder);
        // The allowed folder it lies in (the innermost, should they nest).
        let boundary = self
            .allowed_roots
            .iter()
            .filter(|allowed| at.starts_with(allowed))
            .max_by_key(|allowed| allowed.components().count())
            .map_or(at, PathBuf::as_path);
        let found = discover(at, boundary, &self.allowed_roots, &|dir| {
            self.has_graph(dir)
        });
        let choice = ProjectChoice {
            root: found.root.to_string_lossy().into_owned(),
            folder: folder.clone(),
            has_graph: found.has_graph,
            alternatives: found.alternatives,
        };
        if choice.root != choice.folder || !choice.alternatives.is_empty() {
            log::debug!(
                "sessions in {} use the project {}{}",
                limits::for_log(&choice.folder),
                limits::for_log(&choice.root),
                if choice.alternatives.is_empty() {
                    ""
                } else {
                    " (ambiguous)"
                }
            );
        }
        self.recent_choices.put(&choice);
        Ok(choice)
    }

    /// The project root of a client's folder (see [`Store::project_of`]).
    pub fn project_root_of(&self, path: &str) -> Result<String, StoreError> {
        Ok(self.project_of(path)?.root)
    }

    /// Whether `dir` has a project graph: a file storage holds for it, or a graph in
    /// memory that has nodes (a graph only looked at, never written, does not count).
    pub(super) fn has_graph(&self, dir: &Path) -> bool {
        let root = dir.to_string_lossy();
        let slot = self
            .projects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(root.as_ref())
            .cloned();
        if let Some(slot) = slot {
            let state = slot.lock();
            if state.loaded && !state.graph.nodes.is_empty() {
                return true;
            }
        }
        self.layout.stored_slug(&root).is_some()
    }
}
