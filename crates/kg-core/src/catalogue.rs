//! The catalogue: every graph of a storage root (the user graph, each project graph
//! on disk, each project loaded but not yet saved) with its tier counts, debt and
//! HEALTH. It is the one list behind the tray, the graph view's picker and the disk
//! survey (`GET /api/maintenance_debt`).
//!
//! Graphs the store holds are described from memory; the others from their files,
//! whose figures are kept until the file (or its project's tool events) changes, so
//! listing a root again and again parses nothing that did not change.

use crate::debt::{Debt, DebtInputs};
use crate::model::Level;
use crate::namespace::{Layout, validate_slug};
use crate::persist::{FileStamp, parse_graph};
use crate::plan::Health;
use crate::pyfmt::round_to;
use crate::render::tier_counts;
use crate::stale_touches::{StaleTouch, TouchEntry, find_stale, path_touches, stale_counts};
use crate::tool_events::ToolEvents;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the stale touches found for a graph file are trusted while the file does
/// not change (the files its touches name come and go unseen).
const STALE_RECHECK: Duration = Duration::from_secs(10);

/// Active, archived and orphaned node counts.
pub type TierCounts = (usize, usize, usize);

/// One graph of the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueEntry {
    /// `user`, or the project's storage folder.
    pub name: String,
    /// Whether this is the user graph or a project graph.
    pub level: Level,
    /// The project root the graph belongs to: the store's resolved root when loaded, else
    /// `_meta.project_path` as the file records it; `None` for the user graph.
    pub project_path: Option<String>,
    /// Whether the figures below come from the graph in memory rather than its file.
    pub loaded: bool,
    /// Active, archived and orphaned node counts.
    pub counts: TierCounts,
    /// The debt an agent's `kg_read` shows.
    pub debt: Debt,
    /// The debt of the file as the disk survey defines it (ids from each node's `id`
    /// field, no load-time cleanup); `None` when there is no readable file.
    pub file_debt: Option<Debt>,
    /// The HEALTH of the rendered level: its line and its numbers.
    pub health: Health,
    /// The file's stale touches (what `file_debt` counts), when they were looked for
    /// (our policy): path-shaped touches of active nodes whose file is gone.
    pub stale_touches: Arc<Vec<StaleTouch>>,
}

/// A graph the caller holds in memory, described by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct InMemory {
    pub name: String,
    pub level: Level,
    pub project_path: Option<String>,
    pub counts: TierCounts,
    pub debt: Debt,
    pub health: Health,
}

/// The file figures of the graphs of one storage root, kept between listings.
#[derive(Debug, Default)]
pub struct Catalogue {
    files: Mutex<HashMap<PathBuf, FileFigures>>,
    /// The stale touches last found for each graph file: when, for which file and
    /// project root, and what.
    stale: Mutex<HashMap<PathBuf, StaleFound>>,
}

#[derive(Debug, Clone)]
struct StaleFound {
    at: Instant,
    graph_stamp: FileStamp,
    root: Option<String>,
    touches: Arc<Vec<StaleTouch>>,
}

/// Whether, and how, a listing looks for stale touches (our policy does).
#[derive(Debug, Clone, Copy)]
pub struct StaleCheck<'a> {
    /// The home folder `~` stands for.
    pub home: &'a Path,
    /// Look again now, whatever was found lately (a person or an agent asked).
    pub fresh: bool,
}

/// What the catalogue knows of one graph file, valid while both stamps hold.
#[derive(Debug, Clone)]
struct FileFigures {
    graph_stamp: FileStamp,
    events_stamp: Option<FileStamp>,
    project_path: Option<String>,
    counts: TierCounts,
    debt_inputs: DebtInputs,
    /// The path-shaped touches of active nodes, for the stale check.
    touches: Arc<Vec<TouchEntry>>,
    /// The project's tool-event stamps (none for the user graph).
    activity: Vec<f64>,
    health: Health,
}

impl FileFigures {
    fn debt(&self, now: f64) -> Debt {
        self.debt_inputs.debt(self.activity.iter().copied(), now)
    }
}

