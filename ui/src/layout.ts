// Where nodes go: the active area as a grid grouped by topic, the archived and orphan
// bands below it (their geometry, their frames and their grids), and the placing of
// nodes that appear or change tier without laying everything out again. graph.ts
// decides *what* is on the canvas; this module only decides *where*, so the geometry
// lives in one place. A full layout works on the model alone (positions by key, for
// graph.ts to create elements in place); placing later arrivals works on the canvas.
//
// Every node gets a cell as wide as its label (labels sit to the right of their dot),
// so no two labels ever overlap, and the layout depends only on the graph and the
// window's width: the same graph opens with the same picture.

import type { Core, NodeCollection, NodeSingular, Position } from 'cytoscape';
import type { BandName, BandTitle, BandTitles } from './bandtitles';
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
  /** Room for a band's title above its first row. */
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
  /**
   * The nodes on screen by key, on the canvas or not (orphans leave it while the drawer
   * is closed): the bands are sized for all of them.
   */
  readonly nodes: ReadonlyMap<string, { tier: TierName; label: string }>;
  readonly drawerOpen: boolean;
  readonly bands: Bands;
  /** The bands' titles, drawn over the canvas. */
  readonly titles: BandTitles;
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
/** The least air left between the active area and the archived band as the area grows. */
const MIN_BAND_GAP = 16;
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
// Without kerning a label is exactly as wide as its characters, so each character is
// measured once per font and a label's width is their sum: a full layout measures a
// hundred characters instead of 2,000 labels (about 30 ms). Kerning, which Cytoscape
// draws with, mostly narrows a label; where it widens one, by a fraction of a pixel
// (0.2 px at most for the benchmark's 2,000 ids), well inside the air between cells
// (CELL_GAP_X).
measure.fontKerning = 'none';
/** Widths of single characters, by font. */
const charWidths = new Map<string, Map<string, number>>();

function textWidth(text: string, size: number): number {
  const font = `${size}px ${LABEL.family}`;
  let widths = charWidths.get(font);
  if (!widths) {
    widths = new Map();
    charWidths.set(font, widths);
  }
  let total = 0;
  for (const ch of text) {
    let w = widths.get(ch);
    if (w === undefined) {
      measure.font = font;
      w = measure.measureText(ch).width;
      widths.set(ch, w);
    }
    total += w;
  }
  return total;
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

/** A cell of the archived and orphan grids: wide enough for every banded label. */
function bandCellWidth(s: Scene): number {
  let widest = 0;
  for (const n of s.nodes.values()) if (n.tier !== 'active') widest = Math.max(widest, textWidth(n.label, LABEL.bandedSize));
  return DOT_MAX + LABEL.gap + CELL_GAP_X + widest;
}

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

// ----- the full layout: from the model, before anything is on the canvas ------------------

/** A node, or a file an edge points at, as the full layout sees it. */
export interface LayoutItem {
  key: string;
  tier: TierName | 'artifact';
  /** Active nodes are grouped by topic. */
  topic: string;
  label: string;
}

/** Model positions by key. */
export type Positions = Map<string, Position>;

/** A node's place in the active area's flow: its key and how wide its cell is. */
interface Cell {
  key: string;
  width: number;
}

/** How wide a node's cell is: its dot, its label and the air before the next column. */
const cellWidth = (label: string, size: number): number => DOT_MAX + LABEL.gap + textWidth(label, size) + CELL_GAP_X;

/**
 * One column of the active area's flow: its cells and where each starts, in rows
 * (a topic that starts below the column's top leaves half a row of air above it).
 */
interface Column {
  cells: Cell[];
  rows: number[];
  width: number;
}

/** Flow `runs` (one per topic) down columns at most `height` rows tall, left to right. */
function flow(runs: Cell[][], height: number): Column[] {
  const columns: Column[] = [];
  let col: Column = { cells: [], rows: [], width: 0 };
  let row = 0;
  for (const run of runs) {
    if (row > 0) row += 0.5;
    for (const cell of run) {
      if (row + 1 > height && col.cells.length) {
        columns.push(col);
        col = { cells: [], rows: [], width: 0 };
        row = 0;
      }
      col.cells.push(cell);
      col.rows.push(row);
      col.width = Math.max(col.width, cell.width);
      row += 1;
    }
  }
  if (col.cells.length) columns.push(col);
  return columns;
}

const widthOf = (columns: Column[]): number => columns.reduce((w, c) => w + c.width, 0);

/** The width the active area is laid out to: the window's at HOME_ZOOM, wider for a crowd. */
function contentWidth(s: Scene, cells: Cell[]): number {
  const w = Math.max(1, s.container.clientWidth);
  const h = Math.max(1, s.container.clientHeight);
  const fitsWindow = (w - 2 * VIEW_PAD) / HOME_ZOOM - 2 * BAND_PAD;
  // So many nodes that they could not be read on one screen anyway: shape the area
  // like the window, so fitting it shows the whole graph in one sensible picture.
  const area = cells.reduce((a, c) => a + c.width * CELL_H, 0);
  return Math.max(MIN_CONTENT_W, fitsWindow, Math.sqrt(area * (w / h)));
}

const byKey = (a: { key: string }, b: { key: string }): number => (a.key < b.key ? -1 : 1);

/**
 * The active area as columns of labels, like a dictionary: topics one after the
 * other (biggest first, files last), ids in alphabetical order within a topic, each
 * column as wide as its longest label, and columns as short as the window's width
 * allows. Places them in `at`; returns the area they take.
 */
function gridActive(s: Scene, items: LayoutItem[], at: Positions): Rect {
  const byTopic = new Map<string, LayoutItem[]>();
  const files: LayoutItem[] = [];
  for (const item of items) {
    if (item.tier === 'artifact') files.push(item);
    else if (item.tier === 'active') {
      const list = byTopic.get(item.topic);
      if (list) list.push(item);
      else byTopic.set(item.topic, [item]);
    }
  }
  const topics = [...byTopic.entries()].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1)).map(([, list]) => list);
  if (files.length) topics.push(files);
  const runs = topics.map((run) => run.sort(byKey).map((item) => ({ key: item.key, width: cellWidth(item.label, item.tier === 'active' ? LABEL.size : LABEL.bandedSize) })));
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
  let x = (width - widthOf(columns)) / 2;
  for (const c of columns) {
    c.cells.forEach((cell, i) => at.set(cell.key, { x: x + CELL_GAP_X / 2 + DOT_MAX / 2, y: c.rows[i] * CELL_H + CELL_H / 2 }));
    x += c.width;
  }
  const rows = columns.reduce((m, c) => Math.max(m, c.rows[c.rows.length - 1] + 1), 1);
  return { x1: 0, x2: width, y1: 0, y2: rows * CELL_H };
}

