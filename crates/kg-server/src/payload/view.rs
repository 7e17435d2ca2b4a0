//! What the graph view reads: `GET /api/view/graphs`, `/level`, `/search` and
//! `/neighbourhood`.

use super::*;

// ----- GET /api/view/graphs -----------------------------------------------------------

/// `GET /api/view/graphs`: every graph, for the graph selector.
#[derive(Debug, Serialize, TS)]
pub struct GraphList {
    pub graphs: Vec<GraphRow>,
    /// The project of the session used last (a tool call or a hook), which the view
    /// opens on; none while no live session has a project.
    pub recent_project: Option<String>,
}

/// One graph of the catalogue. Loaded graphs report memory, the others their file.
#[derive(Debug, Serialize, TS)]
pub struct GraphRow {
    /// `user`, or the project's storage folder.
    pub graph: String,
    pub level: LevelName,
    pub project_path: Option<String>,
    pub loaded: bool,
    pub counts: Counts,
    pub debt: Debt,
    /// Its file did not parse and was moved aside while this server ran (as in
    /// [`LevelData::damaged`]), so `kg-memory status` and the picker can say so.
    pub damaged: Option<Damaged>,
}

// ----- GET /api/view/level ------------------------------------------------------------

/// `GET /api/view/level`: everything the view draws for one level.
#[derive(Debug, Serialize, TS)]
pub struct LevelData<'a> {
    pub level: LevelName,
    pub project_path: Option<&'a str>,
    pub graph: &'a str,
    pub counts: Counts,
    pub budget: Budget,
    pub health: Health<'a>,
    pub debt: LevelDebt<'a>,
    pub debt_items: Vec<DebtItem<'a>>,
    /// The graph's file did not parse and was moved aside while this server ran: the
    /// view says so instead of showing the graph as merely small or empty.
    pub damaged: Option<Damaged>,
    /// The change-log position the level was read at: it holds every change numbered
    /// below this (see [`LiveMessage::Connected`]).
    pub change_head: u64,
    /// In node order.
    pub nodes: Vec<NodeRow<'a>>,
    /// In edge order.
    pub edges: Vec<EdgeRow<'a>>,
}

/// A damaged graph file that was moved aside, and what the level holds instead.
#[derive(Debug, Serialize, TS)]
pub struct Damaged {
    pub path: String,
    pub moved_to: String,
    /// Why it did not parse.
    pub cause: String,
    /// The backup (`.prev`) the level was loaded from, or null when it started empty.
    pub backup: Option<String>,
    /// Seconds since the Unix epoch.
    pub at: f64,
}

impl From<kg_core::DamagedFile> for Damaged {
    fn from(d: kg_core::DamagedFile) -> Self {
        Damaged {
            path: d.path.display().to_string(),
            moved_to: d.moved_to.display().to_string(),
            cause: d.cause,
            backup: d.backup.map(|b| b.display().to_string()),
            at: d.at,
        }
    }
}

/// The HEALTH of the rendered level, with the line `kg_read` prints.
#[derive(Debug, Serialize, TS)]
pub struct Health<'a> {
    pub nodes: usize,
    pub edges: usize,
    pub orphans: usize,
    pub orphan_pct: i64,
    pub avg_edges: f64,
    pub line: &'a str,
}

/// One item of maintenance debt.
#[derive(Debug, Serialize, TS)]
pub struct DebtItem<'a> {
    pub kind: DebtKind,
    pub id: &'a str,
    pub gist_chars: usize,
    /// A stale touch: the entry as the node stores it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub touch: Option<&'a str>,
    /// A stale touch: its path as the entry writes it (the file that is gone).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub file: Option<String>,
    /// A stale touch git saw renamed: the path its file has now, written as the
    /// touch writes paths (what a `retouch` step sets).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub renamed_to: Option<String>,
}

/// A node with its tier and why it is there.
#[derive(Debug, Serialize, TS)]
pub struct NodeRow<'a> {
    #[ts(type = "StoredNode")]
    pub node: &'a Node,
    pub tier: TierName,
    pub why: TierWhy<'a>,
}

/// Why a node is in its tier: its score and the percentiles it is made of (none in
/// the grace period and for orphans), its place in the archive or refill order, what
/// it costs the level.
#[derive(Debug, Serialize, TS)]
pub struct TierWhy<'a> {
    /// Four decimals.
    pub score: Option<f64>,
    pub recency: Option<f64>,
    pub connectedness: Option<f64>,
    pub usefulness: Option<f64>,
    pub pool: Option<Pool>,
    pub rank: Option<usize>,
    pub rank_of: usize,
    /// One decimal.
    pub grace_left_days: Option<f64>,
    pub cost: usize,
    pub traces: usize,
    pub deleted_at: Option<f64>,
    pub reason: &'a str,
}

