// The canvas: Cytoscape.js with the fcose layout.
//
// Three tiers, three places. Active nodes fill the main area (laid out by fcose once
// per load); archived nodes sit in their own band below it, faded, with their live
// edges ("memory traces") still drawn to active nodes; orphaned nodes wait in a
// drawer band under that, collapsed until opened. Live updates never re-run the
// layout: changed nodes are placed next to their neighbours or in a free cell of
// their band, and every change is applied in one `cy.batch`.

import cytoscape from 'cytoscape';
import type { Core, ElementDefinition, EventObject, NodeSingular, StylesheetJson } from 'cytoscape';
import fcose from 'cytoscape-fcose';
import type { LevelData, LevelName, StoredEdge, StoredNode, TierName, TierWhy } from './types';

cytoscape.use(fcose);

// Cytoscape adds a one-rule <style> element to the page (its container positioned
// relative) unless an element with this id exists. The page's CSP refuses inline
// styles, and `.cy` positions the container itself, so claim the id.
const CYTOSCAPE_STYLE_ID = '__________cytoscape_stylesheet';
if (!document.getElementById(CYTOSCAPE_STYLE_ID)) {
  const marker = document.createElement('meta');
  marker.id = CYTOSCAPE_STYLE_ID;
  document.head.append(marker);
}

export type Zone = 'active' | 'archive' | 'drawer' | 'none';

/** One node of a level as the canvas knows it. */
export interface NodeInfo {
  key: string;
  level: LevelName;
  id: string;
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

export interface Callbacks {
  select(key: string | null): void;
  /** A drag asked for a tier change; resolve false to snap the node back. */
  move(key: string, to: 'active' | 'archived'): Promise<boolean>;
  /** A drop that cannot be honoured (say why). */
  refuse(message: string): void;
}

export const nodeKey = (level: LevelName, id: string): string => `${level === 'user' ? 'u' : 'p'}:${id}`;
const artifactKey = (ref: string): string => `a:${ref}`;
const edgeKey = (level: LevelName, e: StoredEdge): string =>
  `e:${level === 'user' ? 'u' : 'p'}:${e.from}->${e.to}:${e.rel}`;

const CELL_W = 120;
const CELL_H = 64;
const BAND_GAP = 150;
const BAND_PAD = 48;
const BAND_HEAD = 46;
const MIN_WIDTH = 960;
/** From this many nodes on, drawing takes the fast paths (no arrows, haystack edges, textures while moving). */
const LARGE = 700;

interface Rect {
  x1: number;
  x2: number;
  y1: number;
  y2: number;
}

/** Colours of the current theme, read from CSS variables. */
function palette(): Record<string, string> {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string) => css.getPropertyValue(name).trim() || '#888';
  return {
    bg: v('--bg'),
    fg: v('--fg'),
    muted: v('--muted'),
    user: v('--c-user'),
    userBorder: v('--c-user-border'),
    project: v('--c-project'),
    projectBorder: v('--c-project-border'),
    artifact: v('--c-artifact'),
    edge: v('--c-edge'),
    trace: v('--c-trace'),
    cross: v('--c-cross'),
    select: v('--c-select'),
    flash: v('--c-flash'),
    hit: v('--c-hit'),
    band: v('--c-band'),
    bandBorder: v('--c-band-border'),
    drop: v('--c-drop'),
  };
}

