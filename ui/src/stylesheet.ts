// How the canvas looks: Cytoscape's stylesheet for nodes, edges, labels and the band
// frames, coloured from the theme's CSS variables. Kept apart from graph.ts because it
// is pure data: rebuilt on a theme change or when a load crosses the large-graph size.

import type { StylesheetJson } from 'cytoscape';
import { TOPIC_COLOURS, colourClass } from './topics';

/**
 * Node labels sit to the right of their dot, in this font. The layout measures labels
 * with it to give every label a cell of its own, so the two must agree.
 */
export const LABEL = {
  family: 'system-ui, sans-serif',
  /** Active nodes: 12 px on screen at zoom 1. */
  size: 12,
  /** Archived and orphaned nodes, a little smaller and muted. */
  bandedSize: 11,
  /** Gap between a dot and its label. */
  gap: 5,
};

/**
 * Resolves once the page's stylesheets have loaded: the theme's colours are defined in
 * them. WebKitGTK (the tray app's window) runs the page's module before a pending
 * stylesheet has loaded, unlike Chromium, so a stylesheet built at start-up can miss
 * every colour (grey nodes until the theme is switched): restyle after this.
 */
export function stylesLoaded(): Promise<void> {
  const pending = [...document.querySelectorAll<HTMLLinkElement>('link[rel="stylesheet"]')].filter((link) => !link.sheet);
  const loaded = (link: HTMLLinkElement) =>
    new Promise<void>((done) => {
      link.addEventListener('load', () => done(), { once: true });
      // A sheet that failed stays failed: start with the stand-in colours.
      link.addEventListener('error', () => done(), { once: true });
    });
  return Promise.all(pending.map(loaded)).then(() => undefined);
}

/** Colours of the current theme, read from CSS variables. */
function palette(): Record<string, string> {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string) => css.getPropertyValue(name).trim() || '#888';
  return {
    bg: v('--bg'),
    fg: v('--fg'),
    muted: v('--muted'),
    artifact: v('--c-artifact'),
    edge: v('--c-edge'),
    trace: v('--c-trace'),
    cross: v('--c-cross'),
    select: v('--c-select'),
    flash: v('--c-flash'),
    move: v('--c-move'),
    hit: v('--c-hit'),
    band: v('--c-band'),
    bandBorder: v('--c-band-border'),
    drop: v('--c-drop'),
    topicOther: v('--t-other'),
    ...Object.fromEntries(Array.from({ length: TOPIC_COLOURS }, (_, i) => [`topic${i}`, v(`--t${i}`)])),
  };
}

/** One rule per topic colour slot: the dot's fill and a darker border. */
function topicRules(c: Record<string, string>): StylesheetJson {
  const slots = Array.from({ length: TOPIC_COLOURS + 1 }, (_, i) => i);
  return slots.map((i) => {
    const colour = i < TOPIC_COLOURS ? c[`topic${i}`] : c.topicOther;
    return { selector: `node.${colourClass(i)}`, style: { 'background-color': colour, 'border-color': colour } };
  }) as unknown as StylesheetJson;
}

/**
 * `large` takes the fast paths: haystack edges without arrows, labels without a
 * backdrop. A first draw applies every property to every element (a few microseconds
 * each, times 2,000 nodes and their edges), so Cytoscape's defaults are left unsaid.
 *
 * Stacking is Cytoscape's default order (nodes over edges) with the band frames sunk
 * below everything; `z-index` orders elements within their kind.
 */
