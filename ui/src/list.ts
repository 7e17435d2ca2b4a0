// The list view: the nodes of the levels on screen as a table, sortable by any column
// and filtered by words and tier. It shares the graph's selection (a row opens the
// node's panel) and the nodes chosen for bulk actions (the check boxes).

import { actions, graph, tierMark } from './app';
import { choose, onChosenChange, toggleChosen } from './bulk';
import { $, chars, fmt, h, when } from './dom';
import type { NodeInfo } from './graphmodel';
import { type ListColumn, state } from './state';
import type { TierName } from './types';

const TIER_ORDER: Record<TierName, number> = { active: 0, archived: 1, orphaned: 2 };

const lastUseful = (n: NodeInfo): number | null => {
  const stamps = n.node._useful_ts;
  return Array.isArray(stamps) && stamps.length ? Math.max(...stamps) : null;
};

interface Column {
  key: ListColumn;
  title: string;
  /** What the column sorts by; null sorts last whichever the direction. */
  value(n: NodeInfo): string | number | null;
  /** Sorting by it starts from the largest (scores, sizes, times). */
  startsDescending: boolean;
  numeric?: boolean;
  help?: string;
}

const COLUMNS: Column[] = [
  { key: 'id', title: 'Id', value: (n) => n.id, startsDescending: false },
  { key: 'gist', title: 'Gist', value: (n) => String(n.node.gist ?? ''), startsDescending: false },
  { key: 'tier', title: 'Tier', value: (n) => TIER_ORDER[n.tier], startsDescending: false },
  {
    key: 'score',
    title: 'Score',
    value: (n) => n.why.score,
    startsDescending: true,
    numeric: true,
    help: 'The score compaction ranks by (none for new nodes their grace period still protects, and for orphans)',
  },
  { key: 'read', title: 'Last read', value: (n) => n.node._last_read_ts ?? null, startsDescending: true, numeric: true },
  { key: 'useful', title: 'Last useful', value: lastUseful, startsDescending: true, numeric: true, help: 'When an agent last said the node helped (kg_useful)' },
  { key: 'size', title: 'Size', value: (n) => chars(String(n.node.gist ?? '')), startsDescending: true, numeric: true, help: 'Characters in the gist' },
  { key: 'level', title: 'Level', value: (n) => n.level, startsDescending: false },
];

