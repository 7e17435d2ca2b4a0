// Where nodes go: fcose over the active area, the archived and orphan bands below it
// (their geometry, their frames and their grids), and the placing of nodes that
// appear or change tier without re-running the layout. graph.ts decides *what* is on
// the canvas; this module only decides *where*, so the geometry lives in one place.

import cytoscape from 'cytoscape';
import type { Core, NodeCollection, NodeSingular } from 'cytoscape';
import fcose from 'cytoscape-fcose';
import type { TierName } from './types';

cytoscape.use(fcose);

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
  readonly artifactsShown: boolean;
  readonly bands: Bands;
}

/** A node that appeared (`from` null) or changed tier since the last show. */
export interface TierChange {
  key: string;
  from: TierName | null;
  to: TierName;
}

const CELL_W = 120;
const CELL_H = 64;
const BAND_GAP = 150;
const BAND_PAD = 48;
const BAND_HEAD = 46;
const MIN_WIDTH = 960;

/** Placeholder bands until the first layout measures the active area. */
export const initialBands = (): Bands => ({
  active: { x1: -480, x2: 480, y1: -300, y2: 200 },
  archive: { x1: -480, x2: 480, y1: 350, y2: 500 },
  drawer: { x1: -480, x2: 480, y1: 560, y2: 700 },
  head: BAND_HEAD,
});

export function zoneAt(s: Scene, y: number): Zone {
  const { archive, drawer } = s.bands;
  if (y < archive.y1) return 'active';
  if (y <= archive.y2) return 'archive';
  if (s.drawerOpen && y >= drawer.y1 && y <= drawer.y2) return 'drawer';
  return 'none';
}

/** An empty spot of a zone, in model coordinates: just above the archive band for the active zone. */
export function emptySpotIn(bands: Bands, zone: Zone | undefined): { x: number; y: number } {
  const r = zone === 'archive' ? bands.archive : zone === 'drawer' ? bands.drawer : bands.active;
  const y = zone === 'active' ? r.y2 - BAND_PAD / 2 : r.y1 + bands.head / 2 + 8;
  const x = (r.x1 + r.x2) / 2 + (zone === 'active' ? (r.x2 - r.x1) / 4 : 0);
  return { x, y };
}

function activeCollection(s: Scene): NodeCollection {
  return s.cy.nodes('.active').union(s.artifactsShown ? s.cy.nodes('.artifact') : s.cy.collection());
}

/** fcose over the active area, then the bands. */
export function fullLayout(s: Scene): void {
  const act = activeCollection(s);
  if (act.nonempty()) {
    const eles = act.union(act.edgesWith(act));
    const n = act.length;
    eles
      .layout({
        name: 'fcose',
        quality: n > 700 ? 'draft' : 'default',
        randomize: true,
        animate: false,
        fit: false,
        padding: 30,
        nodeDimensionsIncludeLabels: false,
        uniformNodeDimensions: true,
        packComponents: false,
        nodeRepulsion: () => (n > 700 ? 6500 : 12000),
        idealEdgeLength: () => (n > 700 ? 80 : 110),
        nodeSeparation: n > 700 ? 260 : 110,
        numIter: n > 700 ? 600 : 2500,
        tile: true,
        tilingPaddingVertical: 24,
        tilingPaddingHorizontal: 24,
      } as cytoscape.LayoutOptions)
      .run();
  }
  if (!s.artifactsShown) placeArtifacts(s);
  arrangeBands(s, true);
}

/** Each artifact on a circle around the first node that points at it. */
export function placeArtifacts(s: Scene): void {
  s.cy.batch(() => {
    s.cy.nodes('.artifact').forEach((a) => {
      const owners = a.neighborhood('node').filter((n) => !n.hasClass('artifact'));
      if (owners.empty()) return;
      const o = owners[0].position();
      const angle = (hash(a.id()) % 360) * (Math.PI / 180);
      a.position({ x: o.x + 50 * Math.cos(angle), y: o.y + 50 * Math.sin(angle) });
    });
  });
}