impl Catalogue {
    /// Every graph of the root under `layout` as its file describes it: the user
    /// graph, then project folders in name order. A file that cannot be read or
    /// parsed is left out. (A running store lists its own: `Store::catalogue`.)
    pub fn on_disk(&self, layout: &Layout, now: f64) -> Vec<CatalogueEntry> {
        self.list(layout, Vec::new(), None, now)
    }

    /// Every graph of the root under `layout`: the user graph, then project folders in
    /// name order, then projects in `in_memory` that have no file yet. A graph in
    /// `in_memory` is described from there; a file that cannot be read or parsed is
    /// left out unless its graph is in memory.
    ///
    /// With `stale`, each graph file's stale touches are looked for (and counted in its
    /// file debt): a project's relative touches against this machine's folder for it
    /// (the store's, this machine's path map, else the one the file records).
    pub(crate) fn list(
        &self,
        layout: &Layout,
        in_memory: Vec<InMemory>,
        stale: Option<StaleCheck<'_>>,
        now: f64,
    ) -> Vec<CatalogueEntry> {
        let mut in_memory: HashMap<(Level, String), InMemory> = in_memory
            .into_iter()
            .map(|g| ((g.level, g.name.clone()), g))
            .collect();
        let mut entries = Vec::new();
        let user_path = layout.user_graph();
        let user_file = self.figures(&user_path, None);
        let user_stale = stale.and_then(|check| {
            let file = user_file.as_ref()?;
            Some(self.stale_of(&user_path, file, None, check))
        });
        entries.extend(entry(
            "user",
            Level::User,
            in_memory.remove(&(Level::User, "user".to_string())),
            user_file,
            user_stale,
            now,
        ));
        let local_roots = match stale {
            Some(_) => layout.local_roots(),
            None => HashMap::new(),
        };
        for dir in project_folders(layout) {
            let path = layout.project_graph(&dir);
            let file = self.figures(&path, Some(&layout.tool_events(&dir)));
            let memory = in_memory.remove(&(Level::Project, dir.clone()));
            let file_stale = stale.and_then(|check| {
                let file = file.as_ref()?;
                let root = memory
                    .as_ref()
                    .and_then(|m| m.project_path.clone())
                    .or_else(|| local_roots.get(&dir).cloned())
                    .or_else(|| file.project_path.clone());
                // A project that records no folder has no folder to look in.
                let root = root?;
                Some(self.stale_of(&path, file, Some(root), check))
            });
            entries.extend(entry(&dir, Level::Project, memory, file, file_stale, now));
        }
        let mut unsaved: Vec<InMemory> = in_memory.into_values().collect();
        unsaved.sort_by(|a, b| (a.level, &a.name).cmp(&(b.level, &b.name)));
        for graph in unsaved {
            let name = graph.name.clone();
            entries.extend(entry(&name, graph.level, Some(graph), None, None, now));
        }
        entries
    }

    /// The stale touches of the graph file at `path` (figures `file`), its relative
    /// touches under `root`: found again when the file changed, the root is another,
    /// or the last look is older than [`STALE_RECHECK`].
    fn stale_of(
        &self,
        path: &Path,
        file: &FileFigures,
        root: Option<String>,
        check: StaleCheck<'_>,
    ) -> Arc<Vec<StaleTouch>> {
        if let Some(known) = self
            .stale
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .filter(|k| {
                !check.fresh
                    && k.graph_stamp == file.graph_stamp
                    && k.root == root
                    && k.at.elapsed() < STALE_RECHECK
            })
        {
            return known.touches.clone();
        }
        // Looked for without holding the cache: the stats take their time.
        let touches = Arc::new(find_stale(
            &file.touches,
            check.home,
            root.as_deref().map(Path::new),
        ));
        self.stale.lock().unwrap_or_else(|e| e.into_inner()).insert(
            path.to_path_buf(),
            StaleFound {
                at: Instant::now(),
                graph_stamp: file.graph_stamp,
                root,
                touches: touches.clone(),
            },
        );
        touches
    }

