//! Other sessions' writes: when another session (or a person) writes a node that
//! bears on this session's work, this session hears of it with its next hook reply,
//! write reply or search (issue 37, spec since-0.9.30 §2).
//!
//! The point is one node per lesson: an agent told that another session just wrote
//! the thing it was about to write updates that node instead of adding a second.
//! The reference tells a session of every write by another session; ours tells it only
//! of writes that touch what it has been working on (see [`bears_on_work`]), so the
//! news is worth the context it takes. Under `KG_POLICY=reference` (0.9.30's
//! behaviour) nothing is pushed.

use crate::model::{Level, Tier};
use crate::recall_log::{Decision, Weighed};
use crate::relevance::{Query, neighbours};
use crate::results::UnseenWrite;
use crate::search::SearchGraph;
use crate::session::{SessionRecord, View};
use crate::store::{Policy, Store, unseen_writes};
use crate::wording;
use std::collections::HashSet;

/// Writes one reply tells of at most; the rest are counted and left to `kg_sync`.
pub const PUSH_MAX_NODES: usize = 3;
/// Characters of a gist a pushed line shows at most.
pub const PUSH_GIST_CHARS: usize = 300;
/// Words a node must share with the session's recent prompts and searches to bear on
/// its work by words alone: one shared word is too often a common one (`test`,
/// `error`).
pub const PUSH_MIN_SHARED_WORDS: usize = 2;

/// Why a write was judged to bear on the session's work; the gate tries them in
/// this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bearing {
    /// The session read the node whole, wrote it, or was shown it by recall or a
    /// search: the write changed something it used.
    Used,
    /// The node names a file the session read or changed.
    SameFile,
    /// An edge joins the node to one the session used.
    Linked,
    /// The node shares words with the session's recent prompts and searches.
    Words,
}

/// A write another session made, with what the gate found.
struct Candidate {
    write: UnseenWrite,
    bearing: Option<Bearing>,
}

/// What other sessions wrote that bears on session `sid`'s work, as text to append to
/// a reply, or `None`. Each check moves the session's window forward, so a write is
/// told at most once; the shown nodes count as seen.
pub fn session_news(store: &Store, sid: &str, now: f64) -> Option<String> {
    if store.config().policy != Policy::Ours || sid.is_empty() {
        return None;
    }
    let until = store.event_ts(now);
    let (record, since) = store.with_sessions_mut(|s| {
        let record = s.lookup_mut(sid)?;
        let since = record.take_push_window(until);
        Some((record.clone(), since))
    })?;
    let slots = store.session_graphs_loaded(&record);
    let on_files = nodes_on_files(store, &record);
    let (candidates, viewed_at) = store.with_graphs_viewed(&slots, now, |graphs, at| {
        let writes = unseen_writes(graphs, &record, sid, since, until);
        let candidates: Vec<Candidate> = writes
            .into_iter()
            .filter(|w| is_news(store, &record, w))
            .map(|write| Candidate {
                bearing: bears_on_work(graphs, &record, &on_files, &write),
                write,
            })
            .collect();
        (candidates, at)
    });
    if candidates.is_empty() {
        return None;
    }
    let mut decision = Decision::push(sid, now);
    decision.project_root = record.project_path.clone();
    let (told, left): (Vec<Candidate>, Vec<Candidate>) =
        candidates.into_iter().partition(|c| c.bearing.is_some());
    decision.weighed = told
        .iter()
        .chain(&left)
        .map(|c| Weighed {
            id: c.write.id.clone(),
            level: c.write.level,
            score: 0.0,
            seen: c.write.known,
        })
        .collect();
    if told.is_empty() {
        decision.outcome("unrelated");
        store.log_recall(decision);
        return None;
    }
    let shown = &told[..told.len().min(PUSH_MAX_NODES)];
    let lines: Vec<String> = shown
        .iter()
        .map(|c| {
            wording::pushed_line(
                &c.write.id,
                c.write.known,
                &wording::cut_chars(&c.write.gist, PUSH_GIST_CHARS),
            )
        })
        .collect();
    let text = wording::pushed_writes(&lines, told.len() - shown.len(), sid);
    let ids: Vec<&str> = shown.iter().map(|c| c.write.id.as_str()).collect();
    store.mark_seen(sid, ids.iter().copied());
    store.record_views(sid, ids.iter().copied(), View::Seen, viewed_at);
    decision.outcome("injected");
    decision.injected = ids.iter().map(|id| id.to_string()).collect();
    decision.withheld = told.len() - shown.len();
    decision.chars = text.chars().count();
    store.log_recall(decision);
    Some(text)
}

/// The reference's gates (spec §2): an active node; not written by a maintenance
/// session; a user-level node only when its writer still exists and works in the same
/// project as this session (a person's write to the user graph has no project, so it
/// is not told).
fn is_news(store: &Store, record: &SessionRecord, write: &UnseenWrite) -> bool {
    if write.tier != Tier::Active {
        return false;
    }
    let writer = write.written.by.as_deref().and_then(|by| store.session(by));
    if writer.as_ref().is_some_and(SessionRecord::is_maintenance) {
        return false;
    }
    match write.level {
        Level::User => writer.is_some_and(|w| w.project_path == record.project_path),
        Level::Project => true,
    }
}

/// Ours: whether a write bears on what the session has been working on, and how.
/// A write to a node it used, one naming a file it touched, one linked to a node it
/// used, or one sharing [`PUSH_MIN_SHARED_WORDS`] words with its recent prompts and
/// searches. A session that has done nothing yet hears of nothing.
fn bears_on_work(
    graphs: &[SearchGraph<'_>],
    record: &SessionRecord,
    on_files: &HashSet<String>,
    write: &UnseenWrite,
) -> Option<Bearing> {
    let focus = record.focus();
    let used = |id: &str| record.read_at(id).is_some() || focus.nodes().iter().any(|n| n == id);
    if used(&write.id) {
        return Some(Bearing::Used);
    }
    if on_files.contains(&write.id) {
        return Some(Bearing::SameFile);
    }
    let levels: Vec<(Level, &crate::graph::Graph)> =
        graphs.iter().map(|g| (g.level, g.graph)).collect();
    if neighbours(&levels, &write.id).iter().any(|n| used(&n.id)) {
        return Some(Bearing::Linked);
    }
    let words = Query::of(&format!("{} {}", write.id, write.gist));
    let shared = words
        .texts()
        .iter()
        .filter(|w| focus.words().contains(w))
        .count();
    (shared >= PUSH_MIN_SHARED_WORDS).then_some(Bearing::Words)
}

/// Ids of the project's nodes whose touches name a file the session read or changed.
fn nodes_on_files(store: &Store, record: &SessionRecord) -> HashSet<String> {
    let files = record.focus().files();
    let Some(slot) = record
        .project_path
        .as_deref()
        .and_then(|root| store.loaded_project(root))
    else {
        return HashSet::new();
    };
    if files.is_empty() {
        return HashSet::new();
    }
    store.with_nodes_touching(&slot, files, |graph, found| {
        found
            .iter()
            .filter_map(|&i| graph.nodes.get_index(i).map(|(id, _)| id.clone()))
            .collect()
    })
}
