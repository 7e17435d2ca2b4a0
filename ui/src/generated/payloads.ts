// Generated from crates/kg-server/src/payload/ by ts-rs: do not edit.
// Regenerate: KG_UPDATE_TS=1 cargo test -p kg-server --lib payload

/**
 * `GET /api/view/activity`: the newest changes of the levels on screen, newest first.
 */
export type ActivityAnswer = {
  entries: Array<ActivityEntry>,
};

/**
 * One change of the store's change log, as the activity panel lists it.
 */
export type ActivityEntry = {
  /**
   * Its place in the change log.
   */
  seq: number,
  /**
   * Seconds since the Unix epoch.
   */
  ts: number,
  level: LevelName,
  project_path: string | null,
  author: Author,
  /**
   * The KG session that made it, when one did (a view's is its connection's).
   */
  session: string | null,
  /**
   * For a change that arrived through sync: the remote it came from, as
   * `origin (url)`.
   */
  origin: string | null,
  kind: ActivityKind,
  /**
   * The nodes it concerns, the main one first.
   */
  ids: Array<string>,
  /**
   * What happened, in one plain line.
   */
  summary: string,
};

/**
 * What kind of change an activity entry is: the `type` of the matching `/ws` message.
 */
export type ActivityKind = "node_updated" | "node_renamed" | "edge_updated" | "node_deleted" | "edge_deleted" | "node_recalled" | "tiers_moved" | "node_liked" | "progress_saved" | "step_undone" | "debt_changed" | "quarantined";

export type ArtifactRow = {
  path: string,
  /**
   * Hops from the centre.
   */
  distance: number,
};

/**
 * Who made a change.
 */
export type Author = "agent" | "view" | "maintenance" | "client" | "sync";

/**
 * A level's rendered size, as the compactor charges it, against its budget.
 */
export type Budget = {
  chars: number,
  budget: number,
  fill_line: number,
  /**
   * `fill_line / budget`, two decimals.
   */
  fill_ratio: number,
  anchor_chars: number,
  anchor_budget: number,
  state: BudgetState,
  /**
   * Gists longer than this count as maintenance debt (they scan badly).
   */
  scan_limit: number,
  /**
   * Days a new node is protected from archiving (how far: see `grace_share`).
   */
  grace_days: number,
  /**
   * Characters of node lines the new nodes may hold out of compaction's reach, the
   * newest first (our policy); `None` when grace protects every new node (the
   * reference's).
   */
  grace_share: number | null,
  /**
   * Active nodes still inside that grace period.
   */
  active_in_grace: number,
  /**
   * Days until the first of them leaves its grace period (one decimal), if any.
   */
  first_grace_ends_in_days: number | null,
  /**
   * What happens to the level next, in words (the gauge's sentence).
   */
  outlook: string,
};

/**
 * Where a level's rendered size stands against its budget.
 */
export type BudgetState = "under_fill" | "settled" | "over";

export type Connector = {
  level: LevelName,
  id: string,
  gist: string,
};

/**
 * How many nodes a level holds in each tier.
 */
export type Counts = {
  active: number,
  archived: number,
  orphaned: number,
};

/**
 * A damaged graph file that was moved aside, and what the level holds instead.
 */
export type Damaged = {
  path: string,
  moved_to: string,
  /**
   * Why it did not parse.
   */
  cause: string,
  /**
   * The backup (`.prev`) the level was loaded from, or null when it started empty.
   */
  backup: string | null,
  /**
   * Seconds since the Unix epoch.
   */
  at: number,
};

/**
 * A graph's maintenance debt, as `Debt::to_object` writes it for the survey (a unit
 * test holds the two together).
 */
export type Debt = {
  /**
   * Two decimals.
   */
  score: number,
  level: DebtLevel,
  oversized_gists: number,
  unconnected_active: number,
  active_nodes: number,
  /**
   * One decimal (14 when never maintained).
   */
  untended_days: number,
  never_maintained: boolean,
  active_days_7d: number,
  /**
   * Merge-conflict notes waiting on the graph's nodes (they make the level at least
   * MED); absent when there are none, as in the survey.
   */
  merge_conflicts?: number,
  /**
   * Touches of active nodes whose file is gone (our policy); absent when none.
   */
  dangling_touches?: number,
  /**
   * The active nodes holding them (what the deficit weighs); absent when none.
   */
  dangling_nodes?: number,
  /**
   * Items a sync held back from the graph (content from a remote that breaks a
   * write rule; `kg-memory sync status` lists them); absent when there are none.
   */
  held_back?: number,
};

