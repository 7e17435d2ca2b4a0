//! The view's changes: a step's actions (`POST /api/view/step`), what a step did,
//! and `POST /api/view/undo`.

use super::*;

/// `POST /api/view/step`: a list of actions on one graph, previewed (`dry_run`) or done.
#[derive(Debug, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct StepBody {
    #[ts(type = "LevelName")]
    pub level: String,
    /// The project on screen (project level only).
    #[serde(default)]
    #[ts(optional = nullable)]
    pub project_path: Option<String>,
    /// The view's live session, so the step's changes are tagged with it.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub session_id: Option<String>,
    /// Say what would happen, change nothing.
    #[serde(default)]
    pub dry_run: bool,
    pub actions: Vec<StepAction>,
}

/// `POST /api/view/undo`: take back the level's last step.
#[derive(Debug, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct UndoBody {
    #[ts(type = "LevelName")]
    pub level: String,
    #[serde(default)]
    #[ts(optional = nullable)]
    pub project_path: Option<String>,
}

/// One action of a `POST /api/view/step` body: `{"kind": "promote" | "archive" |
/// "put_node" | "delete_node" | "lock" | "rename" | "retouch", "id": …}` and the
/// kind's own fields. kg-core's [`kg_core::Action`] is what the store performs.
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
// Named `Action` to serde: its refusals name the type as they always have. Apart,
// so ts-rs (which does not know it on an enum) still reads the shape.
#[serde(rename = "Action", tag = "kind", rename_all = "snake_case")]
#[serde(deny_unknown_fields)]
#[ts(rename = "StepAction")]
pub enum StepAction {
    Promote {
        id: String,
    },
    Archive {
        id: String,
    },
    PutNode {
        id: String,
        gist: String,
        /// New notes, or absent to keep them.
        #[ts(optional = nullable)]
        notes: Option<Vec<String>>,
        /// New touches, or absent to keep them.
        #[ts(optional = nullable)]
        touches: Option<Vec<String>>,
        /// The node's `_written.ts` when the person loaded it (`0` for none, or a new
        /// node): the step is refused when the node has been written since. Absent
        /// writes whatever stands.
        #[serde(default)]
        #[ts(optional = nullable)]
        written_ts: Option<f64>,
    },
    DeleteNode {
        id: String,
    },
    Lock {
        id: String,
        locked: bool,
    },
    Rename {
        id: String,
        new_id: String,
    },
    Retouch {
        id: String,
        /// The touch entry as the node stores it.
        from: String,
        /// The new path.
        to: String,
    },
}

impl From<StepAction> for kg_core::Action {
    fn from(action: StepAction) -> Self {
        use kg_core::Action;
        match action {
            StepAction::Promote { id } => Action::Promote { id },
            StepAction::Archive { id } => Action::Archive { id },
            StepAction::PutNode {
                id,
                gist,
                notes,
                touches,
                written_ts,
            } => Action::PutNode {
                id,
                gist,
                notes,
                touches,
                written_ts,
            },
            StepAction::DeleteNode { id } => Action::DeleteNode { id },
            StepAction::Lock { id, locked } => Action::Lock { id, locked },
            StepAction::Rename { id, new_id } => Action::Rename { id, new_id },
            StepAction::Retouch { id, from, to } => Action::Retouch { id, from, to },
        }
    }
}

/// `POST /api/view/step`: what a step did or, for a dry run, would do. The dry run is
/// the same code as the commit, rolled back, so its lists are what the commit moves.
#[derive(Debug, Serialize, TS)]
pub struct StepAnswer {
    pub level: LevelName,
    pub dry_run: bool,
    pub created: Vec<String>,
    /// Existing nodes whose gist the step replaced.
    pub updated: Vec<String>,
    /// Archived or orphaned nodes brought back to the active tier.
    pub promoted: Vec<String>,
    /// Orphaned neighbours of promoted nodes, back in the archive.
    pub rescued: Vec<String>,
    /// Active nodes archived by hand.
    pub archived: Vec<String>,
    pub deleted: Vec<String>,
    pub edges_deleted: usize,
    /// Nodes the step locked, and unlocked.
    pub locked: Vec<String>,
    pub unlocked: Vec<String>,
    /// The rename the step was, if it was one.
    pub renamed: Option<StepRename>,
    /// What the maintenance passes at the end of the step moved.
    pub rebalanced: StepMoves,
    /// Steps that can be undone on this level now.
    pub undo_steps: usize,
    /// The level's rendered size before and after the step, in characters.
    pub chars_before: usize,
    pub chars_after: usize,
}

/// A rename done (or checked) by a step.
#[derive(Debug, Serialize, TS)]
pub struct StepRename {
    pub from: String,
    pub to: String,
    /// Edge ends that named the old id and name the new one now, in every graph (0
    /// for a dry run).
    pub edges_rewired: usize,
}

/// Nodes the maintenance passes moved between tiers.
#[derive(Debug, Serialize, TS)]
pub struct StepMoves {
    /// Archived to bring the level under its budget.
    pub archived: Vec<String>,
    /// Brought back by refill, below the fill line.
    pub restored: Vec<String>,
    /// Archived nodes that stopped rendering at all.
    pub orphaned: Vec<String>,
}

impl StepAnswer {
    /// The answer for `outcome`.
    pub fn new(level: Level, dry_run: bool, outcome: &kg_core::Outcome) -> StepAnswer {
        let moves = &outcome.rebalanced;
        StepAnswer {
            level: level.into(),
            dry_run,
            created: outcome.created.clone(),
            updated: outcome.updated.clone(),
            promoted: outcome.promoted.clone(),
            rescued: outcome.rescued.clone(),
            archived: outcome.archived.clone(),
            deleted: outcome.deleted.clone(),
            edges_deleted: outcome.edges_deleted,
            locked: outcome.locked.clone(),
            unlocked: outcome.unlocked.clone(),
            renamed: outcome
                .renamed
                .as_ref()
                .map(|(from, to, edges)| StepRename {
                    from: from.clone(),
                    to: to.clone(),
                    edges_rewired: *edges,
                }),
            rebalanced: StepMoves {
                archived: moves.archived.clone(),
                restored: moves.restored.clone(),
                orphaned: moves.orphaned.clone(),
            },
            undo_steps: outcome.undo_steps,
            chars_before: outcome.chars_before,
            chars_after: outcome.chars_after,
        }
    }
}

/// `POST /api/view/undo`: the last step taken back.
#[derive(Debug, Serialize, TS)]
pub struct UndoAnswer {
    pub level: LevelName,
    /// Nodes restored as they were before the step (or removed, if it created them).
    pub nodes: Vec<String>,
    /// Steps still left to undo on this level.
    pub undo_steps: usize,
}