/**
 * Lay everything out from scratch, from the model alone: columns by topic in the
 * active area, then the archived band (a grid, each node under its active neighbours
 * where possible) and the orphan drawer. Sets the bands, puts up their frames, and
 * returns where every node and file goes (orphans too, on the canvas or not), so the
 * canvas can create its elements in place.
 */
export function fullLayout(s: Scene, items: LayoutItem[], activeNeighbours: (key: string) => string[]): Positions {
  const at: Positions = new Map();
  const content = gridActive(s, items, at);
  const bands = s.bands;
  const width = content.x2 - content.x1 + 2 * BAND_PAD;
  const left = content.x1 - BAND_PAD;
  bands.cellW = bandCellWidth(s);
  const cols = Math.max(1, Math.floor((width - BAND_PAD) / bands.cellW));
  bands.active = { x1: left, x2: left + width, y1: content.y1 - BAND_PAD / 2 - bands.head, y2: content.y2 + BAND_PAD };
  const archived = items.filter((i) => i.tier === 'archived');
  const rowsA = Math.max(1, Math.ceil(archived.length / cols));
  const top = bands.active.y2 + BAND_GAP;
  bands.archive = { x1: left, x2: left + width, y1: top, y2: top + bands.head + rowsA * CELL_H + BAND_PAD / 2 };
  const under = (key: string): number => {
    const xs = activeNeighbours(key).flatMap((k) => at.get(k)?.x ?? []);
    return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Infinity;
  };
  const sortedA = archived.map((item) => ({ key: item.key, x: under(item.key) }));
  sortedA.sort((a, b) => a.x - b.x || byKey(a, b));
  sortedA.forEach((a, i) => at.set(a.key, bandCell(bands, bands.archive, Math.floor(i / rowsA), i % rowsA)));
  const dtop = bands.archive.y2 + BAND_GAP;
  bands.drawer = { x1: left, x2: left + width, y1: dtop, y2: dtop };
  for (const [key, p] of drawerCells(s, items.filter((i) => i.tier === 'orphaned'))) at.set(key, p);
  s.cy.batch(() => putFrames(s));
  return at;
}

/**
 * Cells for the orphans in the drawer, in id order down the columns; the drawer grows
 * or shrinks to hold every orphan, on the canvas or not.
 */
