// The viewport of the canvas: the first picture, zoom steps (buttons, keys, the wheel),
// keeping every node in its place on the page while a side panel opens or closes, and
// the snapshot a large graph pans and zooms from. graph.ts owns what is on the canvas;
// this module only moves the camera.

import type { Core, Position } from 'cytoscape';
import { HOME_ZOOM, VIEW_PAD } from './layout';
import { LABEL } from './stylesheet';

/** The picture a pan or zoom moves (`textureOnViewport`), and the viewport it shows. */
interface ViewportSnapshot {
  texture: HTMLCanvasElement;
  viewport: { zoom: number; pan: Position; width: number; height: number; mpan: Position };
}

/** The parts of Cytoscape's canvas renderer (3.x) the view reaches into. */
interface CanvasRenderer {
  data: {
    /** Set by Cytoscape's own wheel zoom: frames come from a snapshot meanwhile. */
    wheelZooming: boolean;
    wheelTimeout?: number;
    /** The layer textures; until their first use, that use draws every element into them. */
    lyrTxrCache?: { firstGet: boolean };
    /** The canvases on screen, by layer; `NODE` holds the elements. */
    canvases?: HTMLCanvasElement[];
  };
  NODE: number;
  /** The options `textureOnViewport` and `hideEdgesOnViewport`. */
  textureOnViewport: boolean;
  hideEdgesOnViewport: boolean;
  /** Made by the first frame of a gesture when missing; dropped by the next full frame. */
  textureCache: ViewportSnapshot | null;
  /** The viewport of the last frame drawn: what the canvases show. */
  prevViewport?: { zoom: number; pan: Position };
  canvasWidth: number;
  canvasHeight: number;
  redrawHint(what: 'eles', dirty: boolean): void;
  redraw(): void;
}

export const rendererOf = (cy: Core): CanvasRenderer => (cy as unknown as { renderer(): CanvasRenderer }).renderer();

/** One wheel notch zooms by this factor; a trackpad's small deltas, by their share of it. */
const WHEEL_NOTCH = 1.15;
/** The `+` and `−` buttons and keys zoom by this factor. */
const ZOOM_STEP = 1.25;
/** The first picture never zooms in further than this (a handful of nodes would fill the screen). */
const HOME_MAX_ZOOM = 1.5;
/** Below this zoom active labels would be under 11.5 px: the first picture stays above it and scrolls instead. */
const READABLE_ZOOM = 11.5 / LABEL.size;

/** While a side panel narrows the canvas: its width before, the viewport the person left,
 * and the one the view panned to (to show the picked node), if it did. */
interface Narrowed {
  width: number;
  left: { zoom: number; pan: Position };
  shown: { zoom: number; pan: Position } | null;
}

export class Viewport {
  private narrowed: Narrowed | null = null;
  /** Where `snapshotScreen` copies the screen to. */
  private readonly snapshot = document.createElement('canvas');

  constructor(
    private readonly cy: Core,
    private readonly container: HTMLElement,
    /** The canvas takes the large graph's fast paths. */
    private readonly isLarge: () => boolean,
    /** The viewport moved without a Cytoscape event: what follows it follows. */
    private readonly moved: () => void,
  ) {}

  /** Make `change` (opening or closing a side panel) with every node staying where it
   * was on the page. The narrower canvas can wrap the topic bar above it onto another
   * row; a graph that moved down under the pointer would give a double-click's second
   * click to the node above. When the narrower canvas would hide `inSight` (the node the
   * panel shows), the view pans just enough to show it; once the canvas has its width
   * back, a viewport the person has not moved since returns to where they left it. */
  keepingPlace(change: () => void, inSight: string | null = null): void {
    const before = this.container.getBoundingClientRect();
    const cy = this.cy;
    const left = this.viewport();
    change();
    const after = this.container.getBoundingClientRect();
    cy.resize();
    if (before.height > 0 && after.height > 0) cy.panBy({ x: before.left - after.left, y: before.top - after.top });
    const narrowed = this.narrowed;
    if (after.width < before.width - 1 && !narrowed) this.narrowed = { width: before.width, left, shown: null };
    if (inSight && this.bringIntoSight(inSight) && this.narrowed) this.narrowed.shown = this.viewport();
    if (narrowed && after.width >= narrowed.width - 1) {
      const now = this.viewport();
      const untouched = narrowed.shown === null || (now.zoom === narrowed.shown.zoom && Math.hypot(now.pan.x - narrowed.shown.pan.x, now.pan.y - narrowed.shown.pan.y) < 0.5);
      if (untouched && narrowed.shown !== null) cy.viewport({ zoom: narrowed.left.zoom, pan: narrowed.left.pan });
      this.narrowed = null;
    }
    this.moved();
  }