/**
 * One item of maintenance debt.
 */
export type DebtItem = {
  kind: DebtKind,
  id: string,
  gist_chars: number,
  /**
   * A stale touch: the entry as the node stores it.
   */
  touch?: string,
  /**
   * A stale touch: its path as the entry writes it (the file that is gone).
   */
  file?: string,
  /**
   * A stale touch git saw renamed: the path its file has now, written as the
   * touch writes paths (what a `retouch` step sets).
   */
  renamed_to?: string,
};

/**
 * What one item of maintenance debt is.
 */
export type DebtKind = "oversized" | "unconnected" | "stale_touch";

/**
 * A graph's maintenance debt verdict.
 */
export type DebtLevel = "LOW" | "MED" | "HIGH";

/**
 * `DELETE /api/edges/{level}/{from}/{to}/{rel}`.
 */
export type EdgeDeleteAnswer = {
  /**
   * Whether the edge was there.
   */
  deleted: boolean,
  level: LevelName,
};

/**
 * `POST /api/edges`.
 */
export type EdgePutAnswer = {
  edge: StoredEdge,
  level: LevelName,
};

/**
 * An edge, and whether it is live (rendered, charged, drawn solid).
 */
export type EdgeRow = {
  edge: StoredEdge,
  live: boolean,
  /**
   * Whether `from` / `to` name a file or folder rather than a node.
   */
  from_artifact: boolean,
  to_artifact: boolean,
};

/**
 * `GET /api/view/graphs`: every graph, for the graph selector.
 */
export type GraphList = {
  graphs: Array<GraphRow>,
  /**
   * The project of the session used last (a tool call or a hook), which the view
   * opens on; none while no live session has a project.
   */
  recent_project: string | null,
};

/**
 * One graph of the catalogue. Loaded graphs report memory, the others their file.
 */
export type GraphRow = {
  /**
   * `user`, or the project's storage folder.
   */
  graph: string,
  level: LevelName,
  project_path: string | null,
  loaded: boolean,
  counts: Counts,
  debt: Debt,
  /**
   * Its file did not parse and was moved aside while this server ran (as in
   * [`LevelData::damaged`]), so `kg-memory status` and the picker can say so.
   */
  damaged: Damaged | null,
};

/**
 * The HEALTH of the rendered level, with the line `kg_read` prints.
 */
export type Health = {
  nodes: number,
  edges: number,
  orphans: number,
  orphan_pct: number,
  avg_edges: number,
  line: string,
};

/**
 * `GET /api/view/level`: everything the view draws for one level.
 */
export type LevelData = {
  level: LevelName,
  project_path: string | null,
  graph: string,
  counts: Counts,
  budget: Budget,
  health: Health,
  debt: LevelDebt,
  debt_items: Array<DebtItem>,
  /**
   * The graph's file did not parse and was moved aside while this server ran: the
   * view says so instead of showing the graph as merely small or empty.
   */
  damaged: Damaged | null,
  /**
   * The change-log position the level was read at: it holds every change numbered
   * below this (see [`LiveMessage::Connected`]).
   */
  change_head: number,
  /**
   * In node order.
   */
  nodes: Array<NodeRow>,
  /**
   * In edge order.
   */
  edges: Array<EdgeRow>,
};

/**
 * The debt of the level on screen, with the factors its score multiplies.
 */
export type LevelDebt = {
  /**
   * `min(1, untended_days / 14)`, three decimals.
   */
  staleness: number,
  /**
   * `min(1, active_days_7d / 4)`, three decimals.
   */
  activity: number,
  /**
   * `(oversized + 0.5 × unconnected) / active`, before capping at 1; three decimals.
   */
  deficit: number,
  /**
   * The DEBT line `kg_read` prints.
   */
  line: string,
  /**
   * How a merge-conflict note begins ([`kg_core::CONFLICT_NOTE_PREFIX`]): the view
   * lists the nodes holding one, which `merge_conflicts` counts.
   */
  conflict_note_prefix: string,
  /**
   * Two decimals.
   */
  score: number,
  level: DebtLevel,
  oversized_gists: number,
  unconnected_active: number,
  active_nodes: number,
  /**
   * One decimal (14 when never maintained).
   */
  untended_days: number,
  never_maintained: boolean,
  active_days_7d: number,
  /**
   * Merge-conflict notes waiting on the graph's nodes (they make the level at least
   * MED); absent when there are none, as in the survey.
   */
  merge_conflicts?: number,
  /**
   * Touches of active nodes whose file is gone (our policy); absent when none.
   */
  dangling_touches?: number,
  /**
   * The active nodes holding them (what the deficit weighs); absent when none.
   */
  dangling_nodes?: number,
  /**
   * Items a sync held back from the graph (content from a remote that breaks a
   * write rule; `kg-memory sync status` lists them); absent when there are none.
   */
  held_back?: number,
};