function stylesheet(large: boolean): StylesheetJson {
  const c = palette();
  return [
    {
      selector: 'node',
      style: {
        label: 'data(label)',
        'font-size': 11,
        'font-family': 'system-ui, sans-serif',
        color: c.fg,
        'text-valign': 'bottom',
        'text-margin-y': 3,
        'text-max-width': '130px',
        'text-wrap': 'ellipsis',
        'min-zoomed-font-size': 7,
        'text-background-color': c.bg,
        'text-background-opacity': 0.7,
        'text-background-padding': '1px',
        width: 'data(size)',
        height: 'data(size)',
        'border-width': 2,
        'z-index-compare': 'manual',
        'z-index': 20,
      },
    },
    { selector: 'node.user', style: { shape: 'round-rectangle', 'background-color': c.user, 'border-color': c.userBorder } },
    { selector: 'node.project', style: { shape: 'ellipse', 'background-color': c.project, 'border-color': c.projectBorder } },
    {
      selector: 'node.archived',
      style: { 'background-opacity': 0.3, 'border-style': 'dashed', opacity: 0.8, 'font-size': 10, color: c.muted },
    },
    {
      selector: 'node.orphaned',
      style: {
        'background-opacity': 0,
        'border-style': 'dotted',
        'border-width': 2,
        opacity: 0.8,
        'font-size': 10,
        color: c.muted,
      },
    },
    {
      selector: 'node.artifact',
      style: {
        shape: 'diamond',
        width: 10,
        height: 10,
        'background-color': c.artifact,
        'border-width': 0,
        'font-size': 9,
        color: c.muted,
        'text-background-opacity': 0,
        'z-index': 15,
      },
    },
    { selector: '.hidden', style: { display: 'none' } },
    {
      selector: 'node.band',
      style: {
        shape: 'round-rectangle',
        width: 'data(w)',
        height: 'data(h)',
        'background-color': c.band,
        'background-opacity': 0.5,
        'border-width': 1.5,
        'border-style': 'dashed',
        'border-color': c.bandBorder,
        label: 'data(label)',
        'text-valign': 'top',
        'text-halign': 'center',
        'text-margin-y': 'data(labelY)',
        'font-size': 'data(fontSize)',
        'font-weight': 'bold',
        color: c.muted,
        'text-background-opacity': 0,
        'min-zoomed-font-size': 0,
        'text-wrap': 'none',
        'text-max-width': '4000px',
        events: 'no',
        'z-index': 0,
      },
    },
    { selector: 'node.band.active-band', style: { 'background-opacity': 0.18, 'border-style': 'solid' } },
    {
      selector: 'node.band.drop-target',
      style: { 'background-color': c.drop, 'background-opacity': 0.28, 'border-width': 3, 'border-style': 'solid', 'border-color': c.drop },
    },
    {
      selector: 'node.picked',
      style: {
        'border-width': 4,
        'border-color': c.select,
        'border-style': 'solid',
        'underlay-color': c.select,
        'underlay-padding': 6,
        'underlay-opacity': 0.35,
        opacity: 1,
        'z-index': 30,
      },
    },
    { selector: 'node.hit', style: { 'underlay-color': c.hit, 'underlay-padding': 9, 'underlay-opacity': 0.5, opacity: 1 } },
    { selector: 'node.flash', style: { 'underlay-color': c.flash, 'underlay-padding': 12, 'underlay-opacity': 0.7, opacity: 1 } },
    {
      selector: 'edge',
      style: {
        width: 1.3,
        'line-color': c.edge,
        'curve-style': large ? 'haystack' : 'straight',
        'target-arrow-shape': large ? 'none' : 'triangle',
        'target-arrow-color': c.edge,
        'arrow-scale': 0.7,
        opacity: 0.75,
        'z-index-compare': 'manual',
        'z-index': 10,
      },
    },
    { selector: 'edge.trace', style: { 'line-style': 'dashed', 'line-dash-pattern': [6, 4], 'line-color': c.trace, 'target-arrow-color': c.trace, opacity: 0.6 } },
    { selector: 'edge.dead', style: { 'line-style': 'dotted', opacity: 0.3 } },
    { selector: 'edge.cross', style: { 'line-style': 'dashed', 'line-dash-pattern': [12, 4], 'line-color': c.cross, 'target-arrow-color': c.cross, width: 1.8, opacity: 0.85 } },
    { selector: 'edge.artifact', style: { width: 0.8, 'line-color': c.artifact, 'target-arrow-shape': 'none', opacity: 0.55 } },
    {
      selector: 'edge.labeled',
      style: {
        label: 'data(rel)',
        'font-size': 9,
        color: c.muted,
        'text-rotation': 'autorotate',
        'text-background-color': c.bg,
        'text-background-opacity': 0.8,
        'text-background-padding': '1px',
        width: 2.2,
        opacity: 1,
        'z-index': 25,
      },
    },
    { selector: 'edge.flash', style: { 'line-color': c.flash, 'target-arrow-color': c.flash, width: 3, opacity: 1 } },
  ] as unknown as StylesheetJson;
}

/** A short label: ids can be long. */
const label = (id: string): string => (id.length > 28 ? `${id.slice(0, 27)}…` : id);
const isArtifactRef = (ref: string): boolean => ref.includes('/') || ref.includes('~');

