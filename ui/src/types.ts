// JSON shapes of the server's answers (kg-server: rest.rs and view.rs).

export type LevelName = 'user' | 'project';
export type TierName = 'active' | 'archived' | 'orphaned';

/** A stored node object, internal fields included. */
export interface StoredNode {
  id: string;
  gist?: string;
  notes?: unknown[];
  touches?: unknown[];
  _created_ts?: number;
  _last_read_ts?: number;
  _useful_ts?: number[];
  _archived?: boolean;
  _orphaned_ts?: number;
  [key: string]: unknown;
}

export interface StoredEdge {
  from: string;
  to: string;
  rel: string;
  notes?: unknown[];
  [key: string]: unknown;
}

export interface TierWhy {
  score: number | null;
  recency: number | null;
  connectedness: number | null;
  usefulness: number | null;
  pool: 'active' | 'active+archived' | null;
  rank: number | null;
  rank_of: number;
  grace_left_days: number | null;
  cost: number;
  traces: number;
  deleted_at: number | null;
  reason: string;
}

export interface Budget {
  chars: number;
  budget: number;
  fill_line: number;
  fill_ratio: number;
  anchor_chars: number;
  anchor_budget: number;
  state: 'under_fill' | 'settled' | 'over';
}

export interface Debt {
  score: number;
  level: 'LOW' | 'MED' | 'HIGH';
  oversized_gists: number;
  unconnected_active: number;
  active_nodes: number;
  untended_days: number;
  never_maintained: boolean;
  active_days_7d: number;
  staleness?: number;
  activity?: number;
  deficit?: number;
  line?: string;
}

export interface Health {
  nodes: number;
  edges: number;
  orphans: number;
  orphan_pct: number;
  avg_edges: number;
  line: string;
}

export interface DebtItem {
  kind: 'oversized' | 'unconnected';
  id: string;
  gist_chars: number;
}

export interface Counts {
  active: number;
  archived: number;
  orphaned: number;
}

export interface LevelData {
  level: LevelName;
  project_path: string | null;
  graph: string;
  counts: Counts;
  budget: Budget;
  health: Health;
  debt: Debt;
  debt_items: DebtItem[];
  nodes: { node: StoredNode; tier: TierName; why: TierWhy }[];
  edges: { edge: StoredEdge; live: boolean }[];
}

export interface GraphRow {
  graph: string;
  level: LevelName;
  project_path: string | null;
  loaded: boolean;
  counts: Counts;
  debt: Debt | null;
}

export interface SearchHit {
  level: LevelName;
  id: string;
  gist: string;
  tier: TierName;
  score: number;
  top: boolean;
}

export interface SearchAnswer {
  query: string;
  total: number;
  hits: SearchHit[];
  path_edges: { from: string; to: string; rel: string }[];
  connectors: { level: LevelName; id: string; gist: string }[];
}

export interface TierMoveAnswer {
  id: string;
  level: LevelName;
  from: TierName;
  to: TierName;
  node: StoredNode;
  rescued: string[];
  rebalanced: { archived: string[]; restored: string[]; orphaned: string[]; reason: string } | null;
  budget: Budget;
}

/** A message on /ws. */
export interface LiveMessage {
  type: string;
  level?: LevelName;
  project_path?: string;
  session_id?: string;
  node?: StoredNode;
  node_id?: string;
  edge?: StoredEdge;
  from?: string;
  to?: string;
  rel?: string;
  rescued_from_orphan?: string[];
  archived?: string[];
  restored?: string[];
  orphaned?: string[];
  deleted?: string[];
  reason?: string;
  source_session?: string | null;
}