    /// The figures of the graph file at `path` (with the tool events at `events`),
    /// from the cache while neither file changed.
    fn figures(&self, path: &Path, events: Option<&Path>) -> Option<FileFigures> {
        let graph_stamp = FileStamp::of(path)?;
        let events_stamp = events.and_then(FileStamp::of);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = files.get(path)
            && known.graph_stamp == graph_stamp
            && known.events_stamp == events_stamp
        {
            return Some(known.clone());
        }
        // Parsed without holding the cache: a big file must not stall other listings.
        drop(files);
        let figures = read_figures(path, events, graph_stamp, events_stamp);
        files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        match &figures {
            Some(f) => files.insert(path.to_path_buf(), f.clone()),
            None => files.remove(path),
        };
        figures
    }
}

fn read_figures(
    path: &Path,
    events: Option<&Path>,
    graph_stamp: FileStamp,
    events_stamp: Option<FileStamp>,
) -> Option<FileFigures> {
    let bytes = std::fs::read(path).ok()?;
    let file = match parse_graph(&bytes) {
        Ok(file) => file,
        Err(e) => {
            log::warn!("the catalogue skips {}: {e}", path.display());
            return None;
        }
    };
    let activity = events
        .map(|events| ToolEvents::load(events).last_seen().collect())
        .unwrap_or_default();
    Some(FileFigures {
        graph_stamp,
        events_stamp,
        project_path: file.project_path,
        counts: tier_counts(&file.graph),
        debt_inputs: DebtInputs::of(&file.graph, true),
        touches: Arc::new(path_touches(&file.graph)),
        activity,
        health: Health::of_graph(&file.graph),
    })
}

/// One entry from what memory and the file say; `None` when neither has the graph.
fn entry(
    name: &str,
    level: Level,
    memory: Option<InMemory>,
    file: Option<FileFigures>,
    stale: Option<Arc<Vec<StaleTouch>>>,
    now: f64,
) -> Option<CatalogueEntry> {
    let stale = stale.unwrap_or_default();
    let (entries, nodes) = stale_counts(&stale);
    let file_debt = file
        .as_ref()
        .map(|f| f.debt(now).with_stale_touches(entries, nodes));
    Some(match (memory, file) {
        (Some(m), _) => CatalogueEntry {
            name: m.name,
            level: m.level,
            project_path: m.project_path,
            loaded: true,
            counts: m.counts,
            debt: m.debt,
            file_debt,
            health: m.health,
            stale_touches: stale,
        },
        (None, Some(f)) => CatalogueEntry {
            name: name.to_string(),
            level,
            project_path: f.project_path,
            loaded: false,
            counts: f.counts,
            debt: file_debt.clone()?,
            file_debt,
            health: f.health,
            stale_touches: stale,
        },
        (None, None) => return None,
    })
}

