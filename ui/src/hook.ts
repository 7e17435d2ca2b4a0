// `window.kgView`: what the browser tests and the benchmark read and drive.

import { graph, live } from './app';
import { toggleDrawer } from './gauges';
import type { LiveStatus } from './live';
import { state } from './state';
import type { TierName } from './types';

interface KgViewHook {
  ready: boolean;
  metrics: typeof state.metrics;
  point(what: { key?: string; zone?: 'active' | 'archive' | 'drawer' }): { x: number; y: number } | null;
  tierOf(key: string): TierName | null;
  has(key: string): boolean;
  session(): string | null;
  live(): LiveStatus;
  drawer(open: boolean): void;
  fit(): void;
  /** Read-only: where labels are drawn (canvas pixels), node positions, the zoom. */
  labels(tier: TierName): ReturnType<typeof graph.labelBoxes>;
  positions(): Record<string, { x: number; y: number }>;
  zoom(): number;
  /** The nodes marked as a step would move them, in the budget's order. */
  moving(): { key: string; label: string }[];
  /** The viewport: zoom and pan (rendered pixels). */
  viewport(): { zoom: number; pan: { x: number; y: number } };
  /** The fill colour a node is drawn in. */
  nodeColour(key: string): string;
  /** A canvas element's classes and shape (null when it is not on the canvas). */
  element(key: string): { classes: string[]; shape: string } | null;
  /** The node keys a neighbourhood leaves on screen (every node when none is shown). */
  aroundKeys(): string[];
  /** The node keys chosen for a bulk action. */
  chosen(): string[];
  /** The burst of writes the live messages told of lately: how many written, linked, orphaned. */
  burst(): { written: number; linked: number; orphaned: number } | null;
}

const hooked = (): { kgView: KgViewHook } => window as unknown as { kgView: KgViewHook };

export function installHook(): void {
  hooked().kgView = {
    ready: false,
    metrics: state.metrics,
    point: (what) => graph.pagePoint(what),
    tierOf: (key) => graph.nodes.get(key)?.tier ?? null,
    has: (key) => graph.nodes.has(key),
    session: () => live.session,
    live: () => state.liveStatus,
    drawer: (open) => toggleDrawer(open),
    fit: () => graph.fit(),
    labels: (tier) => graph.labelBoxes(tier),
    positions: () => graph.positions(),
    zoom: () => graph.cy.zoom(),
    moving: () => graph.moving(),
    viewport: () => ({ zoom: graph.cy.zoom(), pan: { ...graph.cy.pan() } }),
    nodeColour: (key) => String(graph.cy.getElementById(key).style('background-color')),
    element: (key) => {
      const n = graph.cy.getElementById(key);
      return n.empty() ? null : { classes: n.classes(), shape: String(n.style('shape')) };
    },
    aroundKeys: () => graph.aroundKeys(),
    chosen: () => [...state.chosen],
    burst: () => (state.burst ? { written: state.burst.written.size, linked: state.burst.linked.size, orphaned: state.burst.orphaned.size } : null),
  };
}

/** The levels on screen are drawn (set after every refresh). */
export function markReady(): void {
  hooked().kgView.ready = true;
}
