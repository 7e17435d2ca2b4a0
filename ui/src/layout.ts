// Where nodes go: the active area as a grid grouped by topic, the archived and orphan
// bands below it (their geometry, their frames and their grids), and the placing of
// nodes that appear or change tier without laying everything out again. graph.ts
// decides *what* is on the canvas; this module only decides *where*, so the geometry
// lives in one place.
//
// Every node gets a cell as wide as its label (labels sit to the right of their dot),
// so no two labels ever overlap, and the layout depends only on the graph and the
// window's width: the same graph opens with the same picture.

import type { Core, NodeCollection, NodeSingular } from 'cytoscape';
import { LABEL } from './stylesheet';
import type { TierName } from './types';

export type Zone = 'active' | 'archive' | 'drawer' | 'none';

/** A box in model coordinates. */
export interface Rect {
  x1: number;
  x2: number;
  y1: number;
  y2: number;
}

/** Where the three bands sit: written here, read by drops and the test hook too. */
export interface Bands {
  active: Rect;
  archive: Rect;
  drawer: Rect;
  /** Room for a band's label above its first row (grows with the label's size). */
  head: number;
  /** Width of a cell of the archived and orphan grids (the longest banded label's). */
  cellW: number;
}

/**
 * The part of the canvas state the layout works on (graph.ts owns the object): it
 * reads the canvas and what is shown, and keeps `bands` up to date.
 */
export interface Scene {
  readonly cy: Core;
  readonly container: HTMLElement;
  /** The nodes on screen by key; only their tiers matter here (the band labels). */
  readonly nodes: ReadonlyMap<string, { tier: TierName }>;
  readonly drawerOpen: boolean;
  readonly bands: Bands;
}

/** A node that appeared (`from` null) or changed tier since the last show. */
export interface TierChange {
  key: string;
  from: TierName | null;
  to: TierName;
}

/**
 * The zoom the first picture is laid out for: the active area is as wide as the
 * window at this zoom, so labels open at their full size (12 px).
 */
export const HOME_ZOOM = 1;
/** Room around the graph when it is fitted to the window, in screen pixels. */
export const VIEW_PAD = 10;
/** The widest dot (graph.ts sizes dots by degree up to this). */
export const DOT_MAX = 16;
/** Row height: a label and the air between rows. */
const CELL_H = 21;
/** Air between a label and the next column's dot. */
const CELL_GAP_X = 14;
const BAND_GAP = 40;
const BAND_PAD = 24;
const BAND_HEAD = 40;
const MIN_CONTENT_W = 420;

/** Placeholder bands until the first layout measures the active area. */
export const initialBands = (): Bands => ({
  active: { x1: -480, x2: 480, y1: -300, y2: 200 },
  archive: { x1: -480, x2: 480, y1: 350, y2: 500 },
  drawer: { x1: -480, x2: 480, y1: 560, y2: 700 },
  head: BAND_HEAD,
  cellW: 160,
});

export function zoneAt(s: Scene, y: number): Zone {
  const { archive, drawer } = s.bands;
  if (y < archive.y1) return 'active';
  if (y <= archive.y2) return 'archive';
  if (s.drawerOpen && y >= drawer.y1 && y <= drawer.y2) return 'drawer';
  return 'none';
}

/** An empty spot of a zone, in model coordinates: just under the last row for the active zone. */
export function emptySpotIn(bands: Bands, zone: Zone | undefined): { x: number; y: number } {
  const r = zone === 'archive' ? bands.archive : zone === 'drawer' ? bands.drawer : bands.active;
  const y = zone === 'active' ? r.y2 - BAND_PAD / 2 : r.y1 + bands.head / 2 + 8;
  const x = (r.x1 + r.x2) / 2 + (zone === 'active' ? (r.x2 - r.x1) / 4 : 0);
  return { x, y };
}

// ----- measuring labels ----------------------------------------------------------------

const measure = document.createElement('canvas').getContext('2d') as CanvasRenderingContext2D;

