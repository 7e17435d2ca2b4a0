// KG Memory's graph view. It talks to the server only through REST (`/api/…`) and
// the live WebSocket (`/ws`), on the page's own origin, so the same page runs in the
// tray app's window and in any browser.

import './styles.css';
import { api, ApiError, type Address } from './api';
import { $, chars, fmt, h, isTyping, lines, listOf, toast, when } from './dom';
import { GraphView, nodeKey, type NodeInfo } from './graph';
import { Live, type LiveStatus } from './live';
import type { Debt, GraphRow, LevelData, LevelName, LiveMessage, SearchHit, TierMoveAnswer, TierName } from './types';

const SCAN_LIMIT = 300;

interface LastMove {
  level: LevelName;
  id: string;
  from: TierName;
  to: TierName;
  projectPath: string | null;
}

const state = {
  graphs: [] as GraphRow[],
  /** The project on screen (its recorded path), or null for the user graph alone. */
  project: null as string | null,
  both: false,
  levels: {} as Partial<Record<LevelName, LevelData>>,
  picked: null as string | null,
  lastMove: null as LastMove | null,
  ownMoveAt: 0,
  liveStatus: 'connecting' as LiveStatus,
  loaded: false,
};

const metrics = { firstDrawMs: 0, layoutMs: 0, fetchMs: 0, nodes: 0, edges: 0 };

// ----- wiring --------------------------------------------------------------------------

const graph = new GraphView($('cy'), $('tip'), {
  select: (key) => select(key),
  move: (key, to) => moveTier(key, to),
  refuse: (m) => toast(m, 'error'),
});

const live = new Live(onLive, onLiveStatus);

const onScreen = (): LevelName[] => (state.project ? (state.both ? ['user', 'project'] : ['project']) : ['user']);

const address = (level: LevelName): Address => ({
  level,
  projectPath: level === 'project' ? (state.levels.project?.project_path ?? state.project) : null,
  session: live.session,
});

// ----- loading ---------------------------------------------------------------------------

function readHash(): void {
  const params = new URLSearchParams(location.hash.slice(1));
  state.project = params.get('project') || null;
  state.both = params.get('both') === '1';
}

function writeHash(): void {
  const params = new URLSearchParams();
  if (state.project) params.set('project', state.project);
  if (state.both) params.set('both', '1');
  const text = params.toString();
  history.replaceState(null, '', text ? `#${text}` : location.pathname);
}

async function loadGraphs(): Promise<void> {
  try {
    state.graphs = (await api.graphs()).graphs;
  } catch (e) {
    toast(`Cannot list the graphs: ${(e as Error).message}`, 'error');
    return;
  }
  renderSelector();
}

const debtText = (d: Debt | null): string => (d ? `DEBT ${d.level} (${d.score})` : 'DEBT ?');

function renderSelector(): void {
  const select = $<HTMLSelectElement>('graph-select');
  select.replaceChildren();
  for (const row of state.graphs) {
    const c = row.counts;
    const tiers = `${c.active}/${c.archived}/${c.orphaned}`;
    if (row.level === 'user') {
      select.append(h('option', { value: 'user', text: `User graph — ${debtText(row.debt)} · ${tiers}` }));
    } else {
      const label = `Project ${row.graph} — ${debtText(row.debt)} · ${tiers}`;
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
    select.append(h('option', { value: current, text: `Project ${state.project}` }));
  }
  select.value = current;
  const both = $<HTMLInputElement>('both-levels');
  both.disabled = !state.project;
  both.checked = state.both && !!state.project;
}

let refreshing: Promise<void> | null = null;
let pendingFlash = new Set<string>();
let refreshTimer: number | undefined;

/** Fetch the levels on screen and show them (a full layout when `relayout`). */
async function refresh(relayout = false, flash: string[] = []): Promise<void> {
  if (refreshing) await refreshing.catch(() => undefined);
  const run = (async () => {
    const t0 = performance.now();
    const wanted = onScreen();
    let fetched: LevelData[];
    try {
      fetched = await Promise.all(wanted.map((l) => api.level(l, state.project)));
    } catch (e) {
      const msg = e instanceof ApiError ? e.detail : String(e);
      toast(`Cannot load the graph: ${msg}`, 'error');
      if (!state.loaded && state.project) {
        // A project that cannot be opened (moved, outside this HOME): show the user graph.
        state.project = null;
        state.both = false;
        writeHash();
        renderSelector();
        live.connect(null);
        window.setTimeout(() => void refresh(true), 0);
      }
      return;
    }
    metrics.fetchMs = performance.now() - t0;
    state.levels = {};
    for (const l of fetched) state.levels[l.level] = l;
    const changed = graph.show(fetched, relayout || !state.loaded);
    const first = !state.loaded;
    state.loaded = true;
    if (!relayout && !first) graph.flash([...new Set([...changed, ...flash])]);
    else if (flash.length) graph.flash(flash);
    if (state.picked && !graph.nodes.has(state.picked)) select(null);
    renderLevels();
    renderPanel(false);
    renderEmpty();
    if (!first) scheduleGraphs();
    if (first || relayout) {
      metrics.layoutMs = graph.lastLayoutMs;
      metrics.nodes = graph.nodes.size;
      metrics.edges = graph.edges.size;
      await new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())));
      if (first) metrics.firstDrawMs = performance.now();
    }
    (window as unknown as { kgView: KgViewHook }).kgView.ready = true;
  })();
  refreshing = run;
  await run;
  refreshing = null;
}

/** Coalesce bursts of live changes into one refresh. */
function scheduleRefresh(keys: string[]): void {
  for (const k of keys) pendingFlash.add(k);
  window.clearTimeout(refreshTimer);
  refreshTimer = window.setTimeout(() => {
    const keysNow = [...pendingFlash];
    pendingFlash = new Set();
    void refresh(false, keysNow);
  }, 150);
}

function renderEmpty(): void {
  const empty = $('empty');
  const none = graph.nodes.size === 0;
  empty.hidden = !none;
  empty.textContent = none
    ? 'This graph has no nodes yet. Create one with “+ Node”, or let an agent capture what it learns (kg_put_node).'
    : '';
}

// ----- level cards: budget gauge, DEBT and HEALTH -------------------------------------------

