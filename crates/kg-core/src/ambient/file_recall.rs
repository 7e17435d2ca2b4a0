//! File recall: when an agent reads or edits a file, the nodes whose `touches` name
//! that file come back with the tool's result (issue 37, spec since-0.9.30 §1).
//!
//! The agent is about to work on the file; what the memory knows about it (a gotcha,
//! a decision, why the code looks odd) is worth most right then. Only nodes the
//! session has not seen, a few at most, within a small budget, and not more often
//! than a session can take in.
//!
//! Agent-neutral: the caller names the files (Claude Code's Read and Edit, a shell
//! command that reads, Codex's `apply_patch`); nothing here knows a hook payload.

use crate::model::{Level, Tier};
use crate::recall_log::{Decision, FileNode};
use crate::store::{GraphSlot, Policy, Store};
use crate::touch_path;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Nodes one file event brings back at most.
pub const FILE_RECALL_MAX_NODES: usize = 3;
/// Characters one file recall may take; the last node goes while more than one is
/// left and the text is longer.
pub const FILE_RECALL_BUDGET: usize = 1_200;
/// File recalls one session receives at most within [`FILE_RECALL_WINDOW_SECS`]:
/// an agent reading through a folder must not get a block after every file.
pub const FILE_RECALLS_PER_WINDOW: usize = 3;
/// The throttle's window, in seconds.
pub const FILE_RECALL_WINDOW_SECS: f64 = 600.0;

/// A tool call that read or changed files, as any agent's hook can name it.
#[derive(Debug, Clone, Copy)]
pub struct FileTouch<'a> {
    /// The agent's own session id (Claude Code's `session_id`), through which the KG
    /// session is found; `None` when the agent sent none.
    pub harness_session: Option<&'a str>,
    /// The folder the agent runs in (the hook's `cwd`).
    pub cwd: &'a str,
    /// The tool's name, for the decision log.
    pub tool: &'a str,
    /// The files, absolute, each once, in the order the call named them.
    pub files: &'a [PathBuf],
}

/// What file recall decided for one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRecall {
    /// The text to add to the tool's result, if any.
    pub text: Option<String>,
    /// Some node names one of the files (shown now, seen before, or held back by the
    /// throttle): the file is known to the memory, so no capture nudge is due.
    pub covered: bool,
}

impl FileRecall {
    const NOTHING: FileRecall = FileRecall {
        text: None,
        covered: false,
    };
}

/// When each session got its recent file recalls (in memory; a restart forgets).
static INJECTED_AT: Mutex<Option<HashMap<String, Vec<f64>>>> = Mutex::new(None);

/// Whether the session may get another file recall at `now`; counts it when so.
fn admit(sid: &str, now: f64) -> bool {
    let mut map = INJECTED_AT.lock().unwrap_or_else(|e| e.into_inner());
    let map = map.get_or_insert_with(HashMap::new);
    let recent = map.entry(sid.to_string()).or_default();
    recent.retain(|&at| now - at < FILE_RECALL_WINDOW_SECS);
    if recent.len() >= FILE_RECALLS_PER_WINDOW {
        return false;
    }
    recent.push(now);
    // Sessions idle past the window are forgotten, so the map stays small.
    map.retain(|_, at| at.iter().any(|&t| now - t < FILE_RECALL_WINDOW_SECS));
    true
}

/// One node naming a touched file.
#[derive(Debug, Clone)]
struct Match {
    level: Level,
    id: String,
    gist: String,
    tier: Tier,
    /// The file key it was found under, as the header names it.
    file: String,
    /// How many files the node touches: fewer means it is more about this one.
    touch_count: usize,
    /// Its latest write, read or like: recent knowledge first among equals.
    recency: f64,
    /// A view time taken while its graph was locked (see [`Store::event_ts`]): when
    /// shown, the session saw the gist as it stood then.
    viewed_at: f64,
}

/// The nodes of `slot` naming a file known under `keys`, orphans and gist-less nodes
/// left out.
fn matches_in(
    store: &Store,
    slot: &Arc<GraphSlot>,
    keys: &[String],
    file: &str,
    now: f64,
) -> Vec<Match> {
    store.with_nodes_touching(slot, keys, |graph, found| {
        let viewed_at = store.event_ts(now);
        found
            .iter()
            .filter_map(|&i| graph.nodes.get_index(i))
            .filter(|(_, node)| node.tier() != Tier::Orphaned && !node.gist().is_empty())
            .map(|(id, node)| {
                let version = graph
                    .versions
                    .get(&format!("node:{id}"))
                    .map_or(0.0, |v| v.ts());
                Match {
                    level: slot.level,
                    id: id.clone(),
                    gist: node.gist().to_string(),
                    tier: node.tier(),
                    file: file.to_string(),
                    touch_count: node.touches().len(),
                    recency: version
                        .max(node.last_read_ts().unwrap_or(0.0))
                        .max(node.created_ts()),
                    viewed_at,
                }
            })
            .collect()
    })
}

