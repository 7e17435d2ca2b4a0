// The level cards in the side bar: counts, the budget gauge (with what an unsaved edit
// would add), the DEBT and HEALTH badges with their factors, and the debt items. The
// orphaned drawer's toggle and the canvas label carry the same counts.

import { actions, graph, scanLimit } from './app';
import { $, fmt, h } from './dom';
import { nodeKey } from './graphmodel';
import { staleTouchParts } from './stale';
import { onScreen, state } from './state';
import type { DebtItem, LevelData, LevelDebt, LevelName } from './types';

/** The budget gauge of a level, with the projected change of the edit under way. */
export function gauge(l: LevelData): HTMLElement {
  const b = l.budget;
  const extra = state.projected[l.level] ?? 0;
  const after = b.chars + extra;
  const scale = Math.max(b.budget, b.chars, after) * 1.04;
  const pct = (x: number) => `${Math.max(0, Math.min(100, (100 * x) / scale)).toFixed(2)}%`;
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
      // What happens next is the server's to say: it knows the grace rule in force.
      h('div', { text: `${b.outlook}. Archived anchors: ${fmt(b.anchor_chars)} / ${fmt(b.anchor_budget)}.` }),
    ),
  );
}

/** Show what an unsaved edit adds to `level` on its gauge (none: `level` null or `delta` 0). */
export function setProjection(level: LevelName | null, delta: number): void {
  const projected = state.projected;
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

function debtBadge(d: LevelDebt): HTMLElement {
  const num = (x: number | undefined, digits = 2) => (x === undefined ? '?' : x.toFixed(digits));
  const conflicts = d.merge_conflicts ?? 0;
  const held = d.held_back ?? 0;
  const merged = [
    conflicts ? `merged with conflicts: ${conflicts}` : '',
    held ? `held back from sync: ${held} (kg-memory sync status lists them)` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return h(
    'span',
    {
      class: `badge debt-${d.level}`,
      tabindex: 0,
      'aria-label': `Maintenance debt ${d.level}, score ${d.score}${merged ? `, ${merged}` : ''}`,
    },
    // In short: the badge shares a narrow card; the label and the factors say it in full.
    `DEBT ${d.level} ${d.score}${conflicts ? ` · conflicts: ${conflicts}` : ''}${held ? ` · held back: ${held}` : ''}`,
    h(
      'span',
      { class: 'factors', role: 'tooltip' },
      h('strong', { text: 'Maintenance debt' }),
      h(
        'dl',
        {},
        h('dt', { text: 'score' }),
        h('dd', { text: `${d.score} → ${d.level} (HIGH ≥ 0.5, MED ≥ 0.3${conflicts ? ', at least MED while a merge conflict waits' : ''})` }),
        h('dt', { text: 'staleness' }),
        h('dd', { text: `${num(d.staleness)} = min(1, ${d.never_maintained ? 'never maintained → 14' : `${d.untended_days} days`} / 14)` }),
        h('dt', { text: 'activity' }),
        h('dd', { text: `${num(d.activity)} = min(1, ${d.active_days_7d} active days of 7 / 4)` }),
        h('dt', { text: 'deficit' }),
        h('dd', {
          text: `${num(d.deficit, 3)} = (${d.oversized_gists} oversized + 0.5 × ${d.unconnected_active} unconnected${
            d.dangling_nodes ? ` + 0.5 × ${d.dangling_nodes} with stale touches (${d.dangling_touches ?? 0} touches name files that are gone)` : ''
          }) / ${d.active_nodes} active`,
        }),
        ...(conflicts
          ? [
              h('dt', { text: 'conflicts' }),
              h('dd', {
                text: `${conflicts} merge conflict(s) waiting in node notes starting "${d.conflict_note_prefix.trim()}": they leave the score alone but keep the level at least MED until the notes are removed`,
              }),
            ]
          : []),
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

/** One item of the debt list: what is owed, and the node as a link to it. */
function debtEntry(level: LevelName, id: string, kind: string, title: string): HTMLElement {
  return h(
    'li',
    {},
    h('span', { class: 'kind', text: kind }),
    h('button', { class: 'link', text: id, title, onclick: () => actions.focusNode(nodeKey(level, id)) }),
  );
}

/**
 * The nodes holding merge-conflict notes (any tier), with how many each: the debt
 * counts them as `merge_conflicts`.
 */
function conflictedNodes(l: LevelData): { id: string; notes: number }[] {
  const prefix = l.debt.conflict_note_prefix;
  return l.nodes
    .map((row) => {
      const notes = Array.isArray(row.node.notes) ? row.node.notes : typeof row.node.notes === 'string' ? [row.node.notes] : [];
      return { id: row.node.id, notes: notes.filter((n) => typeof n === 'string' && n.startsWith(prefix)).length };
    })
    .filter((c) => c.notes > 0);
}

/** The debt items of a level, each a link to its node; merge conflicts first. */
function debtList(level: LevelName, title: string, items: DebtItem[], conflicts: { id: string; notes: number }[]): HTMLElement {
  return h(
    'ul',
    { class: 'debt-list', 'aria-label': `${title}: maintenance debt items` },
    conflicts.map((c) =>
      debtEntry(
        level,
        c.id,
        c.notes > 1 ? `merge conflict (${c.notes})` : 'merge conflict',
        'A merge kept the newer gist and put the other one in a note: settle the gist, then remove the note',
      ),
    ),
    items.map((it) => {
      if (it.kind === 'stale_touch') {
        const entry = debtEntry(level, it.id, 'stale touch', 'A touch of this node names a file that is gone');
        entry.classList.add('stale-touch');
        entry.append(h('div', { class: 'fix' }, staleTouchParts(level, it)));
        return entry;
      }
      return debtEntry(
        level,
        it.id,
        it.kind === 'oversized' ? `oversized (${it.gist_chars})` : 'unconnected',
        it.kind === 'oversized' ? `Gist over the ${scanLimit(level) ?? ''}-character scan limit: shorten it, move detail to notes` : 'No edge touches this active node: connect it',
      );
    }),
  );
}

function levelCard(level: LevelName, l: LevelData): HTMLElement {
  const title = level === 'user' ? 'User graph' : `Project ${l.graph}`;
  const items = l.debt_items;
  const conflicts = conflictedNodes(l);
  const owed = conflicts.length + items.length;
  return h(
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
    // An empty level owes nothing and has no shape: debt and health would be noise.
    ...(l.counts.active + l.counts.archived + l.counts.orphaned === 0
      ? [h('p', { class: 'small muted', text: l.damaged ? 'Empty: its file was damaged and moved aside (see the message above the graph).' : 'No nodes yet.' })]
      : [
          h('div', { class: 'badges' }, debtBadge(l.debt), healthBadge(l)),
          h('h3', { class: 'small muted', text: `What the debt consists of (${owed})` }),
          owed ? debtList(level, title, items, conflicts) : h('p', { class: 'small muted', text: 'No oversized gists, no unconnected active nodes, no stale touches, no merge conflicts.' }),
        ]),
  );
}

/** The tier counts of the levels on screen on the canvas's label and the drawer's toggle. */
function renderCounts(): void {
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

/** Draw the cards of the levels on screen. */
export function renderLevels(): void {
  const side = $('levels');
  side.replaceChildren();
  for (const level of onScreen()) {
    const l = state.levels[level];
    if (!l) continue;
    side.append(levelCard(level, l));
  }
  renderCounts();
}

/** Open or close the orphaned drawer (toggle when `open` is not given). */
export function toggleDrawer(open?: boolean): void {
  graph.setDrawer(open ?? !graph.drawer);
  renderLevels();
}