const projected: Partial<Record<LevelName, number>> = {};

function gauge(l: LevelData): HTMLElement {
  const b = l.budget;
  const extra = projected[l.level] ?? 0;
  const after = b.chars + extra;
  const scale = Math.max(b.budget, b.chars, after) * 1.04;
  const pct = (x: number) => `${Math.max(0, Math.min(100, (100 * x) / scale)).toFixed(2)}%`;
  const state_ =
    b.state === 'over'
      ? 'over the budget: the next write or tick archives the lowest-scored nodes'
      : b.state === 'under_fill'
        ? 'under the fill line: refill may bring archived nodes back'
        : 'between the fill line and the budget: nothing moves';
  const bar = h(
    'div',
    { class: 'gauge-bar' },
    h('div', { class: 'gauge-fill', style: `width:${pct(Math.min(b.chars, after))}` }),
    extra !== 0
      ? h('div', {
          class: 'gauge-projected',
          style: `left:${pct(Math.min(b.chars, after))};width:${pct(Math.abs(extra))}`,
          title: `this edit: ${extra > 0 ? '+' : ''}${extra} characters`,
        })
      : null,
    h('div', { class: 'gauge-mark fill', style: `left:${pct(b.fill_line)}`, title: `fill line ${fmt(b.fill_line)} (${b.fill_ratio} × budget)` }),
    h('div', { class: 'gauge-mark', style: `left:${pct(b.budget)}`, title: `budget ${fmt(b.budget)}` }),
  );
  return h(
    'div',
    {
      class: `gauge${b.chars > b.budget ? ' over' : ''}`,
      role: 'meter',
      'aria-valuemin': 0,
      'aria-valuemax': b.budget,
      'aria-valuenow': b.chars,
      'aria-label': `${l.level} level rendered size`,
      'data-level': l.level,
    },
    bar,
    h(
      'div',
      { class: 'gauge-text' },
      h('strong', { text: fmt(b.chars) }),
      ` / ${fmt(b.budget)} chars rendered · fill line ${fmt(b.fill_line)} (${b.fill_ratio})`,
      extra !== 0 ? h('div', { text: `this edit: ${extra > 0 ? '+' : ''}${extra} → ${fmt(after)}` }) : null,
      h('div', { text: `${state_}. Archived anchors: ${fmt(b.anchor_chars)} / ${fmt(b.anchor_budget)}.` }),
    ),
  );
}

function debtBadge(d: Debt): HTMLElement {
  const num = (x: number | undefined, digits = 2) => (x === undefined ? '?' : x.toFixed(digits));
  return h(
    'span',
    { class: `badge debt-${d.level}`, tabindex: 0, 'aria-label': `Maintenance debt ${d.level}, score ${d.score}` },
    `DEBT ${d.level} ${d.score}`,
    h(
      'span',
      { class: 'factors', role: 'tooltip' },
      h('strong', { text: 'Maintenance debt' }),
      h(
        'dl',
        {},
        h('dt', { text: 'score' }),
        h('dd', { text: `${d.score} → ${d.level} (HIGH ≥ 0.5, MED ≥ 0.3)` }),
        h('dt', { text: 'staleness' }),
        h('dd', { text: `${num(d.staleness)} = min(1, ${d.never_maintained ? 'never maintained → 14' : `${d.untended_days} days`} / 14)` }),
        h('dt', { text: 'activity' }),
        h('dd', { text: `${num(d.activity)} = min(1, ${d.active_days_7d} active days of 7 / 4)` }),
        h('dt', { text: 'deficit' }),
        h('dd', {
          text: `${num(d.deficit, 3)} = (${d.oversized_gists} oversized + 0.5 × ${d.unconnected_active} unconnected) / ${d.active_nodes} active`,
        }),
      ),
      h('code', { text: 'score = staleness × (0.4 + 0.6 × activity) × (0.25 + 0.75 × min(1, deficit))' }),
      d.line ? h('div', { class: 'small muted', text: d.line }) : null,
    ),
  );
}

function healthBadge(l: LevelData): HTMLElement {
  const x = l.health;
  return h(
    'span',
    { class: 'badge health', tabindex: 0, 'aria-label': x.line },
    `HEALTH ${x.nodes}n · ${x.edges}e · ${x.orphan_pct}% unlinked`,
    h(
      'span',
      { class: 'factors', role: 'tooltip' },
      h('strong', { text: 'Health of the rendered graph' }),
      h(
        'dl',
        {},
        h('dt', { text: 'nodes' }),
        h('dd', { text: `${x.nodes} rendered (active)` }),
        h('dt', { text: 'edges' }),
        h('dd', { text: `${x.edges} live edges cited` }),
        h('dt', { text: 'unlinked' }),
        h('dd', { text: `${x.orphans} active nodes with no cited edge (${x.orphan_pct}%)` }),
        h('dt', { text: 'avg' }),
        h('dd', { text: `${x.avg_edges} edges per node` }),
      ),
      h('div', { class: 'small muted', text: x.line }),
    ),
  );
}

