//! The 3-way merge of graph files.

use crate::order::merged_order;
use indexmap::IndexMap;
use kg_core::{
    CONFLICT_NOTE_PREFIX, Edge, EdgeKey, Graph, GraphFile, Level, Node, Object, Tier, Tracked,
    Version, edge_version_key, field, node_version_key, parse_graph, serialize_graph,
};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;

/// One of the three versions of a graph file a merge reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The common ancestor (git's `%O`).
    Base,
    /// This checkout's version (git's `%A`), the file the merge replaces.
    Ours,
    /// The version being merged in (git's `%B`).
    Theirs,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Base => "the common ancestor (base)",
            Side::Ours => "our version",
            Side::Theirs => "their version",
        })
    }
}

/// Why a merge produced nothing.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// An input is not a graph file; nothing can be merged safely.
    #[error("{side} is not a valid KG Memory graph file: {cause}")]
    Unparsable {
        /// Which input.
        side: Side,
        /// What the parser objected to.
        cause: String,
    },
    /// The merged graph did not parse back. Never expected: the merge only combines
    /// parsed values. The merge is refused rather than write such a file.
    #[error("the merged graph does not parse back ({cause}); nothing was merged")]
    Unreadable {
        /// What the parser objected to.
        cause: String,
    },
}

/// Two different gists written for one node: the newer was kept, the other went into
/// the node's notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The node's id.
    pub node: String,
    /// The note added to it (it starts with [`CONFLICT_NOTE_PREFIX`]).
    pub note: String,
}

/// A merged graph file.
#[derive(Debug, Clone)]
pub struct MergeOutcome {
    /// The file's text, as a save writes it.
    pub text: String,
    /// The file as a load reads `text`.
    pub file: GraphFile,
    /// The conflicts this merge found, by node order. Notes of earlier conflicts the
    /// file still holds are not listed; [`crate::unresolved_conflicts`] counts every one.
    pub conflicts: Vec<Conflict>,
}

/// Merge three graph files given as bytes: the common ancestor `base`, `ours` and
/// `theirs`. An empty `base` (git gives one when both sides added the file) is an
/// empty graph; any input that does not parse as a graph file refuses the merge.
///
/// The rules, at node and edge level, keyed by id (an edge's id is `from`, `to` and
/// `rel`):
///
/// - **Added** on either side: kept. Added on both with different content: merged
///   field by field as below, with no base.
/// - **Changed on one side** (any field, or only the fields' order): that side's
///   version, as it is.
/// - **Changed on both sides**: field by field. A field only one side changed takes
///   that side's value; a field both changed takes the newer version's value, except:
///   `notes`, `touches` and `_useful_ts` (endorsements) are unioned (an item either
///   side removed from the base goes; items either side added stay, the newer side's
///   first); `_last_read_ts` (the read stamp) keeps the later read; `_created_ts`
///   the earlier creation; a field removed on one side and changed on the other
///   keeps the change.
/// - **Newer** is the version with the later write time (`_meta.versions`' `ts` of
///   `node:<id>` or `edge:<key>`, then its counter `v`). When both are equal (or
///   both missing) the version whose JSON text sorts last wins: arbitrary, but the
///   same whichever side is ours.
/// - **Gists**: when both sides wrote different gists, the newer stays and the other
///   is kept in the node's notes, in a note that starts with
///   [`CONFLICT_NOTE_PREFIX`] and names when and by which session it was written.
/// - **Deletes** win only over a node or edge the other side left unchanged. A read
///   stamp or a tier move (maintenance does those on each machine by itself) does
///   not count as a change; an edge the other side added or changed at the node
///   does. A node kept over a delete keeps the edges the delete took with it.
/// - **Tiers** (`_archived`, `_orphaned_ts`) are not merged: maintenance recomputes
///   them after the merge. The file carries the flags of the side that moved the
///   node, and when both did, those of the more visible tier (active, then
///   archived, then orphaned; equal tiers: the newer version's), so a merge never
///   hides a node that either side shows.
/// - **Versions** (`_meta.versions`) and **progress** (`_meta.progress`): per key,
///   the side that changed it; when both did, the newer entry (progress: the later
///   `last_ts`, else the JSON text that sorts last).
/// - **Order** of nodes, edges and versions: the other side's when one side kept
///   the base's order; else the base's, then each side's additions.
/// - `_meta.project_path` records where the project lived on the machine that first
///   wrote the graph (a synced store keeps it; each machine maps its own folder to
///   the graph): the side that changed it; when both did, the path that sorts
///   first. The level (`_meta.namespace.kind`) is ours, else theirs, else the base's.
///
/// The result is healed (malformed gists, as any load heals them) and must parse
/// back; edges to nodes of other graphs are left for the load to judge, as always.
pub fn merge(base: &[u8], ours: &[u8], theirs: &[u8]) -> Result<MergeOutcome, MergeError> {
    merge_at(base, ours, theirs, f64::INFINITY)
}

