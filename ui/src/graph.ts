// The canvas: Cytoscape.js, laid out as a grid of labelled nodes grouped by topic.
//
// Three tiers, three places. Active nodes fill the main area (laid out once per
// load); archived nodes sit in their own band below it, faded, with their live
// edges ("memory traces") still drawn to active nodes; orphaned nodes wait in a
// drawer band under that, collapsed until opened. Live updates never re-run the
// layout: changed nodes are placed next to their neighbours or in a free cell of
// their band, and every change is applied in one `cy.batch`.
//
// This module owns what is on the canvas (nodes and edges built from the levels,
// selection, topics, visibility), the viewport (the first picture, zoom steps) and
// the pointer (taps, drags across the bands, hover). Where things go is layout.ts;
// how they look is stylesheet.ts.

import cytoscape from 'cytoscape';
import type { Core, ElementDefinition, EventObject, NodeSingular } from 'cytoscape';
import { DOT_MAX, emptySpotIn, fullLayout, HOME_ZOOM, initialBands, place, placeInBand, VIEW_PAD, zoneAt } from './layout';
import type { Scene, TierChange, Zone } from './layout';
import { LABEL, stylesheet } from './stylesheet';
import { $ } from './dom';
import { colourClass, TopicLegend, topicOf } from './topics';
import type { TopicCount } from './topics';
import type { LevelData, LevelName, StoredEdge, StoredNode, TierName, TierWhy } from './types';

// Cytoscape adds a one-rule <style> element to the page (its container positioned
// relative) unless an element with this id exists. The page's CSP refuses inline
// styles, and `.cy` positions the container itself, so claim the id.
const CYTOSCAPE_STYLE_ID = '__________cytoscape_stylesheet';
if (!document.getElementById(CYTOSCAPE_STYLE_ID)) {
  const marker = document.createElement('meta');
  marker.id = CYTOSCAPE_STYLE_ID;
  document.head.append(marker);
}

export type { Zone } from './layout';

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
  /** Shift-click: add the node to the nodes chosen for a bulk action, or take it out. */
  toggleChosen(key: string): void;
  /** A box drawn with Shift held: these nodes join the chosen ones. */
  chooseBox(keys: string[]): void;
  /** A drag asked for a tier change; resolve false to snap the node back. */
  move(key: string, to: 'active' | 'archived'): Promise<boolean>;
  /** A node was double-clicked: show its neighbourhood. */
  around(key: string): void;
  /** A drop that cannot be honoured (say why). */
  refuse(message: string): void;
}

export const nodeKey = (level: LevelName, id: string): string => `${level === 'user' ? 'u' : 'p'}:${id}`;
export const artifactKey = (ref: string): string => `a:${ref}`;
const edgeKey = (level: LevelName, e: StoredEdge): string =>
  `e:${level === 'user' ? 'u' : 'p'}:${e.from}->${e.to}:${e.rel}`;

/** The part of Cytoscape's canvas renderer (3.x) its own wheel zoom uses. */
interface WheelRenderer {
  data: { wheelZooming: boolean; wheelTimeout?: number };
  redrawHint(what: 'eles', dirty: boolean): void;
  redraw(): void;
}

/** From this many nodes on, drawing takes the fast paths (no arrows, haystack edges, textures while moving). */
const LARGE = 700;

/**
 * What the canvas remembers between events, in one object (as state.ts does for the
 * page). GraphView writes it; the layout (layout.ts) reads it and keeps `bands` in it.
 */
interface Canvas extends Scene {
  cy: Core;
  nodes: Map<string, NodeInfo>;
  edges: Map<string, EdgeInfo>;
  drawerOpen: boolean;
  artifactsShown: boolean;
  picked: string | null;
  /** `cy` was made with the large-graph fast paths. */
  large: boolean;
  /** Where each grabbed node started, to snap it back from a refused drop. */
  grabbedAt: Map<string, { x: number; y: number }>;
  /** The zone under the dragged node: the drop target is redrawn only when it changes. */
  dragZone: Zone | null;
  flashTimer: number | undefined;
  /** Each topic's colour slot: fixed at a full layout, new topics take the next slot. */
  topicSlots: Map<string, number>;
  /** The topic picked in the legend (the others step back), or null for all. */
  onlyTopic: string | null;
  /** The node under the pointer, whose neighbours stand out. */
  hovered: string | null;
}