/// The storage folders under `projects/` with a valid name, in name order.
fn project_folders(layout: &Layout) -> Vec<String> {
    let mut dirs: Vec<String> = std::fs::read_dir(layout.projects_dir())
        .map(|it| {
            it.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|d| validate_slug(d).is_ok())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// The entries whose debt `of` gives, neediest first, comparing scores as printed
/// (rounded to two decimals); ties keep their order.
pub fn neediest_first<'e>(
    entries: &'e [CatalogueEntry],
    of: impl Fn(&'e CatalogueEntry) -> Option<&'e Debt>,
) -> Vec<(&'e CatalogueEntry, &'e Debt)> {
    let mut rows: Vec<(&CatalogueEntry, &Debt)> = entries
        .iter()
        .filter_map(|e| of(e).map(|d| (e, d)))
        .collect();
    rows.sort_by(|a, b| round_to(b.1.score, 2).total_cmp(&round_to(a.1.score, 2)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_graph(path: &Path, ids: &[&str]) {
        let nodes: Vec<String> = ids
            .iter()
            .map(|id| format!("\"{id}\": {{\"id\": \"{id}\", \"gist\": \"g\"}}"))
            .collect();
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, format!("{{\"nodes\": {{{}}}}}", nodes.join(", "))).expect("write");
    }

    fn memory(name: &str, level: Level, active: usize) -> InMemory {
        InMemory {
            name: name.into(),
            level,
            project_path: None,
            counts: (active, 0, 0),
            debt: DebtInputs::of(&crate::graph::Graph::default(), false).debt([], 0.0),
            health: Health::of_graph(&crate::graph::Graph::default()),
        }
    }

    #[test]
    fn lists_user_then_folders_then_unsaved_and_prefers_memory() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout {
            root: dir.path().to_path_buf(),
        };
        write_graph(&layout.user_graph(), &["u1"]);
        write_graph(&layout.project_graph("beta"), &["b1", "b2"]);
        write_graph(&layout.project_graph("alpha"), &["a1"]);
        std::fs::create_dir_all(layout.projects_dir().join("broken")).expect("mkdir");
        std::fs::write(layout.project_graph("broken"), "{not json").expect("write");
        let catalogue = Catalogue::default();
        let in_memory = vec![
            memory("zeta", Level::Project, 7),
            memory("beta", Level::Project, 5),
        ];
        let entries = catalogue.list(&layout, in_memory, None, 1.0);
        let names: Vec<(&str, bool)> = entries
            .iter()
            .map(|e| (e.name.as_str(), e.loaded))
            .collect();
        assert_eq!(
            names,
            [
                ("user", false),
                ("alpha", false),
                ("beta", true),
                ("zeta", true)
            ]
        );
        let beta = &entries[2];
        assert_eq!(beta.counts, (5, 0, 0), "memory wins");
        assert_eq!(
            beta.file_debt.as_ref().map(|d| d.active_nodes),
            Some(2),
            "the survey still sees the file"
        );
        assert!(
            entries[3].file_debt.is_none(),
            "an unsaved graph has no file"
        );
    }

    #[test]
    fn a_file_is_parsed_again_only_when_it_changes() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout {
            root: dir.path().to_path_buf(),
        };
        let path = layout.project_graph("alpha");
        write_graph(&path, &["a1"]);
        let catalogue = Catalogue::default();
        let counts = |c: &Catalogue| c.list(&layout, Vec::new(), None, 1.0)[0].counts;
        assert_eq!(counts(&catalogue), (1, 0, 0));
        // Same stamp, other content: the kept figures are used (nothing re-read).
        let stamp = FileStamp::of(&path).expect("stamp");
        catalogue
            .files
            .lock()
            .expect("cache")
            .get_mut(&path)
            .expect("cached")
            .counts = (42, 0, 0);
        assert_eq!(FileStamp::of(&path), Some(stamp));
        assert_eq!(counts(&catalogue), (42, 0, 0));
        // A new file (new inode and size): read again.
        let fresh = path.with_extension("new");
        write_graph(&fresh, &["a1", "a2", "a3"]);
        std::fs::rename(&fresh, &path).expect("rename");
        assert_eq!(counts(&catalogue), (3, 0, 0));
    }

    #[test]
    fn neediest_first_compares_rounded_scores_and_keeps_ties() {
        let dir = tempfile::tempdir().expect("dir");
        let layout = Layout {
            root: dir.path().to_path_buf(),
        };
        let mut entries = Catalogue::default().list(
            &layout,
            vec![
                memory("a", Level::Project, 1),
                memory("b", Level::Project, 1),
            ],
            None,
            1.0,
        );
        entries[0].debt.score = 0.301;
        entries[1].debt.score = 0.304;
        let order: Vec<&str> = neediest_first(&entries, |e| Some(&e.debt))
            .into_iter()
            .map(|(e, _)| e.name.as_str())
            .collect();
        assert_eq!(order, ["a", "b"], "0.30 and 0.30 tie");
        entries[1].debt.score = 0.306;
        let order: Vec<&str> = neediest_first(&entries, |e| Some(&e.debt))
            .into_iter()
            .map(|(e, _)| e.name.as_str())
            .collect();
        assert_eq!(order, ["b", "a"]);
    }
}