/**
 * One of the two graphs: cross-project knowledge or this codebase's.
 */
export type LevelName = "user" | "project";

/**
 * A message on `/ws`. A change's `source_session` is the KG session that made it
 * (`null`: REST without a session, or maintenance); `project_path` is there for
 * project-level changes only.
 */
export type LiveMessage =
  | {
    "type": "connected",
    session_id: string,
    change_head: number,
  }
  | {
    "type": "pong",
  }
  | {
    "type": "resync",
    missed: number,
  }
  | {
    "type": "node_updated",
    level: LevelName,
    node: StoredNode,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "node_renamed",
    level: LevelName,
    old_id: string,
    node: StoredNode,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "edge_updated",
    level: LevelName,
    edge: StoredEdge,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "node_deleted",
    level: LevelName,
    node_id: string,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "edge_deleted",
    level: LevelName,
    from: string,
    to: string,
    rel: string,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "node_recalled",
    level: LevelName,
    node: StoredNode,
    rescued_from_orphan: Array<string>,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "tiers_moved",
    level: LevelName,
    archived: Array<string>,
    restored: Array<string>,
    orphaned: Array<string>,
    deleted: Array<string>,
    reason: string,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "node_liked",
    level: LevelName,
    node_id: string,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "progress_saved",
    level: LevelName,
    task_id: string,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "step_undone",
    level: LevelName,
    nodes: Array<string>,
    source_session: string | null,
    project_path?: string,
  }
  | {
    "type": "debt_changed",
    level: LevelName,
    from: string | null,
    to: string,
    score: number,
    project_path?: string,
  }
  | {
    "type": "quarantined",
    level: LevelName,
    path: string,
    moved_to: string,
    cause: string,
    recovered_from_prev: boolean,
    project_path?: string,
  };

export type NeighbourRow = {
  id: string,
  /**
   * Hops from the centre.
   */
  distance: number,
  tier: TierName,
};

/**
 * `GET /api/view/neighbourhood`: a node and what lies within `k` hops of it in its
 * level, edge direction ignored, every tier. Artifact paths are listed but never
 * passed through; ends that are no node of this level (the other level's nodes,
 * deleted ones) are left out with their edges, and counted.
 */
export type NeighbourhoodAnswer = {
  level: LevelName,
  project_path: string | null,
  /**
   * The centre.
   */
  id: string,
  k: number,
  /**
   * The centre first (distance 0), then by distance, then id.
   */
  nodes: Array<NeighbourRow>,
  /**
   * By distance, then path.
   */
  artifacts: Array<ArtifactRow>,
  /**
   * The edges between listed nodes and artifacts, by from, to, rel.
   */
  edges: Array<PathEdge>,
  /**
   * Edges of the listed nodes left out because their other end is no node of this
   * level (a node of the other level, or a deleted one).
   */
  outside_edges: number,
};

/**
 * `DELETE /api/nodes/{level}/{id}`.
 */
export type NodeDeleteAnswer = {
  /**
   * The id.
   */
  deleted: string,
  level: LevelName,
  edges_deleted: number,
};

/**
 * `POST /api/nodes`.
 */
export type NodePutAnswer = {
  node: StoredNode,
  level: LevelName,
};

/**
 * A node with its tier and why it is there.
 */
export type NodeRow = {
  node: StoredNode,
  tier: TierName,
  why: TierWhy,
};

export type PathEdge = {
  from: string,
  to: string,
  rel: string,
};

/**
 * The pool a node was scored in: active nodes only (the archive order) or active
 * and archived ones (the refill order).
 */
export type Pool = "active" | "active+archived";

/**
 * `GET /api/view/recall`: why the memory spoke or stayed silent, newest first.
 */
export type RecallAnswer = {
  decisions: Array<RecallEntry>,
};

/**
 * One recall decision: a prompt's, a file's, or another session's write pushed.
 */