/// [`merge`] on a machine whose clock reads `now`: a write stamped further in the
/// future than clock skew explains (made while some clock ran ahead) counts as older
/// than every credible one, so it cannot win every later merge.
pub fn merge_at(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    now: f64,
) -> Result<MergeOutcome, MergeError> {
    let base = if base.iter().all(u8::is_ascii_whitespace) {
        GraphFile::default()
    } else {
        read_side(base, Side::Base)?
    };
    let ours = read_side(ours, Side::Ours)?;
    let theirs = read_side(theirs, Side::Theirs)?;
    merge_files_at(&base, &ours, &theirs, now)
}

/// Parse one input, refusing JSON that is not a graph file (another JSON file of the
/// repository under the same git attribute would otherwise merge as an empty graph).
fn read_side(bytes: &[u8], side: Side) -> Result<GraphFile, MergeError> {
    let file = parse_graph(bytes).map_err(|cause| MergeError::Unparsable { side, cause })?;
    let graph = &file.graph;
    if file.level.is_none() && graph.nodes.is_empty() && graph.edges.is_empty() {
        return Err(MergeError::Unparsable {
            side,
            cause: "it holds no nodes, no edges and no _meta.namespace".into(),
        });
    }
    Ok(file)
}

/// [`merge`] over parsed files.
pub fn merge_files(
    base: &GraphFile,
    ours: &GraphFile,
    theirs: &GraphFile,
) -> Result<MergeOutcome, MergeError> {
    merge_files_at(base, ours, theirs, f64::INFINITY)
}

/// [`merge_at`] over parsed files.
pub fn merge_files_at(
    base: &GraphFile,
    ours: &GraphFile,
    theirs: &GraphFile,
    now: f64,
) -> Result<MergeOutcome, MergeError> {
    let (graph, conflicts) = merge_graphs(&base.graph, &ours.graph, &theirs.graph, now);
    let project_path = merged_scalar(
        base.project_path.as_ref(),
        ours.project_path.as_ref(),
        theirs.project_path.as_ref(),
    );
    let level = ours
        .level
        .or(theirs.level)
        .or(base.level)
        .unwrap_or(if project_path.is_some() {
            Level::Project
        } else {
            Level::User
        });
    let text = serialize_graph(&graph, level, project_path.map(String::as_str));
    let file = parse_graph(text.as_bytes()).map_err(|cause| MergeError::Unreadable { cause })?;
    Ok(MergeOutcome {
        text,
        file,
        conflicts,
    })
}

/// A value merged as a whole: the side that changed it; when both changed it
/// differently, the one that sorts first (the same whichever side is ours).
fn merged_scalar<'a, T: Ord>(
    base: Option<&'a T>,
    ours: Option<&'a T>,
    theirs: Option<&'a T>,
) -> Option<&'a T> {
    if ours == theirs || theirs == base {
        ours
    } else if ours == base {
        theirs
    } else {
        match (ours, theirs) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (one, other) => one.or(other),
        }
    }
}

/// The three versions of one node, edge or entry (`None`: absent from that side).
struct Three<'a, T> {
    base: Option<&'a T>,
    ours: Option<&'a T>,
    theirs: Option<&'a T>,
}