export class GraphView {
  private core: Core;
  nodes = new Map<string, NodeInfo>();
  edges = new Map<string, EdgeInfo>();
  private drawerOpen = false;
  private artifactsShown = true;
  private picked: string | null = null;
  private archiveRect: Rect = { x1: -480, x2: 480, y1: 350, y2: 500 };
  private drawerRect: Rect = { x1: -480, x2: 480, y1: 560, y2: 700 };
  private activeRect: Rect = { x1: -480, x2: 480, y1: -300, y2: 200 };
  private grabbedAt = new Map<string, { x: number; y: number }>();
  private dragZone: Zone | null = null;
  private flashTimer: number | undefined;
  private large = false;
  /** Room for a band's label above its first row (grows with the label's size). */
  private head = BAND_HEAD;
  /** Milliseconds of the last full layout (fcose), for the benchmark. */
  lastLayoutMs = 0;

  constructor(
    private readonly container: HTMLElement,
    private readonly tooltip: HTMLElement,
    private readonly cb: Callbacks,
  ) {
    this.core = this.make(false);
    // Follow the container's size (window resizes, the details panel opening).
    new ResizeObserver(() => this.core.resize()).observe(container);
  }

  get cy(): Core {
    return this.core;
  }

  /**
   * A Cytoscape instance. Large graphs pan and zoom on a cached texture with edges
   * hidden while the viewport moves (renderer options are fixed at creation, so the
   * instance is rebuilt when a load crosses the threshold).
   */
  private make(large: boolean): Core {
    const cy = cytoscape({
      container: this.container,
      style: stylesheet(large),
      minZoom: 0.05,
      maxZoom: 4,
      wheelSensitivity: 0.3,
      boxSelectionEnabled: false,
      autounselectify: true,
      textureOnViewport: large,
      hideEdgesOnViewport: large,
      motionBlur: false,
    });
    this.core = cy;
    this.large = large;
    this.wire();
    return cy;
  }

  /** Re-read theme colours. */
  restyle(): void {
    this.cy.style(stylesheet(this.large));
  }

  private wire(): void {
    const cy = this.cy;
    cy.on('tap', (ev: EventObject) => {
      if (ev.target === cy) this.cb.select(null);
    });
    cy.on('tap', 'node', (ev: EventObject) => {
      const n = ev.target as NodeSingular;
      if (n.hasClass('band')) return;
      this.cb.select(n.id());
    });
    cy.on('grab', 'node', (ev: EventObject) => {
      const n = ev.target as NodeSingular;
      this.grabbedAt.set(n.id(), { ...n.position() });
      this.hideTip();
    });
    cy.on('drag', 'node', (ev: EventObject) => this.dragging(ev.target as NodeSingular));
    cy.on('dragfree', 'node', (ev: EventObject) => void this.dropped(ev.target as NodeSingular));
    cy.on('mouseover', 'node', (ev: EventObject) => this.showTip(ev.target as NodeSingular));
    cy.on('mouseout', 'node', () => this.hideTip());
    cy.on('viewport', () => this.hideTip());
  }

  // ----- tooltips ---------------------------------------------------------------------

  private showTip(n: NodeSingular): void {
    const key = n.id();
    const tip = this.tooltip;
    const info = this.nodes.get(key);
    if (n.hasClass('band')) return;
    tip.replaceChildren();
    const head = document.createElement('strong');
    const body = document.createElement('div');
    if (info) {
      head.textContent = `${info.id} · ${info.level} · ${info.tier}`;
      body.textContent = String(info.node.gist ?? '');
    } else {
      head.textContent = `artifact · ${key.slice(2)}`;
      body.textContent = 'A file or path an edge points at (not a node).';
    }
    tip.append(head, body);
    const p = n.renderedPosition();
    tip.style.left = `${Math.round(this.container.offsetLeft + p.x + 14)}px`;
    tip.style.top = `${Math.round(this.container.offsetTop + p.y + 14)}px`;
    tip.hidden = false;
  }

  private hideTip(): void {
    this.tooltip.hidden = true;
  }

  // ----- dragging -----------------------------------------------------------------------

  zoneAt(y: number): Zone {
    if (y < this.archiveRect.y1) return 'active';
    if (y <= this.archiveRect.y2) return 'archive';
    if (this.drawerOpen && y >= this.drawerRect.y1 && y <= this.drawerRect.y2) return 'drawer';
    return 'none';
  }