/// Bring back what the memory knows about the files a tool call touched. Under
/// `KG_POLICY=reference` (the 0.9.30 behaviour) there is no file recall.
pub fn file_recall(store: &Store, touch: &FileTouch<'_>, now: f64) -> FileRecall {
    if store.config().policy != Policy::Ours || touch.files.is_empty() {
        return FileRecall::NOTHING;
    }
    let mut decision = Decision::file(touch.tool, touch.cwd, touch.harness_session, now);
    let recall = decide(store, touch, &mut decision, now);
    store.log_recall(decision);
    recall
}

fn decide(store: &Store, touch: &FileTouch<'_>, decision: &mut Decision, now: f64) -> FileRecall {
    let Some(sid) = store.hook_session(touch.harness_session, Some(touch.cwd)) else {
        decision.outcome("unresolved_session");
        return FileRecall::NOTHING;
    };
    decision.kg_session = Some(sid.clone());
    let project = match store.session_project_slot(Some(&sid), now) {
        Ok(slot) => slot,
        Err(e) => {
            log::debug!("file recall for session {sid}: project graph not loaded: {e}");
            None
        }
    };
    let root = project
        .as_ref()
        .and_then(|p| p.project_root())
        .map(Path::new);
    decision.project_root = root.map(|r| r.to_string_lossy().into_owned());
    let mut found: Vec<Match> = Vec::new();
    let mut file_keys: Vec<String> = Vec::new();
    for file in touch.files {
        let mut keys = touch_path::file_keys(file, root);
        // A session in a git worktree reads the worktree's copy of a project file.
        if let Some(root) = root
            && keys.len() == 1
            && let Some(rel) = store.worktree_path(root, Path::new(&keys[0]))
        {
            keys.insert(0, rel);
        }
        file_keys.extend(keys.iter().cloned());
        let shown = keys.first().cloned().unwrap_or_default();
        decision.files.push(shown.clone());
        for slot in project.iter().chain([store.user_slot()]) {
            for m in matches_in(store, slot, &keys, &shown, now) {
                if !found.iter().any(|f| f.id == m.id && f.level == m.level) {
                    found.push(m);
                }
            }
        }
    }
    // The files are the session's work now, and so are the nodes that name them.
    store.note_focus(
        &sid,
        [],
        found.iter().map(|m| m.id.as_str()),
        file_keys.iter().map(String::as_str),
    );
    if found.is_empty() {
        decision.outcome("no_nodes");
        return FileRecall::NOTHING;
    }
    let covered = FileRecall {
        text: None,
        covered: true,
    };
    let seen: Vec<bool> = store.with_sessions(|s| {
        let record = s.lookup(&sid);
        found
            .iter()
            .map(|m| record.is_some_and(|r| r.has_seen(&m.id)))
            .collect()
    });
    for (m, &seen) in found.iter().zip(&seen) {
        decision.nodes.push(FileNode {
            id: m.id.clone(),
            level: m.level,
            seen,
            archived: m.tier == Tier::Archived,
            file: m.file.clone(),
        });
    }
    let mut unseen: Vec<Match> = found
        .into_iter()
        .zip(seen)
        .filter_map(|(m, seen)| (!seen).then_some(m))
        .collect();
    if unseen.is_empty() {
        decision.outcome("all_seen");
        return covered;
    }
    if !admit(&sid, now) {
        decision.outcome("throttled");
        decision.withheld = unseen.len();
        return covered;
    }
    unseen.sort_by(|a, b| {
        a.touch_count
            .cmp(&b.touch_count)
            .then(b.recency.total_cmp(&a.recency))
    });
    let candidates = unseen.len();
    unseen.truncate(FILE_RECALL_MAX_NODES);
    let text = render(&mut unseen);
    decision.outcome("injected");
    decision.withheld = candidates - unseen.len();
    decision.injected = unseen.iter().map(|m| m.id.clone()).collect();
    decision.chars = text.chars().count();
    store.mark_seen(&sid, unseen.iter().map(|m| m.id.as_str()));
    for m in &unseen {
        store.record_views(
            &sid,
            [m.id.as_str()],
            crate::session::View::Seen,
            m.viewed_at,
        );
    }
    FileRecall {
        text: Some(text),
        covered: true,
    }
}

/// The header and one line per node, within [`FILE_RECALL_BUDGET`]: the last node
/// goes while more than one is left and the text is too long. `nodes` keeps what was
/// rendered.
fn render(nodes: &mut Vec<Match>) -> String {
    loop {
        let mut files: Vec<&str> = Vec::new();
        for m in nodes.iter() {
            if !files.contains(&m.file.as_str()) {
                files.push(&m.file);
            }
        }
        let mut lines = vec![crate::wording::file_recall_header(&files)];
        lines.extend(
            nodes
                .iter()
                .map(|m| format!("- [{}] {}: {}", m.level, m.id, m.gist)),
        );
        let text = lines.join("\n");
        if nodes.len() <= 1 || text.chars().count() <= FILE_RECALL_BUDGET {
            return text;
        }
        nodes.pop();
    }
}