function textWidth(text: string, size: number, weight = 'normal'): number {
  measure.font = `${weight} ${size}px ${LABEL.family}`;
  return measure.measureText(text).width;
}

const labelSize = (n: NodeSingular): number => (n.hasClass('active') ? LABEL.size : LABEL.bandedSize);
const labelWidth = (n: NodeSingular): number => textWidth(String(n.data('label') ?? ''), labelSize(n));

/** The box a node and its label take, with half the air between cells on each side. */
function footprint(n: NodeSingular): Rect {
  const p = n.position();
  return {
    x1: p.x - DOT_MAX / 2 - CELL_GAP_X / 2,
    x2: p.x + DOT_MAX / 2 + LABEL.gap + labelWidth(n) + CELL_GAP_X / 2,
    y1: p.y - CELL_H / 2,
    y2: p.y + CELL_H / 2,
  };
}

/** A cell wide enough for the widest of these labels. */
const cellWidthFor = (nodes: NodeSingular[]): number =>
  DOT_MAX + LABEL.gap + CELL_GAP_X + nodes.reduce((w, n) => Math.max(w, labelWidth(n)), 0);

function extentOf(nodes: NodeCollection): Rect | null {
  if (nodes.empty()) return null;
  const r = { x1: Infinity, x2: -Infinity, y1: Infinity, y2: -Infinity };
  nodes.forEach((n) => {
    const f = footprint(n);
    r.x1 = Math.min(r.x1, f.x1);
    r.x2 = Math.max(r.x2, f.x2);
    r.y1 = Math.min(r.y1, f.y1);
    r.y2 = Math.max(r.y2, f.y2);
  });
  return r;
}

// ----- the active area: topics in columns ------------------------------------------------

/** The nodes laid out in the active area: active ones and the artifacts (files) they point at. */
const activeArea = (s: Scene): NodeCollection => s.cy.nodes('.active, .artifact');

/**
 * One column of the active area's flow: its nodes and where each starts, in rows
 * (a topic that starts below the column's top leaves half a row of air above it).
 */
interface Column {
  nodes: NodeSingular[];
  rows: number[];
  width: number;
}

/** Flow `runs` (one per topic) down columns at most `height` rows tall, left to right. */
function flow(runs: NodeSingular[][], height: number): Column[] {
  const columns: Column[] = [];
  let col: Column = { nodes: [], rows: [], width: 0 };
  let row = 0;
  for (const run of runs) {
    if (row > 0) row += 0.5;
    for (const n of run) {
      if (row + 1 > height && col.nodes.length) {
        columns.push(col);
        col = { nodes: [], rows: [], width: 0 };
        row = 0;
      }
      col.nodes.push(n);
      col.rows.push(row);
      col.width = Math.max(col.width, DOT_MAX + LABEL.gap + labelWidth(n) + CELL_GAP_X);
      row += 1;
    }
  }
  if (col.nodes.length) columns.push(col);
  return columns;
}

const widthOf = (columns: Column[]): number => columns.reduce((w, c) => w + c.width, 0);

/** The width the active area is laid out to: the window's at HOME_ZOOM, wider for a crowd. */
function contentWidth(s: Scene, nodes: NodeSingular[]): number {
  const w = Math.max(1, s.container.clientWidth);
  const h = Math.max(1, s.container.clientHeight);
  const fitsWindow = (w - 2 * VIEW_PAD) / HOME_ZOOM - 2 * BAND_PAD;
  // So many nodes that they could not be read on one screen anyway: shape the area
  // like the window, so fitting it shows the whole graph in one sensible picture.
  const area = nodes.reduce((a, n) => a + (DOT_MAX + LABEL.gap + labelWidth(n) + CELL_GAP_X) * CELL_H, 0);
  return Math.max(MIN_CONTENT_W, fitsWindow, Math.sqrt(area * (w / h)));
}

/**
 * The active area as columns of labels, like a dictionary: topics one after the
 * other (biggest first, files last), ids in alphabetical order within a topic, each
 * column as wide as its longest label, and columns as short as the window's width
 * allows. Returns the area they take.
 */
