// The activity panel: recent changes of the levels on screen from the server's change
// log (who wrote what, when: an agent's session, a graph view, maintenance), filtered
// by level and kind. Each entry picks its node. It follows live changes while open.
// Its second tab says why the memory spoke or stayed silent (recalls.ts).

import { actions, graph, live } from './app';
import { api, ApiError } from './api';
import { $, fill, h, when } from './dom';
import { nodeKey } from './graphmodel';
import { loadRecalls, recallTab, stopRecalls } from './recalls';
import { onScreen, projectOnScreen, state } from './state';
import type { ActivityEntry, ActivityKind, LevelName } from './types';

/** The kinds a person filters by, each a group of the log's kinds. */
const KINDS: { value: string; label: string; kinds: ActivityKind[] }[] = [
  { value: 'all', label: 'all changes', kinds: [] },
  { value: 'writes', label: 'writes and links', kinds: ['node_updated', 'edge_updated', 'progress_saved'] },
  { value: 'deletions', label: 'deletions', kinds: ['node_deleted', 'edge_deleted'] },
  { value: 'tiers', label: 'tier moves', kinds: ['tiers_moved', 'node_recalled', 'step_undone'] },
  { value: 'likes', label: 'marked useful', kinds: ['node_liked'] },
  { value: 'health', label: 'debt and damage', kinds: ['debt_changed', 'quarantined'] },
];


function author(e: ActivityEntry): string {
  switch (e.author) {
    case 'agent':
      return `agent session ${e.session ?? ''}`.trim();
    case 'view':
      return e.session && e.session === live.session ? 'you, in this view' : 'a graph view';
    case 'maintenance':
      return 'maintenance';
    case 'sync':
      return `another machine, through sync with ${e.origin ?? 'the remote'}`;
    default:
      return 'a client without a session';
  }
}

function shown(): ActivityEntry[] {
  const { level, kind } = state.activity;
  const group = KINDS.find((k) => k.value === kind);
  return state.activity.entries.filter((e) => (level === 'all' || e.level === level) && (!group?.kinds.length || group.kinds.includes(e.kind)));
}

function entryItem(e: ActivityEntry): HTMLElement {
  const key = e.ids.length ? nodeKey(e.level, e.ids[0]) : null;
  const there = key !== null && graph.nodes.has(key);
  const time = when(e.ts).replace(/^.*\((.*)\)$/, '$1');
  return h(
    'li',
    { class: `entry by-${e.author}`, 'data-kind': e.kind, 'data-seq': e.seq },
    h('div', { class: 'meta small muted' }, h('time', { text: time, title: when(e.ts) }), ` · ${author(e)} · ${e.level}`),
    there
      ? h('button', { type: 'button', class: 'link summary', text: e.summary, title: `Show ${e.ids[0]}`, onclick: () => actions.focusNode(key) })
      : h('div', { class: 'summary', text: e.summary, title: e.ids.length ? `${e.ids[0]} is no longer in the graph` : '' }),
  );
}

function filters(): HTMLElement {
  const levels: (LevelName | 'all')[] = ['all', ...onScreen()];
  return h(
    'div',
    { class: 'activity-filters' },
    levels.length > 2
      ? h(
          'label',
          { class: 'field' },
          'Level ',
          h(
            'select',
            {
              id: 'activity-level',
              onchange: (ev: Event) => {
                state.activity.level = (ev.target as HTMLSelectElement).value as LevelName | 'all';
                renderActivity();
              },
            },
            levels.map((l) => h('option', { value: l, text: l === 'all' ? 'both' : l, selected: state.activity.level === l })),
          ),
        )
      : null,
    h(
      'label',
      { class: 'field' },
      'Show ',
      h(
        'select',
        {
          id: 'activity-kind',
          onchange: (ev: Event) => {
            state.activity.kind = (ev.target as HTMLSelectElement).value;
            renderActivity();
          },
        },
        KINDS.map((k) => h('option', { value: k.value, text: k.label, selected: state.activity.kind === k.value })),
      ),
    ),
  );
}

/** The two tabs: the graphs' changes, and why the memory spoke. */
function tabs(): HTMLElement {
  const tab = (value: 'changes' | 'recall', label: string) =>
    h('button', {
      type: 'button',
      role: 'tab',
      id: `activity-tab-${value}`,
      class: state.activity.tab === value ? 'tab selected' : 'tab',
      'aria-selected': String(state.activity.tab === value),
      text: label,
      onclick: () => {
        state.activity.tab = value;
        renderActivity();
        void (value === 'recall' ? loadRecalls(renderActivity) : loadActivity());
      },
    });
  return h('div', { class: 'activity-tabs', role: 'tablist' }, tab('changes', 'Changes'), tab('recall', 'Why memory spoke'));
}

export function renderActivity(): void {
  const panel = $('activity');
  if (!state.activity.open) return;
  const head = h(
    'div',
    { class: 'head' },
    h('h2', { text: 'Recent activity' }),
    h('button', { type: 'button', 'aria-label': 'Close recent activity (A)', text: '✕', onclick: () => toggleActivity(false) }),
  );
  if (state.activity.tab === 'recall') {
    fill(panel, head, tabs(), ...recallTab());
    return;
  }
  const list = shown();
  fill(
    panel,
    head,
    tabs(),
    h('p', { class: 'small muted', text: 'Since the memory server started, newest first.' }),
    filters(),
    state.activity.error ? h('p', { class: 'error', role: 'alert', text: state.activity.error }) : null,
    list.length
      ? h('ol', { class: 'activity-list' }, list.map(entryItem))
      : h('p', { class: 'small muted', text: state.activity.entries.length ? 'No change of this kind.' : 'No changes yet.' }),
  );
}

/** Fetch the newest changes of the levels on screen and show them. */
export async function loadActivity(): Promise<void> {
  if (!state.activity.open) return;
  if (state.activity.tab === 'recall') return loadRecalls(renderActivity);
  try {
    const answer = await api.activity(onScreen(), projectOnScreen());
    state.activity.entries = answer.entries;
    state.activity.error = '';
  } catch (e) {
    state.activity.error = `Cannot read the recent changes: ${e instanceof ApiError ? e.detail : String(e)}`;
  }
  renderActivity();
}

/** Reload the panel once a burst of live changes is over. */
export function scheduleActivity(): void {
  if (!state.activity.open) return;
  window.clearTimeout(state.activity.timer);
  state.activity.timer = window.setTimeout(() => void loadActivity(), 300);
}

/** Open or close the panel (toggle when `open` is not given). */
export function toggleActivity(open?: boolean): void {
  const next = open ?? !state.activity.open;
  state.activity.open = next;
  const panel = $('activity');
  graph.keepingPlace(() => {
    panel.hidden = !next;
    if (!next) panel.replaceChildren();
  });
  $('activity-toggle').setAttribute('aria-expanded', String(next));
  if (next) void loadActivity();
  else stopRecalls();
}