impl<'a> From<&'a kg_core::TierWhy> for TierWhy<'a> {
    fn from(w: &'a kg_core::TierWhy) -> TierWhy<'a> {
        let part = |f: fn(&kg_core::NodeScore) -> f64| w.score.map(|s| round_to(f(&s), 4));
        TierWhy {
            score: part(|s| s.score),
            recency: part(|s| s.recency),
            connectedness: part(|s| s.connectedness),
            usefulness: part(|s| s.usefulness),
            pool: w.pool.map(Pool::from),
            rank: w.rank,
            rank_of: w.rank_of,
            grace_left_days: w.grace_left_days.map(|d| round_to(d, 1)),
            cost: w.cost,
            traces: w.traces,
            deleted_at: w.deleted_at,
            reason: &w.reason,
        }
    }
}

/// An edge, and whether it is live (rendered, charged, drawn solid).
#[derive(Debug, Serialize, TS)]
pub struct EdgeRow<'a> {
    #[ts(type = "StoredEdge")]
    pub edge: &'a Object,
    pub live: bool,
    /// Whether `from` / `to` name a file or folder rather than a node.
    pub from_artifact: bool,
    pub to_artifact: bool,
}

// ----- GET /api/view/search -----------------------------------------------------------

/// `GET /api/view/search`: the server's ranking over the levels on screen.
#[derive(Debug, Serialize, TS)]
pub struct SearchAnswer<'a> {
    pub query: &'a str,
    /// Every matching (level, id).
    pub total: usize,
    /// The top hits, then the next ones.
    pub hits: Vec<SearchHit<'a>>,
    /// Edges on the connection paths between top hits.
    pub path_edges: Vec<PathEdge<'a>>,
    /// Path endpoints that are no hit.
    pub connectors: Vec<Connector<'a>>,
}

#[derive(Debug, Serialize, TS)]
pub struct SearchHit<'a> {
    pub level: LevelName,
    pub id: &'a str,
    pub gist: &'a str,
    pub tier: TierName,
    /// Four decimals.
    pub score: f64,
    /// Among the top hits (the ones `kg_search` shows in full).
    pub top: bool,
}

#[derive(Debug, Serialize, TS)]
pub struct PathEdge<'a> {
    pub from: &'a str,
    pub to: &'a str,
    pub rel: &'a str,
}

impl<'a> From<&'a EdgeKey> for PathEdge<'a> {
    fn from(k: &'a EdgeKey) -> PathEdge<'a> {
        PathEdge {
            from: k.from(),
            to: k.to(),
            rel: k.rel(),
        }
    }
}

#[derive(Debug, Serialize, TS)]
pub struct Connector<'a> {
    pub level: LevelName,
    pub id: &'a str,
    pub gist: &'a str,
}

// ----- GET /api/view/neighbourhood ----------------------------------------------------

/// `GET /api/view/neighbourhood`: a node and what lies within `k` hops of it in its
/// level, edge direction ignored, every tier. Artifact paths are listed but never
/// passed through; ends that are no node of this level (the other level's nodes,
/// deleted ones) are left out with their edges, and counted.
#[derive(Debug, Serialize, TS)]
pub struct NeighbourhoodAnswer<'a> {
    pub level: LevelName,
    pub project_path: Option<&'a str>,
    /// The centre.
    pub id: &'a str,
    pub k: usize,
    /// The centre first (distance 0), then by distance, then id.
    pub nodes: Vec<NeighbourRow<'a>>,
    /// By distance, then path.
    pub artifacts: Vec<ArtifactRow<'a>>,
    /// The edges between listed nodes and artifacts, by from, to, rel.
    pub edges: Vec<PathEdge<'a>>,
    /// Edges of the listed nodes left out because their other end is no node of this
    /// level (a node of the other level, or a deleted one).
    pub outside_edges: usize,
}

#[derive(Debug, Serialize, TS)]
pub struct NeighbourRow<'a> {
    pub id: &'a str,
    /// Hops from the centre.
    pub distance: usize,
    pub tier: TierName,
}

#[derive(Debug, Serialize, TS)]
pub struct ArtifactRow<'a> {
    pub path: &'a str,
    /// Hops from the centre.
    pub distance: usize,
}