function gridActive(s: Scene): Rect {
  const byTopic = new Map<string, NodeSingular[]>();
  s.cy.nodes('.active').forEach((n) => {
    const topic = String(n.data('topic'));
    const list = byTopic.get(topic) ?? [];
    list.push(n);
    byTopic.set(topic, list);
  });
  const runs = [...byTopic.entries()].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1)).map(([, nodes]) => nodes);
  const files = s.cy.nodes('.artifact').toArray() as NodeSingular[];
  if (files.length) runs.push(files);
  for (const run of runs) run.sort((a, b) => (a.id() < b.id() ? -1 : 1));
  const all = runs.flat();
  const width = contentWidth(s, all);
  // The shortest columns that fit the width (binary search: fewer rows, more columns).
  let lo = 1;
  let hi = Math.max(1, all.length + runs.length);
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (widthOf(flow(runs, mid)) <= width) hi = mid;
    else lo = mid + 1;
  }
  const columns = flow(runs, lo);
  const used = widthOf(columns);
  let x = (width - used) / 2;
  s.cy.batch(() => {
    for (const c of columns) {
      c.nodes.forEach((n, i) => n.position({ x: x + CELL_GAP_X / 2 + DOT_MAX / 2, y: c.rows[i] * CELL_H + CELL_H / 2 }));
      x += c.width;
    }
  });
  const rows = columns.reduce((m, c) => Math.max(m, c.rows[c.rows.length - 1] + 1), 1);
  return { x1: 0, x2: width, y1: 0, y2: rows * CELL_H };
}

/** The active area's grid, then the bands under it. */
export function fullLayout(s: Scene): void {
  arrangeBands(s, gridActive(s));
}

/** Where an archived node would like to be: under its active neighbours. */
function desiredX(n: NodeSingular, fallback: number): number {
  const xs: number[] = [];
  n.neighborhood('node.active').forEach((m) => {
    xs.push(m.position().x);
  });
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : fallback;
}

/**
 * Lay the bands out around and under the active area: the archived band (a grid,
 * each node under its active neighbours where possible) and the orphan drawer. Given
 * `content` (after a full layout) it recomputes the geometry and re-places every
 * banded node; otherwise the bands stay where they are, growing when a node lands
 * past an edge.
 */