function renderLevels(): void {
  const side = $('levels');
  side.replaceChildren();
  for (const level of onScreen()) {
    const l = state.levels[level];
    if (!l) continue;
    const title = level === 'user' ? 'User graph' : `Project ${l.graph}`;
    const items = l.debt_items;
    const list = h(
      'ul',
      { class: 'debt-list', 'aria-label': `${title}: maintenance debt items` },
      items.map((it) =>
        h(
          'li',
          {},
          h('span', { class: 'kind', text: it.kind === 'oversized' ? `oversized (${it.gist_chars})` : 'unconnected' }),
          h('button', {
            class: 'link',
            text: it.id,
            title: it.kind === 'oversized' ? 'Gist over the 300-character scan limit: shorten it, move detail to notes' : 'No edge touches this active node: connect it',
            onclick: () => focusNode(nodeKey(level, it.id)),
          }),
        ),
      ),
    );
    side.append(
      h(
        'section',
        { class: 'card', 'aria-label': title, 'data-level': level },
        h('h2', {}, h('i', { class: `sw sw-${level}`, 'aria-hidden': 'true' }), title),
        l.project_path ? h('div', { class: 'path', text: l.project_path }) : null,
        h(
          'div',
          { class: 'counts' },
          h('span', { text: `● ${l.counts.active} active` }),
          h('span', { text: `◌ ${l.counts.archived} archived` }),
          h('span', { text: `○ ${l.counts.orphaned} orphaned` }),
        ),
        gauge(l),
        h('div', { class: 'badges' }, debtBadge(l.debt), healthBadge(l)),
        h('h3', { class: 'small muted', text: `What the debt consists of (${items.length})` }),
        items.length ? list : h('p', { class: 'small muted', text: 'No oversized gists, no unconnected active nodes.' }),
      ),
    );
  }
  const drawer = $('drawer-toggle');
  const sum = (k: 'active' | 'archived' | 'orphaned') => onScreen().reduce((n, l) => n + (state.levels[l]?.counts[k] ?? 0), 0);
  const orphans = sum('orphaned');
  $('cy').setAttribute(
    'aria-label',
    `Knowledge graph: ${sum('active')} active nodes in the main area, ${sum('archived')} archived in the band below, ${orphans} orphaned in the drawer. Use search (/) to reach a node by keyboard.`,
  );
  drawer.textContent = `${graph.drawer ? '▾' : '▸'} Orphaned drawer (${orphans})`;
  drawer.setAttribute('aria-expanded', String(graph.drawer));
}

// ----- selection and the node panel ----------------------------------------------------------

interface PanelDraft {
  key: string;
  gist: string;
  notes: string;
  touches: string;
  dirty: boolean;
}
let draft: PanelDraft | null = null;
let panelSig = '';

function select(key: string | null): void {
  if (key && key.startsWith('a:')) {
    toast(`${key.slice(2)} is a file or path an edge points at, not a node.`);
    return;
  }
  if (draft?.dirty && draft.key !== key && !confirm('Discard the unsaved edit?')) return;
  state.picked = key;
  draft = null;
  graph.pick(key);
  setProjection(null, 0);
  renderPanel(true);
}

function focusNode(key: string): void {
  const info = graph.nodes.get(key);
  if (!info) return;
  if (info.tier === 'orphaned' && !graph.drawer) toggleDrawer(true);
  graph.centre(key);
  select(key);
}

function setProjection(level: LevelName | null, delta: number): void {
  const before = JSON.stringify(projected);
  for (const k of Object.keys(projected)) delete projected[k as LevelName];
  if (level && delta) projected[level] = delta;
  if (JSON.stringify(projected) !== before) {
    for (const l of onScreen()) {
      const card = document.querySelector(`.card[data-level="${l}"] .gauge`);
      const data = state.levels[l];
      if (card && data) card.replaceWith(gauge(data));
    }
  }
}

/** What saving this gist does to the level's rendered size (exact for active nodes). */
function gistDelta(info: NodeInfo, gist: string): { delta: number; exact: boolean } {
  const now = chars(gist);
  const old = chars(String(info.node.gist ?? ''));
  if (info.tier === 'active') return { delta: now - old, exact: true };
  const line = 2 + chars(info.id) + 2 + now + 1;
  return { delta: line - info.why.cost, exact: false };
}

function bar(name: string, value: number | null): HTMLElement[] {
  const v = value ?? 0;
  return [
    h('span', { text: name }),
    h('span', { class: 'bar', role: 'img', 'aria-label': `${name} ${value === null ? 'n/a' : Math.round(v * 100) + '%'}` }, h('i', { style: `width:${(v * 100).toFixed(1)}%` })),
    h('span', { text: value === null ? '—' : `${Math.round(v * 100)}%` }),
  ];
}

const tierMark: Record<TierName, string> = { active: '● ACTIVE', archived: '◌ ARCHIVED', orphaned: '○ ORPHANED' };

function renderPanel(force: boolean): void {
  const panel = $('panel');
  const key = state.picked;
  const info = key ? graph.nodes.get(key) : undefined;
  if (!key || !info) {
    panel.hidden = true;
    panel.replaceChildren();
    graph.cy.resize();
    return;
  }
  if (draft?.dirty && !force) {
    // Keep the person's edit; say so when the node changed underneath.
    const note = panel.querySelector('#panel-stale');
    if (note) note.textContent = draft.gist !== info.node.gist ? 'This node changed on the server while you edit; saving replaces it.' : '';
    return;
  }
  // Unchanged node: keep the panel as it is (focus, scroll, an open form).
  const touching = [...graph.edges.values()].filter((e) => e.source === key || e.target === key).map((e) => e.key);
  const sig = JSON.stringify([info.node, info.why, info.tier, touching]);
  if (!force && sig === panelSig && !panel.hidden) return;
  panelSig = sig;
  const notesText = listOf(info.node.notes).join('\n');
  const touchesText = listOf(info.node.touches).join('\n');
  draft = { key, gist: String(info.node.gist ?? ''), notes: notesText, touches: touchesText, dirty: false };
  const wasHidden = panel.hidden;
  panel.hidden = false;
  panel.replaceChildren(panelBody(info, notesText, touchesText));
  if (wasHidden) graph.cy.resize();
}