function boundsOf(nodes: NodeCollection): Rect | null {
  if (nodes.empty()) return null;
  const r = { x1: Infinity, x2: -Infinity, y1: Infinity, y2: -Infinity };
  nodes.forEach((n) => {
    const p = n.position();
    r.x1 = Math.min(r.x1, p.x);
    r.x2 = Math.max(r.x2, p.x);
    r.y1 = Math.min(r.y1, p.y);
    r.y2 = Math.max(r.y2, p.y);
  });
  return r;
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
 * Lay the bands out under the active area: the archived band (a grid, each node
 * under its active neighbours where possible) and the orphan drawer. `regrid`
 * (after a full layout) recomputes the geometry and re-places every banded node;
 * otherwise the bands stay where they are, growing when a node lands past an edge.
 */
function arrangeBands(s: Scene, regrid: boolean): void {
  const cy = s.cy;
  const bands = s.bands;
  const archived = cy.nodes('.archived');
  const orphaned = cy.nodes('.orphaned');
  const bb = boundsOf(activeCollection(s));
  cy.batch(() => {
    if (regrid) {
      const b = bb ?? { x1: -300, x2: 300, y1: -150, y2: 150 };
      const cx = (b.x1 + b.x2) / 2;
      // Bands as wide as a landscape window wants: fewer rows, everything fits.
      const aspect = Math.max(1, s.container.clientWidth / Math.max(1, s.container.clientHeight));
      const tall = b.y2 - b.y1 + 2 * BAND_PAD + BAND_GAP + bands.head * 2 + CELL_H * 3;
      // Many banded nodes: a grid about twice as wide as the window's shape.
      const banded = archived.length + (s.drawerOpen ? orphaned.length : Math.min(orphaned.length, archived.length));
      const gridCols = Math.sqrt((2 * aspect * banded * CELL_H) / CELL_W);
      const width = Math.max(MIN_WIDTH, b.x2 - b.x1 + 2 * BAND_PAD, Math.min(Math.max(tall * aspect * 0.9, gridCols * CELL_W + BAND_PAD), 6000));
      bands.head = Math.max(BAND_HEAD, Math.round(bandFont(width) * 1.3 + 20));
      const left = cx - width / 2;
      const cols = Math.max(6, Math.floor((width - 2 * BAND_PAD) / CELL_W));
      bands.active = { x1: left, x2: left + width, y1: b.y1 - BAND_PAD - bands.head, y2: b.y2 + BAND_PAD };
      const rowsA = Math.max(1, Math.ceil(archived.length / cols));
      const top = bands.active.y2 + BAND_GAP;
      bands.archive = { x1: left, x2: left + width, y1: top, y2: top + bands.head + rowsA * CELL_H + BAND_PAD / 2 };
      const sortedA = archived.toArray().map((n) => ({ n: n as NodeSingular, x: desiredX(n as NodeSingular, Infinity) }));
      sortedA.sort((a, b) => a.x - b.x || (a.n.id() < b.n.id() ? -1 : 1));
      grid(bands, sortedA.map((a) => a.n), bands.archive, rowsA);
      const rowsO = Math.max(1, Math.ceil(orphaned.length / cols));
      const dtop = bands.archive.y2 + 70;
      bands.drawer = { x1: left, x2: left + width, y1: dtop, y2: dtop + bands.head + rowsO * CELL_H + BAND_PAD / 2 };
      const sortedO = orphaned.toArray().map((n) => n as NodeSingular);
      sortedO.sort((a, b) => (a.id() < b.id() ? -1 : 1));
      grid(bands, sortedO, bands.drawer, rowsO);
    } else {
      // The archive band grows to hold its nodes; the drawer moves down with it.
      const ab = boundsOf(archived);
      if (ab) bands.archive.y2 = Math.max(bands.archive.y2, ab.y2 + CELL_H / 2 + BAND_PAD / 4);
      const shift = bands.archive.y2 + 70 - bands.drawer.y1;
      if (shift > 0) {
        bands.drawer.y1 += shift;
        bands.drawer.y2 += shift;
        orphaned.forEach((n) => {
          const p = n.position();
          n.position({ x: p.x, y: p.y + shift });
        });
      }
      const ob = boundsOf(orphaned);
      if (ob) bands.drawer.y2 = Math.max(bands.drawer.y2, ob.y2 + CELL_H / 2 + BAND_PAD / 4);
      if (bb) {
        bands.active = {
          x1: Math.min(bands.active.x1, bb.x1 - BAND_PAD),
          x2: Math.max(bands.active.x2, bb.x2 + BAND_PAD),
          y1: Math.min(bands.active.y1, bb.y1 - BAND_PAD - bands.head),
          y2: Math.min(Math.max(bands.active.y2, bb.y2 + BAND_PAD), bands.archive.y1 - 20),
        };
      }
    }
    const counts = tierCounts(s);
    frame(cy, 'band:active', 'active-band', bands.active, `ACTIVE (${counts.active}) — in every read · drag archived or orphaned nodes here to promote`);
    frame(cy, 'band:archive', 'archive-band', bands.archive, `ARCHIVED (${counts.archived}) — faded, reachable through their edges · drop an active node here to archive it`);
    frame(cy, 'band:drawer', 'drawer-band', bands.drawer, `ORPHANED (${counts.orphaned}) — out of every read; search still finds them · drag one up to promote`);
    cy.getElementById('band:drawer').toggleClass('hidden', !s.drawerOpen);
  });
}

function tierCounts(s: Scene): Record<TierName, number> {
  const c = { active: 0, archived: 0, orphaned: 0 };
  for (const n of s.nodes.values()) c[n.tier] += 1;
  return c;
}

/** Add or update a band's frame: a node the size of its rect, carrying its label. */
function frame(cy: Core, id: string, cls: string, r: Rect, text: string): void {
  let band = cy.getElementById(id);
  // Labels stay readable when a wide graph is fitted to the window.
  const fontSize = bandFont(r.x2 - r.x1);
  const data = { id, w: r.x2 - r.x1, h: r.y2 - r.y1, label: text, fontSize, labelY: fontSize + 16 };
  if (band.empty()) {
    band = cy.add({ group: 'nodes', data, classes: `band ${cls}`, grabbable: false, selectable: false });
  } else {
    band.data(data);
  }
  band.position({ x: (r.x1 + r.x2) / 2, y: (r.y1 + r.y2) / 2 });
}

/** Column-major grid inside a band: the sort order runs left to right. */
function grid(bands: Bands, nodes: NodeSingular[], r: Rect, rows: number): void {
  nodes.forEach((n, i) => {
    const col = Math.floor(i / rows);
    const row = i % rows;
    n.position({ x: r.x1 + BAND_PAD / 2 + CELL_W / 2 + col * CELL_W, y: r.y1 + bands.head + CELL_H / 2 + row * CELL_H });
  });
}

/** A free grid cell of a band near `x` (the band grows by a row when full). */
function freeCell(s: Scene, r: Rect, selector: string, x: number, except: string): { x: number; y: number } {
  const head = s.bands.head;
  const taken = new Set<string>();
  const cols = Math.max(1, Math.floor((r.x2 - r.x1 - BAND_PAD) / CELL_W));
  const rows = Math.max(1, Math.floor((r.y2 - r.y1 - head - BAND_PAD / 2) / CELL_H));
  const cell = (c: number, w: number) => ({
    x: r.x1 + BAND_PAD / 2 + CELL_W / 2 + c * CELL_W,
    y: r.y1 + head + CELL_H / 2 + w * CELL_H,
  });
  s.cy.nodes(selector).forEach((n) => {
    if (n.id() === except) return;
    const p = n.position();
    const c = Math.round((p.x - r.x1 - BAND_PAD / 2 - CELL_W / 2) / CELL_W);
    const w = Math.round((p.y - r.y1 - head - CELL_H / 2) / CELL_H);
    taken.add(`${c},${w}`);
  });
  const want = Math.min(cols - 1, Math.max(0, Math.round((x - r.x1 - BAND_PAD / 2 - CELL_W / 2) / CELL_W)));
  let best: { c: number; w: number; d: number } | null = null;
  for (let w = 0; w < rows; w++) {
    for (let c = 0; c < cols; c++) {
      if (taken.has(`${c},${w}`)) continue;
      const d = Math.abs(c - want) + w * 0.5;
      if (!best || d < best.d) best = { c, w, d };
    }
  }
  if (best) return cell(best.c, best.w);
  return cell(want, rows); // a new row; the frame grows on the next arrangement
}

export function placeInBand(s: Scene, n: NodeSingular, tier: 'archived' | 'orphaned'): void {
  const r = tier === 'archived' ? s.bands.archive : s.bands.drawer;
  n.position(freeCell(s, r, `.${tier}`, desiredX(n, n.position().x), n.id()));
}

/** Place nodes that appeared or changed tier without a full layout. */
export function place(s: Scene, moved: TierChange[]): void {
  const cy = s.cy;
  const bands = s.bands;
  if (!moved.length) {
    arrangeBands(s, false);
    return;
  }
  cy.batch(() => {
    for (const m of moved) {
      const n = cy.getElementById(m.key) as NodeSingular;
      if (n.empty()) continue;
      if (m.to === 'active') {
        const p = n.position();
        const inActive = m.from !== null && p.y < bands.archive.y1;
        if (inActive) continue; // dropped there by hand
        const around = n.neighborhood('node.active');
        const r = bands.active;
        let x: number;
        let y: number;
        if (around.nonempty()) {
          const b = boundsOf(around) as Rect;
          x = (b.x1 + b.x2) / 2 + (hash(m.key) % 80) - 40;
          y = (b.y1 + b.y2) / 2 + (hash(`${m.key}y`) % 80) - 40;
        } else {
          x = r.x1 + BAND_PAD + (hash(m.key) % Math.max(1, Math.round(r.x2 - r.x1 - 2 * BAND_PAD)));
          y = r.y1 + bands.head + BAND_PAD + (hash(`${m.key}y`) % Math.max(1, Math.round(r.y2 - r.y1 - bands.head - 2 * BAND_PAD)));
        }
        n.position({ x, y: Math.min(y, bands.archive.y1 - BAND_GAP / 2) });
      } else if (m.to === 'archived' || m.to === 'orphaned') {
        const r = m.to === 'archived' ? bands.archive : bands.drawer;
        const p = n.position();
        const inside = m.from === m.to && p.y >= r.y1 && p.y <= r.y2;
        if (!inside) placeInBand(s, n, m.to);
      }
    }
  });
  arrangeBands(s, false);
}

/** Band label size for a band of this width. */
function bandFont(width: number): number {
  return Math.round(Math.min(64, Math.max(15, width / 75)));
}

/** A stable pseudo-random number per key: the same node lands in the same spot every time. */
function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return Math.abs(h);
}