/** Ids longer than this are cut with an ellipsis on the canvas (the tip and panel show them whole). */
const LABEL_CHARS = 22;
const label = (id: string): string => (id.length > LABEL_CHARS ? `${id.slice(0, LABEL_CHARS - 1)}…` : id);

/** One wheel notch zooms by this factor; a trackpad's small deltas, by their share of it. */
const WHEEL_NOTCH = 1.15;
/** The `+` and `−` buttons and keys zoom by this factor. */
const ZOOM_STEP = 1.25;
/** The first picture never zooms in further than this (a handful of nodes would fill the screen). */
const HOME_MAX_ZOOM = 1.5;
/** Below this zoom active labels would be under 11.5 px: the first picture stays above it and scrolls instead. */
const READABLE_ZOOM = 11.5 / LABEL.size;

export class GraphView {
  private readonly canvas: Canvas;
  private readonly legend: TopicLegend;
  /** Milliseconds of the last full layout, for the benchmark. */
  lastLayoutMs = 0;

  constructor(
    private readonly container: HTMLElement,
    private readonly tooltip: HTMLElement,
    private readonly cb: Callbacks,
  ) {
    this.canvas = {
      cy: this.make(false),
      container,
      nodes: new Map(),
      edges: new Map(),
      drawerOpen: false,
      artifactsShown: true,
      picked: null,
      large: false,
      bands: initialBands(),
      grabbedAt: new Map(),
      dragZone: null,
      flashTimer: undefined,
      topicSlots: new Map(),
      onlyTopic: null,
      hovered: null,
    };
    this.legend = new TopicLegend($('topics'), (topic) => this.showOnly(this.canvas.onlyTopic === topic ? null : topic));
    // Follow the container's size (window resizes, the details panel opening).
    new ResizeObserver(() => this.canvas.cy.resize()).observe(container);
    // Cytoscape's own wheel zoom guesses the device from the first deltas and moves
    // in steps from a few percent to a doubling. Take the wheel before it does (in the
    // capture phase, on the parent: Cytoscape listens on the container itself), so one
    // notch is always one usable step.
    container.parentElement?.addEventListener(
      'wheel',
      (ev) => {
        if (container.contains(ev.target as Node)) this.wheel(ev);
      },
      { capture: true, passive: false },
    );
  }

  get cy(): Core {
    return this.canvas.cy;
  }

  get nodes(): Map<string, NodeInfo> {
    return this.canvas.nodes;
  }

