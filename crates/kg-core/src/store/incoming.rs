//! Graph files that changed on another machine and arrive by agreement: a git sync's
//! merge result, taken in through the store so that sessions, the change log,
//! `kg_sync` and live views see what arrived like any other change.

use super::*;
use crate::namespace::validate_slug;

/// What [`Store::take_in`] changed here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TakenIn {
    /// Nodes that arrived or changed, by id.
    pub updated: Vec<String>,
    /// Nodes that were deleted elsewhere, by id.
    pub deleted: Vec<String>,
    /// Edges that arrived, changed or went.
    pub edges: usize,
    /// Whether the graph was in memory here (else only its file was replaced).
    pub loaded: bool,
}

impl TakenIn {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.updated.is_empty() && self.deleted.is_empty() && self.edges == 0
    }
}

/// The change-log source of changes that arrived by sync from `origin` (a remote's
/// name and URL): recorded where a change names the session that made it, so a
/// session's `kg_sync` reports them as others' changes and a view can say where
/// they came from.
pub fn sync_source(origin: &str) -> String {
    format!("{SYNC_SOURCE_PREFIX}{origin}")
}

/// The origin of a change that arrived by sync, from its recorded source.
pub fn sync_origin(source: &str) -> Option<&str> {
    source.strip_prefix(SYNC_SOURCE_PREFIX)
}

/// How many times a merge runs outside the graph's lock before it runs under it.
const MERGE_TRIES: usize = 3;

/// Starts the source of a change that arrived by sync; no session id starts so
/// (those are 8 hex digits).
const SYNC_SOURCE_PREFIX: &str = "sync:";

