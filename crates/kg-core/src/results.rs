//! What the store's calls answer, for the tool texts and the REST handlers to present.

use crate::model::{EdgeKey, Level, Object};
use indexmap::IndexMap;

/// Result of `put_node`.
#[derive(Debug, Clone, PartialEq)]
pub struct PutNode {
    pub level: Level,
    pub created: bool,
    /// Length of the gist as submitted (before healing), for the scan-limit advice.
    pub submitted_gist_chars: usize,
    pub node: Object,
}

/// Result of a single-node read.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRead {
    pub id: String,
    pub level: Level,
    pub node: Object,
    pub was_archived: bool,
    pub rescued: Vec<String>,
    /// Every edge of the node's graph touching it, in edge order.
    pub edges: Vec<Object>,
}

/// Result of `kg_useful`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Likes {
    pub accepted: Vec<String>,
    /// Rejected ids in first-rejection order, each with its last reason.
    pub rejected: IndexMap<String, String>,
    pub remaining: usize,
}

/// One line of a `kg_sync` report.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncItem {
    Node {
        id: String,
        archived: bool,
        gist: String,
    },
    Edge(EdgeKey),
}

/// What other sessions changed, per level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncReport {
    pub user: Vec<SyncItem>,
    pub project: Vec<SyncItem>,
}