export type RecallEntry = {
  /**
   * Seconds since the Unix epoch.
   */
  ts: number,
  /**
   * `prompt`, `file` or `push`.
   */
  trigger: string,
  /**
   * The decision's fixed word: `injected`, `no_hits`, `all_seen`, `throttled`, ...
   */
  outcome: string,
  /**
   * Why, in one plain sentence.
   */
  why: string,
  /**
   * The KG session it was for.
   */
  session: string | null,
  /**
   * Ids shown to the model, in order.
   */
  injected: Array<string>,
  /**
   * What came close: the best-scored nodes weighed (prompts) or every node naming
   * the file (files), shown or not.
   */
  weighed: Array<RecallWeighed>,
  /**
   * The words searched on (prompts; never the prompt itself).
   */
  terms: Array<string>,
  /**
   * The file keys (files).
   */
  files: Array<string>,
  /**
   * The tool (files).
   */
  tool: string | null,
};

/**
 * A node a decision weighed.
 */
export type RecallWeighed = {
  id: string,
  level: LevelName,
  /**
   * Its score in the ranking's own unit (prompts); `null` for a file's nodes.
   */
  score: number | null,
  /**
   * The session had it in context already.
   */
  seen: boolean,
  injected: boolean,
};

/**
 * `GET /api/view/search`: the server's ranking over the levels on screen.
 */
export type SearchAnswer = {
  query: string,
  /**
   * Every matching (level, id).
   */
  total: number,
  /**
   * The top hits, then the next ones.
   */
  hits: Array<SearchHit>,
  /**
   * Edges on the connection paths between top hits.
   */
  path_edges: Array<PathEdge>,
  /**
   * Path endpoints that are no hit.
   */
  connectors: Array<Connector>,
};

export type SearchHit = {
  level: LevelName,
  id: string,
  gist: string,
  tier: TierName,
  /**
   * Four decimals.
   */
  score: number,
  /**
   * Among the top hits (the ones `kg_search` shows in full).
   */
  top: boolean,
};

/**
 * One action of a `POST /api/view/step` body: `{"kind": "promote" | "archive" |
 * "put_node" | "delete_node" | "lock" | "rename" | "retouch", "id": …}` and the
 * kind's own fields. kg-core's [`kg_core::Action`] is what the store performs.
 */
export type StepAction =
  | {
    "kind": "promote",
    id: string,
  }
  | {
    "kind": "archive",
    id: string,
  }
  | {
    "kind": "put_node",
    id: string,
    gist: string,
    /**
     * New notes, or absent to keep them.
     */
    notes?: Array<string> | null,
    /**
     * New touches, or absent to keep them.
     */
    touches?: Array<string> | null,
    /**
     * The node's `_written.ts` when the person loaded it (`0` for none, or a new
     * node): the step is refused when the node has been written since. Absent
     * writes whatever stands.
     */
    written_ts?: number | null,
  }
  | {
    "kind": "delete_node",
    id: string,
  }
  | {
    "kind": "lock",
    id: string,
    locked: boolean,
  }
  | {
    "kind": "rename",
    id: string,
    new_id: string,
  }
  | {
    "kind": "retouch",
    id: string,
    /**
     * The touch entry as the node stores it.
     */
    from: string,
    /**
     * The new path.
     */
    to: string,
  };

/**
 * `POST /api/view/step`: what a step did or, for a dry run, would do. The dry run is
 * the same code as the commit, rolled back, so its lists are what the commit moves.
 */
export type StepAnswer = {
  level: LevelName,
  dry_run: boolean,
  created: Array<string>,
  /**
   * Existing nodes whose gist the step replaced.
   */
  updated: Array<string>,
  /**
   * Archived or orphaned nodes brought back to the active tier.
   */
  promoted: Array<string>,
  /**
   * Orphaned neighbours of promoted nodes, back in the archive.
   */
  rescued: Array<string>,
  /**
   * Active nodes archived by hand.
   */
  archived: Array<string>,
  deleted: Array<string>,
  edges_deleted: number,
  /**
   * Nodes the step locked, and unlocked.
   */
  locked: Array<string>,
  unlocked: Array<string>,
  /**
   * The rename the step was, if it was one.
   */
  renamed: StepRename | null,
  /**
   * What the maintenance passes at the end of the step moved.
   */
  rebalanced: StepMoves,
  /**
   * Steps that can be undone on this level now.
   */
  undo_steps: number,
  /**
   * The level's rendered size before and after the step, in characters.
   */
  chars_before: number,
  chars_after: number,
};

/**
 * `POST /api/view/step`: a list of actions on one graph, previewed (`dry_run`) or done.
 */
export type StepBody = {
  level: LevelName,
  /**
   * The project on screen (project level only).
   */
  project_path?: string | null,
  /**
   * The view's live session, so the step's changes are tagged with it.
   */
  session_id?: string | null,
  /**
   * Say what would happen, change nothing.
   */
  dry_run: boolean,
  actions: Array<StepAction>,
};

