// Loading: which graph is on screen (the URL's hash, the selector), fetching its levels
// and drawing them, and coalescing bursts of live changes into one refresh.

import { api, ApiError } from './api';
import { graph, live } from './app';
import { $, h, toast } from './dom';
import { scheduleActivity } from './activity';
import { renderBanners } from './banners';
import { pruneChosen } from './bulk';
import { renderLevels } from './gauges';
import { markReady } from './hook';
import { renderList } from './list';
import { showAll, showAround } from './neighbourhood';
import { renderPanel, select } from './panel';
import { onScreen, state } from './state';
import type { Debt, GraphRow, LevelData } from './types';

// ----- the graph on screen: hash and selector ----------------------------------------------------

/** Read the graph the URL names; false when it names none (the view then opens where
 * the person works: `openWhereWorking`). */
export function readHash(): boolean {
  const params = new URLSearchParams(location.hash.slice(1));
  state.project = params.get('project') || null;
  state.both = params.get('both') === '1';
  return state.project !== null || params.get('graph') === 'user';
}

/** Name the graph on screen in the URL (`#graph=user` for the user graph, so a reload
 * stays on it). */
export function writeHash(): void {
  const params = new URLSearchParams();
  if (state.project) params.set('project', state.project);
  else params.set('graph', 'user');
  if (state.both) params.set('both', '1');
  history.replaceState(null, '', `#${params.toString()}`);
}

/** Put a graph on screen (the user graph for null; `both` levels with a project), named
 * in the URL and the picker; the caller loads it (`refresh(true)`). */
export function chooseGraph(project: string | null, both: boolean): void {
  state.project = project;
  state.both = both && project !== null;
  state.loaded = false;
  writeHash();
  renderSelector();
}

const LAST_GRAPH = 'kg-view:last-graph';

/** Remember the graph on screen as the last one looked at. */
function rememberGraph(): void {
  try {
    localStorage.setItem(LAST_GRAPH, state.project ? `p:${state.project}` : 'user');
  } catch {
    /* storage refused: the next visit opens on the recent session's project */
  }
}

/**
 * Open where the person works: the project of the session used last, else the last
 * graph looked at in this browser, else the user graph. Needs the graph list.
 */
export function openWhereWorking(): void {
  const openable = (path: string | null | undefined): path is string => !!path && state.graphs.some((g) => g.project_path === path);
  let last: string | null = null;
  try {
    last = localStorage.getItem(LAST_GRAPH);
  } catch {
    /* no storage: no last graph */
  }
  const lastProject = last?.startsWith('p:') ? last.slice(2) : null;
  state.project = openable(state.recentProject) ? state.recentProject : openable(lastProject) ? lastProject : null;
  state.both = false;
  writeHash();
}

export async function loadGraphs(): Promise<void> {
  try {
    const list = await api.graphs();
    state.graphs = list.graphs;
    state.recentProject = list.recent_project;
  } catch (e) {
    toast(`Cannot list the graphs: ${(e as Error).message}`, 'error');
    return;
  }
  renderSelector();
}

/** The button beside the picker: the user graph one click away from a project, and
 * back to the project of the recent session from the user graph. */
function renderSwitch(): void {
  const button = $<HTMLButtonElement>('switch-graph');
  const back = state.recentProject && state.graphs.some((g) => g.project_path === state.recentProject) ? state.recentProject : null;
  if (state.project) {
    button.textContent = 'User graph';
    button.title = 'Show the user graph: what you taught across every project';
    button.dataset.to = 'user';
  } else if (back) {
    const row = state.graphs.find((g) => g.project_path === back);
    button.textContent = `← ${row?.graph ?? back}`;
    button.title = `Back to ${back}, the project of the last session`;
    button.dataset.to = `p:${back}`;
  }
  button.hidden = !state.project && !back;
}

/** Reload the graph list once a burst of changes is over. */
export function scheduleGraphs(): void {
  window.clearTimeout(state.refresh.graphsTimer);
  state.refresh.graphsTimer = window.setTimeout(() => void loadGraphs(), 1500);
}

const debtText = (d: Debt | null): string =>
  d
    ? `DEBT ${d.level} ${d.score}${d.merge_conflicts ? ` · merged with conflicts: ${d.merge_conflicts}` : ''}${d.held_back ? ` · held back from sync: ${d.held_back}` : ''}`
    : 'DEBT ?';

export function renderSelector(): void {
  const select = $<HTMLSelectElement>('graph-select');
  select.replaceChildren();
  for (const row of state.graphs) {
    const c = row.counts;
    // The name and the counts first: a narrow window cuts the end of the line. An empty
    // graph has nothing to owe: its line says so instead of "DEBT LOW".
    const counts = c.active + c.archived + c.orphaned === 0 ? 'empty' : `${c.active}/${c.archived}/${c.orphaned} · ${debtText(row.debt)}`;
    // Its banner says more once it is on screen.
    const about = row.damaged ? `damaged file moved aside · ${counts}` : counts;
    if (row.level === 'user') {
      select.append(h('option', { value: 'user', text: `User graph · ${about}` }));
    } else {
      const label = `${row.graph} · ${about}`;
      select.append(
        h('option', {
          value: row.project_path ? `p:${row.project_path}` : `x:${row.graph}`,
          text: row.project_path ? label : `${label} (no recorded path)`,
          title: row.project_path ?? 'This graph file records no project path, so it cannot be opened here',
          disabled: !row.project_path,
        }),
      );
    }
  }
  const current = state.project ? `p:${state.project}` : 'user';
  if (state.project && ![...select.options].some((o) => o.value === current)) {
    select.append(h('option', { value: current, text: state.project }));
  }
  select.value = current;
  select.title = `${select.selectedOptions[0]?.text ?? ''}\n(nodes active / archived / orphaned, and the maintenance debt)`;
  renderSwitch();
  const both = $<HTMLInputElement>('both-levels');
  both.disabled = !state.project;
  both.checked = state.both && !!state.project;
}