impl<T> Clone for Three<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Three<'_, T> {}

fn merge_graphs(base: &Graph, ours: &Graph, theirs: &Graph, now: f64) -> (Graph, Vec<Conflict>) {
    let mut conflicts = Vec::new();
    let touched = [edited_edge_ends(base, ours), edited_edge_ends(base, theirs)];
    // Nodes a side deleted that the merge keeps: that side's deletion of their edges
    // is undone with the node's.
    let mut revived: [HashSet<&str>; 2] = Default::default();
    let mut nodes: IndexMap<&str, Node> = IndexMap::new();
    for id in union_keys(&base.nodes, &ours.nodes, &theirs.nodes) {
        let id = id.as_str();
        let three = Three {
            base: base.nodes.get(id),
            ours: ours.nodes.get(id),
            theirs: theirs.nodes.get(id),
        };
        let merged = match (three.ours, three.theirs) {
            (None, None) => None,
            (Some(o), Some(t)) => Some(match three.base {
                _ if same_fields(o, t) => o.clone(),
                Some(b) if same_fields(o, b) => t.clone(),
                Some(b) if same_fields(t, b) => o.clone(),
                _ => {
                    let versions = versions_of(&node_version_key(id), ours, theirs);
                    let (node, conflict) = merge_node(id, three.base, (o, t), versions, now);
                    conflicts.extend(conflict);
                    node
                }
            }),
            (Some(kept), None) | (None, Some(kept)) => {
                let keeper = usize::from(three.ours.is_none());
                match three.base {
                    None => Some(kept.clone()),
                    Some(b) if content_changed(b, kept) || touched[keeper].contains(id) => {
                        revived[1 - keeper].insert(id);
                        Some(kept.clone())
                    }
                    Some(_) => None,
                }
            }
        };
        if let Some(node) = merged {
            nodes.insert(id, node);
        }
    }

    let mut edges: IndexMap<&EdgeKey, Edge> = IndexMap::new();
    for key in union_keys(&base.edges, &ours.edges, &theirs.edges) {
        let b = base.edges.get(key);
        let three = Three {
            base: b,
            ours: restored(ours.edges.get(key), b, key, &revived[0]),
            theirs: restored(theirs.edges.get(key), b, key, &revived[1]),
        };
        if let Some(edge) = merge_edge(key, three, (ours, theirs), now) {
            edges.insert(key, edge);
        }
    }

    let mut versions: IndexMap<&str, Version> = IndexMap::new();
    for key in union_keys(&base.versions, &ours.versions, &theirs.versions) {
        let three = Three {
            base: base.versions.get(key),
            ours: ours.versions.get(key),
            theirs: theirs.versions.get(key),
        };
        let merged = three_way(three, |a, b| same_object(a.as_object(), b.as_object()))
            .unwrap_or_else(|(o, t)| {
                Some(
                    match newer(Some(o), Some(t), o.as_object(), t.as_object(), now) {
                        Ordering::Less => t,
                        _ => o,
                    },
                )
            });
        if let Some(version) = merged {
            versions.insert(key, version.clone());
        }
    }

    let mut progress: IndexMap<String, Value> = IndexMap::new();
    for key in union_keys(&base.progress, &ours.progress, &theirs.progress) {
        let three = Three {
            base: base.progress.get(key),
            ours: ours.progress.get(key),
            theirs: theirs.progress.get(key),
        };
        let merged = three_way(three, |a, b| a == b).unwrap_or_else(|(o, t)| {
            Some(match later_progress(o, t) {
                Ordering::Less => t,
                _ => o,
            })
        });
        if let Some(state) = merged {
            progress.insert(key.clone(), state.clone());
        }
    }

    let mut graph = Graph::default();
    graph.nodes = Tracked::new(in_merged_order(
        nodes,
        [&base.nodes, &ours.nodes, &theirs.nodes].map(|m| m.keys().map(String::as_str).collect()),
        |id| id.to_string(),
    ));
    graph.edges = Tracked::new(in_merged_order(
        edges,
        [&base.edges, &ours.edges, &theirs.edges].map(|m| m.keys().collect()),
        |key| (*key).clone(),
    ));
    graph.versions = Tracked::new(in_merged_order(
        versions,
        [&base.versions, &ours.versions, &theirs.versions]
            .map(|m| m.keys().map(String::as_str).collect()),
        |key| key.to_string(),
    ));
    let progress_order = merged_order(
        &base.progress.keys().collect::<Vec<_>>(),
        &ours.progress.keys().collect::<Vec<_>>(),
        &theirs.progress.keys().collect::<Vec<_>>(),
        |key| progress.contains_key(*key),
    );
    graph.progress = progress_order
        .into_iter()
        .filter_map(|key| progress.get(key).map(|state| (key.clone(), state.clone())))
        .collect();
    graph.heal_gists();
    // Conflicts by node order, as the file lists them.
    conflicts.sort_by_key(|c: &Conflict| graph.nodes.get_index_of(&c.node));
    (graph, conflicts)
}