function arrangeBands(s: Scene, content?: Rect): void {
  const cy = s.cy;
  const bands = s.bands;
  const archived = cy.nodes('.archived');
  const orphaned = cy.nodes('.orphaned');
  const counts = tierCounts(s);
  const titles = {
    active: `ACTIVE (${counts.active}) — in every read · drag archived or orphaned nodes here to promote`,
    archive: `ARCHIVED (${counts.archived}) — faded, reachable through their edges · drop an active node here to archive it`,
    drawer: `ORPHANED (${counts.orphaned}) — out of every read; search still finds them · drag one up to promote`,
  };
  cy.batch(() => {
    if (content) {
      const width = content.x2 - content.x1 + 2 * BAND_PAD;
      const left = content.x1 - BAND_PAD;
      bands.head = Math.round(titleFont(width, Object.values(titles)) * 1.3 + 20);
      bands.cellW = cellWidthFor([...archived.toArray(), ...orphaned.toArray()] as NodeSingular[]);
      const cols = Math.max(1, Math.floor((width - BAND_PAD) / bands.cellW));
      bands.active = { x1: left, x2: left + width, y1: content.y1 - BAND_PAD / 2 - bands.head, y2: content.y2 + BAND_PAD };
      const rowsA = Math.max(1, Math.ceil(archived.length / cols));
      const top = bands.active.y2 + BAND_GAP;
      bands.archive = { x1: left, x2: left + width, y1: top, y2: top + bands.head + rowsA * CELL_H + BAND_PAD / 2 };
      const sortedA = archived.toArray().map((n) => ({ n: n as NodeSingular, x: desiredX(n as NodeSingular, Infinity) }));
      sortedA.sort((a, b) => a.x - b.x || (a.n.id() < b.n.id() ? -1 : 1));
      grid(bands, sortedA.map((a) => a.n), bands.archive, rowsA);
      const rowsO = Math.max(1, Math.ceil(orphaned.length / cols));
      const dtop = bands.archive.y2 + BAND_GAP;
      bands.drawer = { x1: left, x2: left + width, y1: dtop, y2: dtop + bands.head + rowsO * CELL_H + BAND_PAD / 2 };
      const sortedO = orphaned.toArray().map((n) => n as NodeSingular);
      sortedO.sort((a, b) => (a.id() < b.id() ? -1 : 1));
      grid(bands, sortedO, bands.drawer, rowsO);
    } else {
      // The archive band grows to hold its nodes; the drawer moves down with it.
      const ab = extentOf(archived);
      if (ab) bands.archive.y2 = Math.max(bands.archive.y2, ab.y2 + BAND_PAD / 2);
      const shift = bands.archive.y2 + BAND_GAP - bands.drawer.y1;
      if (shift > 0) {
        bands.drawer.y1 += shift;
        bands.drawer.y2 += shift;
        orphaned.forEach((n) => {
          const p = n.position();
          n.position({ x: p.x, y: p.y + shift });
        });
      }
      const ob = extentOf(orphaned);
      if (ob) bands.drawer.y2 = Math.max(bands.drawer.y2, ob.y2 + BAND_PAD / 2);
      const bb = extentOf(activeArea(s));
      if (bb) {
        bands.active = {
          x1: Math.min(bands.active.x1, bb.x1 - BAND_PAD / 2),
          x2: Math.max(bands.active.x2, bb.x2 + BAND_PAD / 2),
          y1: Math.min(bands.active.y1, bb.y1 - BAND_PAD / 2 - bands.head),
          y2: Math.min(Math.max(bands.active.y2, bb.y2 + BAND_PAD), bands.archive.y1 - 20),
        };
      }
    }
    // One title size for the three bands, fitted to the narrowest.
    const width = Math.min(...[bands.active, bands.archive, bands.drawer].map((r) => r.x2 - r.x1));
    const font = titleFont(width, Object.values(titles));
    frame(cy, 'band:active', 'active-band', bands.active, titles.active, font);
    frame(cy, 'band:archive', 'archive-band', bands.archive, titles.archive, font);
    frame(cy, 'band:drawer', 'drawer-band', bands.drawer, titles.drawer, font);
    cy.getElementById('band:drawer').toggleClass('hidden', !s.drawerOpen);
  });
}

function tierCounts(s: Scene): Record<TierName, number> {
  const c = { active: 0, archived: 0, orphaned: 0 };
  for (const n of s.nodes.values()) c[n.tier] += 1;
  return c;
}

/** Add or update a band's frame: a node the size of its rect, carrying its title. */
function frame(cy: Core, id: string, cls: string, r: Rect, text: string, fontSize: number): void {
  let band = cy.getElementById(id);
  const data = { id, w: r.x2 - r.x1, h: r.y2 - r.y1, label: text, fontSize, labelY: fontSize + 16 };
  if (band.empty()) {
    band = cy.add({ group: 'nodes', data, classes: `band ${cls}`, grabbable: false, selectable: false });
  } else {
    band.data(data);
  }
  band.position({ x: (r.x1 + r.x2) / 2, y: (r.y1 + r.y2) / 2 });
}

/** Where the dot of a banded grid cell sits. */
const bandCell = (bands: Bands, r: Rect, col: number, row: number): { x: number; y: number } => ({
  x: r.x1 + BAND_PAD / 2 + CELL_GAP_X / 2 + DOT_MAX / 2 + col * bands.cellW,
  y: r.y1 + bands.head + CELL_H / 2 + row * CELL_H,
});

/** Column-major grid inside a band: the sort order runs left to right. */
function grid(bands: Bands, nodes: NodeSingular[], r: Rect, rows: number): void {
  nodes.forEach((n, i) => n.position(bandCell(bands, r, Math.floor(i / rows), i % rows)));
}