// ----- the levels on screen ----------------------------------------------------------------------

/** An empty graph says how it fills; an empty memory (no graph has a node) says how
 * to connect Claude Code, the one step a new user still has to take. */
function renderEmpty(): void {
  const empty = $('empty');
  const none = graph.nodes.size === 0;
  empty.hidden = !none;
  if (!none) {
    empty.replaceChildren();
    return;
  }
  const size = (g: GraphRow) => g.counts.active + g.counts.archived + g.counts.orphaned;
  // A level that lost its file is not a new one: the banner above says what happened.
  const damaged = onScreen().some((l) => state.levels[l]?.damaged);
  if (!damaged && state.graphs.every((g) => size(g) === 0)) {
    empty.replaceChildren(
      h('h2', { text: 'No memories yet' }),
      h('p', { text: 'KG Memory fills up as your coding agents work. Connect them once, in a terminal:' }),
      h('pre', {}, h('code', { text: 'kg-memory setup' })),
      h('p', { text: 'It finds the agents installed here (Claude Code, Codex CLI, Gemini CLI, Claude Desktop) and asks before wiring each; for Claude Code alone, “Connect Claude Code…” in the tray menu does the same. Then start a session in a project folder: what the agent learns appears here as it writes it.' }),
    );
    empty.classList.add('first-run');
    return;
  }
  empty.classList.remove('first-run');
  empty.replaceChildren(
    h('p', {
      text: damaged
        ? 'This graph is empty because its file was damaged and moved aside, with no backup to load (see the message above).'
        : 'This graph has no nodes yet. Create one with “+ Node”, or let an agent capture what it learns (kg_put_node).',
    }),
  );
}

/** A project that cannot be opened (moved, outside this HOME): show the user graph. */
function fallBackToUser(): void {
  state.project = null;
  state.both = false;
  writeHash();
  renderSelector();
  live.connect(null);
  window.setTimeout(() => void refresh(true), 0);
}

/** Draw fetched levels: the graph (flashing what changed), the cards, the panel. */
async function showLevels(fetched: LevelData[], relayout: boolean, flash: string[]): Promise<void> {
  const metrics = state.metrics;
  state.levels = {};
  for (const l of fetched) state.levels[l.level] = l;
  const changed = graph.show(fetched, relayout || !state.loaded);
  const first = !state.loaded;
  state.loaded = true;
  if (!relayout && !first) graph.flash([...new Set([...changed, ...flash])]);
  else if (flash.length) graph.flash(flash);
  if (state.picked && !graph.nodes.has(state.picked)) select(null);
  // A neighbourhood on screen follows the graph: asked again, or ended with its centre.
  if (state.around) {
    if (graph.nodes.has(state.around.key)) void showAround(state.around.key, state.around.k);
    else showAll();
  }
  renderLevels();
  renderPanel(false);
  renderEmpty();
  renderBanners();
  pruneChosen();
  renderList();
  scheduleActivity();
  // At first the picker's list loads beside the levels, but a damaged file is found by
  // loading its level: the list read before it would not say so.
  if (!first || fetched.some((l) => l.damaged)) scheduleGraphs();
  if (first || relayout) {
    metrics.layoutMs = graph.lastLayoutMs;
    metrics.nodes = graph.nodes.size;
    metrics.edges = graph.edges.size;
    await new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())));
    if (first) metrics.firstDrawMs = performance.now();
  }
  markReady();
}

/** Fetch the levels on screen and show them (a full layout when `relayout`). */
export async function refresh(relayout = false, flash: string[] = []): Promise<void> {
  if (state.refresh.running) await state.refresh.running.catch(() => undefined);
  const run = (async () => {
    const t0 = performance.now();
    const wanted = onScreen();
    let fetched: LevelData[];
    try {
      fetched = await Promise.all(wanted.map((l) => api.level(l, state.project)));
    } catch (e) {
      const msg = e instanceof ApiError ? e.detail : String(e);
      toast(`Cannot load the graph: ${msg}`, 'error');
      if (!state.loaded && state.project) fallBackToUser();
      return;
    }
    state.metrics.fetchMs = performance.now() - t0;
    state.levelsHead = Math.min(...fetched.map((l) => l.change_head));
    rememberGraph();
    await showLevels(fetched, relayout, flash);
    catchUpWithLive();
  })();
  state.refresh.running = run;
  await run;
  state.refresh.running = null;
}

/** The levels on screen were read before the live connection began: changes made in
 * between came neither in that answer nor over /ws, so read the levels again. */
export function catchUpWithLive(): void {
  const head = live.changeHead;
  if (head !== null && state.levelsHead !== null && state.levelsHead < head) scheduleRefresh([]);
}

/** Coalesce bursts of live changes into one refresh. */
export function scheduleRefresh(keys: string[]): void {
  const pending = state.refresh;
  for (const k of keys) pending.pendingFlash.add(k);
  window.clearTimeout(pending.timer);
  pending.timer = window.setTimeout(() => {
    const keysNow = [...pending.pendingFlash];
    pending.pendingFlash = new Set();
    void refresh(false, keysNow);
  }, 150);
}