/// The merged entries in the merged order, keyed as the graph keys them.
fn in_merged_order<K, KO, V>(
    mut merged: IndexMap<K, V>,
    [base, ours, theirs]: [Vec<K>; 3],
    owned: impl Fn(&K) -> KO,
) -> IndexMap<KO, V>
where
    K: Clone + Eq + std::hash::Hash + Ord,
    KO: Eq + std::hash::Hash,
{
    let order = merged_order(&base, &ours, &theirs, |key| merged.contains_key(key));
    order
        .into_iter()
        .filter_map(|key| merged.swap_remove(&key).map(|value| (owned(&key), value)))
        .collect()
}

/// Every key of three maps, each once.
fn union_keys<'a, K: Eq + std::hash::Hash, V>(
    base: &'a IndexMap<K, V>,
    ours: &'a IndexMap<K, V>,
    theirs: &'a IndexMap<K, V>,
) -> Vec<&'a K> {
    let mut seen: HashSet<&K> = HashSet::with_capacity(ours.len() + theirs.len());
    ours.keys()
        .chain(theirs.keys())
        .chain(base.keys())
        .filter(|key| seen.insert(*key))
        .collect()
}

/// A side's version of an edge, or the base's when the side deleted it only with a
/// node the merge keeps.
fn restored<'a>(
    side: Option<&'a Edge>,
    base: Option<&'a Edge>,
    key: &EdgeKey,
    revived: &HashSet<&str>,
) -> Option<&'a Edge> {
    match side {
        None if revived.contains(key.from()) || revived.contains(key.to()) => base,
        side => side,
    }
}

/// The 3-way decision shared by edges, versions and progress: `Ok` with the result
/// (`None`: absent) when at most one side changed the entry, or when a delete meets
/// an unchanged entry; `Err` with both sides when both changed it, differently.
#[allow(clippy::type_complexity)]
fn three_way<'a, T>(
    three: Three<'a, T>,
    same: impl Fn(&T, &T) -> bool,
) -> Result<Option<&'a T>, (&'a T, &'a T)> {
    match (three.base, three.ours, three.theirs) {
        (_, None, None) => Ok(None),
        (_, Some(o), Some(t)) if same(o, t) => Ok(Some(o)),
        (Some(b), Some(o), Some(t)) if same(o, b) => Ok(Some(t)),
        (Some(b), Some(o), Some(t)) if same(t, b) => Ok(Some(o)),
        (_, Some(o), Some(t)) => Err((o, t)),
        // Added on one side, or deleted on one: the delete wins only over an entry
        // the other side left as it was.
        (None, Some(kept), None) | (None, None, Some(kept)) => Ok(Some(kept)),
        (Some(b), Some(kept), None) | (Some(b), None, Some(kept)) => {
            Ok((!same(b, kept)).then_some(kept))
        }
    }
}