/** A free grid cell of a band near `x` (the band grows by a row when full). */
function freeCell(s: Scene, r: Rect, selector: string, x: number, except: string): { x: number; y: number } {
  const { head, cellW } = s.bands;
  const taken = new Set<string>();
  const cols = Math.max(1, Math.floor((r.x2 - r.x1 - BAND_PAD) / cellW));
  const rows = Math.max(1, Math.floor((r.y2 - r.y1 - head - BAND_PAD / 2) / CELL_H));
  const origin = bandCell(s.bands, r, 0, 0);
  s.cy.nodes(selector).forEach((n) => {
    if (n.id() === except) return;
    const p = n.position();
    taken.add(`${Math.round((p.x - origin.x) / cellW)},${Math.round((p.y - origin.y) / CELL_H)}`);
  });
  const want = Math.min(cols - 1, Math.max(0, Math.round((x - origin.x) / cellW)));
  let best: { c: number; w: number; d: number } | null = null;
  for (let w = 0; w < rows; w++) {
    for (let c = 0; c < cols; c++) {
      if (taken.has(`${c},${w}`)) continue;
      const d = Math.abs(c - want) + w * 0.5;
      if (!best || d < best.d) best = { c, w, d };
    }
  }
  if (best) return bandCell(s.bands, r, best.c, best.w);
  return bandCell(s.bands, r, want, rows); // a new row; the frame grows on the next arrangement
}

export function placeInBand(s: Scene, n: NodeSingular, tier: 'archived' | 'orphaned'): void {
  const r = tier === 'archived' ? s.bands.archive : s.bands.drawer;
  n.position(freeCell(s, r, `.${tier}`, desiredX(n, n.position().x), n.id()));
}

/**
 * The free spot of the active area nearest `want` where `n` and its label overlap no
 * other label: in a gap of an existing row, or in a new row under the last one.
 */
function freeActiveSpot(s: Scene, n: NodeSingular, want: { x: number; y: number }): { x: number; y: number } {
  const others = (activeArea(s).toArray() as NodeSingular[]).filter((m) => m.id() !== n.id());
  const boxes = others.map(footprint);
  const needed = DOT_MAX + LABEL.gap + labelWidth(n) + CELL_GAP_X;
  const band = s.bands.active;
  const rows = [...new Set(others.map((m) => Math.round(m.position().y)))].sort((a, b) => a - b);
  const bottom = rows.length ? rows[rows.length - 1] + CELL_H : band.y1 + s.bands.head + CELL_H / 2;
  let best: { x: number; y: number; d: number } | null = null;
  for (const y of [...rows, bottom]) {
    const blocking = boxes.filter((b) => b.y1 < y + CELL_H / 2 && b.y2 > y - CELL_H / 2).sort((a, b) => a.x1 - b.x1);
    let from = band.x1 + BAND_PAD / 2;
    const tryGap = (to: number): void => {
      if (to - from < needed) return;
      const left = Math.min(Math.max(want.x - DOT_MAX / 2 - CELL_GAP_X / 2, from), to - needed);
      const x = left + CELL_GAP_X / 2 + DOT_MAX / 2;
      const d = Math.abs(x - want.x) + 2 * Math.abs(y - want.y);
      if (!best || d < best.d) best = { x, y, d };
    };
    for (const b of blocking) {
      tryGap(b.x1);
      from = Math.max(from, b.x2);
    }
    tryGap(band.x2 - BAND_PAD / 2);
  }
  return best ?? { x: want.x, y: bottom };
}

/** Where a node new to the active area would like to be: among its neighbours, else its topic. */
function wantedSpot(s: Scene, n: NodeSingular): { x: number; y: number } {
  let near = n.neighborhood('node.active');
  if (near.empty()) near = s.cy.nodes('.active').filter((m) => m.id() !== n.id() && m.data('topic') === n.data('topic'));
  if (near.empty()) return { x: (s.bands.active.x1 + s.bands.active.x2) / 2, y: s.bands.active.y2 };
  let x = 0;
  let y = 0;
  near.forEach((m) => {
    x += m.position().x;
    y += m.position().y;
  });
  return { x: x / near.length, y: y / near.length };
}

