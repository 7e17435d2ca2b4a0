// The canvas: Cytoscape.js, laid out as a grid of labelled nodes grouped by topic.
//
// Three tiers, three places. Active nodes fill the main area (laid out once per
// load); archived nodes sit in their own band below it, faded, with their live
// edges ("memory traces") still drawn to active nodes; orphaned nodes wait in a
// drawer band under that, off the canvas until it is opened. Live updates never
// re-run the layout: changed nodes are placed next to their neighbours or in a free
// cell of their band, and every change is applied in one `cy.batch`.
//
// Drawing 2,000 nodes costs Cytoscape a style and a bounding box per element before
// the first frame: a full layout is computed from the model first, and only what the
// first picture shows is created then; the rest follows once that picture is on
// screen (BENCHMARKS.md, "Graph view: first draw").
//
// This module owns what is on the canvas (nodes and edges built from the levels,
// selection, topics, visibility), the viewport (the first picture, zoom steps) and
// the pointer (taps, drags across the bands, hover). Where things go is layout.ts;
// how they look is stylesheet.ts.

import cytoscape from 'cytoscape';
import type { Core, ElementDefinition, EventObject, NodeSingular, Position } from 'cytoscape';
import { BandTitles, type BandName } from './bandtitles';
import { arrangeBands, DOT_MAX, drawerCells, emptySpotIn, followTitles, fullLayout, initialBands, place, placeInBand, VIEW_PAD, zoneAt } from './layout';
import { copyBands, forgetPicture, pictureId, readPicture, savePicture, type Picture, type SavedSpot } from './picture';
import type { LayoutItem, Scene, TierChange, Zone } from './layout';
import { LABEL, stylesheet } from './stylesheet';
import { rendererOf, Viewport } from './viewport';
import { buildModel, degreeOf, isFile, LABEL_CHARS, levelOfKey, outsideLabel } from './graphmodel';
import type { EdgeInfo, NodeInfo } from './graphmodel';

import { $ } from './dom';
import { claimSlot, colourClass, TOPIC_COLOURS, TopicLegend, topicOf } from './topics';
import type { TopicCount } from './topics';
import type { LevelData, TierName } from './types';

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

/** From this many nodes on, drawing takes the fast paths (no arrows, haystack edges, textures while moving). */
const LARGE = 700;

/** Run `fn` once the next frame is on screen. */
const afterNextFrame = (fn: () => void): void => {
  requestAnimationFrame(() => requestAnimationFrame(() => window.setTimeout(fn, 0)));
};

/**
 * For the benchmark: a performance mark once a full layout's last elements are drawn
 * (the frame after they join the canvas styles them all).
 */
const markDrawn = (): void => afterNextFrame(() => performance.mark('kg-view: graph complete'));

/**
 * What the canvas remembers between events, in one object (as state.ts does for the
 * page). GraphView writes it; the layout (layout.ts) reads it and keeps `bands` in it.
 */
interface Canvas extends Scene {
  readonly cy: Core;
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
  /** The files edges point at, by key (nodes of their own on the canvas). */
  artifacts: Set<string>;
  /** The neighbourhood on screen (the keys it keeps), or null for the whole graph. */
  around: Set<string> | null;
  /** Search hits and the nodes chosen for a bulk action, ringed. */
  hits: string[];
  chosen: string[];
  /** The nodes a step would move, while the person decides (markMoving). */
  moving: { key: string; label: string }[];
  /**
   * Elements of the last full layout not on the canvas yet, in batches that join it a
   * frame apart (the nodes off screen and the edges that reach them), and that
   * layout's number.
   */
  waiting: ElementDefinition[][];
  layouts: number;
  /** Which graph is on screen, for its saved picture (picture.ts). */
  pictureId: string | null;
  saveTimer: number | undefined;
}

export class GraphView {
  private readonly canvas: Canvas;
  private readonly legend: TopicLegend;
  private readonly view: Viewport;
  /** Milliseconds of the last full layout, for the benchmark. */
  lastLayoutMs = 0;