fn merge_edge(
    key: &EdgeKey,
    three: Three<'_, Edge>,
    (ours, theirs): (&Graph, &Graph),
    now: f64,
) -> Option<Edge> {
    match three_way(three, |a, b| same_object(a.as_object(), b.as_object())) {
        Ok(edge) => edge.cloned(),
        Err((o, t)) => {
            let versions = versions_of(&edge_version_key(key), ours, theirs);
            let (winner, loser) =
                match newer(versions[0], versions[1], o.as_object(), t.as_object(), now) {
                    Ordering::Less => (t, o),
                    _ => (o, t),
                };
            let (mut obj, _) = merge_objects(
                three.base.map(Edge::as_object),
                winner.as_object(),
                loser.as_object(),
                None,
            );
            keep_within_bounds(&mut obj);
            // The ends and rel agree on every side (they are the key), so the merged
            // object always makes an edge; the winner stands in should it not.
            Some(Edge::from_object(obj).unwrap_or_else(|| winner.clone()))
        }
    }
}

/// A node both sides changed, field by field; the conflict when both wrote a gist.
fn merge_node(
    id: &str,
    base: Option<&Node>,
    (o, t): (&Node, &Node),
    versions: [Option<&Version>; 2],
    now: f64,
) -> (Node, Option<Conflict>) {
    let (o_obj, t_obj) = (o.to_object(), t.to_object());
    let ((winner, w_obj), (loser, l_obj, l_version)) =
        match newer(versions[0], versions[1], &o_obj, &t_obj, now) {
            Ordering::Less => ((t, t_obj), (o, o_obj, versions[0])),
            _ => ((o, o_obj), (t, t_obj, versions[1])),
        };
    let base = base.map(Node::to_object);
    // Tiers: the flags of one side as a pair, never a mix of both.
    let pair = |obj: &Object| {
        (
            obj.get(field::ARCHIVED).cloned(),
            obj.get(field::ORPHANED_TS).cloned(),
        )
    };
    let (w_pair, l_pair) = (pair(&w_obj), pair(&l_obj));
    let tiers = if w_pair == l_pair {
        w_pair
    } else if base.as_ref().map(pair) == Some(w_pair.clone()) {
        l_pair
    } else if base.as_ref().map(pair) == Some(l_pair.clone()) {
        w_pair
    } else if visibility(loser.tier()) > visibility(winner.tier()) {
        l_pair
    } else {
        w_pair
    };
    let (mut obj, lost_gist) = merge_objects(base.as_ref(), &w_obj, &l_obj, Some(tiers));
    let conflict = lost_gist.map(|lost| {
        let note = conflict_note(&lost, l_version);
        push_note(&mut obj, note.clone());
        Conflict {
            node: id.to_string(),
            note,
        }
    });
    keep_within_bounds(&mut obj);
    (Node::from_object(obj), conflict)
}

/// A merged node or edge keeps the bounds every write keeps: the union of both sides'
/// notes (or touches) can hold up to twice as many as a write may. The oldest go
/// first (the front of the list), merge-conflict notes last of all, so what still
/// waits for a person stays. Symmetric: both orders of the sides build the same list.
fn keep_within_bounds(obj: &mut Object) {
    for (key, most) in [
        (field::NOTES, kg_core::MAX_NOTES),
        (field::TOUCHES, kg_core::MAX_TOUCHES),
    ] {
        let Some(Value::Array(items)) = obj.get_mut(key) else {
            continue;
        };
        let mut excess = items.len().saturating_sub(most);
        if excess == 0 {
            continue;
        }
        let is_conflict = |v: &Value| {
            v.as_str()
                .is_some_and(|n| n.starts_with(CONFLICT_NOTE_PREFIX))
        };
        items.retain(|item| {
            if excess > 0 && !is_conflict(item) {
                excess -= 1;
                false
            } else {
                true
            }
        });
        let still = items.len().saturating_sub(most);
        items.drain(..still);
    }
}

/// Active nodes show most, orphans least.
fn visibility(tier: Tier) -> u8 {
    match tier {
        Tier::Active => 2,
        Tier::Archived => 1,
        Tier::Orphaned => 0,
    }
}