function panelBody(info: NodeInfo, notesText: string, touchesText: string): HTMLElement {
  const w = info.why;
  const gistBox = h('textarea', { id: 'gist', rows: 4, 'aria-describedby': 'gist-count', value: String(info.node.gist ?? '') });
  const count = h('div', { class: 'counter', id: 'gist-count' });
  const notesBox = h('textarea', { id: 'notes', rows: 3, placeholder: 'One note per line', value: notesText, 'aria-label': 'Notes, one per line' });
  const touchesBox = h('textarea', { id: 'touches', rows: 2, placeholder: 'One file path per line', value: touchesText, 'aria-label': 'Touches, one per line' });
  const error = h('div', { class: 'error', id: 'save-error', role: 'alert' });
  const saveBtn = h('button', { class: 'primary', id: 'save', type: 'button', disabled: true, text: 'Save' });
  const revertBtn = h('button', { type: 'button', id: 'revert', disabled: true, text: 'Revert' });

  const update = () => {
    if (!draft) return;
    const gist = gistBox.value;
    draft.gist = gist;
    draft.notes = notesBox.value;
    draft.touches = touchesBox.value;
    draft.dirty = gist !== String(info.node.gist ?? '') || notesBox.value !== notesText || touchesBox.value !== touchesText;
    saveBtn.disabled = !draft.dirty;
    revertBtn.disabled = !draft.dirty;
    const n = chars(gist);
    const { delta, exact } = gistDelta(info, gist);
    count.className = `counter${n > SCAN_LIMIT ? ' over' : ''}`;
    count.replaceChildren(
      h('span', { text: `${n} / ${SCAN_LIMIT} characters${n > SCAN_LIMIT ? ' — over the scan limit: counts as maintenance debt' : ''}` }),
      h('span', { text: draft.dirty || delta ? `${exact ? '' : '≈ '}${delta >= 0 ? '+' : ''}${delta} chars to the level` : '' }),
    );
    setProjection(info.level, draft.dirty ? delta : 0);
  };
  for (const box of [gistBox, notesBox, touchesBox]) box.addEventListener('input', update);

  saveBtn.addEventListener('click', async () => {
    error.textContent = '';
    const notes = notesBox.value !== notesText ? lines(notesBox.value) : undefined;
    const touches = touchesBox.value !== touchesText ? lines(touchesBox.value) : undefined;
    saveBtn.disabled = true;
    try {
      await api.putNode(address(info.level), info.id, gistBox.value, notes, touches);
      draft = null;
      setProjection(null, 0);
      toast(`Saved ${info.id}`);
      await refresh(false, [info.key]);
      renderPanel(true);
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.detail : String(e);
      saveBtn.disabled = false;
    }
  });
  revertBtn.addEventListener('click', () => {
    draft = null;
    setProjection(null, 0);
    renderPanel(true);
  });

  const clear = (box: HTMLTextAreaElement, what: string) =>
    h('button', {
      type: 'button',
      class: 'small',
      text: `Clear ${what}`,
      onclick: () => {
        box.value = '';
        update();
        box.focus();
      },
    });

  const edgesOut: HTMLElement[] = [];
  const edgesIn: HTMLElement[] = [];
  for (const e of graph.edges.values()) {
    const out = e.source === info.key;
    const inc = e.target === info.key;
    if (!out && !inc) continue;
    const peerKey = out ? e.target : e.source;
    const peerId = out ? e.edge.to : e.edge.from;
    const peer = graph.nodes.get(peerKey);
    const li = h(
      'li',
      {},
      h('span', { class: 'rel', text: out ? `→ ${e.edge.rel} →` : `← ${e.edge.rel} ←` }),
      peer
        ? h('button', { class: 'link peer', text: peerId, title: `${peer.tier} · ${peer.level} · ${String(peer.node.gist ?? '')}`, onclick: () => focusNode(peerKey) })
        : h('span', { class: 'peer', text: peerId, title: peerKey.startsWith('a:') ? 'a file or path' : '' }),
      h('span', { class: 'small muted', text: e.kind === 'normal' ? '' : e.kind === 'artifact' ? 'file' : e.kind }),
      h('button', {
        class: 'x',
        type: 'button',
        'aria-label': `Delete edge ${e.edge.from} ${e.edge.rel} ${e.edge.to}`,
        title: 'Delete this edge',
        text: '✕',
        onclick: () => void deleteEdge(e.level, e.edge),
      }),
    );
    (out ? edgesOut : edgesIn).push(li);
  }

  const useful = Array.isArray(info.node._useful_ts) ? info.node._useful_ts : [];
  const moveBtn =
    info.tier === 'active'
      ? h('button', { type: 'button', text: 'Archive by hand', title: 'Same as dropping it on the ARCHIVED band', onclick: () => void moveTier(info.key, 'archived') })
      : h('button', { type: 'button', class: 'primary', text: 'Promote to active', title: 'Same as dragging it to the active area (a read: orphaned neighbours are rescued)', onclick: () => void moveTier(info.key, 'active') });

  const body = h(
    'div',
    {},
    h(
      'div',
      { class: 'head' },
      h(
        'div',
        {},
        h('h2', { text: info.id }),
        h('span', { class: `tier-badge ${info.tier}`, text: tierMark[info.tier] }),
        ' ',
        h('span', { class: 'level-badge', text: `${info.level} level` }),
      ),
      h('button', { type: 'button', 'aria-label': 'Close details (Esc)', title: 'Close (Esc)', text: '✕', onclick: () => select(null) }),
    ),
    h('p', { class: 'small muted', id: 'panel-stale' }),
    h('h3', {}, h('label', { for: 'gist', text: 'Gist' })),
    gistBox,
    count,
    info.tier !== 'active' ? h('p', { class: 'small muted', text: 'Saving makes this node active: any write does.' }) : null,
    h('h3', {}, h('label', { for: 'notes', text: 'Notes' })),
    notesBox,
    h('div', { class: 'row' }, clear(notesBox, 'notes')),
    h('h3', {}, h('label', { for: 'touches', text: 'Touches (files)' })),
    touchesBox,
    h('div', { class: 'row' }, clear(touchesBox, 'touches')),
    error,
    h('div', { class: 'row' }, saveBtn, revertBtn),
    h('h3', { text: `Why it is ${info.tier}` }),
    h('p', { class: 'reason', text: w.reason }),
    h(
      'div',
      { class: 'bars', 'aria-label': 'Score and percentiles' },
      ...bar('score', w.score),
      ...bar('recency', w.recency),
      ...bar('connectedness', w.connectedness),
      ...bar('usefulness', w.usefulness),
    ),
    h(
      'p',
      { class: 'small muted' },
      w.pool ? `Percentiles among ${w.pool === 'active' ? 'active' : 'active and archived'} nodes past grace. ` : '',
      w.rank ? `Place ${w.rank} of ${w.rank_of} in the ${info.tier === 'active' ? 'archive' : 'refill'} order. ` : '',
      info.tier === 'active' ? `Costs ${w.cost} chars of the level (its line and the edges cited under it).` : info.tier === 'archived' ? `Its anchor costs ${w.cost} chars; ${w.traces} memory trace(s) to active nodes.` : 'Costs nothing: not rendered.',
    ),
    h('div', { class: 'row' }, moveBtn),
    h('h3', { text: `Edges (${edgesOut.length} out, ${edgesIn.length} in)` }),
    edgesOut.length ? h('ul', { class: 'edges', 'aria-label': 'Outgoing edges' }, edgesOut) : h('p', { class: 'small muted', text: 'No outgoing edges.' }),
    edgesIn.length ? h('ul', { class: 'edges', 'aria-label': 'Incoming edges' }, edgesIn) : h('p', { class: 'small muted', text: 'No incoming edges.' }),
    edgeForm(info),
    h('h3', { text: 'Times' }),
    h(
      'dl',
      { class: 'times' },
      h('dt', { text: 'created' }),
      h('dd', { text: when(info.node._created_ts) }),
      h('dt', { text: 'last read' }),
      h('dd', { text: when(info.node._last_read_ts) }),
      h('dt', { text: 'liked' }),
      h('dd', { text: useful.length ? `${useful.length}× · last ${when(useful[useful.length - 1])}` : 'never' }),
      info.node._orphaned_ts ? h('dt', { text: 'orphaned' }) : null,
      info.node._orphaned_ts ? h('dd', { text: when(info.node._orphaned_ts) }) : null,
      w.deleted_at ? h('dt', { text: 'deleted' }) : null,
      w.deleted_at ? h('dd', { text: when(w.deleted_at) }) : null,
    ),
    h('h3', { text: 'Delete' }),
    h('button', { type: 'button', class: 'danger', text: 'Delete node… (Del)', onclick: () => void deleteNode(info) }),
  );
  update();
  return body;
}