/**
 * Where a new node joins its topic: in the column of the topic's id just before its
 * own (alphabetical, as the full layout orders them), the nodes below it in that
 * column moving down a row. Null when its topic has no active node yet.
 */
function insertInTopic(s: Scene, n: NodeSingular): { x: number; y: number } | null {
  const mates = (s.cy.nodes('.active').toArray() as NodeSingular[]).filter((m) => m.id() !== n.id() && m.data('topic') === n.data('topic'));
  if (!mates.length) return null;
  mates.sort((a, b) => (a.id() < b.id() ? -1 : 1));
  const before = [...mates].reverse().find((m) => m.id() < n.id()) ?? mates[0];
  const at = before.position();
  const y = before === mates[0] && n.id() < before.id() ? at.y : at.y + CELL_H;
  const area = (activeArea(s).toArray() as NodeSingular[]).filter((m) => m.id() !== n.id());
  const sameColumn = (m: NodeSingular): boolean => Math.abs(m.position().x - at.x) < 1;
  // A label wider than the column's widest pushes the columns to its right over.
  const nextColumn = area.reduce((x, m) => (m.position().x > at.x + 1 ? Math.min(x, m.position().x) : x), Infinity);
  const wider = at.x + DOT_MAX + LABEL.gap + labelWidth(n) + CELL_GAP_X - nextColumn;
  for (const m of area) {
    const q = m.position();
    if (sameColumn(m) && q.y >= y - 1) m.position({ x: q.x, y: q.y + CELL_H });
    else if (wider > 0 && q.x > at.x + 1) m.position({ x: q.x + wider, y: q.y });
  }
  return { x: at.x, y };
}

/** Move the archived band and the drawer (frames and nodes) down by `dy`, making room above. */
function lowerBands(s: Scene, dy: number): void {
  for (const r of [s.bands.archive, s.bands.drawer]) {
    r.y1 += dy;
    r.y2 += dy;
  }
  s.cy.nodes('.archived, .orphaned').forEach((n) => {
    const p = n.position();
    n.position({ x: p.x, y: p.y + dy });
  });
}

/** Place nodes that appeared or changed tier without a full layout. */
export function place(s: Scene, moved: TierChange[]): void {
  const cy = s.cy;
  const bands = s.bands;
  cy.batch(() => {
    for (const m of moved) {
      const n = cy.getElementById(m.key) as NodeSingular;
      if (n.empty()) continue;
      if (m.to === 'active') {
        // Dropped there by hand: the free spot nearest the drop. A new node: among its
        // topic, else the free spot nearest its neighbours.
        const p = n.position();
        const dropped = m.from !== null && p.y < bands.archive.y1;
        const spot = dropped ? freeActiveSpot(s, n, { ...p }) : (insertInTopic(s, n) ?? freeActiveSpot(s, n, wantedSpot(s, n)));
        n.position(spot);
        const bottom = extentOf(activeArea(s))?.y2 ?? spot.y;
        const overflow = bottom + BAND_PAD - (bands.archive.y1 - BAND_GAP);
        if (overflow > 0) lowerBands(s, overflow);
      } else if (m.to === 'archived' || m.to === 'orphaned') {
        const r = m.to === 'archived' ? bands.archive : bands.drawer;
        const p = n.position();
        const inside = m.from === m.to && p.y >= r.y1 && p.y <= r.y2;
        if (!inside) placeInBand(s, n, m.to);
      }
    }
  });
  arrangeBands(s);
}

/**
 * A band title's size: large enough to read when a wide graph is fitted to the
 * window, never wider than the band (the longest of `titles` sets the limit).
 */
function titleFont(width: number, titles: string[]): number {
  const wanted = Math.min(64, Math.max(13, width / 75));
  const widest = titles.reduce((w, t) => Math.max(w, textWidth(t, 1, 'bold')), 1);
  return Math.floor(Math.min(wanted, (width - 2 * BAND_PAD) / widest) * 10) / 10;
}
