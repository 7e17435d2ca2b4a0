// The picture a person keeps their place by: where each node of a graph sits, and the
// bands around them, saved in the browser's storage per graph. A graph opens as it was
// left, a step moves only the nodes it changed, and an undo puts back the picture from
// before the step. Only the Re-layout button (or a picture that cannot be read) lays
// the graph out afresh.

import type { Bands, Rect } from './layout';
import type { LevelData } from './types';

/** What a saved position records: where, and in which tier the node was then. */
export interface SavedSpot {
  x: number;
  y: number;
  tier: 'active' | 'archived' | 'artifact';
}

/** A graph's picture: its bands and where its nodes and files sit (orphans are laid out
 * in the drawer when it opens, so they have no saved place). */
export interface Picture {
  graph: string;
  bands: Bands;
  spots: Map<string, SavedSpot>;
  /** Each topic's colour slot, so a topic keeps its colour however the graph grows. */
  slots: Map<string, number>;
}

/** The format of the stored picture; another number is not read. */
const VERSION = 1;
const PREFIX = 'kg-view:picture:';

/** Which graph the levels on screen are: the user graph, a project's storage folder, or both together. */
export const pictureId = (levels: LevelData[]): string =>
  levels
    .map((l) => (l.level === 'user' ? 'user' : `project:${l.graph}`))
    .sort()
    .join('+');

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function rectOf(v: unknown): Rect | null {
  if (!v || typeof v !== 'object') return null;
  const r = v as Record<string, unknown>;
  return finite(r.x1) && finite(r.x2) && finite(r.y1) && finite(r.y2) && r.x1 <= r.x2 && r.y1 <= r.y2
    ? { x1: r.x1, x2: r.x2, y1: r.y1, y2: r.y2 }
    : null;
}

/** The stored picture read back, or why it cannot be used. */
function parse(id: string, text: string): Picture | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return 'it is not JSON';
  }
  if (!raw || typeof raw !== 'object') return 'it is not an object';
  const o = raw as Record<string, unknown>;
  if (o.version !== VERSION) return `its format is ${JSON.stringify(o.version)}, not ${VERSION}`;
  if (o.graph !== id) return `it belongs to another graph (${JSON.stringify(o.graph).slice(0, 80)})`;
  const b = (o.bands ?? {}) as Record<string, unknown>;
  const active = rectOf(b.active);
  const archive = rectOf(b.archive);
  const drawer = rectOf(b.drawer);
  if (!active || !archive || !drawer || !finite(b.head) || !finite(b.cellW) || b.cellW <= 0) return 'its bands are malformed';
  if (!o.spots || typeof o.spots !== 'object' || Array.isArray(o.spots)) return 'it has no positions';
  const spots = new Map<string, SavedSpot>();
  for (const [key, v] of Object.entries(o.spots as Record<string, unknown>)) {
    if (!Array.isArray(v) || v.length !== 3 || !finite(v[0]) || !finite(v[1]) || !['active', 'archived', 'artifact'].includes(v[2])) {
      return `the position of ${key.slice(0, 80)} is malformed`;
    }
    spots.set(key, { x: v[0], y: v[1], tier: v[2] as SavedSpot['tier'] });
  }
  const slots = new Map<string, number>();
  if (o.slots !== undefined) {
    if (!o.slots || typeof o.slots !== 'object' || Array.isArray(o.slots)) return 'its topic colours are malformed';
    for (const [topic, slot] of Object.entries(o.slots as Record<string, unknown>)) {
      if (!Number.isInteger(slot) || (slot as number) < 0) return `the colour of topic ${topic.slice(0, 80)} is malformed`;
      slots.set(topic, slot as number);
    }
  }
  return { graph: id, bands: { active, archive, drawer, head: b.head, cellW: b.cellW }, spots, slots };
}

/** The saved picture of a graph, or null (none, or one that cannot be used: said in the
 * console and dropped, so the layout falls back to a fresh one). */
export function readPicture(id: string): Picture | null {
  let text: string | null;
  try {
    text = localStorage.getItem(PREFIX + id);
  } catch {
    return null; // storage refused (a private window's policy): lay out afresh
  }
  if (text === null) return null;
  const picture = parse(id, text);
  if (typeof picture !== 'string') return picture;
  console.warn(`kg-view: the saved positions of ${id} are ignored (${picture}); the graph is laid out afresh.`);
  forgetPicture(id);
  return null;
}

export function savePicture(p: Picture): void {
  const spots: Record<string, [number, number, string]> = {};
  const round = (v: number): number => Math.round(v * 100) / 100;
  for (const [key, s] of p.spots) spots[key] = [round(s.x), round(s.y), s.tier];
  try {
    localStorage.setItem(PREFIX + p.graph, JSON.stringify({ version: VERSION, graph: p.graph, bands: p.bands, spots, slots: Object.fromEntries(p.slots) }));
  } catch (e) {
    // Full storage: the picture lasts as long as the page does.
    console.warn(`kg-view: the positions of ${p.graph} could not be saved: ${String(e)}`);
  }
}

export function forgetPicture(id: string): void {
  try {
    localStorage.removeItem(PREFIX + id);
  } catch {
    /* nothing saved that could be read either */
  }
}

/** A copy of bands (the layout changes its rects in place). */
export const copyBands = (b: Bands): Bands => ({
  active: { ...b.active },
  archive: { ...b.archive },
  drawer: { ...b.drawer },
  head: b.head,
  cellW: b.cellW,
});
