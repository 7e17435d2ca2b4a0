// The stored records as the server passes them through: kg-core keeps nodes and edges as
// open-ended JSON objects. A leaf: the generated payloads import these types.

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
  /** Who wrote the current content and when (`by`: a KG session, or null for a person). */
  _written?: { ts: number; by: string | null };
  /** A person locked it: agents may not rewrite, rename or delete it. */
  locked?: boolean;
  [key: string]: unknown;
}

/** The content stamp a write built on this node names (0: none yet). */
export const writtenTs = (node: StoredNode | undefined): number => (typeof node?._written?.ts === 'number' ? node._written.ts : 0);

export interface StoredEdge {
  from: string;
  to: string;
  rel: string;
  notes?: unknown[];
  [key: string]: unknown;
}