function edgeForm(info: NodeInfo): HTMLElement {
  const dir = h('select', { 'aria-label': 'Direction' }, h('option', { value: 'out', text: `${info.id} → other` }), h('option', { value: 'in', text: `other → ${info.id}` }));
  const other = h('input', { type: 'text', placeholder: 'node id or file path', 'aria-label': 'Other end' });
  const rel = h('input', { type: 'text', placeholder: 'relation, e.g. depends-on', 'aria-label': 'Relation' });
  const notes = h('input', { type: 'text', placeholder: 'note (optional)', 'aria-label': 'Edge note' });
  const error = h('div', { class: 'error', role: 'alert' });
  const add = h('button', { type: 'button', class: 'primary', text: 'Add edge' });
  add.addEventListener('click', async () => {
    error.textContent = '';
    const from = dir.value === 'out' ? info.id : other.value.trim();
    const to = dir.value === 'out' ? other.value.trim() : info.id;
    try {
      await api.putEdge(address(info.level), from, to, rel.value.trim(), notes.value.trim() ? [notes.value.trim()] : undefined);
      toast(`Edge ${from} → ${rel.value.trim()} → ${to} saved`);
      await refresh(false);
      renderPanel(true);
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.detail : String(e);
    }
  });
  return h('details', {}, h('summary', { text: 'Add an edge' }), h('div', { class: 'form-grid' }, dir, other, rel, notes, error, h('div', { class: 'row' }, add)));
}

// ----- dialogs: confirm, create ---------------------------------------------------------------

function confirmDialog(title: string, message: string, action: string): Promise<boolean> {
  const dialog = $<HTMLDialogElement>('dialog');
  return new Promise((resolve) => {
    const no = h('button', { type: 'button', text: 'Cancel' });
    const yes = h('button', { type: 'button', class: 'danger', text: action });
    dialog.replaceChildren(h('h2', { text: title }), h('p', { text: message }), h('div', { class: 'actions' }, no, yes));
    const done = (v: boolean) => {
      dialog.onclose = null;
      dialog.close();
      resolve(v);
    };
    no.onclick = () => done(false);
    yes.onclick = () => done(true);
    dialog.onclose = () => resolve(false);
    dialog.showModal();
    no.focus();
  });
}

