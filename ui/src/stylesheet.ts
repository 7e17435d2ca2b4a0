// How the canvas looks: Cytoscape's stylesheet for nodes, edges, labels and the band
// frames, coloured from the theme's CSS variables. Kept apart from graph.ts because it
// is pure data: rebuilt on a theme change or when a load crosses the large-graph size.

import type { StylesheetJson } from 'cytoscape';

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

/** `large` takes the fast paths: haystack edges without arrows. */
export function stylesheet(large: boolean): StylesheetJson {
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
