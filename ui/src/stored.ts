// Helpers over the stored records. Their types (`StoredNode`, `StoredEdge`) are
// generated with the payloads (crates/kg-server/src/payload/stored.rs).

import type { StoredNode } from './generated/payloads';

/** The content stamp a write built on this node names (0: none yet). */
export const writtenTs = (node: StoredNode | undefined): number => (typeof node?._written?.ts === 'number' ? node._written.ts : 0);