  private dropTargetFor(tier: TierName, zone: Zone): string | null {
    if (tier !== 'active' && zone === 'active') return 'band:active';
    if (tier === 'active' && zone === 'archive') return 'band:archive';
    return null;
  }

  private dragging(n: NodeSingular): void {
    const info = this.nodes.get(n.id());
    if (!info) return;
    const zone = this.zoneAt(n.position().y);
    if (zone === this.dragZone) return;
    this.dragZone = zone;
    const target = this.dropTargetFor(info.tier, zone);
    this.cy.batch(() => {
      this.cy.nodes('.band').removeClass('drop-target');
      if (target) this.cy.getElementById(target).addClass('drop-target');
    });
  }

  private snapBack(n: NodeSingular): void {
    const at = this.grabbedAt.get(n.id());
    if (at) n.position(at);
  }

  private async dropped(n: NodeSingular): Promise<void> {
    this.dragZone = null;
    this.cy.nodes('.band').removeClass('drop-target');
    const key = n.id();
    const info = this.nodes.get(key);
    if (!info) return; // an artifact: anywhere is fine
    const zone = this.zoneAt(n.position().y);
    if (info.tier !== 'active' && zone === 'active') {
      const ok = await this.cb.move(key, 'active');
      if (!ok) this.snapBack(n);
      return;
    }
    if (info.tier === 'active' && zone === 'archive') {
      const ok = await this.cb.move(key, 'archived');
      if (!ok) this.snapBack(n);
      else this.placeInBand(n, 'archived');
      return;
    }
    const home: Zone = info.tier === 'active' ? 'active' : info.tier === 'archived' ? 'archive' : 'drawer';
    if (zone !== home) {
      this.snapBack(n);
      if (info.tier === 'orphaned' && zone === 'archive') {
        this.cb.refuse('An orphaned node cannot be archived by hand: drag it to the active area to promote it.');
      } else if (info.tier === 'active' && zone !== 'active') {
        this.cb.refuse('Drop an active node on the ARCHIVED band to archive it.');
      } else if (info.tier === 'archived') {
        this.cb.refuse('Drag an archived node to the active area (above the band) to promote it.');
      }
    }
  }

  // ----- building elements ------------------------------------------------------------

