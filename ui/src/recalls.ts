// "Why memory spoke": the activity panel's second tab. Each recall decision the server
// made for the project on screen (a prompt's, a file's, another session's write told to
// a session): what was shown to the agent, what came close and stayed out, and why, in
// one sentence. A person can see why the memory said something, or said nothing.

import { actions, graph } from './app';
import { api, ApiError } from './api';
import { h, when } from './dom';
import { nodeKey } from './graphmodel';
import { projectOnScreen, state } from './state';
import type { RecallEntry, RecallWeighed } from './types';

/** How often the tab asks again while it is open: decisions come with prompts and tool
 * calls, which change no graph, so no live change announces them. */
const REFRESH_MS = 5000;


const TRIGGERS: Record<string, string> = {
  prompt: 'a prompt',
  file: 'a file used',
  push: 'written by others',
};

function nodeButton(n: RecallWeighed): HTMLElement {
  const key = nodeKey(n.level, n.id);
  const label = n.score === null ? n.id : `${n.id} (${n.score.toFixed(2)})`;
  const mark = n.injected ? (n.seen ? 'pointed at, already in context' : 'shown') : n.seen ? 'already in context' : 'left out';
  return graph.nodes.has(key)
    ? h('button', { type: 'button', class: `link node-ref ${n.injected ? 'shown' : 'left-out'}`, text: label, title: `${mark} — show ${n.id}`, onclick: () => actions.focusNode(key) })
    : h('span', { class: `node-ref ${n.injected ? 'shown' : 'left-out'}`, text: label, title: mark });
}

function decisionItem(d: RecallEntry): HTMLElement {
  const time = when(d.ts).replace(/^.*\((.*)\)$/, '$1');
  const about =
    d.trigger === 'file'
      ? `${d.tool ?? 'a tool'} on ${d.files.join(', ') || 'a file'}`
      : d.terms.length
        ? `searched on (word stems): ${d.terms.join(', ')}`
        : '';
  const weighed = d.weighed.length ? h('div', { class: 'weighed small' }, d.weighed.map(nodeButton)) : null;
  return h(
    'li',
    { class: `entry recall ${d.injected.length ? 'spoke' : 'silent'}`, 'data-outcome': d.outcome },
    h(
      'div',
      { class: 'meta small muted' },
      h('time', { text: time, title: when(d.ts) }),
      ` · ${TRIGGERS[d.trigger] ?? d.trigger}${d.session ? ` · session ${d.session}` : ''}`,
    ),
    h('div', { class: 'summary', text: d.why }),
    about ? h('div', { class: 'small muted about', text: about }) : null,
    weighed,
  );
}

/** The tab's body. */
export function recallTab(): HTMLElement[] {
  const body: HTMLElement[] = [
    h('p', {
      class: 'small muted',
      text: 'What the memory told agents of this project, and what it left out, since the server started. Newest first.',
    }),
  ];
  if (state.recalls.error) body.push(h('p', { class: 'error', role: 'alert', text: state.recalls.error }));
  body.push(
    state.recalls.decisions.length
      ? h('ol', { class: 'activity-list recall-list' }, state.recalls.decisions.map(decisionItem))
      : h('p', { class: 'small muted', text: 'No recall decision yet: they come with agents’ prompts and file reads.' }),
  );
  return body;
}

/** Fetch the decisions of the project on screen; `render` shows them. */
export async function loadRecalls(render: () => void): Promise<void> {
  window.clearTimeout(state.recalls.timer);
  if (!state.activity.open || state.activity.tab !== 'recall') return;
  try {
    state.recalls.decisions = (await api.recall(projectOnScreen())).decisions;
    state.recalls.error = '';
  } catch (e) {
    state.recalls.error = `Cannot read the recall decisions: ${e instanceof ApiError ? e.detail : String(e)}`;
  }
  render();
  state.recalls.timer = window.setTimeout(() => void loadRecalls(render), REFRESH_MS);
}

/** Stop asking again (the panel closed). */
export function stopRecalls(): void {
  window.clearTimeout(state.recalls.timer);
}
