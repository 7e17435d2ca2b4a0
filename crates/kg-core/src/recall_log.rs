//! Why the memory spoke, or stayed silent: every recall decision (a prompt's, a
//! file's, another session's write pushed) as one line of `recall.jsonl` under the
//! storage root, and the latest ones in memory for the graph view's Activity.
//!
//! The file's lines follow the reference's `recall.jsonl` (spec since-0.9.30 §12):
//! compact JSON, a `reason`, the session ids, what was injected and what came close.
//! It is bounded: past [`MAX_LOG_BYTES`] it becomes `recall.jsonl.prev` (one
//! generation) and a new file starts. A failed append is logged, never raised: a
//! decision must not fail because its record could not be kept.

use crate::model::Level;
use crate::pyfmt::round_to;
use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The log rolls over past this size.
pub const MAX_LOG_BYTES: u64 = 8 << 20;
/// Decisions kept in memory for the view.
pub const RECENT_DECISIONS: usize = 200;
/// Ids listed per kind in one decision at most (a decision is about a few nodes).
const MAX_IDS: usize = 12;

/// What triggered a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A prompt the person typed.
    Prompt,
    /// A file the agent read or changed.
    File,
    /// Another session's write, told to this one.
    Push,
}

impl Trigger {
    /// The name the log and the view use.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Prompt => "prompt",
            Trigger::File => "file",
            Trigger::Push => "push",
        }
    }
}

/// A node a file event found.
#[derive(Debug, Clone, PartialEq)]
pub struct FileNode {
    /// The node's id.
    pub id: String,
    /// Its level.
    pub level: Level,
    /// The session had seen it already.
    pub seen: bool,
    /// It is archived (shown without being promoted).
    pub archived: bool,
    /// The file key it names.
    pub file: String,
}

/// A node that was weighed: injected, or close and left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Weighed {
    /// The node's id.
    pub id: String,
    /// Its level.
    pub level: Level,
    /// Its score, in the ranking's own unit.
    pub score: f64,
    /// The session had seen it already (a prompt's in-context pointer).
    pub seen: bool,
}

/// One recall decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// When, in seconds since the Unix epoch.
    pub ts: f64,
    /// What asked.
    pub trigger: Trigger,
    /// The outcome, a fixed word (`injected`, `no_hits`, `all_seen`, `throttled`, ...).
    pub reason: &'static str,
    /// The agent's folder (the hook's `cwd`).
    pub project: Option<String>,
    /// The agent's own session id.
    pub harness_session: Option<String>,
    /// The KG session, once resolved.
    pub kg_session: Option<String>,
    /// The session's project folder (resolved root), once the session is resolved.
    pub project_root: Option<String>,
    /// Ids shown to the model, in order.
    pub injected: Vec<String>,
    /// Prompt: the words searched on (never the prompt itself).
    pub terms: Vec<String>,
    /// Prompt: the nodes weighed (hits, and near misses left out).
    pub weighed: Vec<Weighed>,
    /// File: the tool.
    pub tool: Option<String>,
    /// File: the file keys.
    pub files: Vec<String>,
    /// File: every node found.
    pub nodes: Vec<FileNode>,
    /// Characters of the text shown.
    pub chars: usize,
    /// Nodes left out by the limits (count, throttle, budget).
    pub withheld: usize,
}

impl Decision {
    fn new(trigger: Trigger, cwd: &str, harness: Option<&str>, now: f64) -> Decision {
        Decision {
            ts: now,
            trigger,
            reason: "",
            project: (!cwd.is_empty()).then(|| crate::limits::for_log(cwd).into_owned()),
            harness_session: harness.map(|h| crate::limits::for_log(h).into_owned()),
            kg_session: None,
            project_root: None,
            injected: Vec::new(),
            terms: Vec::new(),
            weighed: Vec::new(),
            tool: None,
            files: Vec::new(),
            nodes: Vec::new(),
            chars: 0,
            withheld: 0,
        }
    }

    /// A file event's decision, outcome still to say.
    pub fn file(tool: &str, cwd: &str, harness: Option<&str>, now: f64) -> Decision {
        let mut d = Decision::new(Trigger::File, cwd, harness, now);
        d.tool = Some(crate::limits::for_log(tool).into_owned());
        d
    }

    /// A prompt's decision, outcome still to say.
    pub fn prompt(cwd: &str, harness: Option<&str>, now: f64) -> Decision {
        Decision::new(Trigger::Prompt, cwd, harness, now)
    }

    /// A push's decision, outcome still to say.
    pub fn push(kg_session: &str, now: f64) -> Decision {
        let mut d = Decision::new(Trigger::Push, "", None, now);
        d.kg_session = Some(kg_session.to_string());
        d
    }

    /// Say the outcome.
    pub fn outcome(&mut self, reason: &'static str) {
        self.reason = reason;
    }

    /// Why, in a sentence for a person.
    pub fn why(&self) -> String {
        crate::wording::recall_why(
            self.trigger.as_str(),
            self.reason,
            self.injected.len(),
            self.withheld,
        )
    }