  private viewport(): { zoom: number; pan: Position } {
    return { zoom: this.cy.zoom(), pan: { ...this.cy.pan() } };
  }

  /** Pan the least that shows a node and the start of its label; true when it panned. */
  private bringIntoSight(key: string): boolean {
    const cy = this.cy;
    const n = cy.getElementById(key);
    if (n.empty() || !n.visible()) return false;
    const p = n.renderedPosition();
    // The dot and the start of its label: a long label may run under the panel.
    const reach = n.renderedOuterWidth() / 2 + Math.min(48, String(n.data('label') ?? '').length * LABEL.size * 0.6 * cy.zoom());
    const pad = 2 * VIEW_PAD;
    const dx = p.x - pad < 0 ? pad - p.x : p.x + reach > cy.width() - pad ? cy.width() - pad - reach - p.x : 0;
    const dy = p.y - pad < 0 ? pad - p.y : p.y + pad > cy.height() ? cy.height() - pad - p.y : 0;
    if (dx === 0 && dy === 0) return false;
    cy.panBy({ x: dx, y: dy });
    return true;
  }

  /**
   * The first picture: everything when it fits with labels readable; otherwise the
   * active band at a readable zoom, from its top (the bands below are a scroll away).
   */
  home(): void {
    const cy = this.cy;
    cy.resize(); // the page around the canvas may have changed since the last resize event
    const w = cy.width() - 2 * VIEW_PAD;
    const h = cy.height() - 2 * VIEW_PAD;
    // Every node of a full layout lies in a band: the frames on screen bound the picture
    // (reading it off the frames styles three elements, not all of them, before the
    // first frame).
    const frames = cy.nodes('.band').not('.hidden');
    const all = frames.boundingBox();
    const fitAll = Math.min(w / all.w, h / all.h);
    if (fitAll >= READABLE_ZOOM) {
      cy.zoom(Math.min(fitAll, HOME_MAX_ZOOM));
      cy.center(frames);
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

  wheel(ev: WheelEvent): void {
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
    if (this.isLarge()) this.drawFromTextureWhileZooming();
    this.zoomBy(factor, { x: ev.clientX - box.left, y: ev.clientY - box.top });
  }

  /**
   * Start a pan or zoom of a large graph from the picture on screen. Cytoscape moves a
   * snapshot while the viewport moves, but makes it by drawing every node on screen
   * again, at twice the resolution (a quarter of a second for 2,000 nodes before the
   * first frame moves); a copy of the screen is the same picture, edges included, for
   * one image copy. Cytoscape drops it, as its own, at the next full frame.
   */
  snapshotScreen(): void {
    const r = rendererOf(this.cy);
    const screen = r.data.canvases?.[r.NODE];
    // Cytoscape's internals, as 3.x has them: without them it makes its own snapshot.
    if (r.textureCache || !r.prevViewport || !screen) return;
    const copy = this.snapshot;
    if (copy.width !== screen.width || copy.height !== screen.height) {
      copy.width = screen.width;
      copy.height = screen.height;
    }
    const cxt = copy.getContext('2d') as CanvasRenderingContext2D;
    cxt.clearRect(0, 0, copy.width, copy.height);
    cxt.drawImage(screen, 0, 0);
    const { zoom, pan } = r.prevViewport;
    r.textureCache = {
      texture: copy,
      viewport: { zoom, pan: { ...pan }, width: r.canvasWidth, height: r.canvasHeight, mpan: { x: -pan.x / zoom, y: -pan.y / zoom } },
    };
  }

  /**
   * A large graph redrawn in full on every wheel step drops to a few frames a second.
   * Cytoscape's own wheel zoom draws from a snapshot (`textureOnViewport`) while a
   * renderer flag says a wheel zoom is under way, and redraws in full 150 ms after the
   * last event; our steps raise the same flag the same way.
   */
  private drawFromTextureWhileZooming(): void {
    const renderer = rendererOf(this.cy);
    this.snapshotScreen();
    renderer.data.wheelZooming = true;
    clearTimeout(renderer.data.wheelTimeout);
    renderer.data.wheelTimeout = window.setTimeout(() => {
      renderer.data.wheelZooming = false;
      renderer.redrawHint('eles', true);
      renderer.redraw();
    }, 150);
  }
}