  get edges(): Map<string, EdgeInfo> {
    return this.canvas.edges;
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
      boxSelectionEnabled: true,
      autounselectify: true,
      textureOnViewport: large,
      hideEdgesOnViewport: large,
      motionBlur: false,
    });
    this.wire(cy);
    return cy;
  }

  /** Re-read theme colours. */
  restyle(): void {
    this.cy.style(stylesheet(this.canvas.large));
  }

  private wire(cy: Core): void {
    cy.on('tap', (ev: EventObject) => {
      if (ev.target === cy) this.cb.select(null);
    });
    cy.on('tap', 'node', (ev: EventObject) => {
      const n = ev.target as NodeSingular;
      if (n.hasClass('band')) return;
      if ((ev.originalEvent as MouseEvent | undefined)?.shiftKey) this.cb.toggleChosen(n.id());
      else this.cb.select(n.id());
    });
    // Shift-drag on the background draws a box (Cytoscape's box selection, with nodes
    // left unselectable so its own selection state never competes with ours).
    const boxed: string[] = [];
    cy.on('box', 'node', (ev: EventObject) => {
      const n = ev.target as NodeSingular;
      if (!n.hasClass('band') && this.canvas.nodes.has(n.id()) && n.visible()) boxed.push(n.id());
    });
    cy.on('boxend', () => {
      // 'box' events of the same gesture arrive after 'boxend'; collect them first.
      window.setTimeout(() => {
        if (boxed.length) this.cb.chooseBox(boxed.splice(0));
      }, 0);
    });
    cy.on('dbltap', 'node', (ev: EventObject) => {
      // Two quick shift-clicks choose two nodes; they are not a double-click.
      if ((ev.originalEvent as MouseEvent | undefined)?.shiftKey) return;
      const n = ev.target as NodeSingular;
      if (!n.hasClass('band') && this.canvas.nodes.has(n.id())) this.cb.around(n.id());
    });
    cy.on('grab', 'node', (ev: EventObject) => {
      const n = ev.target as NodeSingular;
      this.canvas.grabbedAt.set(n.id(), { ...n.position() });
      this.hideTip();
    });
    cy.on('drag', 'node', (ev: EventObject) => this.dragging(ev.target as NodeSingular));
    cy.on('dragfree', 'node', (ev: EventObject) => void this.dropped(ev.target as NodeSingular));
    cy.on('mouseover', 'node', (ev: EventObject) => {
      const n = ev.target as NodeSingular;
      if (n.hasClass('band')) return;
      this.showTip(n);
      this.canvas.hovered = n.id();
      this.markFocus();
    });
    cy.on('mouseout', 'node', () => {
      this.hideTip();
      if (this.canvas.hovered === null) return;
      this.canvas.hovered = null;
      this.markFocus();
    });
    cy.on('viewport', () => this.hideTip());
  }

  // ----- tooltips ---------------------------------------------------------------------

  private showTip(n: NodeSingular): void {
    const key = n.id();
    const tip = this.tooltip;
    const info = this.canvas.nodes.get(key);
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
    return zoneAt(this.canvas, y);
  }

  private dropTargetFor(tier: TierName, zone: Zone): string | null {
    if (tier !== 'active' && zone === 'active') return 'band:active';
    if (tier === 'active' && zone === 'archive') return 'band:archive';
    return null;
  }

  private dragging(n: NodeSingular): void {
    const info = this.canvas.nodes.get(n.id());
    if (!info) return;
    const zone = this.zoneAt(n.position().y);
    if (zone === this.canvas.dragZone) return;
    this.canvas.dragZone = zone;
    const target = this.dropTargetFor(info.tier, zone);
    this.cy.batch(() => {
      this.cy.nodes('.band').removeClass('drop-target');
      if (target) this.cy.getElementById(target).addClass('drop-target');
    });
  }

  private snapBack(n: NodeSingular): void {
    const at = this.canvas.grabbedAt.get(n.id());
    if (at) n.position(at);
  }

  private async dropped(n: NodeSingular): Promise<void> {
    this.canvas.dragZone = null;
    this.cy.nodes('.band').removeClass('drop-target');
    const key = n.id();
    const info = this.canvas.nodes.get(key);
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
      else placeInBand(this.canvas, n, 'archived');
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
      // The server says which ends are files; any other end is a node of this level or,
      // when both levels are shown, of the other one.
      const resolve = (ref: string, artifact: boolean): { key: string; kind: 'node' | 'cross' | 'artifact' } => {
        if (ids.get(l.level)?.has(ref)) return { key: nodeKey(l.level, ref), kind: 'node' };
        if (!artifact && ids.get(other)?.has(ref)) return { key: nodeKey(other, ref), kind: 'cross' };
        return { key: artifactKey(ref), kind: 'artifact' };
      };
      for (const { edge, live, from_artifact, to_artifact } of l.edges) {
        const s = resolve(edge.from, from_artifact);
        const t = resolve(edge.to, to_artifact);
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
    const cls: string[] = [info.level, info.tier, colourClass(this.topicSlot(topicOf(info.id)))];
    if (info.tier === 'orphaned' && !this.canvas.drawerOpen) cls.push('hidden');
    if (info.key === this.canvas.picked) cls.push('picked');
    return cls.join(' ');
  }

  /** Dots grow a little with their degree; the label, not the dot, carries the node. */
  private size(info: NodeInfo, deg: number): number {
    if (info.tier === 'active') return Math.min(DOT_MAX, 9 + 1.5 * Math.sqrt(deg));
    return 10;
  }

  // ----- topics ----------------------------------------------------------------------

  private topicSlot(topic: string): number {
    const slots = this.canvas.topicSlots;
    let slot = slots.get(topic);
    if (slot === undefined) {
      slot = slots.size;
      slots.set(topic, slot);
    }
    return slot;
  }

  /** Colour slots by topic size (the biggest topics get the first, most distinct colours). */
  private assignSlots(nodes: Map<string, NodeInfo>): void {
    const counts = new Map<string, number>();
    for (const n of nodes.values()) counts.set(topicOf(n.id), (counts.get(topicOf(n.id)) ?? 0) + 1);
    const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    this.canvas.topicSlots = new Map(ranked.map(([topic], i) => [topic, i]));
  }

  /** The topics on screen, as the legend lists them: by colour slot. */
  topics(): TopicCount[] {
    const counts = new Map<string, number>();
    for (const n of this.canvas.nodes.values()) counts.set(topicOf(n.id), (counts.get(topicOf(n.id)) ?? 0) + 1);
    return [...counts.entries()]
      .map(([topic, count]) => ({ topic, count, slot: this.topicSlot(topic) }))
      .sort((a, b) => a.slot - b.slot);
  }

  /** Show one topic (the others step back in place), or every topic with null. */
  showOnly(topic: string | null): void {
    this.canvas.onlyTopic = topic;
    this.cy.batch(() => {
      this.cy.elements('.off-topic').removeClass('off-topic');
      if (topic === null) return;
      const off = this.cy.nodes().filter((n) => {
        const info = this.canvas.nodes.get(n.id());
        return info !== undefined && topicOf(info.id) !== topic;
      });
      off.addClass('off-topic');
      off.connectedEdges().addClass('off-topic');
    });
    this.legend.render(this.topics(), topic);
  }

  /** Show only these nodes (a neighbourhood) and the edges among them; null shows all. */
  showAround(keys: Set<string> | null): void {
    this.cy.batch(() => {
      this.cy.elements('.off-hood').removeClass('off-hood');
      if (keys === null) return;
      const off = this.cy.nodes().filter((n) => !n.hasClass('band') && !keys.has(n.id()));
      off.addClass('off-hood');
      off.connectedEdges().addClass('off-hood');
    });
  }

  /** The nodes (and files) a neighbourhood leaves on screen, for the test hook. */
  aroundKeys(): string[] {
    return this.cy
      .nodes()
      .filter((n) => !n.hasClass('band') && !n.hasClass('off-hood'))
      .map((n) => n.id());
  }

  get onlyTopic(): string | null {
    return this.canvas.onlyTopic;
  }

  /**
   * Show these levels. `relayout` lays the whole canvas out again (first load, a
   * switch of graph, or the Re-layout button); otherwise nodes keep their places and
   * only what changed moves. Returns the keys whose tier or content changed.
   */
  show(levels: LevelData[], relayout: boolean): string[] {
    const { nodes, edges, artifacts } = this.model(levels);
    const deg = this.degreeOf(edges);
    const total = nodes.size + artifacts.size;
    const large = total > LARGE;
    if (large !== this.canvas.large && (relayout || large)) {
      this.canvas.cy.destroy();
      this.canvas.cy = this.make(large);
      this.canvas.large = large;
      relayout = true;
    }
    const cy = this.cy;
    const changed: string[] = [];
    const moved: TierChange[] = [];
    if (relayout) this.assignSlots(nodes);
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
          topic: topicOf(info.id),
          size: this.size(info, deg.get(info.key) ?? 0),
        };
        if (el.empty()) {
          add.push({ group: 'nodes', data, classes: this.nodeClasses(info) });
          if (!relayout) moved.push({ key: info.key, from: null, to: info.tier });
          changed.push(info.key);
        } else {
          const before = this.canvas.nodes.get(info.key);
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
            data: { id: key, label: label(base), size: 8 },
            classes: `artifact${this.canvas.artifactsShown ? '' : ' hidden'}`,
          });
          if (!relayout) moved.push({ key, from: null, to: 'active' });
        }
      }
      if (add.length) cy.add(add);
      const addEdges: ElementDefinition[] = [];
      for (const e of edges.values()) {
        const el = cy.getElementById(e.key);
        const cls = `${e.kind}${e.kind === 'artifact' && !this.canvas.artifactsShown ? ' hidden' : ''}`;
        if (el.empty()) {
          addEdges.push({ group: 'edges', data: { id: e.key, source: e.source, target: e.target, rel: e.edge.rel }, classes: cls });
          if (!relayout) changed.push(e.key);
        } else {
          el.classes(cls);
        }
      }
      if (addEdges.length) cy.add(addEdges);
      this.canvas.nodes = nodes;
      this.canvas.edges = edges;
    });
    if (relayout) {
      this.layout();
    } else {
      place(this.canvas, moved);
    }
    // Classes were rewritten above: the topic filter and the focus apply again (the
    // filter lapses when its topic is gone).
    const only = this.canvas.onlyTopic;
    this.showOnly(only !== null && this.topics().some((t) => t.topic === only) ? only : null);
    if (this.canvas.hovered && !this.canvas.nodes.has(this.canvas.hovered)) this.canvas.hovered = null;
    this.markFocus();
    return changed;
  }

  /** The grid over the active area, then the bands; the first picture. */
  layout(): void {
    const t0 = performance.now();
    fullLayout(this.canvas);
    this.lastLayoutMs = performance.now() - t0;
    this.home();
  }

  // ----- the viewport -------------------------------------------------------------------

  /**
   * The first picture: everything when it fits with labels readable; otherwise the
   * active band at a readable zoom, from its top (the bands below are a scroll away).
   */
  home(): void {
    const cy = this.cy;
    const w = cy.width() - 2 * VIEW_PAD;
    const h = cy.height() - 2 * VIEW_PAD;
    const all = cy.elements(':visible').boundingBox();
    const fitAll = Math.min(w / all.w, h / all.h);
    if (fitAll >= READABLE_ZOOM) {
      cy.zoom(Math.min(fitAll, HOME_MAX_ZOOM));
      cy.center(cy.elements(':visible'));
      return;
    }
    const band = cy.getElementById('band:active').boundingBox();
    const zoom = Math.max(READABLE_ZOOM, Math.min(w / band.w, h / band.h, HOME_ZOOM));
    cy.zoom(zoom);
    cy.pan({ x: cy.width() / 2 - ((band.x1 + band.x2) / 2) * zoom, y: VIEW_PAD - band.y1 * zoom });
  }

  /** Zoom by `factor` about a point of the canvas (its centre by default). */
  zoomBy(factor: number, at?: { x: number; y: number }): void {
    const cy = this.cy;
    const level = Math.min(cy.maxZoom(), Math.max(cy.minZoom(), cy.zoom() * factor));
    cy.zoom({ level, renderedPosition: at ?? { x: cy.width() / 2, y: cy.height() / 2 } });
  }

  zoomIn(): void {
    this.zoomBy(ZOOM_STEP);
  }

  zoomOut(): void {
    this.zoomBy(1 / ZOOM_STEP);
  }

  private wheel(ev: WheelEvent): void {
    ev.preventDefault();
    ev.stopPropagation();
    if (ev.deltaY === 0) return;
    // A mouse wheel's notch is one event of 50 to 130 pixels (by browser and platform),
    // or of lines or pages: each counts as one step. A trackpad sends many small pixel
    // deltas: each counts as its share of a 100-pixel notch, so the zoom follows the fingers.
    const small = ev.deltaMode === WheelEvent.DOM_DELTA_PIXEL && Math.abs(ev.deltaY) < 50;
    const notches = small ? ev.deltaY / 100 : Math.sign(ev.deltaY);
    const factor = WHEEL_NOTCH ** -notches;
    const box = this.container.getBoundingClientRect();
    if (this.canvas.large) this.drawFromTextureWhileZooming();
    this.zoomBy(factor, { x: ev.clientX - box.left, y: ev.clientY - box.top });
  }

  /**
   * A large graph redrawn in full on every wheel step drops to a few frames a second.
   * Cytoscape's own wheel zoom draws from a snapshot (`textureOnViewport`) while a
   * renderer flag says a wheel zoom is under way, and redraws in full 150 ms after the
   * last event; our steps raise the same flag the same way.
   */
  private drawFromTextureWhileZooming(): void {
    const renderer = (this.cy as unknown as { renderer(): WheelRenderer }).renderer();
    renderer.data.wheelZooming = true;
    clearTimeout(renderer.data.wheelTimeout);
    renderer.data.wheelTimeout = window.setTimeout(() => {
      renderer.data.wheelZooming = false;
      renderer.redrawHint('eles', true);
      renderer.redraw();
    }, 150);
  }

  // ----- selection, highlight, visibility ---------------------------------------------

  /**
   * Mark the picked node, and the node in focus (hovered, else picked): its
   * neighbours and edges stand out, with the edges' relations written on them, and
   * the rest fades (except in a large graph, where restyling every element on each
   * hover would make the pointer lag).
   */
  private markFocus(): void {
    const cy = this.cy;
    cy.batch(() => {
      cy.elements('.picked').removeClass('picked');
      cy.elements('.labeled, .neighbour, .faded').removeClass('labeled neighbour faded');
      if (this.canvas.picked) cy.getElementById(this.canvas.picked).addClass('picked');
      const key = this.canvas.hovered ?? this.canvas.picked;
      const n = key ? cy.getElementById(key) : cy.collection();
      if (n.empty()) return;
      const edges = n.connectedEdges();
      const near = edges.connectedNodes().difference(n);
      edges.addClass('labeled');
      near.addClass('neighbour');
      if (!this.canvas.large) cy.elements().not('.band').difference(n).difference(near).difference(edges).addClass('faded');
    });
  }

  /** Ring the nodes chosen for a bulk action. */
  markChosen(keys: string[]): void {
    const cy = this.cy;
    cy.batch(() => {
      cy.nodes('.chosen').removeClass('chosen');
      for (const k of keys) cy.getElementById(k).addClass('chosen');
    });
  }

  pick(key: string | null): void {
    this.canvas.picked = key;
    this.markFocus();
  }

  /** Briefly highlight changed nodes and edges. */
  flash(keys: string[]): void {
    if (!keys.length) return;
    const cy = this.cy;
    cy.batch(() => {
      for (const k of keys) cy.getElementById(k).addClass('flash');
    });
    window.clearTimeout(this.canvas.flashTimer);
    this.canvas.flashTimer = window.setTimeout(() => cy.elements('.flash').removeClass('flash'), 2600);
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
    this.canvas.drawerOpen = open;
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
    return this.canvas.drawerOpen;
  }

  setArtifacts(shown: boolean): void {
    this.canvas.artifactsShown = shown;
    this.cy.batch(() => {
      this.cy.elements('.artifact').toggleClass('hidden', !shown);
    });
  }

  fit(): void {
    this.cy.fit(this.cy.elements(':visible'), 30);
  }

  // ----- for tests and the benchmark --------------------------------------------------

  /** Where the labels of a tier's visible nodes are drawn, in canvas pixels, and at what size. */
  labelBoxes(tier: TierName): { key: string; text: string; fontPx: number; opacity: number; x1: number; x2: number; y1: number; y2: number }[] {
    const zoom = this.cy.zoom();
    return this.cy
      .nodes(`.${tier}:visible`)
      .toArray()
      .map((n) => {
        const b = n.renderedBoundingBox({ includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false });
        const fontPx = parseFloat(String(n.style('font-size'))) * zoom;
        const text = String(n.style('label') ?? '');
        return { key: n.id(), text, fontPx, opacity: n.effectiveOpacity(), x1: b.x1, x2: b.x2, y1: b.y1, y2: b.y2 };
      });
  }

  /** Every node's model position, by key. */
  positions(): Record<string, { x: number; y: number }> {
    const out: Record<string, { x: number; y: number }> = {};
    this.cy.nodes().forEach((n) => {
      if (!n.hasClass('band')) out[n.id()] = { ...n.position() };
    });
    return out;
  }

  /** Page coordinates of a node, or of the centre of a zone. */
  pagePoint(what: { key?: string; zone?: Zone }): { x: number; y: number } | null {
    const box = this.container.getBoundingClientRect();
    if (what.key) {
      const n = this.cy.getElementById(what.key);
      if (n.empty() || !n.visible()) return null;
      const p = n.renderedPosition();
      return { x: box.left + p.x, y: box.top + p.y };
    }
    const { x, y } = emptySpotIn(this.canvas.bands, what.zone);
    const zoom = this.cy.zoom();
    const pan = this.cy.pan();
    return { x: box.left + x * zoom + pan.x, y: box.top + y * zoom + pan.y };
  }
}