  /** Turn the levels on screen into node and edge infos. */
  private model(levels: LevelData[]): { nodes: Map<string, NodeInfo>; edges: Map<string, EdgeInfo>; artifacts: Set<string> } {
    const nodes = new Map<string, NodeInfo>();
    const ids = new Map<LevelName, Set<string>>();
    for (const l of levels) {
      const set = new Set<string>();
      for (const n of l.nodes) {
        const id = String(n.node.id ?? '');
        set.add(id);
        nodes.set(nodeKey(l.level, id), { key: nodeKey(l.level, id), level: l.level, id, tier: n.tier, node: n.node, why: n.why });
      }
      ids.set(l.level, set);
    }
    const edges = new Map<string, EdgeInfo>();
    const artifacts = new Set<string>();
    for (const l of levels) {
      const other: LevelName = l.level === 'user' ? 'project' : 'user';
      const resolve = (ref: string): { key: string; kind: 'node' | 'cross' | 'artifact' } => {
        if (ids.get(l.level)?.has(ref)) return { key: nodeKey(l.level, ref), kind: 'node' };
        if (!isArtifactRef(ref) && ids.get(other)?.has(ref)) return { key: nodeKey(other, ref), kind: 'cross' };
        return { key: artifactKey(ref), kind: 'artifact' };
      };
      for (const { edge, live } of l.edges) {
        const s = resolve(edge.from);
        const t = resolve(edge.to);
        if (s.kind === 'artifact') artifacts.add(s.key);
        if (t.kind === 'artifact') artifacts.add(t.key);
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
    return { nodes, edges, artifacts };
  }

  private degreeOf(edges: Map<string, EdgeInfo>): Map<string, number> {
    const deg = new Map<string, number>();
    for (const e of edges.values()) {
      if (e.kind === 'dead') continue;
      deg.set(e.source, (deg.get(e.source) ?? 0) + 1);
      deg.set(e.target, (deg.get(e.target) ?? 0) + 1);
    }
    return deg;
  }

  private nodeClasses(info: NodeInfo): string {
    const cls: string[] = [info.level, info.tier];
    if (info.tier === 'orphaned' && !this.drawerOpen) cls.push('hidden');
    if (info.key === this.picked) cls.push('picked');
    return cls.join(' ');
  }

  private size(info: NodeInfo, deg: number): number {
    if (info.tier === 'active') return Math.min(44, 18 + 5 * Math.sqrt(deg));
    return info.tier === 'archived' ? 16 : 14;
  }

  /**
   * Show these levels. `relayout` runs fcose over the active area (first load, a
   * switch of graph, or the Re-layout button); otherwise nodes keep their places and
   * only what changed moves. Returns the keys whose tier or content changed.
   */
  show(levels: LevelData[], relayout: boolean): string[] {
    const { nodes, edges, artifacts } = this.model(levels);
    const deg = this.degreeOf(edges);
    const total = nodes.size + artifacts.size;
    const large = total > LARGE;
    if (large !== this.large && (relayout || large)) {
      this.core.destroy();
      this.make(large);
      relayout = true;
    }
    const cy = this.cy;
    const changed: string[] = [];
    const moved: { key: string; from: TierName | null; to: TierName }[] = [];
    cy.batch(() => {
      if (relayout) {
        cy.elements().remove();
      }
      // Remove what is gone.
      cy.nodes().forEach((n) => {
        const id = n.id();
        if (n.hasClass('band')) return;
        if (id.startsWith('a:') ? !artifacts.has(id) : !nodes.has(id)) n.remove();
      });
      cy.edges().forEach((e) => {
        if (!edges.has(e.id())) e.remove();
      });
      // Add or update nodes.
      const add: ElementDefinition[] = [];
      for (const info of nodes.values()) {
        const el = cy.getElementById(info.key);
        const data = {
          id: info.key,
          label: label(info.id),
          size: this.size(info, deg.get(info.key) ?? 0),
        };
        if (el.empty()) {
          add.push({ group: 'nodes', data, classes: this.nodeClasses(info) });
          if (!relayout) moved.push({ key: info.key, from: null, to: info.tier });
          changed.push(info.key);
        } else {
          const before = this.nodes.get(info.key);
          if (before && before.tier !== info.tier) moved.push({ key: info.key, from: before.tier, to: info.tier });
          if (before && (before.node.gist !== info.node.gist || before.tier !== info.tier || JSON.stringify(before.node) !== JSON.stringify(info.node))) {
            changed.push(info.key);
          }
          el.data(data);
          el.classes(this.nodeClasses(info));
        }
      }
      for (const key of artifacts) {
        if (cy.getElementById(key).empty()) {
          const ref = key.slice(2);
          const base = ref.split('/').filter(Boolean).pop() ?? ref;
          add.push({
            group: 'nodes',
            data: { id: key, label: base.length > 24 ? `${base.slice(0, 23)}…` : base, size: 10 },
            classes: `artifact${this.artifactsShown ? '' : ' hidden'}`,
          });
          if (!relayout) moved.push({ key, from: null, to: 'active' });
        }
      }
      if (add.length) cy.add(add);
      const addEdges: ElementDefinition[] = [];
      for (const e of edges.values()) {
        const el = cy.getElementById(e.key);
        const cls = `${e.kind}${e.kind === 'artifact' && !this.artifactsShown ? ' hidden' : ''}`;
        if (el.empty()) {
          addEdges.push({ group: 'edges', data: { id: e.key, source: e.source, target: e.target, rel: e.edge.rel }, classes: cls });
          if (!relayout) changed.push(e.key);
        } else {
          el.classes(cls);
        }
      }
      if (addEdges.length) cy.add(addEdges);
      this.nodes = nodes;
      this.edges = edges;
    });
    if (relayout) {
      this.layout();
    } else {
      this.place(moved);
    }
    this.markPicked();
    return changed;
  }

  // ----- geometry ---------------------------------------------------------------------

  private activeCollection() {
    return this.cy.nodes('.active').union(this.artifactsShown ? this.cy.nodes('.artifact') : this.cy.collection());
  }

  /** fcose over the active area, then the bands. */
  layout(): void {
    const cy = this.cy;
    const t0 = performance.now();
    const act = this.activeCollection();
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
    if (!this.artifactsShown) this.placeArtifacts();
    this.arrangeBands(true);
    this.lastLayoutMs = performance.now() - t0;
    cy.fit(undefined, 30);
  }

  private placeArtifacts(): void {
    this.cy.batch(() => {
      this.cy.nodes('.artifact').forEach((a) => {
        const owners = a.neighborhood('node').filter((n) => !n.hasClass('artifact'));
        if (owners.empty()) return;
        const o = owners[0].position();
        const angle = (hash(a.id()) % 360) * (Math.PI / 180);
        a.position({ x: o.x + 50 * Math.cos(angle), y: o.y + 50 * Math.sin(angle) });
      });
    });
  }

  private boundsOf(nodes: cytoscape.NodeCollection): Rect | null {
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
  private desiredX(n: NodeSingular, fallback: number): number {
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
  private arrangeBands(regrid: boolean): void {
    const cy = this.cy;
    const archived = cy.nodes('.archived');
    const orphaned = cy.nodes('.orphaned');
    const bb = this.boundsOf(this.activeCollection());
    cy.batch(() => {
      if (regrid) {
        const b = bb ?? { x1: -300, x2: 300, y1: -150, y2: 150 };
        const cx = (b.x1 + b.x2) / 2;
        // Bands as wide as a landscape window wants: fewer rows, everything fits.
        const aspect = Math.max(1, this.container.clientWidth / Math.max(1, this.container.clientHeight));
        const tall = b.y2 - b.y1 + 2 * BAND_PAD + BAND_GAP + this.head * 2 + CELL_H * 3;
        // Many banded nodes: a grid about twice as wide as the window's shape.
        const banded = archived.length + (this.drawerOpen ? orphaned.length : Math.min(orphaned.length, archived.length));
        const gridCols = Math.sqrt((2 * aspect * banded * CELL_H) / CELL_W);
        const width = Math.max(MIN_WIDTH, b.x2 - b.x1 + 2 * BAND_PAD, Math.min(Math.max(tall * aspect * 0.9, gridCols * CELL_W + BAND_PAD), 6000));
        this.head = Math.max(BAND_HEAD, Math.round(bandFont(width) * 1.3 + 20));
        const left = cx - width / 2;
        const cols = Math.max(6, Math.floor((width - 2 * BAND_PAD) / CELL_W));
        this.activeRect = { x1: left, x2: left + width, y1: b.y1 - BAND_PAD - this.head, y2: b.y2 + BAND_PAD };
        const rowsA = Math.max(1, Math.ceil(archived.length / cols));
        const top = this.activeRect.y2 + BAND_GAP;
        this.archiveRect = { x1: left, x2: left + width, y1: top, y2: top + this.head + rowsA * CELL_H + BAND_PAD / 2 };
        const sortedA = archived.toArray().map((n) => ({ n: n as NodeSingular, x: this.desiredX(n as NodeSingular, Infinity) }));
        sortedA.sort((a, b) => a.x - b.x || (a.n.id() < b.n.id() ? -1 : 1));
        this.grid(sortedA.map((s) => s.n), this.archiveRect, rowsA);
        const rowsO = Math.max(1, Math.ceil(orphaned.length / cols));
        const dtop = this.archiveRect.y2 + 70;
        this.drawerRect = { x1: left, x2: left + width, y1: dtop, y2: dtop + this.head + rowsO * CELL_H + BAND_PAD / 2 };
        const sortedO = orphaned.toArray().map((n) => n as NodeSingular);
        sortedO.sort((a, b) => (a.id() < b.id() ? -1 : 1));
        this.grid(sortedO, this.drawerRect, rowsO);
      } else {
        // The archive band grows to hold its nodes; the drawer moves down with it.
        const ab = this.boundsOf(archived);
        if (ab) this.archiveRect.y2 = Math.max(this.archiveRect.y2, ab.y2 + CELL_H / 2 + BAND_PAD / 4);
        const shift = this.archiveRect.y2 + 70 - this.drawerRect.y1;
        if (shift > 0) {
          this.drawerRect.y1 += shift;
          this.drawerRect.y2 += shift;
          orphaned.forEach((n) => {
            const p = n.position();
            n.position({ x: p.x, y: p.y + shift });
          });
        }
        const ob = this.boundsOf(orphaned);
        if (ob) this.drawerRect.y2 = Math.max(this.drawerRect.y2, ob.y2 + CELL_H / 2 + BAND_PAD / 4);
        if (bb) {
          this.activeRect = {
            x1: Math.min(this.activeRect.x1, bb.x1 - BAND_PAD),
            x2: Math.max(this.activeRect.x2, bb.x2 + BAND_PAD),
            y1: Math.min(this.activeRect.y1, bb.y1 - BAND_PAD - this.head),
            y2: Math.min(Math.max(this.activeRect.y2, bb.y2 + BAND_PAD), this.archiveRect.y1 - 20),
          };
        }
      }
      this.frame('band:active', 'active-band', this.activeRect, this.activeLabel());
      this.frame('band:archive', 'archive-band', this.archiveRect, this.archiveLabel());
      this.frame('band:drawer', 'drawer-band', this.drawerRect, this.drawerLabel());
      cy.getElementById('band:drawer').toggleClass('hidden', !this.drawerOpen);
    });
  }

  private counts(): { active: number; archived: number; orphaned: number } {
    const c = { active: 0, archived: 0, orphaned: 0 };
    for (const n of this.nodes.values()) c[n.tier] += 1;
    return c;
  }

  private activeLabel(): string {
    return `ACTIVE (${this.counts().active}) — in every read · drag archived or orphaned nodes here to promote`;
  }
  private archiveLabel(): string {
    return `ARCHIVED (${this.counts().archived}) — faded, reachable through their edges · drop an active node here to archive it`;
  }
  private drawerLabel(): string {
    return `ORPHANED (${this.counts().orphaned}) — out of every read; search still finds them · drag one up to promote`;
  }

  private frame(id: string, cls: string, r: Rect, text: string): void {
    const cy = this.cy;
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
  private grid(nodes: NodeSingular[], r: Rect, rows: number): void {
    nodes.forEach((n, i) => {
      const col = Math.floor(i / rows);
      const row = i % rows;
      n.position({ x: r.x1 + BAND_PAD / 2 + CELL_W / 2 + col * CELL_W, y: r.y1 + this.head + CELL_H / 2 + row * CELL_H });
    });
  }

  /** A free grid cell of a band near `x` (the band grows by a row when full). */
  private freeCell(r: Rect, selector: string, x: number, except: string): { x: number; y: number } {
    const taken = new Set<string>();
    const cols = Math.max(1, Math.floor((r.x2 - r.x1 - BAND_PAD) / CELL_W));
    const rows = Math.max(1, Math.floor((r.y2 - r.y1 - this.head - BAND_PAD / 2) / CELL_H));
    const cell = (c: number, w: number) => ({
      x: r.x1 + BAND_PAD / 2 + CELL_W / 2 + c * CELL_W,
      y: r.y1 + this.head + CELL_H / 2 + w * CELL_H,
    });
    this.cy.nodes(selector).forEach((n) => {
      if (n.id() === except) return;
      const p = n.position();
      const c = Math.round((p.x - r.x1 - BAND_PAD / 2 - CELL_W / 2) / CELL_W);
      const w = Math.round((p.y - r.y1 - this.head - CELL_H / 2) / CELL_H);
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

  private placeInBand(n: NodeSingular, tier: 'archived' | 'orphaned'): void {
    const r = tier === 'archived' ? this.archiveRect : this.drawerRect;
    n.position(this.freeCell(r, `.${tier}`, this.desiredX(n, n.position().x), n.id()));
  }

  /** Place nodes that appeared or changed tier without a full layout. */
  private place(moved: { key: string; from: TierName | null; to: TierName }[]): void {
    const cy = this.cy;
    if (!moved.length) {
      this.arrangeBands(false);
      return;
    }
    cy.batch(() => {
      for (const m of moved) {
        const n = cy.getElementById(m.key) as NodeSingular;
        if (n.empty()) continue;
        if (m.to === 'active') {
          const p = n.position();
          const inActive = m.from !== null && p.y < this.archiveRect.y1;
          if (inActive) continue; // dropped there by hand
          const around = n.neighborhood('node.active');
          const r = this.activeRect;
          let x: number;
          let y: number;
          if (around.nonempty()) {
            const b = this.boundsOf(around) as Rect;
            x = (b.x1 + b.x2) / 2 + (hash(m.key) % 80) - 40;
            y = (b.y1 + b.y2) / 2 + (hash(`${m.key}y`) % 80) - 40;
          } else {
            x = r.x1 + BAND_PAD + (hash(m.key) % Math.max(1, Math.round(r.x2 - r.x1 - 2 * BAND_PAD)));
            y = r.y1 + this.head + BAND_PAD + (hash(`${m.key}y`) % Math.max(1, Math.round(r.y2 - r.y1 - this.head - 2 * BAND_PAD)));
          }
          n.position({ x, y: Math.min(y, this.archiveRect.y1 - BAND_GAP / 2) });
        } else if (m.to === 'archived' || m.to === 'orphaned') {
          const r = m.to === 'archived' ? this.archiveRect : this.drawerRect;
          const p = n.position();
          const inside = m.from === m.to && p.y >= r.y1 && p.y <= r.y2;
          if (!inside) this.placeInBand(n, m.to);
        }
      }
    });
    this.arrangeBands(false);
  }

  // ----- selection, highlight, visibility ---------------------------------------------

  private markPicked(): void {
    this.cy.batch(() => {
      this.cy.elements('.picked').removeClass('picked');
      this.cy.edges('.labeled').removeClass('labeled');
      if (!this.picked) return;
      const n = this.cy.getElementById(this.picked);
      n.addClass('picked');
      n.connectedEdges().addClass('labeled');
    });
  }

  pick(key: string | null): void {
    this.picked = key;
    this.markPicked();
  }

  /** Briefly highlight changed nodes and edges. */
  flash(keys: string[]): void {
    if (!keys.length) return;
    const cy = this.cy;
    cy.batch(() => {
      for (const k of keys) cy.getElementById(k).addClass('flash');
    });
    window.clearTimeout(this.flashTimer);
    this.flashTimer = window.setTimeout(() => cy.elements('.flash').removeClass('flash'), 2600);
  }

  highlight(keys: string[]): void {
    this.cy.batch(() => {
      this.cy.elements('.hit').removeClass('hit');
      for (const k of keys) this.cy.getElementById(k).addClass('hit');
    });
  }

  centre(key: string): void {
    const n = this.cy.getElementById(key);
    if (n.empty()) return;
    this.cy.animate({ center: { eles: n }, zoom: Math.max(this.cy.zoom(), 1.1) }, { duration: 250 });
  }

  setDrawer(open: boolean): void {
    this.drawerOpen = open;
    this.cy.batch(() => {
      this.cy.nodes('.orphaned').toggleClass('hidden', !open);
      this.cy.getElementById('band:drawer').toggleClass('hidden', !open);
    });
    if (open) {
      const visible = this.cy.elements(':visible');
      this.cy.animate({ fit: { eles: visible, padding: 30 } }, { duration: 250 });
    }
  }

  get drawer(): boolean {
    return this.drawerOpen;
  }

  setArtifacts(shown: boolean): void {
    this.artifactsShown = shown;
    this.cy.batch(() => {
      this.cy.elements('.artifact').toggleClass('hidden', !shown);
    });
    if (shown) this.placeArtifacts();
  }

  fit(): void {
    this.cy.fit(this.cy.elements(':visible'), 30);
  }

  // ----- for tests and the benchmark --------------------------------------------------

  /** Page coordinates of a node, or of the centre of a zone. */
  pagePoint(what: { key?: string; zone?: Zone }): { x: number; y: number } | null {
    const box = this.container.getBoundingClientRect();
    if (what.key) {
      const n = this.cy.getElementById(what.key);
      if (n.empty() || !n.visible()) return null;
      const p = n.renderedPosition();
      return { x: box.left + p.x, y: box.top + p.y };
    }
    const r = what.zone === 'archive' ? this.archiveRect : what.zone === 'drawer' ? this.drawerRect : this.activeRect;
    const zoom = this.cy.zoom();
    const pan = this.cy.pan();
    // Aim at an empty spot: just above the archive band for the active zone.
    const y = what.zone === 'active' ? r.y2 - BAND_PAD / 2 : r.y1 + this.head / 2 + 8;
    const x = (r.x1 + r.x2) / 2 + (what.zone === 'active' ? (r.x2 - r.x1) / 4 : 0);
    return { x: box.left + x * zoom + pan.x, y: box.top + y * zoom + pan.y };
  }
}

/** Band label size for a band of this width. */
function bandFont(width: number): number {
  return Math.round(Math.min(64, Math.max(15, width / 75)));
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return Math.abs(h);
}