/**
 * Nodes the maintenance passes moved between tiers.
 */
export type StepMoves = {
  /**
   * Archived to bring the level under its budget.
   */
  archived: Array<string>,
  /**
   * Brought back by refill, below the fill line.
   */
  restored: Array<string>,
  /**
   * Archived nodes that stopped rendering at all.
   */
  orphaned: Array<string>,
};

/**
 * A rename done (or checked) by a step.
 */
export type StepRename = {
  from: string,
  to: string,
  /**
   * Edge ends that named the old id and name the new one now, in every graph (0
   * for a dry run).
   */
  edges_rewired: number,
};

/**
 * A stored edge.
 */
export type StoredEdge = {
  from: string,
  to: string,
  rel: string,
  notes?: Array<unknown>,
};

/**
 * A stored node, internal fields included (`kg_core::field` names them).
 */
export type StoredNode = {
  id: string,
  gist?: string,
  notes?: Array<unknown>,
  touches?: Array<unknown>,
  _created_ts?: number,
  _last_read_ts?: number,
  _useful_ts?: Array<number>,
  _archived?: boolean,
  _orphaned_ts?: number,
  /**
   * Who wrote the current content and when.
   */
  _written?: StoredWritten,
  /**
   * A person locked it: agents may not rewrite, rename or delete it.
   */
  locked?: boolean,
};

/**
 * A node's `_written`: when its content was written, and by which KG session
 * (`null`: a person).
 */
export type StoredWritten = {
  ts: number,
  by: string | null,
};

/**
 * `GET /api/sync`: the storage root's sync, with each project that syncs on its own.
 */
export type SyncAnswer = SyncRepo & {
  projects: Array<SyncRepo>,
};

/**
 * `POST /api/sync/now` when it worked (a failure is an error answer with its
 * reason).
 */
export type SyncNowAnswer = {
  synced: boolean,
  /**
   * Changes taken in from the remotes, sent to them, and merge conflicts left in
   * node notes, over every repository that synced.
   */
  received: number,
  sent: number,
  conflicts: number,
  /**
   * What happened, in words: one line per repository when several synced.
   */
  message: string,
};

/**
 * One repository's git sync: the storage root, or a project that syncs with a remote
 * of its own. A key a reader does not find reads as its default (sync off).
 */
export type SyncRepo = {
  /**
   * The project's storage folder; `null` for the storage root.
   */
  project: string | null,
  /**
   * A remote is set up.
   */
  on: boolean,
  /**
   * `origin (url)`; `null` when sync is off.
   */
  remote: string | null,
  branch: string | null,
  /**
   * Seconds since the Unix epoch.
   */
  last_success: number | null,
  last_attempt: number | null,
  /**
   * Why the last attempt failed; `null` when it worked.
   */
  last_error: string | null,
  /**
   * Since when the remote cannot be reached (the server retries on its own).
   */
  offline_since: number | null,
  /**
   * Commits here and not on the remote, and there and not here, as of the last
   * fetch; `null` before the first.
   */
  ahead: number | null,
  behind: number | null,
  /**
   * Files changed here since the last commit.
   */
  uncommitted: number,
  /**
   * Unresolved merge conflicts in the graph files.
   */
  conflicts: number,
  /**
   * Items held back from the remote for breaking a write rule.
   */
  held_back: number,
  /**
   * `kg-memory sync status`, in words.
   */
  summary: string,
};

/**
 * Where a node stands in the bounded memory.
 */
export type TierName = "active" | "archived" | "orphaned";

/**
 * Why a node is in its tier: its score and the percentiles it is made of (none in
 * the grace period and for orphans), its place in the archive or refill order, what
 * it costs the level.
 */
export type TierWhy = {
  /**
   * Four decimals.
   */
  score: number | null,
  recency: number | null,
  connectedness: number | null,
  usefulness: number | null,
  pool: Pool | null,
  rank: number | null,
  rank_of: number,
  /**
   * One decimal.
   */
  grace_left_days: number | null,
  cost: number,
  traces: number,
  deleted_at: number | null,
  reason: string,
};

/**
 * `POST /api/view/undo`: the last step taken back.
 */
export type UndoAnswer = {
  level: LevelName,
  /**
   * Nodes restored as they were before the step (or removed, if it created them).
   */
  nodes: Array<string>,
  /**
   * Steps still left to undo on this level.
   */
  undo_steps: number,
};

/**
 * `POST /api/view/undo`: take back the level's last step.
 */
export type UndoBody = {
  level: LevelName,
  project_path?: string | null,
};
