// What the canvas draws, as data: the nodes and edges of the levels on screen, the keys
// that name them on the canvas, the labels written beside the dots, and what edges point
// at outside those levels (files, and nodes of a level not shown).

import type { LevelData, LevelName, StoredEdge, StoredNode, TierName, TierWhy } from './types';

/** One node of a level as the canvas knows it. */
export interface NodeInfo {
  key: string;
  level: LevelName;
  id: string;
  /** What the canvas writes next to the dot (the id, cut when long). */
  label: string;
  tier: TierName;
  node: StoredNode;
  why: TierWhy;
}

export interface EdgeInfo {
  key: string;
  level: LevelName;
  edge: StoredEdge;
  live: boolean;
  source: string;
  target: string;
  kind: 'normal' | 'trace' | 'dead' | 'cross' | 'artifact';
}

/** The levels on screen as the canvas draws them. */
export interface Model {
  nodes: Map<string, NodeInfo>;
  edges: Map<string, EdgeInfo>;
  /** What edges point at that is not a node on screen: files (`a:` keys), and nodes of
   * the other level (`u:` or `p:` keys) while it is not shown. */
  outside: Set<string>;
}

export const nodeKey = (level: LevelName, id: string): string => `${level === 'user' ? 'u' : 'p'}:${id}`;
export const artifactKey = (ref: string): string => `a:${ref}`;
const edgeKey = (level: LevelName, e: StoredEdge): string =>
  `e:${level === 'user' ? 'u' : 'p'}:${e.from}->${e.to}:${e.rel}`;

/** Ids longer than this are cut with an ellipsis on the canvas (the tip and panel show them whole). */
export const LABEL_CHARS = 22;
export const label = (id: string): string => (id.length > LABEL_CHARS ? `${id.slice(0, LABEL_CHARS - 1)}…` : id);
/** A file is labelled with its last path segment. */
const fileLabel = (key: string): string => {
  const ref = key.slice(2);
  return label(ref.split('/').filter(Boolean).pop() ?? ref);
};

/** Whether a key on the canvas is a file an edge points at (else a node). */
export const isFile = (key: string): boolean => key.startsWith('a:');

/** The level a node key names. */
export const levelOfKey = (key: string): LevelName => (key.startsWith('u:') ? 'user' : 'project');

/** What the canvas writes beside a file (its last path segment) or a node of a level not shown (its id). */
export const outsideLabel = (key: string): string => (isFile(key) ? fileLabel(key) : label(key.slice(2)));

/**
 * Turn the levels on screen into node and edge infos, and the things edges point at
 * that are not nodes on screen (`outside`): files, and nodes of a level not shown.
 */
export function buildModel(levels: LevelData[]): Model {
  const nodes = new Map<string, NodeInfo>();
  const ids = new Map<LevelName, Set<string>>();
  for (const l of levels) {
    const set = new Set<string>();
    for (const n of l.nodes) {
      const id = String(n.node.id ?? '');
      set.add(id);
      nodes.set(nodeKey(l.level, id), { key: nodeKey(l.level, id), level: l.level, id, label: n.node.locked === true ? `${label(id)} (locked)` : label(id), tier: n.tier, node: n.node, why: n.why });
    }
    ids.set(l.level, set);
  }
  const edges = new Map<string, EdgeInfo>();
  const outside = new Set<string>();
  for (const l of levels) {
    const other: LevelName = l.level === 'user' ? 'project' : 'user';
    // The server says which ends are files; any other end is a node of this level or
    // of the other one (drawn in its level's shape, on screen or not: a link to a
    // user-level node is never a file).
    const resolve = (ref: string, artifact: boolean): { key: string; kind: 'node' | 'cross' | 'artifact' } => {
      if (ids.get(l.level)?.has(ref)) return { key: nodeKey(l.level, ref), kind: 'node' };
      if (artifact) return { key: artifactKey(ref), kind: 'artifact' };
      return { key: nodeKey(other, ref), kind: 'cross' };
    };
    for (const { edge, live, from_artifact, to_artifact } of l.edges) {
      const s = resolve(edge.from, from_artifact);
      const t = resolve(edge.to, to_artifact);
      for (const end of [s, t]) if (end.kind !== 'node' && !nodes.has(end.key)) outside.add(end.key);
      const tiers = [s, t].map((e) => nodes.get(e.key)?.tier);
      let kind: EdgeInfo['kind'];
      if (s.kind === 'artifact' || t.kind === 'artifact') kind = 'artifact';
      else if (s.kind === 'cross' || t.kind === 'cross') kind = 'cross';
      else if (!live) kind = 'dead';
      else if (tiers.includes('archived')) kind = 'trace';
      else kind = 'normal';
      const key = edgeKey(l.level, edge);
      edges.set(key, { key, level: l.level, edge, live, source: s.key, target: t.key, kind });
    }
  }
  return { nodes, edges, outside };
}

export function degreeOf(edges: Map<string, EdgeInfo>): Map<string, number> {
  const deg = new Map<string, number>();
  for (const e of edges.values()) {
    if (e.kind === 'dead') continue;
    deg.set(e.source, (deg.get(e.source) ?? 0) + 1);
    deg.set(e.target, (deg.get(e.target) ?? 0) + 1);
  }
  return deg;
}

