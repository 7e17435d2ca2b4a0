//! The answers of the REST writes the view makes (nodes and edges).

use super::*;

/// `POST /api/nodes`.
#[derive(Debug, Serialize, TS)]
pub struct NodePutAnswer {
    #[ts(type = "StoredNode")]
    pub node: Object,
    pub level: LevelName,
}

/// `POST /api/nodes/rename`.
#[derive(Debug, Serialize, TS)]
pub struct NodeRenameAnswer {
    pub renamed: Renaming,
    pub level: LevelName,
    /// Edge ends that named the old id and name the new one now, in every graph.
    pub edges_rewired: usize,
    /// Project graphs whose edges were left alone, and why (`local-node`,
    /// `collision`, `unwritable`).
    pub skipped_graphs: Vec<SkippedGraphAnswer>,
    #[ts(type = "StoredNode")]
    pub node: Object,
}

/// The old and the new id of a rename.
#[derive(Debug, Serialize, TS)]
pub struct Renaming {
    pub from: String,
    pub to: String,
}

/// A project graph a rename left alone.
#[derive(Debug, Serialize, TS)]
pub struct SkippedGraphAnswer {
    pub graph: String,
    pub reason: &'static str,
}

/// `DELETE /api/nodes/{level}/{id}`.
#[derive(Debug, Serialize, TS)]
pub struct NodeDeleteAnswer {
    /// The id.
    pub deleted: String,
    pub level: LevelName,
    pub edges_deleted: usize,
}

/// `POST /api/edges`.
#[derive(Debug, Serialize, TS)]
pub struct EdgePutAnswer {
    #[ts(type = "StoredEdge")]
    pub edge: Object,
    pub level: LevelName,
}

/// `DELETE /api/edges/{level}/{from}/{to}/{rel}`.
#[derive(Debug, Serialize, TS)]
pub struct EdgeDeleteAnswer {
    /// Whether the edge was there.
    pub deleted: bool,
    pub level: LevelName,
}