export function drawerCells(s: Scene, orphans: { key: string }[]): Positions {
  const { bands } = s;
  const r = bands.drawer;
  const cols = Math.max(1, Math.floor((r.x2 - r.x1 - BAND_PAD) / bands.cellW));
  const rows = Math.max(1, Math.ceil(tierCounts(s).orphaned / cols));
  r.y2 = r.y1 + bands.head + rows * CELL_H + BAND_PAD / 2;
  const sorted = [...orphans].sort(byKey);
  return new Map(sorted.map((o, i) => [o.key, bandCell(bands, r, Math.floor(i / rows), i % rows)]));
}

// ----- keeping the bands around the nodes -----------------------------------------------

/** The nodes laid out in the active area: active ones, and the files and other level's nodes they point at. */
const activeArea = (s: Scene): NodeCollection => s.cy.nodes('.active, .outside');

/** Where an archived node would like to be: under its active neighbours. */
function desiredX(n: NodeSingular, fallback: number): number {
  const xs: number[] = [];
  n.neighborhood('node.active').forEach((m) => {
    xs.push(m.position().x);
  });
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : fallback;
}

/**
 * Keep the bands around their nodes after nodes moved or appeared: they stay where
 * they are, growing when a node lands past an edge (the drawer moving down with the
 * archived band), and their titles follow the counts.
 */
export function arrangeBands(s: Scene): void {
  const cy = s.cy;
  const bands = s.bands;
  const archived = cy.nodes('.archived');
  const orphaned = cy.nodes('.orphaned');
  cy.batch(() => {
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
        y2: Math.min(Math.max(bands.active.y2, bb.y2 + BAND_PAD), bands.archive.y1 - MIN_BAND_GAP),
      };
    }
    putFrames(s);
  });
}

/** What each band says about itself, with its count. */
function bandTitles(s: Scene): Record<BandName, BandTitle> {
  const counts = tierCounts(s);
  return {
    active: { name: `ACTIVE (${counts.active})`, hint: 'in every read · drag archived or orphaned nodes here to promote' },
    archive: { name: `ARCHIVED (${counts.archived})`, hint: 'faded, reachable through their edges · drop an active node here to archive it' },
    drawer: { name: `ORPHANED (${counts.orphaned})`, hint: 'out of every read; search still finds them · drag one up to promote' },
  };
}

/** The bands' frames where the bands are, and their titles (over the canvas: bandtitles.ts). */
function putFrames(s: Scene): void {
  const { cy, bands } = s;
  frame(cy, 'band:active', 'active-band', bands.active);
  frame(cy, 'band:archive', 'archive-band', bands.archive);
  frame(cy, 'band:drawer', 'drawer-band', bands.drawer);
  cy.getElementById('band:drawer').toggleClass('hidden', !s.drawerOpen);
  s.titles.setTexts(bandTitles(s));
  followTitles(s);
}

/** Put the band titles where the bands are on screen (after every pan, zoom or resize). */
export function followTitles(s: Scene): void {
  const { bands } = s;
  s.titles.follow(s.cy, { active: bands.active, archive: bands.archive, drawer: bands.drawer }, bands.head, s.drawerOpen);
}

function tierCounts(s: Scene): Record<TierName, number> {
  const c = { active: 0, archived: 0, orphaned: 0 };
  for (const n of s.nodes.values()) c[n.tier] += 1;
  return c;
}

/** Add or update a band's frame: a node the size of its rect. */
function frame(cy: Core, id: string, cls: string, r: Rect): void {
  let band = cy.getElementById(id);
  const data = { id, w: r.x2 - r.x1, h: r.y2 - r.y1 };
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
        // Dropped there by hand: the free spot nearest the drop. A node new to the graph
        // joins its topic's column (the nodes below it there move down a row), else the
        // free spot nearest its neighbours. One that changed tier takes a free spot near
        // them: no other node moves.
        const p = n.position();
        const dropped = m.from !== null && p.y < bands.archive.y1;
        const fresh = m.from === null ? insertInTopic(s, n) : null;
        const spot = fresh ?? freeActiveSpot(s, n, dropped ? { ...p } : wantedSpot(s, n));
        n.position(spot);
        // The active area grows into the air above the archived band first (a row fits),
        // so a node that takes a new row moves no other; past that the bands go down.
        const bottom = extentOf(activeArea(s))?.y2 ?? spot.y;
        const overflow = bottom + BAND_PAD - (bands.archive.y1 - MIN_BAND_GAP);
        if (overflow > 0) lowerBands(s, overflow + BAND_GAP - MIN_BAND_GAP);
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