/// Merge two changed objects field by field: the winner's fields in its order, then
/// the loser's others. `tiers`, for a node, is the pair of tier flags to carry.
/// Returns the object and, for a node, the loser's gist when both wrote a gist.
fn merge_objects(
    base: Option<&Object>,
    winner: &Object,
    loser: &Object,
    tiers: Option<(Option<Value>, Option<Value>)>,
) -> (Object, Option<String>) {
    let mut out = Object::new();
    let mut lost_gist = None;
    let keys = winner
        .keys()
        .chain(loser.keys().filter(|key| !winner.contains_key(*key)));
    for key in keys {
        let value = match (&tiers, key.as_str()) {
            (Some((archived, _)), field::ARCHIVED) => archived.clone(),
            (Some((_, orphaned)), field::ORPHANED_TS) => orphaned.clone(),
            _ => {
                let (value, lost) = merge_field(
                    key,
                    base.and_then(|b| b.get(key)),
                    winner.get(key),
                    loser.get(key),
                    tiers.is_some(),
                );
                if lost.is_some() {
                    lost_gist = lost;
                }
                value
            }
        };
        if let Some(value) = value {
            out.insert(key.clone(), value);
        }
    }
    (out, lost_gist)
}

/// One field of an object both sides changed: `None` when the field goes. The second
/// value is the losing gist, when both sides wrote a different one on a node.
fn merge_field(
    key: &str,
    base: Option<&Value>,
    winner: Option<&Value>,
    loser: Option<&Value>,
    is_node: bool,
) -> (Option<Value>, Option<String>) {
    let keep = |v: Option<&Value>| (v.cloned(), None);
    if winner == loser || loser == base {
        return keep(winner);
    }
    if winner == base {
        return keep(loser);
    }
    let (Some(w), Some(l)) = (winner, loser) else {
        // Removed on one side, changed on the other: the change stays.
        return keep(winner.or(loser));
    };
    match key {
        field::NOTES | field::TOUCHES | field::USEFUL_TS => match (w, l) {
            (Value::Array(w), Value::Array(l)) => {
                let none = Vec::new();
                let b = match base {
                    Some(Value::Array(b)) => b,
                    _ => &none,
                };
                (Some(Value::Array(union_of_changes(b, w, l))), None)
            }
            _ => keep(Some(w)),
        },
        field::LAST_READ_TS | field::CREATED_TS => match (w.as_f64(), l.as_f64()) {
            (Some(wt), Some(lt)) => {
                let later = wt.total_cmp(&lt) == Ordering::Less;
                // The later read, the earlier creation.
                let take_loser = later == (key == field::LAST_READ_TS);
                keep(Some(if take_loser { l } else { w }))
            }
            _ => keep(Some(w)),
        },
        field::GIST if is_node => match l {
            Value::String(lost) => (Some(w.clone()), Some(lost.clone())),
            _ => keep(Some(w)),
        },
        _ => keep(Some(w)),
    }
}

/// A list both sides changed: an item of the base either side removed goes; items
/// either side added stay, the winner's list first, then the loser's additions.
fn union_of_changes(base: &[Value], winner: &[Value], loser: &[Value]) -> Vec<Value> {
    let kept = winner
        .iter()
        .filter(|item| !base.contains(item) || loser.contains(item));
    let added = loser
        .iter()
        .filter(|item| !base.contains(item) && !winner.contains(item));
    kept.chain(added).cloned().collect()
}

/// Add a note to an object's `notes` (a lone string becomes the first of a list).
fn push_note(obj: &mut Object, note: String) {
    let note = Value::String(note);
    match obj.get_mut(field::NOTES) {
        Some(Value::Array(notes)) => notes.push(note),
        Some(other @ Value::String(_)) => *other = Value::Array(vec![other.clone(), note]),
        Some(Value::Null) | None => {
            obj.insert(field::NOTES.into(), Value::Array(vec![note]));
        }
        Some(other) => *other = Value::Array(vec![other.clone(), note]),
    }
}