    /// The log line (and the view's record): compact, the reference's field names.
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("ts".into(), json!(round_to(self.ts, 3)));
        o.insert("kind".into(), json!(self.trigger.as_str()));
        match self.trigger {
            Trigger::File => {
                o.insert("reason".into(), json!("file_recall"));
                o.insert("outcome".into(), json!(self.reason));
            }
            Trigger::Prompt | Trigger::Push => {
                o.insert("reason".into(), json!(self.reason));
            }
        }
        o.insert("project".into(), json!(self.project));
        o.insert("claude_session".into(), json!(self.harness_session));
        o.insert("kg_session".into(), json!(self.kg_session));
        if !self.terms.is_empty() {
            o.insert("terms".into(), json!(self.terms));
        }
        if !self.weighed.is_empty() {
            let weighed: Vec<Value> = self
                .weighed
                .iter()
                .take(MAX_IDS)
                .map(|w| {
                    json!({"id": w.id, "level": w.level.as_str(), "score": round_to(w.score, 5), "seen": w.seen})
                })
                .collect();
            o.insert("hits".into(), Value::Array(weighed));
        }
        if let Some(tool) = &self.tool {
            o.insert("tool".into(), json!(tool));
            o.insert("files".into(), json!(self.files));
            let nodes: Vec<Value> = self
                .nodes
                .iter()
                .take(MAX_IDS)
                .map(|n| {
                    json!({"id": n.id, "level": n.level.as_str(), "seen": n.seen, "archived": n.archived, "file": n.file})
                })
                .collect();
            o.insert("nodes".into(), Value::Array(nodes));
        }
        let injected: Vec<&String> = self.injected.iter().take(MAX_IDS).collect();
        o.insert("injected".into(), json!(injected));
        o.insert("chars".into(), json!(self.chars));
        o.insert("withheld".into(), json!(self.withheld));
        Value::Object(o)
    }
}

/// The log file and the recent decisions.
#[derive(Debug)]
pub struct RecallLog {
    path: PathBuf,
    /// The latest decisions, oldest first; since the server started.
    recent: Mutex<VecDeque<Decision>>,
}

impl RecallLog {
    /// The log at `path` (`<root>/recall.jsonl`).
    pub fn open(path: PathBuf) -> RecallLog {
        RecallLog {
            path,
            recent: Mutex::new(VecDeque::new()),
        }
    }

    /// Keep `decision`: appended to the file and remembered.
    pub fn record(&self, decision: Decision) {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        // Under the lock, so lines of concurrent decisions never interleave.
        if let Err(e) = append(&self.path, &decision.to_json()) {
            log::warn!("recall decision not logged to {}: {e}", self.path.display());
        }
        recent.push_back(decision);
        while recent.len() > RECENT_DECISIONS {
            recent.pop_front();
        }
    }

    /// The latest decisions that `keep` accepts, newest last, at most `limit`.
    pub fn recent(&self, limit: usize, keep: impl Fn(&Decision) -> bool) -> Vec<Decision> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Decision> = recent
            .iter()
            .rev()
            .filter(|d| keep(d))
            .take(limit)
            .cloned()
            .collect();
        out.reverse();
        out
    }
}

/// Append one line, rolling the file over first when it is full.
fn append(path: &Path, line: &Value) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= MAX_LOG_BYTES) {
        let mut prev = path.as_os_str().to_owned();
        prev.push(".prev");
        std::fs::rename(path, prev)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut text = serde_json::to_string(line).map_err(std::io::Error::other)?;
    text.push('\n');
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_kept_in_the_file_and_in_memory() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("recall.jsonl");
        let log = RecallLog::open(path.clone());
        let mut d = Decision::file("Read", "/p", Some("c1"), 10.0);
        d.outcome("no_nodes");
        log.record(d.clone());
        let text = std::fs::read_to_string(&path).expect("file");
        assert_eq!(text.lines().count(), 1);
        let line: Value = serde_json::from_str(text.trim()).expect("json");
        assert_eq!(line["reason"], "file_recall");
        assert_eq!(line["outcome"], "no_nodes");
        assert_eq!(log.recent(10, |_| true), [d]);
    }

    #[test]
    fn a_full_log_rolls_over_to_one_previous_generation() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("recall.jsonl");
        std::fs::write(&path, vec![b'x'; MAX_LOG_BYTES as usize]).expect("fill");
        let log = RecallLog::open(path.clone());
        let mut d = Decision::prompt("/p", None, 1.0);
        d.outcome("no_hits");
        log.record(d);
        assert!(dir.path().join("recall.jsonl.prev").exists());
        assert_eq!(
            std::fs::read_to_string(&path).expect("new").lines().count(),
            1
        );
    }

    #[test]
    fn a_log_that_cannot_be_written_loses_only_its_line() {
        let log = RecallLog::open(PathBuf::from("/kg-core-nonexistent/recall.jsonl"));
        let mut d = Decision::prompt("/p", None, 1.0);
        d.outcome("no_hits");
        log.record(d);
        assert_eq!(log.recent(5, |_| true).len(), 1);
    }
}