export function stylesheet(large: boolean): StylesheetJson {
  const c = palette();
  return [
    {
      selector: 'node',
      style: {
        label: 'data(label)',
        'font-size': LABEL.size,
        'font-family': LABEL.family,
        color: c.fg,
        'text-valign': 'center',
        'text-halign': 'right',
        'text-margin-x': LABEL.gap,
        // Below this many pixels a label is noise: the hover tip still names the node.
        'min-zoomed-font-size': 7,
        // A backdrop lifts labels off the edges; a large graph draws too many of them.
        ...(large ? {} : { 'text-background-color': c.bg, 'text-background-opacity': 0.85, 'text-background-padding': '1px' }),
        width: 'data(size)',
        height: 'data(size)',
        'border-width': 1.5,
        'border-opacity': 0.9,
      },
    },
    // Shape says the level; colour says the topic.
    { selector: 'node.user', style: { shape: 'round-rectangle' } },
    { selector: 'node.project', style: { shape: 'ellipse' } },
    ...topicRules(c),
    {
      selector: 'node.archived',
      style: { 'background-opacity': 0.35, 'border-style': 'dashed', 'font-size': LABEL.bandedSize, color: c.muted },
    },
    {
      selector: 'node.orphaned',
      style: {
        'background-opacity': 0,
        'border-style': 'dotted',
        'border-width': 2,
        'font-size': LABEL.bandedSize,
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
        'font-size': LABEL.bandedSize,
        color: c.muted,
        'z-index': -1,
      },
    },
    // A node of the other level, which is not on screen: hollow, dashed in the cross-level colour.
    {
      selector: 'node.elsewhere',
      style: { 'background-opacity': 0.1, 'border-style': 'dashed', 'border-width': 1.5, 'border-color': c.cross, 'font-size': LABEL.bandedSize, color: c.muted, 'z-index': -1 },
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
        // The title is HTML over the canvas (bandtitles.ts): it keeps its size at every zoom.
        label: '',
        events: 'no',
        'z-compound-depth': 'bottom',
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
        'z-index': 1,
      },
    },
    // Chosen for a bulk action: a ring of the selection colour, whatever else it is.
    { selector: 'node.chosen', style: { 'underlay-color': c.select, 'underlay-padding': 7, 'underlay-opacity': 0.55, 'underlay-shape': 'ellipse', opacity: 1 } },
    { selector: 'node.hit', style: { 'underlay-color': c.hit, 'underlay-padding': 9, 'underlay-opacity': 0.5, opacity: 1 } },
    // A step would move it: ringed, its label its place in the budget's order and its score.
    {
      selector: 'node.moving',
      style: {
        label: 'data(moving)',
        'underlay-color': c.move,
        'underlay-padding': 8,
        'underlay-opacity': 0.6,
        'border-width': 2,
        'border-color': c.move,
        color: c.fg,
        'font-weight': 'bold',
        'text-background-color': c.bg,
        'text-background-opacity': 1,
        'text-background-padding': '2px',
        'text-border-color': c.move,
        'text-border-width': 1,
        'text-border-opacity': 1,
        opacity: 1,
        'z-compound-depth': 'top',
        'z-index': 10,
      },
    },
    { selector: 'node.flash', style: { 'underlay-color': c.flash, 'underlay-padding': 12, 'underlay-opacity': 0.7, opacity: 1 } },
    {
      selector: 'edge',
      style: {
        width: 1.3,
        'line-color': c.edge,
        // Large: Cytoscape's default haystack lines, without arrows.
        ...(large ? {} : { 'curve-style': 'straight', 'target-arrow-shape': 'triangle', 'target-arrow-color': c.edge, 'arrow-scale': 0.7 }),
        // Edges cross the label grid: faint enough to read the labels through.
        opacity: 0.4,
        // Nothing to press or hover on an edge (hovering a node labels its edges): a
        // press on one pans, and the pointer is tested against nodes alone.
        events: 'no',
      },
    },
    { selector: 'edge.trace', style: { 'line-style': 'dashed', 'line-dash-pattern': [6, 4], 'line-color': c.trace, 'target-arrow-color': c.trace, opacity: 0.45 } },
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
        // Above the other edges (every node stays above every edge).
        'z-index': 1,
      },
    },
    { selector: 'edge.flash', style: { 'line-color': c.flash, 'target-arrow-color': c.flash, width: 3, opacity: 1 } },
    // A topic picked in the legend: the others stay in place but step back.
    { selector: 'node.off-topic, node.off-hood', style: { opacity: 0.12, label: '', events: 'no' } },
    { selector: 'edge.off-topic, edge.off-hood', style: { opacity: 0.05 } },
    // Hovering or picking a node: its neighbours and edges stand out, the rest fades.
    { selector: 'node.faded', style: { opacity: 0.3 } },
    { selector: 'edge.faded', style: { opacity: 0.12 } },
    { selector: 'node.neighbour', style: { opacity: 1, 'underlay-color': c.select, 'underlay-padding': 4, 'underlay-opacity': 0.25 } },
  ] as unknown as StylesheetJson;
}
