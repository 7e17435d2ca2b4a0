//! Namespaces: which graph a level and a project path address, where its file lives,
//! and the safety rules for client-supplied project paths.

mod discover;
mod git_files;
mod path_map;
mod remote;

use crate::persist::{WriteMode, read_json_object, write_json_object};
pub use discover::{Alternative, AlternativeKind, discover};
pub(crate) use git_files::enclosing_checkout;
use path_map::PathMap;
use remote::project_remote;
use serde_json::Value;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The in-memory key of a graph: `user` or `project:<resolved root>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// The one user graph (`user.json`), shared by every project.
    User,
    /// A project's graph, keyed by the project's resolved root (symlinks followed,
    /// inside the home folder).
    Project(String),
}

impl Namespace {
    /// Parse a key such as `user`, `project:/home/u/p` or `role:cmo`; the kind is
    /// the text before the first `:`.
    pub fn kind_of(key: &str) -> &str {
        key.split_once(':').map_or(key, |(kind, _)| kind)
    }

    /// The key as text, `user` or `project:<root>`: how the logs name the graph.
    pub fn key(&self) -> String {
        match self {
            Namespace::User => "user".to_string(),
            Namespace::Project(root) => format!("project:{root}"),
        }
    }

    /// The resolved project root, or `None` for the user graph.
    pub fn project_root(&self) -> Option<&str> {
        match self {
            Namespace::User => None,
            Namespace::Project(root) => Some(root),
        }
    }
}

/// A project path the client may not use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path resolves (symlinks followed) outside the user's home folder; it holds
    /// the resolved path, cut for the log.
    #[error(
        "Project path must be within home directory: {0} (KG Memory keeps a project graph only for a folder inside your home folder, or inside a folder listed in the server's KG_PROJECT_ROOTS)"
    )]
    OutsideHome(String),
    /// A relative path: it would be resolved against the server's own folder, not the
    /// client's; it holds the path, cut for the log.
    #[error(
        "Project path must be absolute: '{0}' is relative, and the server cannot know which folder it is relative to; send the full path of the project folder"
    )]
    Relative(String),
    /// The project's folder name cannot name a storage folder under `projects/`
    /// (empty, `.`, `..`, a leading `-`, or a slash or backslash in it).
    #[error("Invalid slug: '{0}'")]
    InvalidSlug(String),
    /// The path as sent is longer than 4,096 bytes (Linux's `PATH_MAX`); it holds
    /// the length in bytes.
    #[error("Project path is {0} bytes long; the limit is {limit}", limit = crate::limits::MAX_PATH_BYTES)]
    TooLong(usize),
    /// A client named a project that is neither an existing folder nor one storage
    /// holds a graph of, so no graph is made up for it.
    #[error("No such project: {0} is not a folder and has no graph in storage")]
    NoSuchProject(String),
    /// Every `<name>-<hash>` storage name this project could take belongs to another
    /// project of the same folder name.
    #[error(
        "Too many projects are named '{0}' for storage to tell them apart; rename this project's folder"
    )]
    TooManyNamesakes(String),
}

/// Resolve a path the way `Path.resolve()` does: symlinks of the existing prefix
/// followed, `..` and `.` applied, relative paths taken from the working folder.
/// Missing trailing components are kept lexically.
pub fn resolve_path(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut resolved = PathBuf::new();
    let mut components = absolute.components().peekable();
    while let Some(component) = components.next() {
        match component {
            Component::Prefix(p) => resolved.push(p.as_os_str()),
            Component::RootDir => resolved.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                resolved.push(name);
                // Follow a symlink at this point, as realpath would.
                if let Ok(target) = fs::canonicalize(&resolved) {
                    resolved = target;
                } else {
                    // The rest does not exist: finish lexically.
                    for rest in components.by_ref() {
                        match rest {
                            Component::ParentDir => {
                                resolved.pop();
                            }
                            Component::Normal(n) => resolved.push(n),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    resolved
}

/// Resolve a client's project path and require it to be absolute and to lie inside
/// one of the `allowed` folders (resolved): home, then any `KG_PROJECT_ROOTS`.
pub fn resolve_project_root(path: &str, allowed: &[PathBuf]) -> Result<String, PathError> {
    if path.len() > crate::limits::MAX_PATH_BYTES {
        return Err(PathError::TooLong(path.len()));
    }
    if !Path::new(path).is_absolute() {
        return Err(PathError::Relative(
            crate::limits::for_log(path).into_owned(),
        ));
    }
    let resolved = resolve_path(Path::new(path));
    let resolved_text = resolved.to_string_lossy().into_owned();
    if is_within(&resolved_text, allowed) {
        Ok(resolved_text)
    } else {
        Err(PathError::OutsideHome(
            crate::limits::for_log(&resolved_text).into_owned(),
        ))
    }
}

/// Is the resolved path `resolved` one of the `allowed` folders or inside one?
fn is_within(resolved: &str, allowed: &[PathBuf]) -> bool {
    allowed.iter().any(|folder| {
        let folder = folder.to_string_lossy();
        resolved == folder
            || format!("{resolved}/").starts_with(&format!("{}/", folder.trim_end_matches('/')))
    })
}

/// The last path component, which names the project's folder in storage.
pub fn basename(root: &str) -> &str {
    root.trim_end_matches('/').rsplit('/').next().unwrap_or("")
}

/// A slug must be a plain folder name.
pub fn validate_slug(slug: &str) -> Result<(), PathError> {
    let ok = !slug.is_empty()
        && !slug.contains('/')
        && !slug.contains('\\')
        && slug != "."
        && slug != ".."
        && !slug.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(PathError::InvalidSlug(slug.to_string()))
    }
}

/// The storage layout under one root.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The storage root (`KG_STORAGE_ROOT`, `~/.knowledge-graph` by default).
    pub root: PathBuf,
}

impl Layout {
    /// `user.json`: the user-level graph.
    pub fn user_graph(&self) -> PathBuf {
        self.root.join("user.json")
    }
    /// `sessions.json`: the KG session registry, which outlives server restarts.
    pub fn sessions(&self) -> PathBuf {
        self.root.join("sessions.json")
    }
    /// `aliases.json`: old project storage name → new, written when a renamed
    /// project's graph is migrated.
    pub fn aliases(&self) -> PathBuf {
        self.root.join("aliases.json")
    }
    /// `recall.jsonl`: why recall spoke or stayed silent, one decision a line
    /// (machine-local, never synced).
    pub fn recall_log(&self) -> PathBuf {
        self.root.join("recall.jsonl")
    }
    /// `projects/`: one folder per project graph, named by its slug.
    pub fn projects_dir(&self) -> PathBuf {
        self.root.join("projects")
    }
    /// Only ever built from a validated slug.
    pub fn project_dir(&self, slug: &str) -> PathBuf {
        self.projects_dir().join(slug)
    }
    /// `projects/<slug>/graph.json`: a project-level graph.
    pub fn project_graph(&self, slug: &str) -> PathBuf {
        self.project_dir(slug).join("graph.json")
    }
    /// `projects/<slug>/tool_events.json`: the project's repeated reads, fetches and
    /// searches, which drive capture nudges and count as DEBT activity.
    pub fn tool_events(&self, slug: &str) -> PathBuf {
        self.project_dir(slug).join("tool_events.json")
    }

    /// The recorded `_meta.project_path` of a stored project graph, if any.
    fn recorded_root(&self, slug: &str) -> Option<Option<String>> {
        let obj = read_json_object(&self.project_graph(slug)).ok()??;
        Some(
            obj.get("_meta")
                .and_then(|m| m.get("project_path"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        )
    }

    /// `project-paths.json`: this machine's project roots and the slug each uses
    /// (machine-local, never synced).
    pub fn project_paths(&self) -> PathBuf {
        self.root.join("project-paths.json")
    }
    /// This machine's project roots by the slug each uses (`project-paths.json`).
    pub(crate) fn local_roots(&self) -> std::collections::HashMap<String, String> {
        PathMap::load(&self.project_paths()).by_slug()
    }

    /// `projects/<slug>/remotes/`: the git remotes of the project the graph belongs
    /// to, one small file each (synced with the graph, so another machine can match
    /// its own clone to it; one file per remote, so two machines adding theirs never
    /// edit the same file).
    pub fn project_remotes(&self, slug: &str) -> PathBuf {
        self.project_dir(slug).join("remotes")
    }

    /// The normalised remotes recorded for a stored project graph.
    fn recorded_remotes(&self, slug: &str) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.project_remotes(slug)) else {
            return Vec::new();
        };
        let mut remotes: Vec<String> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .filter_map(|p| read_json_object(&p).ok().flatten())
            .filter_map(|o| o.get("remote").and_then(Value::as_str).map(str::to_string))
            .collect();
        remotes.sort();
        remotes.dedup();
        remotes
    }

    /// Record that the graph under `slug` belongs to a clone of `remote`, unless it
    /// is recorded already.
    fn record_remote(&self, slug: &str, remote: &str) {
        if self.recorded_remotes(slug).iter().any(|r| r == remote) {
            return;
        }
        let file = self
            .project_remotes(slug)
            .join(format!("{:016x}.json", fnv1a(remote.as_bytes())));
        let mut object = crate::model::Object::new();
        object.insert("remote".into(), Value::String(remote.to_string()));
        if let Err(e) = write_json_object(&file, &object, 2, WriteMode::DURABLE) {
            log::warn!("could not record the git remote of project graph '{slug}': {e}");
        }
    }

    /// Find (or choose) the storage slug of a resolved project root.
    ///
    /// The reference files a project under its folder name. Two projects with the same
    /// folder name would share that file, so the name is kept only when it is free or
    /// already belongs to this root; otherwise the project gets `<name>-<hash of root>`,
    /// which the same rule finds again on the next start. `claimed` tells whether a
    /// slug is held in memory by another root that has not been saved yet.
    ///
    /// A synced storage root also holds graphs other machines filed for their own
    /// folders. This machine's map (`project-paths.json`) says which slug each of its
    /// roots uses, and which slugs are its other roots'. A stored graph whose recorded
    /// root is no project folder here (`allowed` lists where project folders may lie)
    /// and no root of this machine's map came from another machine, or its folder is
    /// gone: a root of the same folder name adopts it, unless the git remotes say they
    /// are different projects. The choice goes into the map, with this project's git
    /// remote beside the graph.
    pub fn slug_for(
        &self,
        root: &str,
        allowed: &[PathBuf],
        claimed: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, PathError> {
        let name = basename(root).to_string();
        validate_slug(&name)?;
        let mut paths = PathMap::load(&self.project_paths());
        let remote = project_remote(Path::new(root), allowed);
        let slug = Lookup {
            layout: self,
            root,
            name,
            allowed,
            claimed,
            paths: &paths,
            remote: remote.as_deref(),
        }
        .choose()?;
        paths.bind(root, &slug);
        if let Some(remote) = &remote {
            self.record_remote(&slug, remote);
        }
        Ok(slug)
    }

    /// The slug under which storage already holds this root's graph, if any: the one
    /// this machine's map names, or its folder name or one of its derived names, with
    /// a file that records this root. Reads only (no migration), for telling a real
    /// project from a made-up path.
    pub fn stored_slug(&self, root: &str) -> Option<String> {
        let name = basename(root);
        validate_slug(name).ok()?;
        let paths = PathMap::load(&self.project_paths());
        if let Some(slug) = paths.slug_of(root)
            && validate_slug(slug).is_ok()
            && self.project_graph(slug).exists()
        {
            return Some(slug.to_string());
        }
        std::iter::once(name.to_string())
            .chain(derived_candidates(name, root))
            .find(|slug| matches!(self.recorded_root(slug), Some(Some(r)) if r == root))
    }

    /// The reference's rename detection (core.md §2.4 steps 2–4), restricted so that
    /// it never adopts the graph of another project that still exists, nor one whose
    /// recorded git remotes say it is another project (`remote_fits`).
    fn find_renamed(
        &self,
        slug: &str,
        root: &str,
        remote_fits: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        // 2. An alias written by a previous migration (or by hand).
        if let Ok(Some(aliases)) = read_json_object(&self.aliases()) {
            for (old, new) in &aliases {
                if new.as_str() == Some(slug)
                    && validate_slug(old).is_ok()
                    && self.project_graph(old).exists()
                {
                    return Some(old.clone());
                }
            }
        }
        // 3. A graph filed under another folder whose recorded root ends in this name
        //    and whose recorded root is gone (a renamed project, not a namesake).
        let mut dirs: Vec<String> = fs::read_dir(self.projects_dir())
            .ok()?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|d| d != slug && validate_slug(d).is_ok())
            .collect();
        dirs.sort();
        for dir in &dirs {
            if let Some(Some(recorded)) = self.recorded_root(dir)
                && basename(&recorded) == slug
                && (recorded == root || !Path::new(&recorded).exists())
                && remote_fits(dir)
            {
                return Some(dir.clone());
            }
        }
        // 4. A session recorded a path that is now a symlink to this root.
        if let Ok(Some(sessions)) = read_json_object(&self.sessions()) {
            for record in sessions.values() {
                let Some(sp) = record.get("project_path").and_then(Value::as_str) else {
                    continue;
                };
                let resolved = resolve_path(Path::new(sp));
                let old = basename(sp);
                if basename(&resolved.to_string_lossy()) == slug
                    && old != slug
                    && validate_slug(old).is_ok()
                    && self.project_graph(old).exists()
                {
                    return Some(old.to_string());
                }
            }
        }
        None
    }

    /// Copy an old project folder's graph to the new slug and record the alias.
    fn migrate(&self, old: &str, new: &str) {
        let from = self.project_graph(old);
        let to = self.project_graph(new);
        let copied = fs::create_dir_all(self.project_dir(new)).and_then(|_| fs::copy(&from, &to));
        match copied {
            Ok(_) => {
                log::info!("project graph '{old}' migrated to '{new}'");
                let mut aliases = read_json_object(&self.aliases())
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                aliases.insert(old.to_string(), Value::String(new.to_string()));
                if let Err(e) = write_json_object(&self.aliases(), &aliases, 2, WriteMode::ATOMIC) {
                    log::warn!("could not record alias {old} -> {new}: {e}");
                }
            }
            Err(e) => log::warn!("could not migrate project graph '{old}' to '{new}': {e}"),
        }
    }
}

/// One root's slug lookup: the root, what this machine knows, what storage holds.
struct Lookup<'a> {
    layout: &'a Layout,
    root: &'a str,
    /// The root's folder name, validated.
    name: String,
    /// Where project folders may lie on this machine (home, `KG_PROJECT_ROOTS`).
    allowed: &'a [PathBuf],
    claimed: &'a dyn Fn(&str) -> Option<String>,
    paths: &'a PathMap,
    /// The project's normalised git remote, if it is a clone.
    remote: Option<&'a str>,
}

impl Lookup<'_> {
    fn choose(&self) -> Result<String, PathError> {
        // 1. This machine's map.
        if let Some(slug) = self.paths.slug_of(self.root)
            && validate_slug(slug).is_ok()
            && !self.held_by_other(slug)
        {
            return Ok(slug.to_string());
        }
        // 2. The folder name, when its stored graph is this root's.
        let name = self.name.as_str();
        let name_stored = self.layout.project_graph(name).exists();
        if name_stored && !self.owned_elsewhere(name) {
            return Ok(name.to_string());
        }
        // 3. Another machine's graph of this project, unless this root has a graph
        //    under a derived name already (step 4 finds that one).
        let own_derived = derived_candidates(name, self.root)
            .iter()
            .any(|slug| matches!(self.layout.recorded_root(slug), Some(Some(r)) if r == self.root));
        if !own_derived && let Some(slug) = self.adoptable() {
            log::info!(
                "project {} uses the graph '{slug}', filed by another machine for its folder of the same name",
                crate::limits::for_log(self.root)
            );
            return Ok(slug);
        }
        // 4. The folder name when it is free, else a derived name.
        if !name_stored && !self.taken_here(name) && self.remote_fits(name) {
            if let Some(old) = self
                .layout
                .find_renamed(name, self.root, &|dir| self.remote_fits(dir))
            {
                self.layout.migrate(&old, name);
            }
            return Ok(name.to_string());
        }
        self.derived_slug()
    }

    /// Held in memory by another root.
    fn held_by_other(&self, slug: &str) -> bool {
        (self.claimed)(slug).is_some_and(|holder| holder != self.root)
    }

    /// Used by another root of this machine: in memory, or in its map.
    fn taken_here(&self, slug: &str) -> bool {
        self.held_by_other(slug) || self.paths.root_of(slug).is_some_and(|r| r != self.root)
    }

    /// Another root's: held in memory, bound in the map, or its file records another
    /// root (the reference's namesake rule).
    fn owned_elsewhere(&self, slug: &str) -> bool {
        if let Some(holder) = (self.claimed)(slug) {
            return holder != self.root;
        }
        self.taken_here(slug)
            || matches!(self.layout.recorded_root(slug), Some(Some(r)) if r != self.root)
    }

    /// No recorded remote of `slug` contradicts this project's.
    fn remote_fits(&self, slug: &str) -> bool {
        let Some(ours) = self.remote else {
            return true;
        };
        let recorded = self.layout.recorded_remotes(slug);
        recorded.is_empty() || recorded.iter().any(|r| r == ours)
    }

    /// `slug`'s recorded remotes include this project's.
    fn remote_matches(&self, slug: &str) -> bool {
        self.remote
            .is_some_and(|ours| self.layout.recorded_remotes(slug).iter().any(|r| r == ours))
    }

    /// Is `recorded` a project folder this machine could hold? A folder that exists
    /// inside the allowed folders; anything else was written by another machine (or
    /// the project is gone).
    fn is_local_project(&self, recorded: &str) -> bool {
        Path::new(recorded).is_dir() && is_within(recorded, self.allowed)
    }

    /// A graph of the same folder name that belongs to no project of this machine:
    /// its recorded root is no folder here and not in this machine's map, nobody in
    /// memory holds it, and the map binds no root of this machine to it.
    fn foreign(&self, slug: &str) -> bool {
        if (self.claimed)(slug).is_some() || self.paths.root_of(slug).is_some() {
            return false;
        }
        match self.layout.recorded_root(slug) {
            Some(Some(recorded)) => {
                recorded != self.root
                    && basename(&recorded) == self.name
                    && !self.paths.binds_root(&recorded)
                    && !self.is_local_project(&recorded)
            }
            _ => false,
        }
    }

    /// The graph another machine filed for this project, if one fits: a foreign graph
    /// under the folder name whose remotes do not contradict this project's, or a
    /// foreign graph under a derived name (`<name>-<8 hex>`: its machine had two
    /// projects of this name) whose remotes include this project's. A remote match
    /// wins over the folder name alone; a graph recording another remote is never
    /// adopted.
    fn adoptable(&self) -> Option<String> {
        let name = self.name.as_str();
        let mut derived: Vec<String> = fs::read_dir(self.layout.projects_dir())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|dir| is_derived_name(dir, name))
                    .collect()
            })
            .unwrap_or_default();
        derived.sort();
        let plain = self.foreign(name) && self.remote_fits(name);
        if plain && self.remote_matches(name) {
            return Some(name.to_string());
        }
        if let Some(slug) = derived
            .into_iter()
            .find(|slug| self.foreign(slug) && self.remote_matches(slug))
        {
            return Some(slug);
        }
        plain.then(|| name.to_string())
    }

    /// The `<name>-<hash>` slug of a project whose folder name is taken. A derived
    /// name can itself be another project's folder name (`~/proj-1a2b3c4d`), so each
    /// candidate is checked against the slugs in use, in memory, in this machine's map
    /// and on disk; the candidates come in a fixed order, and one whose file records
    /// this root wins over an earlier free one, so a restart finds the same graph again.
    fn derived_slug(&self) -> Result<String, PathError> {
        let mut free = None;
        for slug in &derived_candidates(&self.name, self.root) {
            match (self.claimed)(slug) {
                Some(holder) if holder == self.root => return Ok(slug.clone()),
                Some(_) => continue,
                None => {}
            }
            if self.taken_here(slug) {
                continue;
            }
            match self.layout.recorded_root(slug) {
                Some(Some(recorded)) if recorded == self.root => return Ok(slug.clone()),
                // Someone else's graph, or one that does not say whose it is.
                Some(_) => {}
                None if self.layout.project_dir(slug).exists() => {} // a folder we did not make
                None => {
                    free.get_or_insert_with(|| slug.clone());
                }
            }
        }
        free.ok_or_else(|| PathError::TooManyNamesakes(self.name.clone()))
    }
}

/// Is `dir` a derived slug of `name`: `<name>-` and eight lowercase hex digits?
fn is_derived_name(dir: &str, name: &str) -> bool {
    dir.strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|hash| {
            hash.len() == 8
                && hash
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// How many derived slugs a project may try before giving up (each taken one is a
/// namesake project filed under exactly that name: more than a couple never happens).
const DERIVED_SLUG_TRIES: u64 = 16;

/// The derived slugs of a root whose folder name is taken, in the order they are tried.
fn derived_candidates(name: &str, root: &str) -> Vec<String> {
    (0..DERIVED_SLUG_TRIES)
        .map(|k| {
            let hash = if k == 0 {
                fnv1a(root.as_bytes())
            } else {
                fnv1a(format!("{root}\0{k}").as_bytes())
            };
            format!("{name}-{:08x}", hash as u32)
        })
        .collect()
}

/// FNV-1a: a tiny stable hash, so derived slugs are the same on every start.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_kinds() {
        assert_eq!(Namespace::kind_of("project:/home/user/proj"), "project");
        assert_eq!(Namespace::kind_of("user"), "user");
        assert_eq!(Namespace::kind_of("role:cmo"), "role");
        assert_eq!(Namespace::Project("/h/p".into()).key(), "project:/h/p");
    }

    #[test]
    fn project_paths_must_stay_inside_home() {
        let home = tempfile::tempdir().expect("home");
        let home_path = fs::canonicalize(home.path()).expect("canon");
        let allowed = [home_path.clone()];
        let home_path = &allowed[..];
        let home_dir = &allowed[0];
        let proj = home_dir.join("src/api");
        fs::create_dir_all(&proj).expect("mkdir");
        let root = resolve_project_root(&proj.to_string_lossy(), home_path).expect("inside");
        assert_eq!(root, proj.to_string_lossy());
        let dotted = format!("{}/src/../src/api/", home_dir.display());
        assert_eq!(
            resolve_project_root(&dotted, home_path).expect("inside"),
            root
        );
        let escape = format!("{}/../..", home_dir.display());
        assert!(matches!(
            resolve_project_root(&escape, home_path),
            Err(PathError::OutsideHome(_))
        ));
        assert!(resolve_project_root("/etc", home_path).is_err());
        // A sibling whose name merely starts with home's name is outside.
        let sibling = format!("{}-evil/x", home_dir.display());
        assert!(resolve_project_root(&sibling, home_path).is_err());
        // A symlink inside home pointing outside resolves outside.
        let link = home_dir.join("link");
        std::os::unix::fs::symlink("/etc", &link).expect("symlink");
        assert!(resolve_project_root(&link.to_string_lossy(), home_path).is_err());
        // A relative path would be resolved against the server's folder: refused.
        assert!(matches!(
            resolve_project_root("src/api", home_path),
            Err(PathError::Relative(_))
        ));
    }

    #[test]
    fn project_roots_besides_home_are_allowed() {
        let home = tempfile::tempdir().expect("home");
        let work = tempfile::tempdir().expect("work");
        let work_path = fs::canonicalize(work.path()).expect("canon");
        let proj = work_path.join("shop");
        fs::create_dir_all(&proj).expect("mkdir");
        let only_home = [fs::canonicalize(home.path()).expect("canon")];
        assert!(matches!(
            resolve_project_root(&proj.to_string_lossy(), &only_home),
            Err(PathError::OutsideHome(_))
        ));
        let both = [only_home[0].clone(), work_path];
        assert_eq!(
            resolve_project_root(&proj.to_string_lossy(), &both).expect("allowed"),
            proj.to_string_lossy()
        );
    }

    #[test]
    fn slugs_are_plain_names() {
        for bad in ["", ".", "..", "-x", "a/b", "a\\b"] {
            assert!(validate_slug(bad).is_err(), "{bad}");
        }
        assert!(validate_slug("api").is_ok());
    }

    #[test]
    fn namesake_projects_get_distinct_slugs_found_again() {
        let storage = tempfile::tempdir().expect("storage");
        let layout = Layout {
            root: storage.path().to_path_buf(),
        };
        let nobody = |_: &str| None;
        assert_eq!(
            layout
                .slug_for("/home/u/work/api", &[], &nobody)
                .expect("slug"),
            "api"
        );
        fs::create_dir_all(layout.project_dir("api")).expect("mkdir");
        fs::write(
            layout.project_graph("api"),
            r#"{"nodes": {}, "_meta": {"project_path": "/home/u/work/api"}}"#,
        )
        .expect("write");
        assert_eq!(
            layout
                .slug_for("/home/u/work/api", &[], &nobody)
                .expect("slug"),
            "api"
        );
        let other = layout
            .slug_for("/home/u/oss/api", &[], &nobody)
            .expect("slug");
        assert!(other.starts_with("api-") && other.len() == 12, "{other}");
        assert_eq!(
            layout
                .slug_for("/home/u/oss/api", &[], &nobody)
                .expect("slug"),
            other
        );
        // An unsaved claim in memory also counts.
        let claimed = |s: &str| (s == "web").then(|| "/home/u/a/web".to_string());
        assert_ne!(
            layout
                .slug_for("/home/u/b/web", &[], &claimed)
                .expect("slug"),
            "web"
        );
        assert_eq!(
            layout
                .slug_for("/home/u/a/web", &[], &claimed)
                .expect("slug"),
            "web"
        );
    }

    #[test]
    fn alias_migrates_a_renamed_project() {
        let storage = tempfile::tempdir().expect("storage");
        let layout = Layout {
            root: storage.path().to_path_buf(),
        };
        fs::create_dir_all(layout.project_dir("old")).expect("mkdir");
        fs::write(layout.project_graph("old"), r#"{"nodes": {}}"#).expect("write");
        fs::write(layout.aliases(), r#"{"old": "new"}"#).expect("alias");
        assert_eq!(
            layout
                .slug_for("/home/u/new", &[], &|_| None)
                .expect("slug"),
            "new"
        );
        assert!(layout.project_graph("new").exists());
        assert!(
            layout.project_graph("old").exists(),
            "old folder is left in place"
        );
    }
}