/** The nodes the filters let through, in the chosen order. */
export function listedNodes(): NodeInfo[] {
  const { text, tier, sort, descending } = state.list;
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  const column = COLUMNS.find((c) => c.key === sort) ?? COLUMNS[0];
  const rows = [...graph.nodes.values()].filter((n) => {
    if (tier !== 'all' && n.tier !== tier) return false;
    const hay = `${n.id} ${String(n.node.gist ?? '')}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  });
  const sign = descending ? -1 : 1;
  rows.sort((a, b) => {
    const x = column.value(a);
    const y = column.value(b);
    if (x === null || y === null) return x === y ? a.id.localeCompare(b.id) : x === null ? 1 : -1;
    const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return order !== 0 ? sign * order : a.id.localeCompare(b.id);
  });
  return rows;
}

function headerCell(c: Column): HTMLElement {
  const sorted = state.list.sort === c.key;
  return h(
    'th',
    { scope: 'col', 'aria-sort': sorted ? (state.list.descending ? 'descending' : 'ascending') : 'none', class: c.numeric ? 'num' : '' },
    h(
      'button',
      {
        type: 'button',
        class: 'sort',
        'data-sort': c.key,
        title: c.help ?? `Sort by ${c.title.toLowerCase()}`,
        onclick: () => {
          if (state.list.sort === c.key) state.list.descending = !state.list.descending;
          else {
            state.list.sort = c.key;
            state.list.descending = c.startsDescending;
          }
          renderList();
        },
      },
      c.title,
      sorted ? (state.list.descending ? ' ▾' : ' ▴') : '',
    ),
  );
}

function row(n: NodeInfo): HTMLElement {
  const useful = lastUseful(n);
  const read = n.node._last_read_ts;
  const gist = String(n.node.gist ?? '');
  return h(
    'tr',
    {
      'data-key': n.key,
      class: `${n.tier}${state.picked === n.key ? ' picked' : ''}${state.chosen.has(n.key) ? ' chosen' : ''}`,
      'aria-selected': String(state.picked === n.key),
      onclick: (ev: Event) => {
        if ((ev.target as HTMLElement).closest('input')) return;
        if ((ev as MouseEvent).shiftKey) toggleChosen(n.key);
        else actions.select(n.key);
      },
    },
    h('td', {}, h('input', { type: 'checkbox', 'aria-label': `Choose ${n.id}`, checked: state.chosen.has(n.key), onchange: () => toggleChosen(n.key) })),
    h('td', { class: 'id' }, h('button', { type: 'button', class: 'link', text: n.id, title: 'Show its details' })),
    h('td', { class: 'gist', text: gist, title: gist }),
    h(
      'td',
      { class: `tier ${n.tier}` },
      tierMark[n.tier],
      n.node.locked === true ? h('span', { class: 'lock-mark', text: 'LOCKED', title: 'Locked by a person: agents cannot change it, compaction never archives it' }) : null,
    ),
    h('td', { class: 'num', text: n.why.score === null ? '—' : n.why.score.toFixed(3) }),
    h('td', { class: 'num', text: read ? when(read).replace(/^.*\((.*)\)$/, '$1') : '—', title: read ? when(read) : 'never read' }),
    h('td', { class: 'num', text: useful ? when(useful).replace(/^.*\((.*)\)$/, '$1') : '—', title: useful ? when(useful) : 'never marked useful' }),
    h('td', { class: 'num', text: fmt(chars(gist)) }),
    h('td', { text: n.level }),
  );
}

function filters(shown: number): HTMLElement {
  const tiers: (TierName | 'all')[] = ['all', 'active', 'archived', 'orphaned'];
  return h(
    'div',
    { class: 'list-filters' },
    h(
      'label',
      { class: 'field' },
      h('span', { class: 'sr-only', text: 'Filter the list' }),
      h('input', {
        type: 'search',
        id: 'list-filter',
        placeholder: 'Filter by id or gist words',
        value: state.list.text,
        autocomplete: 'off',
        oninput: (ev: Event) => {
          state.list.text = (ev.target as HTMLInputElement).value;
          renderRows();
        },
      }),
    ),
    h(
      'label',
      { class: 'field' },
      'Tier ',
      h(
        'select',
        {
          id: 'list-tier',
          onchange: (ev: Event) => {
            state.list.tier = (ev.target as HTMLSelectElement).value as TierName | 'all';
            renderRows();
          },
        },
        tiers.map((t) => h('option', { value: t, text: t === 'all' ? 'all tiers' : t, selected: state.list.tier === t })),
      ),
    ),
    h('span', { class: 'small muted', id: 'list-count', text: `${shown} of ${graph.nodes.size} nodes` }),
  );
}

/** Redraw the rows (and the count) only: the filter box keeps its focus and caret. */
function renderRows(): void {
  const body = document.querySelector<HTMLElement>('#list tbody');
  if (!body) return renderList();
  const rows = listedNodes();
  body.replaceChildren(...rows.map(row));
  const count = document.getElementById('list-count');
  if (count) count.textContent = `${rows.length} of ${graph.nodes.size} nodes`;
  const all = document.getElementById('list-all') as HTMLInputElement | null;
  if (all) {
    const chosen = rows.filter((n) => state.chosen.has(n.key)).length;
    all.checked = rows.length > 0 && chosen === rows.length;
    all.indeterminate = chosen > 0 && chosen < rows.length;
  }
}

/** Draw the list (when it is the view on screen). */
export function renderList(): void {
  const box = $('list');
  if (state.view !== 'list') return;
  const rows = listedNodes();
  const all = h('input', {
    type: 'checkbox',
    id: 'list-all',
    'aria-label': 'Choose every node listed',
    onchange: (ev: Event) => {
      const on = (ev.target as HTMLInputElement).checked;
      const keys = listedNodes().map((n) => n.key);
      if (on) choose(keys, true);
      else choose([...state.chosen].filter((k) => !keys.includes(k)), false);
    },
  });
  box.replaceChildren(
    filters(rows.length),
    h(
      'table',
      { class: 'node-table', 'aria-label': 'Nodes of the levels on screen' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, all), COLUMNS.map(headerCell))),
      h('tbody', {}),
    ),
  );
  renderRows();
}

/** Show the graph or the list in the canvas area. */
export function showView(view: 'graph' | 'list'): void {
  state.view = view;
  const list = view === 'list';
  $('list').hidden = !list;
  $('cy').hidden = list;
  document.querySelector('.canvas-wrap')?.classList.toggle('listing', list);
  $('show-graph').setAttribute('aria-pressed', String(!list));
  $('show-list').setAttribute('aria-pressed', String(list));
  if (list) renderList();
  else graph.cy.resize();
}

// The check boxes and highlighted rows follow the chosen set, wherever it changes.
onChosenChange(() => {
  if (state.view === 'list') renderRows();
});