/// The note that keeps a losing gist, naming when and by whom it was written (the
/// merge is symmetric, so it cannot say "ours" or "theirs").
fn conflict_note(lost: &str, version: Option<&Version>) -> String {
    let written = version.filter(|v| v.ts() > 0.0).map(|v| {
        let when = jiff::Timestamp::from_second(v.ts().floor() as i64)
            .map(|t| t.to_string())
            .unwrap_or_else(|_| format!("{} seconds after 1970", v.ts()));
        match v.session() {
            Some(session) => format!("written {when} by session {session}"),
            None => format!("written {when}"),
        }
    });
    let origin = written.unwrap_or_else(|| "of unknown date".to_string());
    format!(
        "{CONFLICT_NOTE_PREFIX}This node was edited in two places (two machines or two branches) and merged. The newer gist was kept; the other one, {origin}, was: {lost} -- Remove this note once the gist says what it should."
    )
}

/// Which of two changed versions is newer: `Greater` when ours. By write time, then
/// counter, then (the tie rule) the JSON text that sorts last.
fn newer(
    ours: Option<&Version>,
    theirs: Option<&Version>,
    o: &Object,
    t: &Object,
    now: f64,
) -> Ordering {
    // A stamp from the future is no stamp (kg_core's `credible_ts` rule): it ranks
    // below every credible one, by its counter only.
    let stamp = |v: Option<&Version>| {
        v.map_or((f64::NEG_INFINITY, i64::MIN), |v| {
            let ts = if v.ts() <= now + kg_core::CLOCK_SKEW_SECS {
                v.ts()
            } else {
                f64::NEG_INFINITY
            };
            (ts, v.v())
        })
    };
    let ((ots, ov), (tts, tv)) = (stamp(ours), stamp(theirs));
    ots.total_cmp(&tts)
        .then(ov.cmp(&tv))
        .then_with(|| json_text(o).cmp(&json_text(t)))
}

fn json_text(obj: &Object) -> String {
    serde_json::to_string(obj).unwrap_or_default()
}

/// The later of two progress states both sides changed: by `last_ts` when both have
/// one (the maintenance stamp DEBT reads), else by JSON text.
fn later_progress(ours: &Value, theirs: &Value) -> Ordering {
    let last_ts = |v: &Value| v.get("last_ts").and_then(Value::as_f64);
    match (last_ts(ours), last_ts(theirs)) {
        (Some(o), Some(t)) if o != t => o.total_cmp(&t),
        _ => ours.to_string().cmp(&theirs.to_string()),
    }
}

/// The `_meta.versions` entries of one key in ours and theirs.
fn versions_of<'a>(key: &str, ours: &'a Graph, theirs: &'a Graph) -> [Option<&'a Version>; 2] {
    [ours.versions.get(key), theirs.versions.get(key)]
}

/// Same fields with the same values in the same order.
fn same_fields(a: &Node, b: &Node) -> bool {
    a.len() == b.len() && a.fields().eq(b.fields())
}

fn same_object(a: &Object, b: &Object) -> bool {
    a.len() == b.len() && a.iter().eq(b.iter())
}

/// Whether a node changed in a way that outweighs a delete: a read stamp or a tier
/// move does not (maintenance and reads make those on every machine by themselves).
fn content_changed(base: &Node, side: &Node) -> bool {
    let bookkeeping = [field::LAST_READ_TS, field::ARCHIVED, field::ORPHANED_TS];
    let content = |node: &Node| {
        node.fields()
            .filter(|(key, _)| !bookkeeping.contains(key))
            .count()
    };
    content(base) != content(side)
        || side
            .fields()
            .filter(|(key, _)| !bookkeeping.contains(key))
            .any(|(key, value)| base.get(key) != Some(value))
}

/// Node ids at the ends of edges `side` added or changed since `base`: a delete of
/// such a node on the other side loses, as the edge still means something here.
fn edited_edge_ends<'a>(base: &Graph, side: &'a Graph) -> HashSet<&'a str> {
    let mut ends = HashSet::new();
    for (key, edge) in side.edges.iter() {
        let edited = base
            .edges
            .get(key)
            .is_none_or(|b| b.as_object() != edge.as_object());
        if edited {
            ends.insert(key.from());
            ends.insert(key.to());
        }
    }
    ends
}
