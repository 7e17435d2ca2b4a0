// The search box: the server's ranking as a list under it, hits highlighted on the
// graph, arrow keys to walk them, Enter to open one, Esc to close.

import { graph, tierMark } from './app';
import { api, ApiError } from './api';
import { $, h } from './dom';
import { nodeKey } from './graphmodel';
import { focusNode } from './panel';
import { onScreen, state } from './state';
import type { SearchHit } from './types';

const search = state.search;

/** Close the hit list (an answer still on its way is then dropped). */
export function closeResults(): void {
  const list = $('search-results');
  list.hidden = true;
  $('search').setAttribute('aria-expanded', 'false');
  search.active = -1;
  search.generation++;
}

/** Forget the hits (another graph is on screen) and close the list. */
export function clearResults(): void {
  search.hits = [];
  closeResults();
}

/** A hit's relevance in words: the server's rank-fusion score only orders hits, so it
 * is read against the best hit's, not as a number a person could interpret. */
function relevance(hit: SearchHit, best: number): string {
  const share = best > 0 ? hit.score / best : 0;
  if (share >= 0.999) return 'best match';
  if (share >= 0.75) return 'strong match';
  if (share >= 0.5) return 'good match';
  return 'weak match';
}

function hitItem(hit: SearchHit, i: number, best: number): HTMLElement {
  return h(
    'li',
    {
      role: 'option',
      id: `hit-${i}`,
      'aria-selected': String(i === search.active),
      onmousedown: (ev: Event) => {
        ev.preventDefault();
        choose(i);
      },
    },
    h('strong', { text: hit.id }),
    h('span', { class: 'small muted', text: `${hit.level} · ${tierMark[hit.tier]}` }),
    h('span', { class: 'small muted', text: relevance(hit, best), title: `Rank-fusion score ${hit.score} (the best hit: ${best})` }),
    h('span', { class: 'gist', text: hit.gist }),
  );
}

function renderResults(answer: { total: number; hits: SearchHit[] } | null, message?: string): void {
  const list = $('search-results');
  const input = $('search');
  list.replaceChildren();
  if (message) list.append(h('li', { class: 'note', role: 'presentation', text: message }));
  if (answer) {
    const best = Math.max(0, ...answer.hits.map((hit) => hit.score));
    answer.hits.forEach((hit, i) => list.append(hitItem(hit, i, best)));
    if (answer.total > answer.hits.length) list.append(h('li', { class: 'note', role: 'presentation', text: `${answer.total - answer.hits.length} more match(es) not listed` }));
  }
  list.hidden = list.children.length === 0;
  input.setAttribute('aria-expanded', String(!list.hidden));
  input.setAttribute('aria-activedescendant', search.active >= 0 ? `hit-${search.active}` : '');
}

async function runSearch(query: string): Promise<void> {
  window.clearTimeout(search.timer);
  const generation = ++search.generation;
  if (!query.trim()) {
    search.hits = [];
    search.hitsQuery = query;
    graph.highlight([]);
    closeResults();
    return;
  }
  try {
    const answer = await api.search(query, onScreen(), state.project);
    if (generation !== search.generation || ($('search') as HTMLInputElement).value !== query) return;
    search.hits = answer.hits;
    search.hitsQuery = query;
    search.active = search.hits.length ? 0 : -1;
    graph.highlight(search.hits.map((x) => nodeKey(x.level, x.id)));
    renderResults(answer, search.hits.length ? undefined : `No node matches “${query}”.`);
  } catch (e) {
    if (generation !== search.generation) return;
    renderResults(null, `Search failed: ${e instanceof ApiError ? e.detail : String(e)}`);
  }
}

function choose(i: number): void {
  const hit = search.hits[i];
  if (!hit) return;
  window.clearTimeout(search.timer);
  closeResults();
  focusNode(nodeKey(hit.level, hit.id));
}

function onKey(input: HTMLInputElement, ev: KeyboardEvent): void {
  const hits = search.hits;
  if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
    if (!hits.length) return;
    ev.preventDefault();
    search.active = (search.active + (ev.key === 'ArrowDown' ? 1 : hits.length - 1)) % hits.length;
    renderResults({ total: hits.length, hits });
    const key = nodeKey(hits[search.active].level, hits[search.active].id);
    graph.centre(key);
  } else if (ev.key === 'Enter') {
    ev.preventDefault();
    // Enter before the answer for what is typed arrived: search now, then open its best hit.
    if (search.hitsQuery !== input.value) void runSearch(input.value).then(() => {
      if (search.hitsQuery === input.value) choose(0);
    });
    else if (hits.length) choose(Math.max(0, search.active));
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
}

export function wireSearch(): void {
  const input = $<HTMLInputElement>('search');
  input.addEventListener('input', () => {
    window.clearTimeout(search.timer);
    search.timer = window.setTimeout(() => void runSearch(input.value), 180);
  });
  input.addEventListener('keydown', (ev) => onKey(input, ev));
  input.addEventListener('blur', () => window.setTimeout(closeResults, 120));
  input.addEventListener('focus', () => {
    if (search.hits.length) renderResults({ total: search.hits.length, hits: search.hits });
  });
}
