// The neighbourhood of a node: double-click it (or press `H` with it picked) to see
// only it and what lies within k hops, across tiers, as the server computes it
// (`GET /api/view/neighbourhood`); 1, 2 and 3 change k, Esc or "Show all" ends it.

import { graph } from './app';
import { api, ApiError } from './api';
import { $, h, toast } from './dom';
import { artifactKey, nodeKey } from './graphmodel';
import { state } from './state';

/** Show the neighbourhood of the node `key` within `k` hops. */
export async function showAround(key: string, k = 1): Promise<void> {
  const info = graph.nodes.get(key);
  if (!info) return;
  try {
    const ans = await api.neighbourhood(info.level, state.project, info.id, k);
    const keys = new Set(ans.nodes.map((n) => nodeKey(info.level, n.id)));
    for (const a of ans.artifacts) keys.add(artifactKey(a.path));
    state.around = { key, k };
    graph.showAround(keys);
    renderBar(info.id, k, ans.nodes.length - 1, ans.outside_edges);
  } catch (e) {
    toast(`No neighbourhood: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
}

/** Show every node again. */
export function showAll(): void {
  state.around = null;
  graph.showAround(null);
  $('hood').hidden = true;
}

function renderBar(id: string, k: number, others: number, outside: number): void {
  const bar = $('hood');
  const hop = (n: number) =>
    h('button', {
      type: 'button',
      class: 'topic',
      text: `${n} hop${n === 1 ? '' : 's'}`,
      'aria-pressed': String(n === k),
      onclick: () => state.around && void showAround(state.around.key, n),
    });
  const note = outside ? ` (${outside} edge${outside === 1 ? '' : 's'} lead to the other level)` : '';
  bar.replaceChildren(
    h('span', { class: 'small', text: `Around ${id}: ${others} node${others === 1 ? '' : 's'} within ${k} hop${k === 1 ? '' : 's'}${note}` }),
    hop(1),
    hop(2),
    hop(3),
    h('button', { type: 'button', class: 'topic', id: 'hood-all', text: 'Show all (Esc)', onclick: showAll }),
  );
  bar.hidden = false;
}
