//! `GET /api/view/recall`: why the memory spoke or stayed silent.

use super::*;

/// `GET /api/view/recall`: why the memory spoke or stayed silent, newest first.
#[derive(Debug, Serialize, TS)]
pub struct RecallAnswer {
    pub decisions: Vec<RecallEntry>,
}

/// One recall decision: a prompt's, a file's, or another session's write pushed.
#[derive(Debug, Serialize, TS)]
pub struct RecallEntry {
    /// Seconds since the Unix epoch.
    pub ts: f64,
    /// `prompt`, `file` or `push`.
    pub trigger: String,
    /// The decision's fixed word: `injected`, `no_hits`, `all_seen`, `throttled`, ...
    pub outcome: String,
    /// Why, in one plain sentence.
    pub why: String,
    /// The KG session it was for.
    pub session: Option<String>,
    /// Ids shown to the model, in order.
    pub injected: Vec<String>,
    /// What came close: the best-scored nodes weighed (prompts) or every node naming
    /// the file (files), shown or not.
    pub weighed: Vec<RecallWeighed>,
    /// The words searched on (prompts; never the prompt itself).
    pub terms: Vec<String>,
    /// The file keys (files).
    pub files: Vec<String>,
    /// The tool (files).
    pub tool: Option<String>,
}

/// A node a decision weighed.
#[derive(Debug, Serialize, TS)]
pub struct RecallWeighed {
    pub id: String,
    pub level: LevelName,
    /// Its score in the ranking's own unit (prompts); `null` for a file's nodes.
    pub score: Option<f64>,
    /// The session had it in context already.
    pub seen: bool,
    pub injected: bool,
}

impl From<&kg_core::RecallDecision> for RecallEntry {
    fn from(d: &kg_core::RecallDecision) -> RecallEntry {
        let shown = |id: &str| d.injected.iter().any(|i| i == id);
        let mut weighed: Vec<RecallWeighed> = d
            .weighed
            .iter()
            .map(|w| RecallWeighed {
                id: w.id.clone(),
                level: w.level.into(),
                // A push weighs by what the write bears on, not by a score.
                score: (d.trigger != kg_core::RecallTrigger::Push).then(|| round_to(w.score, 4)),
                seen: w.seen,
                injected: shown(&w.id),
            })
            .collect();
        weighed.extend(d.nodes.iter().map(|n| RecallWeighed {
            id: n.id.clone(),
            level: n.level.into(),
            score: None,
            seen: n.seen,
            injected: shown(&n.id),
        }));
        RecallEntry {
            ts: d.ts,
            trigger: d.trigger.as_str().to_string(),
            outcome: d.reason.to_string(),
            why: d.why(),
            session: d.kg_session.clone(),
            injected: d.injected.clone(),
            weighed,
            terms: d.terms.clone(),
            files: d.files.clone(),
            tool: d.tool.clone(),
        }
    }
}