  constructor(
    private readonly container: HTMLElement,
    private readonly tooltip: HTMLElement,
    private readonly cb: Callbacks,
  ) {
    this.canvas = {
      cy: this.make(),
      container,
      nodes: new Map(),
      edges: new Map(),
      drawerOpen: false,
      artifactsShown: true,
      picked: null,
      large: false,
      bands: initialBands(),
      titles: new BandTitles(container, (band) => this.reveal(band)),
      grabbedAt: new Map(),
      dragZone: null,
      flashTimer: undefined,
      topicSlots: new Map(),
      onlyTopic: null,
      hovered: null,
      artifacts: new Set(),
      around: null,
      hits: [],
      chosen: [],
      moving: [],
      waiting: [],
      layouts: 0,
      pictureId: null,
      saveTimer: undefined,
    };
    this.view = new Viewport(this.canvas.cy, container, () => this.canvas.large, () => followTitles(this.canvas));
    this.legend = new TopicLegend($('topics'), (topic) => this.showOnly(this.canvas.onlyTopic === topic ? null : topic));
    // Follow the container's size (window resizes, the details panel opening).
    new ResizeObserver(() => {
      this.canvas.cy.resize();
      followTitles(this.canvas);
    }).observe(container);
    // Cytoscape's own wheel zoom guesses the device from the first deltas and moves
    // in steps from a few percent to a doubling. Take the wheel before it does (in the
    // capture phase, on the parent: Cytoscape listens on the container itself), so one
    // notch is always one usable step.
    container.parentElement?.addEventListener(
      'wheel',
      (ev) => {
        if (container.contains(ev.target as Node)) this.view.wheel(ev);
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

  /** The Cytoscape instance, set up for a small graph (`drawAll` switches it for a large one). */
  private make(): Core {
    const cy = cytoscape({
      container: this.container,
      style: stylesheet(false),
      minZoom: 0.05,
      maxZoom: 4,
      boxSelectionEnabled: true,
      autounselectify: true,
      motionBlur: false,
    });
    this.wire(cy);
    // Cytoscape's first frame paints every element, on screen or not, into its layer
    // textures before showing any (about a second for 2,000 nodes and their edges, in
    // software). Later frames draw what is on screen and fill the layers a few elements
    // at a time: make the first frame one of those. (These are Cytoscape's internals:
    // where a version lacks them, the view draws as Cytoscape does by itself.)
    const layers = rendererOf(cy).data.lyrTxrCache;
    if (layers) layers.firstGet = false;
    return cy;
  }

  /**
   * Take the fast paths for a large graph, or leave them: its stylesheet, and frames
   * that pan and zoom a snapshot of the screen (`textureOnViewport`) with edges hidden
   * while the view animates. The renderer reads both options on every frame.
   */
  private setLarge(large: boolean): void {
    const r = rendererOf(this.cy);
    r.textureOnViewport = large;
    r.hideEdgesOnViewport = large;
    this.canvas.large = large;
    this.cy.style(stylesheet(large));
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
      this.settle(); // a drop finds free cells among every node
      const n = ev.target as NodeSingular;
      this.canvas.grabbedAt.set(n.id(), { ...n.position() });
      this.hideTip();
    });
    cy.on('drag', 'node', (ev: EventObject) => this.dragging(ev.target as NodeSingular));
    cy.on('dragfree', 'node', (ev: EventObject) => {
      const n = ev.target as NodeSingular;
      void this.dropped(n).finally(() => {
        this.canvas.grabbedAt.delete(n.id());
        this.savePictureSoon();
      });
    });
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
    cy.on('viewport', () => {
      this.hideTip();
      followTitles(this.canvas);
    });
    // A press on the background that moves pans the view (edges take no events), unless
    // Shift (or Ctrl, or Cmd) makes it draw a box.
    let pans = false;
    cy.on('tapstart', (ev: EventObject) => {
      const e = ev.originalEvent as MouseEvent | undefined;
      pans = ev.target === cy && !(e?.shiftKey || e?.ctrlKey || e?.metaKey);
    });
    cy.on('tapdrag', () => {
      if (pans && this.canvas.large) this.view.snapshotScreen();
    });
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
    } else if (isFile(key)) {
      head.textContent = `file · ${key.slice(2)}`;
      body.textContent = 'A file or path an edge points at (not a node).';
    } else {
      head.textContent = `${key.slice(2)} · ${levelOfKey(key)} level`;
      body.textContent = `A node of the ${levelOfKey(key)} graph, linked from here: tick “both levels” to see it with its own links.`;
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

  private nodeClasses(info: NodeInfo): string {
    const cls: string[] = [info.level, info.tier, colourClass(this.topicSlot(topicOf(info.id)))];
    if (info.key === this.canvas.picked) cls.push('picked');
    return cls.join(' ');
  }

  /**
   * Orphans stay off the canvas while the drawer is closed: 1,700 of them would cost
   * their styles and bounds on every full draw without being seen.
   */
  private onCanvas(key: string, nodes = this.canvas.nodes, outside = this.canvas.artifacts): boolean {
    const info = nodes.get(key);
    return info === undefined ? outside.has(key) : info.tier !== 'orphaned' || this.canvas.drawerOpen;
  }


  private nodeData(info: NodeInfo, deg: Map<string, number>): ElementDefinition['data'] {
    return { id: info.key, label: info.label, topic: topicOf(info.id), size: this.size(info, deg.get(info.key) ?? 0) };
  }

  private nodeElement(info: NodeInfo, deg: Map<string, number>): ElementDefinition {
    return { group: 'nodes', data: this.nodeData(info, deg), classes: this.nodeClasses(info) };
  }

  private artifactElement(key: string): ElementDefinition {
    if (!isFile(key)) {
      // A node of the other level, not shown: its level's shape, hollow, its id beside it.
      return { group: 'nodes', data: { id: key, label: outsideLabel(key), size: 10 }, classes: `outside elsewhere ${levelOfKey(key)}` };
    }
    return { group: 'nodes', data: { id: key, label: outsideLabel(key), size: 8 }, classes: `outside artifact${this.canvas.artifactsShown ? '' : ' hidden'}` };
  }

  private edgeClasses(e: EdgeInfo): string {
    return `${e.kind}${e.kind === 'artifact' && !this.canvas.artifactsShown ? ' hidden' : ''}`;
  }

  private edgeElement(e: EdgeInfo): ElementDefinition {
    return { group: 'edges', data: { id: e.key, source: e.source, target: e.target, rel: e.edge.rel }, classes: this.edgeClasses(e) };
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
      slot = claimSlot(topic, new Set(slots.values()));
      slots.set(topic, slot);
    }
    return slot;
  }

  /** Colour slots by topic size: the biggest topics claim theirs first (see claimSlot), after those a saved picture gives. */
  private assignSlots(nodes: Map<string, NodeInfo>, saved?: Map<string, number>): void {
    const counts = new Map<string, number>();
    for (const n of nodes.values()) counts.set(topicOf(n.id), (counts.get(topicOf(n.id)) ?? 0) + 1);
    const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    // The topics' colours saved with the picture stay theirs; new topics claim the rest.
    const slots = new Map<string, number>([...(saved ?? [])].filter(([topic]) => counts.has(topic)));
    const taken = new Set<number>([...slots.values()].filter((slot) => slot < TOPIC_COLOURS));
    for (const [topic] of ranked) {
      if (slots.has(topic)) continue;
      const slot = claimSlot(topic, taken);
      slots.set(topic, slot);
      if (slot < TOPIC_COLOURS) taken.add(slot);
    }
    this.canvas.topicSlots = slots;
  }

  /** The topics on screen, as the legend lists them: the biggest first. */
  topics(): TopicCount[] {
    const counts = new Map<string, number>();
    for (const n of this.canvas.nodes.values()) counts.set(topicOf(n.id), (counts.get(topicOf(n.id)) ?? 0) + 1);
    return [...counts.entries()]
      .map(([topic, count]) => ({ topic, count, slot: this.topicSlot(topic) }))
      .sort((a, b) => b.count - a.count || (a.topic < b.topic ? -1 : 1));
  }

  /** Show one topic (the others step back in place), or every topic with null. */
  showOnly(topic: string | null): void {
    this.canvas.onlyTopic = topic;
    this.markTopic();
    this.legend.render(this.topics(), topic);
  }

  private markTopic(): void {
    const topic = this.canvas.onlyTopic;
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
  }

  /** Show only these nodes (a neighbourhood) and the edges among them; null shows all. */
  showAround(keys: Set<string> | null): void {
    this.canvas.around = keys;
    this.cy.batch(() => {
      this.cy.elements('.off-hood').removeClass('off-hood');
      if (keys === null) return;
      const off = this.cy.nodes().filter((n) => !n.hasClass('band') && !keys.has(n.id()));
      off.addClass('off-hood');
      off.connectedEdges().addClass('off-hood');
    });
  }

  /** The nodes (and files) a neighbourhood leaves on screen (orphans too, drawer open or not), for the test hook. */
  aroundKeys(): string[] {
    const all = [...this.canvas.nodes.keys(), ...this.canvas.artifacts];
    const around = this.canvas.around;
    return around ? all.filter((k) => around.has(k)) : all;
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
    const { nodes, edges, outside: artifacts } = buildModel(levels);
    const id = pictureId(levels);
    const sameGraph = id === this.canvas.pictureId;
    if (!sameGraph) relayout = true;
    this.canvas.pictureId = id;
    const large = nodes.size + artifacts.size > LARGE;
    if (large !== this.canvas.large && (relayout || large)) relayout = true;
    // Changed for a person: new, another tier, or a field of its own (the `_` fields
    // are bookkeeping: a compaction marks the nodes it weighed and kept).
    const own = (node: object): string => JSON.stringify(Object.entries(node).filter(([k]) => !k.startsWith('_')));
    const changed: string[] = [];
    for (const info of nodes.values()) {
      const before = this.canvas.nodes.get(info.key);
      if (!before || before.tier !== info.tier || own(before.node) !== own(info.node)) changed.push(info.key);
    }
    if (!relayout) for (const key of edges.keys()) if (!this.canvas.edges.has(key)) changed.push(key);
    // A graph laid out again (the Re-layout button) keeps its topics' colours.
    if (relayout) this.drawAll(nodes, edges, artifacts, large, readPicture(id), sameGraph ? this.canvas.topicSlots : undefined);
    else this.update(nodes, edges, artifacts);
    this.savePictureSoon();
    // Classes were rewritten or made anew: the marks go back on.
    if (this.canvas.hovered && !this.canvas.nodes.has(this.canvas.hovered)) this.canvas.hovered = null;
    this.reapplyMarks();
    return changed;
  }

  /** Take the new model; the topic filter lapses when its topic is gone, and the legend follows. */
  private adopt(nodes: Map<string, NodeInfo>, edges: Map<string, EdgeInfo>, artifacts: Set<string>): void {
    this.canvas.nodes = nodes;
    this.canvas.edges = edges;
    this.canvas.artifacts = artifacts;
    const only = this.canvas.onlyTopic;
    if (only !== null && !this.topics().some((t) => t.topic === only)) this.canvas.onlyTopic = null;
    this.legend.render(this.topics(), this.canvas.onlyTopic);
  }

  /**
   * A full layout: everything is placed from the model, then created in place. The
   * first picture is the nodes on screen, with their labels and the edges between
   * them; the rest (the nodes off screen and every edge that reaches one) joins the
   * canvas in the next frame.
   */
  private drawAll(nodes: Map<string, NodeInfo>, edges: Map<string, EdgeInfo>, artifacts: Set<string>, large: boolean, saved: Picture | null, slots?: Map<string, number>): void {
    const cy = this.cy;
    cy.elements().remove();
    if (large !== this.canvas.large) this.setLarge(large);
    this.assignSlots(nodes, saved?.slots ?? slots);
    // The legend goes up first: the first picture is chosen for the canvas's height under it.
    this.adopt(nodes, edges, artifacts);
    const t0 = performance.now();
    const at = fullLayout(this.canvas, this.layoutItems(), this.activeNeighbours());
    // The saved picture wins over the fresh layout; what it does not know yet is placed
    // among it as a live change would be.
    const unsaved = saved ? this.takeSaved(saved, at) : [];
    this.lastLayoutMs = performance.now() - t0;
    this.home();
    const deg = degreeOf(edges);
    const placed = (def: ElementDefinition): ElementDefinition => ({ ...def, position: at.get(String(def.data.id)) });
    const nodeDefs = [...nodes.values()].filter((n) => this.onCanvas(n.key)).map((n) => placed(this.nodeElement(n, deg)));
    for (const key of artifacts) nodeDefs.push(placed(this.artifactElement(key)));
    const edgeList = [...edges.values()].filter((e) => this.onCanvas(e.source) && this.onCanvas(e.target));
    const shown = this.inFirstPicture(nodeDefs);
    const now: ElementDefinition[] = [];
    const offScreen: ElementDefinition[] = [];
    for (const def of nodeDefs) (shown.has(String(def.data.id)) ? now : offScreen).push(def);
    for (const e of edgeList) (shown.has(e.source) && shown.has(e.target) ? now : offScreen).push(this.edgeElement(e));
    if (unsaved.length) {
      // Placing them finds free cells among every node: all join the canvas at once.
      cy.batch(() => cy.add([...now, ...offScreen]));
      place(this.canvas, unsaved);
      return;
    }
    cy.batch(() => cy.add(now));
    this.addLater([offScreen]);
  }

  /**
   * Put the saved picture's bands and positions into a fresh layout's `at`; returns the
   * nodes and files it has no place for (new since, or in another tier now).
   */
  private takeSaved(saved: Picture, at: Map<string, Position>): TierChange[] {
    const bands = this.canvas.bands;
    Object.assign(bands, copyBands(saved.bands));
    const unsaved: TierChange[] = [];
    const orphans: { key: string }[] = [];
    for (const key of at.keys()) {
      const info = this.canvas.nodes.get(key);
      const tier = info ? info.tier : 'artifact';
      if (tier === 'orphaned') {
        orphans.push({ key });
        continue;
      }
      const spot = saved.spots.get(key);
      if (spot && spot.tier === tier) at.set(key, { x: spot.x, y: spot.y });
      else unsaved.push({ key, from: null, to: tier === 'artifact' ? 'active' : tier });
    }
    for (const [key, p] of drawerCells(this.canvas, orphans)) at.set(key, p);
    arrangeBands(this.canvas);
    return unsaved;
  }

  /** The picture on screen: where every node and file sits, the bands, the topics' colours. */
  picture(): Picture | null {
    const id = this.canvas.pictureId;
    if (id === null) return null;
    this.settle();
    const spots = new Map<string, SavedSpot>();
    this.cy.nodes().forEach((n) => {
      if (n.hasClass('band')) return;
      const tier = n.hasClass('outside') ? 'artifact' : n.hasClass('active') ? 'active' : n.hasClass('archived') ? 'archived' : null;
      // A node held or being dropped is where it was grabbed, in the picture.
      if (tier) spots.set(n.id(), { ...(this.canvas.grabbedAt.get(n.id()) ?? n.position()), tier });
    });
    return { graph: id, bands: copyBands(this.canvas.bands), spots, slots: new Map(this.canvas.topicSlots) };
  }

  /** Put nodes back where a picture of this graph had them (an undone step): each node
   * in the tier it had then returns to its place. */
  restorePicture(p: Picture): void {
    if (p.graph !== this.canvas.pictureId) return;
    this.settle();
    Object.assign(this.canvas.bands, copyBands(p.bands));
    this.cy.batch(() => {
      this.cy.nodes().forEach((n) => {
        const spot = p.spots.get(n.id());
        const tier = n.hasClass('outside') ? 'artifact' : n.hasClass('active') ? 'active' : 'archived';
        if (spot && spot.tier === tier && !n.hasClass('orphaned')) n.position({ x: spot.x, y: spot.y });
      });
    });
    arrangeBands(this.canvas);
    this.savePictureSoon();
  }

  /** Forget where the nodes of the graph on screen sit: the next full draw lays it out
   * afresh, its topics keeping their colours (the Re-layout button). */
  forgetPicture(): void {
    window.clearTimeout(this.canvas.saveTimer);
    if (this.canvas.pictureId) forgetPicture(this.canvas.pictureId);
  }

  /** Save the picture once a burst of changes is over. */
  private savePictureSoon(): void {
    window.clearTimeout(this.canvas.saveTimer);
    this.canvas.saveTimer = window.setTimeout(() => {
      const p = this.picture();
      if (p) savePicture(p);
    }, 300);
  }

  /**
   * The nodes the first picture shows: those whose dot or label is on screen.
   * Cytoscape styles and measures every element before the frame that first draws it
   * (a quarter of a millisecond each in software): the stress graph's first screen
   * holds about 300 nodes and 220 edges between them. An edge to a node off screen
   * comes with that node (Cytoscape draws an edge only with both its ends on the
   * canvas; taking in both ends of every edge that crossed the screen made the first
   * picture 1,100 nodes and 1,600 edges).
   */
  private inFirstPicture(nodeDefs: ElementDefinition[]): Set<string> {
    const ext = this.cy.extent();
    // A label runs right of its dot: a dot this far left of the screen may still show one.
    const reach = DOT_MAX + LABEL.gap + LABEL.size * LABEL_CHARS;
    const box = { x1: ext.x1 - reach, x2: ext.x2 + DOT_MAX, y1: ext.y1 - LABEL.size, y2: ext.y2 + LABEL.size };
    const inside = (p: Position | undefined): boolean => !!p && p.x >= box.x1 && p.x <= box.x2 && p.y >= box.y1 && p.y <= box.y2;
    const onScreen = new Set<string>();
    for (const def of nodeDefs) if (inside(def.position)) onScreen.add(String(def.data.id));
    return onScreen;
  }

  /**
   * Add these batches of elements once the first picture is on screen (it is drawn in
   * the next frame), one batch a frame, unless a newer full layout came first.
   */
  private addLater(batches: ElementDefinition[][]): void {
    const canvas = this.canvas;
    canvas.waiting = batches.filter((defs) => defs.length);
    const layout = ++canvas.layouts;
    const next = (): void => {
      if (layout !== canvas.layouts || !canvas.waiting.length) return;
      const defs = canvas.waiting.shift() ?? [];
      this.cy.batch(() => this.cy.add(defs));
      this.reapplyMarks();
      if (canvas.waiting.length) afterNextFrame(next);
      else markDrawn();
    };
    if (!canvas.waiting.length) return markDrawn();
    afterNextFrame(next);
  }

  /** Put the elements still waiting onto the canvas now: whatever needs the whole graph asks first. */
  private settle(): void {
    if (!this.canvas.waiting.length) return;
    const defs = this.canvas.waiting.flat();
    this.canvas.waiting = [];
    this.cy.batch(() => this.cy.add(defs));
    this.reapplyMarks();
    markDrawn();
  }

  /** What the full layout needs to know of each node and file. */
  private layoutItems(): LayoutItem[] {
    const items: LayoutItem[] = [...this.canvas.nodes.values()].map((n) => ({ key: n.key, tier: n.tier, topic: topicOf(n.id), label: n.label }));
    for (const key of this.canvas.artifacts) items.push({ key, tier: 'artifact', topic: '', label: outsideLabel(key) });
    return items;
  }

  /** Each node's active neighbours, for the archived band (its nodes sit under theirs). */
  private activeNeighbours(): (key: string) => string[] {
    const near = new Map<string, Set<string>>();
    const link = (from: string, to: string): void => {
      if (this.canvas.nodes.get(to)?.tier !== 'active') return;
      const set = near.get(from) ?? new Set<string>();
      set.add(to);
      near.set(from, set);
    };
    for (const e of this.canvas.edges.values()) {
      link(e.source, e.target);
      link(e.target, e.source);
    }
    return (key) => [...(near.get(key) ?? [])];
  }

  /** A live change: nodes keep their places and only what changed moves. */
  private update(nodes: Map<string, NodeInfo>, edges: Map<string, EdgeInfo>, artifacts: Set<string>): void {
    this.settle();
    const cy = this.cy;
    const deg = degreeOf(edges);
    const moved: TierChange[] = [];
    const before = this.canvas.nodes;
    cy.batch(() => {
      // Remove what is gone, and nodes gone into the closed drawer (their edges go with them).
      cy.nodes().forEach((n) => {
        const id = n.id();
        if (n.hasClass('band')) return;
        if (!this.onCanvas(id, nodes, artifacts)) n.remove();
      });
      cy.edges().forEach((e) => {
        if (!edges.has(e.id())) e.remove();
      });
      // Add or update nodes.
      const add: ElementDefinition[] = [];
      for (const info of nodes.values()) {
        if (!this.onCanvas(info.key, nodes)) continue;
        const el = cy.getElementById(info.key);
        const was = before.get(info.key);
        if (el.empty()) {
          add.push(this.nodeElement(info, deg));
          moved.push({ key: info.key, from: null, to: info.tier });
        } else {
          if (was && was.tier !== info.tier) moved.push({ key: info.key, from: was.tier, to: info.tier });
          el.data(this.nodeData(info, deg));
          el.classes(this.nodeClasses(info));
        }
      }
      for (const key of artifacts) {
        if (!cy.getElementById(key).empty()) continue;
        add.push(this.artifactElement(key));
        moved.push({ key, from: null, to: 'active' });
      }
      if (add.length) cy.add(add);
      const addEdges: ElementDefinition[] = [];
      for (const e of edges.values()) {
        if (!this.onCanvas(e.source, nodes, artifacts) || !this.onCanvas(e.target, nodes, artifacts)) continue;
        const el = cy.getElementById(e.key);
        if (el.empty()) addEdges.push(this.edgeElement(e));
        else el.classes(this.edgeClasses(e));
      }
      if (addEdges.length) cy.add(addEdges);
    });
    this.adopt(nodes, edges, artifacts);
    // Only what changed moves, however many: a person keeps their place in a graph by
    // position (a step's holes stay until the Re-layout button packs the graph again).
    place(this.canvas, moved);
  }

  // ----- the viewport (viewport.ts) ------------------------------------------------------

  /** See Viewport.keepingPlace: a side panel opens or closes with every node in its place. */
  keepingPlace(change: () => void, inSight: string | null = null): void {
    this.view.keepingPlace(change, inSight);
  }

  /** Scroll a band below the bottom edge into view (its top at least; whole if it fits). */
  private reveal(band: BandName): void {
    const cy = this.cy;
    const r = band === 'archive' ? this.canvas.bands.archive : this.canvas.bands.drawer;
    const zoom = cy.zoom();
    const top = r.y1 * zoom + cy.pan().y;
    const tall = (r.y2 - r.y1) * zoom;
    const to = Math.max(VIEW_PAD, cy.height() - tall - VIEW_PAD);
    cy.animate({ panBy: { x: 0, y: to - top } }, { duration: 250 });
  }

  /** The first picture of a full layout. */
  home(): void {
    this.view.home();
  }

  zoomIn(): void {
    this.view.zoomIn();
  }

  zoomOut(): void {
    this.view.zoomOut();
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
    this.canvas.chosen = keys;
    this.ring('chosen', keys);
  }

  /** Give `cls` to these nodes only. */
  private ring(cls: string, keys: string[]): void {
    const cy = this.cy;
    cy.batch(() => {
      cy.nodes(`.${cls}`).removeClass(cls);
      for (const k of keys) cy.getElementById(k).addClass(cls);
    });
  }

  /** Put every mark the canvas remembers back on its elements, after classes were rewritten or elements added. */
  private reapplyMarks(): void {
    this.markTopic();
    this.showAround(this.canvas.around);
    this.ring('hit', this.canvas.hits);
    this.ring('chosen', this.canvas.chosen);
    this.markMoving(this.canvas.moving);
    this.markFocus();
  }

  pick(key: string | null): void {
    this.canvas.picked = key;
    this.markFocus();
  }

  /** Briefly highlight changed nodes and edges. */
  flash(keys: string[]): void {
    if (!keys.length) return;
    this.settle();
    const cy = this.cy;
    cy.batch(() => {
      for (const k of keys) cy.getElementById(k).addClass('flash');
    });
    window.clearTimeout(this.canvas.flashTimer);
    this.canvas.flashTimer = window.setTimeout(() => cy.elements('.flash').removeClass('flash'), 2600);
  }

  /** Mark the nodes a step would move, each labelled with its place in the budget's
   * order and its score (none: take the marks off). */
  markMoving(marks: { key: string; label: string }[]): void {
    this.canvas.moving = marks;
    const cy = this.cy;
    cy.batch(() => {
      cy.nodes('.moving').removeClass('moving');
      for (const m of marks) cy.getElementById(m.key).data('moving', m.label).addClass('moving');
    });
  }

  /** The nodes marked as a step would move them, for the test hook. */
  moving(): { key: string; label: string }[] {
    return this.canvas.moving;
  }

  highlight(keys: string[]): void {
    this.canvas.hits = keys;
    this.ring('hit', keys);
  }

  centre(key: string): void {
    this.settle();
    const n = this.cy.getElementById(key);
    if (n.empty()) return;
    this.cy.animate({ center: { eles: n }, zoom: Math.max(this.cy.zoom(), 1.1) }, { duration: 250 });
  }

  /** Open the orphan drawer (its nodes and their edges join the canvas) or close it (they leave). */
  setDrawer(open: boolean): void {
    this.settle();
    const cy = this.cy;
    if (open !== this.canvas.drawerOpen) {
      this.canvas.drawerOpen = open;
      if (open) {
        const deg = degreeOf(this.canvas.edges);
        const orphans = [...this.canvas.nodes.values()].filter((n) => n.tier === 'orphaned');
        const edges = [...this.canvas.edges.values()].filter(
          (e) => cy.getElementById(e.key).empty() && this.onCanvas(e.source) && this.onCanvas(e.target),
        );
        const at = drawerCells(this.canvas, orphans);
        cy.batch(() => {
          cy.add([...orphans.map((n) => ({ ...this.nodeElement(n, deg), position: at.get(n.key) })), ...edges.map((e) => this.edgeElement(e))]);
        });
        arrangeBands(this.canvas);
        this.reapplyMarks();
      } else {
        cy.batch(() => {
          cy.nodes('.orphaned').remove();
          cy.getElementById('band:drawer').addClass('hidden');
        });
        followTitles(this.canvas);
      }
    }
    if (open) {
      const visible = this.cy.elements(':visible');
      this.cy.animate({ fit: { eles: visible, padding: 30 } }, { duration: 250 });
    }
  }

  get drawer(): boolean {
    return this.canvas.drawerOpen;
  }

  setArtifacts(shown: boolean): void {
    this.settle();
    this.canvas.artifactsShown = shown;
    this.cy.batch(() => {
      this.cy.elements('.artifact').toggleClass('hidden', !shown);
    });
  }

  fit(): void {
    this.settle();
    this.cy.fit(this.cy.elements(':visible'), 30);
  }

  // ----- for tests and the benchmark --------------------------------------------------

  /** Where the labels of a tier's visible nodes are drawn, in canvas pixels, and at what size. */
  labelBoxes(tier: TierName): { key: string; text: string; fontPx: number; opacity: number; x1: number; x2: number; y1: number; y2: number }[] {
    this.settle();
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
    this.settle();
    const out: Record<string, { x: number; y: number }> = {};
    this.cy.nodes().forEach((n) => {
      if (!n.hasClass('band')) out[n.id()] = { ...n.position() };
    });
    return out;
  }

  /** Page coordinates of a node, or of the centre of a zone. */
  pagePoint(what: { key?: string; zone?: Zone }): { x: number; y: number } | null {
    this.settle();
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