async function deleteNode(info: NodeInfo): Promise<void> {
  let n = 0;
  for (const e of graph.edges.values()) if (e.level === info.level && (e.edge.from === info.id || e.edge.to === info.id)) n++;
  const ok = await confirmDialog('Delete node?', `Delete “${info.id}” and its ${n} edge(s) from the ${info.level} graph? This cannot be undone.`, 'Delete');
  if (!ok) return;
  try {
    const r = await api.deleteNode(address(info.level), info.id);
    toast(`Deleted ${r.deleted} and ${r.edges_deleted} edge(s)`);
    select(null);
    await refresh(false);
  } catch (e) {
    toast(`Delete failed: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
}

async function deleteEdge(level: LevelName, e: { from: string; to: string; rel: string }): Promise<void> {
  const ok = await confirmDialog('Delete edge?', `Delete ${e.from} → ${e.rel} → ${e.to} from the ${level} graph?`, 'Delete');
  if (!ok) return;
  try {
    const r = await api.deleteEdge(address(level), e);
    toast(r.deleted ? 'Edge deleted' : 'That edge was already gone');
    await refresh(false);
    renderPanel(true);
  } catch (err) {
    toast(`Delete failed: ${err instanceof ApiError ? err.detail : String(err)}`, 'error');
  }
}

function createDialog(): void {
  const dialog = $<HTMLDialogElement>('dialog');
  const levels = onScreen();
  const level = h('select', { id: 'new-level' }, levels.map((l) => h('option', { value: l, text: l === 'user' ? 'user graph' : 'project graph' })));
  const id = h('input', { type: 'text', id: 'new-id', placeholder: 'kebab-case-id', autocomplete: 'off' });
  const gist = h('textarea', { id: 'new-gist', rows: 3, placeholder: 'One line: the insight' });
  const count = h('div', { class: 'counter', text: `0 / ${SCAN_LIMIT} characters` });
  const notes = h('textarea', { id: 'new-notes', rows: 2, placeholder: 'Notes, one per line (optional)' });
  const touches = h('textarea', { id: 'new-touches', rows: 2, placeholder: 'Files, one per line (optional)' });
  const warn = h('p', { class: 'small muted' });
  const error = h('div', { class: 'error', id: 'new-error', role: 'alert' });
  const cancel = h('button', { type: 'button', text: 'Cancel', onclick: () => dialog.close() });
  const create = h('button', { type: 'button', class: 'primary', id: 'new-create', text: 'Create' });
  const check = () => {
    const n = chars(gist.value);
    count.textContent = `${n} / ${SCAN_LIMIT} characters${n > SCAN_LIMIT ? ' — over the scan limit' : ''}`;
    count.className = `counter${n > SCAN_LIMIT ? ' over' : ''}`;
    const exists = graph.nodes.has(nodeKey(level.value as LevelName, id.value.trim()));
    warn.textContent = exists ? 'A node with this id exists in that graph: creating replaces its gist.' : '';
  };
  gist.addEventListener('input', check);
  id.addEventListener('input', check);
  level.addEventListener('change', check);
  create.addEventListener('click', async () => {
    error.textContent = '';
    const lv = level.value as LevelName;
    try {
      const r = await api.putNode(address(lv), id.value.trim(), gist.value, lines(notes.value).length ? lines(notes.value) : undefined, lines(touches.value).length ? lines(touches.value) : undefined);
      dialog.close();
      const key = nodeKey(lv, String(r.node.id));
      await refresh(false, [key]);
      focusNode(key);
      toast(`Created ${r.node.id}`);
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.detail : String(e);
      id.focus();
    }
  });
  dialog.replaceChildren(
    h('h2', { text: 'New node' }),
    h(
      'div',
      { class: 'form-grid' },
      levels.length > 1 ? h('label', {}, 'Graph', level) : null,
      h('label', {}, 'Id', id),
      h('label', {}, 'Gist', gist),
      count,
      h('label', {}, 'Notes', notes),
      h('label', {}, 'Touches', touches),
      warn,
      error,
    ),
    h('div', { class: 'actions' }, cancel, create),
  );
  dialog.onclose = null;
  dialog.showModal();
  id.focus();
}

// ----- tier moves, what moved and why, undo ----------------------------------------------------

function showMoves(parts: (string | HTMLElement)[], undo: (() => void) | null): void {
  const box = $('moves');
  const text = h('div', { class: 'text' }, parts);
  const buttons: HTMLElement[] = [];
  if (undo) buttons.push(h('button', { type: 'button', id: 'undo', text: 'Undo', title: 'Undo this move (Ctrl+Z), once', onclick: undo }));
  buttons.push(h('button', { type: 'button', 'aria-label': 'Dismiss', text: '✕', onclick: () => (box.hidden = true) }));
  box.replaceChildren(text, ...buttons);
  box.hidden = false;
}

const scoreOf = (level: LevelName, id: string): string => {
  const n = graph.nodes.get(nodeKey(level, id));
  return n?.why.score === null || n?.why.score === undefined ? '' : ` (score ${n.why.score.toFixed(2)})`;
};

function describeMove(ans: TierMoveAnswer, undone: boolean): (string | HTMLElement)[] {
  const verb = ans.to === 'active' ? 'Promoted' : 'Archived';
  const parts: (string | HTMLElement)[] = [
    h('strong', { text: `${undone ? 'Undone: ' : ''}${verb} ${ans.id}` }),
    ` (${ans.from} → ${ans.to}${ans.to === 'active' ? ', as a read by an agent would' : ', by hand'}).`,
  ];
  const items: HTMLElement[] = [];
  if (ans.rescued.length) items.push(h('li', { text: `Rescued from the orphan drawer back to the archive (its neighbours): ${ans.rescued.join(', ')}` }));
  if (ans.rebalanced) {
    const r = ans.rebalanced;
    if (r.archived.length) items.push(h('li', { text: `Archived to stay within budget: ${r.archived.map((id) => id + scoreOf(ans.level, id)).join(', ')} — ${r.reason}.` }));
    if (r.restored.length) items.push(h('li', { text: `Restored: ${r.restored.join(', ')}` }));
    if (r.orphaned.length) items.push(h('li', { text: `Orphaned (anchors over their share): ${r.orphaned.join(', ')}` }));
  }
  if (ans.to === 'archived' && ans.budget.state === 'under_fill') {
    items.push(h('li', { text: `The level (${fmt(ans.budget.chars)} chars) is under its ${fmt(ans.budget.fill_line)} fill line: the next maintenance tick may refill archived nodes, this one included.` }));
  }
  items.push(h('li', { text: `Level now ${fmt(ans.budget.chars)} / ${fmt(ans.budget.budget)} chars.` }));
  parts.push(h('ul', {}, items));
  return parts;
}

async function moveTier(key: string, to: 'active' | 'archived'): Promise<boolean> {
  const info = graph.nodes.get(key);
  if (!info) return false;
  const projectPath = address(info.level).projectPath;
  try {
    state.ownMoveAt = Date.now();
    const ans = await api.moveTier(address(info.level), info.id, to);
    state.lastMove = { level: info.level, id: info.id, from: ans.from, to: ans.to, projectPath };
    showMoves(describeMove(ans, false), () => void undoMove());
    const keys = [key, ...ans.rescued.map((id) => nodeKey(info.level, id))];
    if (ans.rebalanced) keys.push(...[...ans.rebalanced.archived, ...ans.rebalanced.restored, ...ans.rebalanced.orphaned].map((id) => nodeKey(info.level, id)));
    await refresh(false, keys);
    return true;
  } catch (e) {
    toast(`Move refused: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
    return false;
  }
}

async function undoMove(): Promise<void> {
  const m = state.lastMove;
  if (!m) return;
  state.lastMove = null;
  const back: 'active' | 'archived' = m.from === 'active' ? 'active' : 'archived';
  try {
    state.ownMoveAt = Date.now();
    const ans = await api.moveTier({ level: m.level, projectPath: m.projectPath, session: live.session }, m.id, back);
    const parts = describeMove(ans, true);
    if (m.from === 'orphaned') parts.push(h('p', { class: 'small muted', text: 'It was orphaned: undo puts it back in the archive (orphaning is left to the maintenance pass).' }));
    showMoves(parts, null);
    await refresh(false, [nodeKey(m.level, m.id)]);
  } catch (e) {
    toast(`Undo failed: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
}

// ----- search ------------------------------------------------------------------------------

let searchTimer: number | undefined;
let hits: SearchHit[] = [];
/** The query `hits` answer. */
let hitsQuery = '';
let active = -1;
/** Bumped by every search and every dismissal: an answer that arrives for an older
 * generation (the user already chose a hit or closed the list) is dropped. */
let searchGeneration = 0;

function closeResults(): void {
  const list = $('search-results');
  list.hidden = true;
  $('search').setAttribute('aria-expanded', 'false');
  active = -1;
  searchGeneration++;
}

function renderResults(answer: { total: number; hits: SearchHit[] } | null, message?: string): void {
  const list = $('search-results');
  const input = $('search');
  list.replaceChildren();
  if (message) list.append(h('li', { class: 'note', role: 'presentation', text: message }));
  if (answer) {
    answer.hits.forEach((hit, i) => {
      list.append(
        h(
          'li',
          {
            role: 'option',
            id: `hit-${i}`,
            'aria-selected': String(i === active),
            onmousedown: (ev: Event) => {
              ev.preventDefault();
              choose(i);
            },
          },
          h('strong', { text: hit.id }),
          h('span', { class: 'small muted', text: `${hit.level} · ${tierMark[hit.tier]}` }),
          h('span', { class: 'small muted', text: hit.score.toFixed(3) }),
          h('span', { class: 'gist', text: hit.gist }),
        ),
      );
    });
    if (answer.total > answer.hits.length) list.append(h('li', { class: 'note', role: 'presentation', text: `${answer.total - answer.hits.length} more match(es) not listed` }));
  }
  list.hidden = list.children.length === 0;
  input.setAttribute('aria-expanded', String(!list.hidden));
  input.setAttribute('aria-activedescendant', active >= 0 ? `hit-${active}` : '');
}

async function runSearch(query: string): Promise<void> {
  window.clearTimeout(searchTimer);
  const generation = ++searchGeneration;
  if (!query.trim()) {
    hits = [];
    hitsQuery = query;
    graph.highlight([]);
    closeResults();
    return;
  }
  try {
    const answer = await api.search(query, onScreen(), state.project);
    if (generation !== searchGeneration || ($('search') as HTMLInputElement).value !== query) return;
    hits = answer.hits;
    hitsQuery = query;
    active = hits.length ? 0 : -1;
    graph.highlight(hits.map((x) => nodeKey(x.level, x.id)));
    renderResults(answer, hits.length ? undefined : `No node matches “${query}”.`);
  } catch (e) {
    if (generation !== searchGeneration) return;
    renderResults(null, `Search failed: ${e instanceof ApiError ? e.detail : String(e)}`);
  }
}

function choose(i: number): void {
  const hit = hits[i];
  if (!hit) return;
  window.clearTimeout(searchTimer);
  closeResults();
  focusNode(nodeKey(hit.level, hit.id));
}

function wireSearch(): void {
  const input = $<HTMLInputElement>('search');
  input.addEventListener('input', () => {
    window.clearTimeout(searchTimer);
    searchTimer = window.setTimeout(() => void runSearch(input.value), 180);
  });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      if (!hits.length) return;
      ev.preventDefault();
      active = (active + (ev.key === 'ArrowDown' ? 1 : hits.length - 1)) % hits.length;
      renderResults({ total: hits.length, hits });
      const key = nodeKey(hits[active].level, hits[active].id);
      graph.centre(key);
    } else if (ev.key === 'Enter') {
      ev.preventDefault();
      // Enter before the answer for what is typed arrived: search now, then open its best hit.
      if (hitsQuery !== input.value) void runSearch(input.value).then(() => {
        if (hitsQuery === input.value) choose(0);
      });
      else if (hits.length) choose(Math.max(0, active));
      else void runSearch(input.value);
    } else if (ev.key === 'Escape') {
      ev.preventDefault();
      ev.stopPropagation();
      if (!$('search-results').hidden) closeResults();
      else {
        input.value = '';
        void runSearch('');
        input.blur();
      }
    }
  });
  input.addEventListener('blur', () => window.setTimeout(closeResults, 120));
  input.addEventListener('focus', () => {
    if (hits.length) renderResults({ total: hits.length, hits });
  });
}

// ----- live ----------------------------------------------------------------------------------

function onLiveStatus(s: LiveStatus, reconnected: boolean): void {
  state.liveStatus = s;
  const el = $('live');
  el.textContent = s === 'live' ? 'live' : s === 'reconnecting' ? 'reconnecting…' : 'connecting…';
  el.classList.toggle('on', s === 'live');
  el.title = s === 'live' ? 'Changes made by agents appear here as they happen' : 'The memory server does not answer; retrying';
  if (s === 'live' && reconnected) {
    toast('Reconnected to the memory server', 'live');
    void loadGraphs();
    void refresh(false);
  }
}

const projectOnScreen = (): string | null => (onScreen().includes('project') ? (state.levels.project?.project_path ?? null) : null);

function onLive(m: LiveMessage): void {
  if (m.type === 'resync') {
    scheduleRefresh([]);
    return;
  }
  if (m.type === 'pong' || !m.level) return;
  const mine = m.level === 'user' ? onScreen().includes('user') : !!projectOnScreen() && m.project_path === projectOnScreen();
  if (!mine) {
    scheduleGraphs();
    return;
  }
  const k = (id: string) => nodeKey(m.level as LevelName, id);
  const keys: string[] = [];
  const who = m.source_session ? 'another session' : 'the server';
  switch (m.type) {
    case 'node_updated':
      if (m.node) {
        keys.push(k(String(m.node.id)));
        toast(`${graph.nodes.has(k(String(m.node.id))) ? 'Updated' : 'New'} node ${m.node.id} (by ${who})`, 'live');
      }
      break;
    case 'edge_updated':
      if (m.edge) toast(`Edge ${m.edge.from} → ${m.edge.rel} → ${m.edge.to} (by ${who})`, 'live');
      break;
    case 'node_deleted':
      toast(`Deleted node ${m.node_id} (by ${who})`, 'live');
      break;
    case 'node_recalled':
      if (m.node) keys.push(k(String(m.node.id)));
      for (const id of m.rescued_from_orphan ?? []) keys.push(k(id));
      toast(`Recalled ${m.node?.id} to active (by ${who})`, 'live');
      break;
    case 'tiers_moved': {
      const lists = { archived: m.archived ?? [], restored: m.restored ?? [], orphaned: m.orphaned ?? [], deleted: m.deleted ?? [] };
      for (const id of [...lists.archived, ...lists.restored, ...lists.orphaned]) keys.push(k(id));
      const recentOwn = Date.now() - state.ownMoveAt < 3000 && m.reason === 'maintenance tick';
      if (!recentOwn) showMoves(explainTick(m.level, m.reason ?? '', lists), null);
      break;
    }
    default:
      break;
  }
  scheduleRefresh(keys);
  scheduleGraphs();
}

function explainTick(level: LevelName, reason: string, lists: Record<'archived' | 'restored' | 'orphaned' | 'deleted', string[]>): (string | HTMLElement)[] {
  const items: HTMLElement[] = [];
  if (/hand/.test(reason)) {
    items.push(h('li', { text: `Archived by hand in another window: ${lists.archived.join(', ')}` }));
    return [h('strong', { text: `A ${level}-level node was archived by hand.` }), h('ul', {}, items)];
  }
  if (lists.archived.length) items.push(h('li', { text: `Archived (lowest scores; the level was over 17,500 chars): ${lists.archived.join(', ')}` }));
  if (lists.restored.length) items.push(h('li', { text: `Restored (highest scores; the level was under its 14,000 fill line): ${lists.restored.join(', ')}` }));
  if (lists.orphaned.length) items.push(h('li', { text: `Orphaned (archived anchors over 5,250 chars; fewest links first): ${lists.orphaned.join(', ')}` }));
  if (lists.deleted.length) items.push(h('li', { text: `Deleted for good (orphaned longer than the grace period): ${lists.deleted.join(', ')}` }));
  return [h('strong', { text: `The ${level} level re-balanced (${reason || 'maintenance'}).` }), h('ul', {}, items)];
}

let graphsTimer: number | undefined;
function scheduleGraphs(): void {
  window.clearTimeout(graphsTimer);
  graphsTimer = window.setTimeout(() => void loadGraphs(), 1500);
}

// ----- chrome: selector, toolbar, keyboard, theme ---------------------------------------------

function toggleDrawer(open?: boolean): void {
  graph.setDrawer(open ?? !graph.drawer);
  renderLevels();
}

function applyTheme(theme: string | null): void {
  const root = document.documentElement;
  const dark = theme ? theme === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
  root.dataset.theme = dark ? 'dark' : 'light';
  graph.restyle();
}

async function switchGraph(): Promise<void> {
  const value = $<HTMLSelectElement>('graph-select').value;
  state.project = value.startsWith('p:') ? value.slice(2) : null;
  if (!state.project) state.both = false;
  writeHash();
  renderSelector();
  select(null);
  hits = [];
  closeResults();
  state.loaded = false;
  live.connect(state.project);
  await refresh(true);
}

function wire(): void {
  $('graph-select').addEventListener('change', () => void switchGraph());
  $<HTMLInputElement>('both-levels').addEventListener('change', (ev) => {
    state.both = (ev.target as HTMLInputElement).checked;
    writeHash();
    state.loaded = false;
    select(null);
    void refresh(true);
  });
  $('new-node').addEventListener('click', createDialog);
  $('relayout').addEventListener('click', () => void refresh(true));
  $('fit').addEventListener('click', () => graph.fit());
  $<HTMLInputElement>('show-artifacts').addEventListener('change', (ev) => graph.setArtifacts((ev.target as HTMLInputElement).checked));
  $('drawer-toggle').addEventListener('click', () => toggleDrawer());
  $('theme').addEventListener('click', () => {
    const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem('kg-theme', next);
    applyTheme(next);
  });
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme(localStorage.getItem('kg-theme')));
  window.addEventListener('hashchange', () => {
    const before = `${state.project}|${state.both}`;
    readHash();
    if (`${state.project}|${state.both}` !== before) {
      renderSelector();
      void switchGraph();
    }
  });
  document.addEventListener('keydown', (ev) => {
    const dialogOpen = $<HTMLDialogElement>('dialog').open;
    if (dialogOpen) return; // the dialog handles its own keys (Esc closes it)
    if (ev.key === '/' && !isTyping(ev.target)) {
      ev.preventDefault();
      $('search').focus();
    } else if (ev.key === 'Escape') {
      if (!$('search-results').hidden) closeResults();
      else if (state.picked) {
        select(null);
        ev.preventDefault();
      } else if (!$('moves').hidden) $('moves').hidden = true;
      else if (graph.drawer) toggleDrawer(false);
      if (isTyping(ev.target)) (ev.target as HTMLElement).blur();
    } else if (ev.key === 'Delete' && !isTyping(ev.target)) {
      const info = state.picked ? graph.nodes.get(state.picked) : undefined;
      if (info) {
        ev.preventDefault();
        void deleteNode(info);
      }
    } else if ((ev.key === 'z' || ev.key === 'Z') && (ev.ctrlKey || ev.metaKey) && !isTyping(ev.target)) {
      if (state.lastMove) {
        ev.preventDefault();
        void undoMove();
      }
    } else if (ev.key === 'n' && !ev.ctrlKey && !ev.metaKey && !ev.altKey && !isTyping(ev.target)) {
      ev.preventDefault();
      createDialog();
    }
  });
}

// ----- test and benchmark hook -----------------------------------------------------------------

interface KgViewHook {
  ready: boolean;
  metrics: typeof metrics;
  point(what: { key?: string; zone?: 'active' | 'archive' | 'drawer' }): { x: number; y: number } | null;
  tierOf(key: string): TierName | null;
  has(key: string): boolean;
  session(): string | null;
  live(): LiveStatus;
  drawer(open: boolean): void;
  fit(): void;
}

(window as unknown as { kgView: KgViewHook }).kgView = {
  ready: false,
  metrics,
  point: (what) => graph.pagePoint(what),
  tierOf: (key) => graph.nodes.get(key)?.tier ?? null,
  has: (key) => graph.nodes.has(key),
  session: () => live.session,
  live: () => state.liveStatus,
  drawer: (open) => toggleDrawer(open),
  fit: () => graph.fit(),
};

// ----- start ----------------------------------------------------------------------------------

async function start(): Promise<void> {
  applyTheme(localStorage.getItem('kg-theme'));
  readHash();
  wire();
  wireSearch();
  live.connect(state.project);
  renderSelector();
  // The selector's list and the graph load side by side.
  await Promise.all([loadGraphs(), refresh(true)]);
}

void start();