impl Store {
    /// Take in a new version of the graph file `relative` (`user.json` or
    /// `projects/<slug>/graph.json` under the storage root) that a sync merged.
    ///
    /// `merge` gets the graph as this store holds it now, as file text (`None` when
    /// storage has no such graph), and returns the text to keep: the caller merges the
    /// incoming version into it, so writes that landed here after the sync committed
    /// are kept too. It runs without the graph's lock, and again if a request changed
    /// the graph meanwhile. The result replaces the graph in memory (healed as a load heals
    /// it, then maintained, which recomputes tiers; an edge whose end has not arrived
    /// yet stays, as a client's `put_edge` would keep it) and on disk
    /// through the atomic write; every node and edge that differs is recorded in the
    /// change log with the source [`sync_source`]`(origin)`. A graph not in memory
    /// has only its file replaced, and nobody can load it meanwhile.
    ///
    /// Nothing changes when `merge` fails or returns text that does not parse.
    pub fn take_in(
        &self,
        relative: &str,
        origin: &str,
        now: f64,
        merge: impl Fn(Option<&[u8]>) -> Result<Vec<u8>, String>,
    ) -> Result<TakenIn, StoreError> {
        let refuse = |cause: String| StoreError::Invalid(format!("{relative}: {cause}"));
        let slug = if relative == "user.json" {
            None
        } else {
            let slug = relative
                .strip_prefix("projects/")
                .and_then(|rest| rest.strip_suffix("/graph.json"))
                .ok_or_else(|| refuse("not a graph file of this storage root".into()))?;
            validate_slug(slug).map_err(|e| refuse(e.to_string()))?;
            Some(slug)
        };
        let slot = match slug {
            None => Some(self.user.clone()),
            Some(slug) => self
                .projects
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .find(|s| s.slug.as_deref() == Some(slug))
                .cloned(),
        };
        if let Some(slot) = slot
            && slot.lock().loaded
        {
            return self.take_in_loaded(&slot, &sync_source(origin), now, merge);
        }
        // Not in memory: held the registry's write lock so no request loads the file
        // half-way through. A request that loaded it since the lookup above is found.
        let projects = self.projects.write().unwrap_or_else(|e| e.into_inner());
        let path = match slug {
            None => self.layout.user_graph(),
            Some(slug) => {
                if let Some(slot) = projects.values().find(|s| s.slug.as_deref() == Some(slug)) {
                    let slot = slot.clone();
                    drop(projects);
                    return self.take_in_loaded(&slot, &sync_source(origin), now, merge);
                }
                self.layout.project_graph(slug)
            }
        };
        let current = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(StoreError::Load {
                    path,
                    cause: e.to_string(),
                });
            }
        };
        let merged = merge(current.as_deref()).map_err(refuse)?;
        let file = parse_graph(&merged).map_err(refuse)?;
        let validate = |bytes: &[u8]| parse_graph(bytes).is_ok();
        atomic_write(
            &path,
            &merged,
            WriteMode::GRAPH,
            FileStamp::of(&path),
            Some(&validate),
        )
        .map_err(StoreError::Save)?;
        drop(projects);
        let before = match current.as_deref().map(parse_graph) {
            Some(Ok(old)) => old.graph,
            _ => Graph::default(),
        };
        // Nobody has this graph open: there is nobody to tell what changed.
        let (_, taken) = differences(&before, &file.graph);
        Ok(TakenIn {
            loaded: false,
            ..taken
        })
    }

    fn take_in_loaded(
        &self,
        slot: &GraphSlot,
        source: &str,
        now: f64,
        merge: impl Fn(Option<&[u8]>) -> Result<Vec<u8>, String>,
    ) -> Result<TakenIn, StoreError> {
        let refuse =
            |cause: String| StoreError::Invalid(format!("{}: {cause}", slot.path.display()));
        let text_of = |state: &GraphState| {
            crate::persist::serialize_graph(
                &state.graph,
                slot.level,
                slot.recorded_root(&state.recorded_root, self.config.synced),
            )
        };
        let merged_file = |current: &str| -> Result<GraphFile, StoreError> {
            let merged = merge(Some(current.as_bytes())).map_err(refuse)?;
            parse_graph(&merged).map_err(refuse)
        };
        // The merge (parsing three large files) runs without the graph's lock, so
        // requests are served meanwhile; if the graph changed in that time, it runs
        // again on the new state, and after a few tries under the lock.
        let mut tries = 0;
        let (mut state, file) = loop {
            let current = text_of(&slot.lock());
            let file = merged_file(&current)?;
            let state = slot.lock();
            let now_text = text_of(&state);
            if now_text == current {
                break (state, file);
            }
            tries += 1;
            if tries == MERGE_TRIES {
                let file = merged_file(&now_text)?;
                break (state, file);
            }
        };
        let before = std::mem::replace(&mut state.graph, Tracked::new(file.graph));
        let recorded_before = std::mem::replace(&mut state.recorded_root, file.project_path);
        state.graph.heal_gists();
        let moves = self.maybe_compact(slot, &mut state, now, None);
        if let Err(e) = self.save_locked(slot, &mut state) {
            state.graph = before;
            state.recorded_root = recorded_before;
            return Err(StoreError::Save(e));
        }
        // Undo steps describe the graph they were taken on.
        state.history.clear();
        let (changes, taken) = differences(&before, &state.graph);
        for kind in changes {
            self.record(slot.level, slot.project_root(), Some(source), kind, now);
        }
        self.record_moves(slot, moves, "after a sync", now);
        self.note_debt(slot, &mut state, now);
        Ok(TakenIn {
            loaded: true,
            ..taken
        })
    }
}

/// The change-log entries that take `before` to `after`, and their summary. Edges of
/// a deleted node go with its `NodeDeleted`, as a client's delete reports them.
fn differences(before: &Graph, after: &Graph) -> (Vec<ChangeKind>, TakenIn) {
    let mut changes = Vec::new();
    let mut taken = TakenIn::default();
    for (id, node) in after.nodes.iter() {
        if before.nodes.get(id) != Some(node) {
            changes.push(ChangeKind::NodeUpdated {
                node: node.to_object(),
            });
            taken.updated.push(id.clone());
        }
    }
    for id in before.nodes.keys() {
        if !after.nodes.contains_key(id) {
            changes.push(ChangeKind::NodeDeleted { id: id.clone() });
            taken.deleted.push(id.clone());
        }
    }
    for (key, edge) in after.edges.iter() {
        if before.edges.get(key) != Some(edge) {
            changes.push(ChangeKind::EdgeUpdated {
                edge: edge.as_object().clone(),
            });
            taken.edges += 1;
        }
    }
    let deleted: HashSet<&str> = taken.deleted.iter().map(String::as_str).collect();
    for key in before.edges.keys() {
        if !after.edges.contains_key(key) {
            if !(deleted.contains(key.from()) || deleted.contains(key.to())) {
                changes.push(ChangeKind::EdgeDeleted { key: key.clone() });
            }
            taken.edges += 1;
        }
    }
    (changes, taken)
}
