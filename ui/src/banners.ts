// Banners above the graph for states a person must not mistake for normal ones: a
// graph file that was damaged and moved aside (so the level is its backup, or empty),
// and a lost connection to the memory server (so what is on screen may be stale).

import { $, h, when } from './dom';
import { onScreen, state } from './state';
import type { Damaged, LevelName } from './types';

/** The moved files whose banner the person closed, so a reload does not bring it back. */
const DISMISSED_KEY = 'kg-dismissed-damage';

function dismissed(): Set<string> {
  try {
    const list: unknown = JSON.parse(localStorage.getItem(DISMISSED_KEY) ?? '[]');
    return new Set(Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : []);
  } catch {
    return new Set();
  }
}

function dismiss(movedTo: string): void {
  const all = dismissed();
  all.add(movedTo);
  localStorage.setItem(DISMISSED_KEY, JSON.stringify([...all].slice(-50)));
  renderBanners();
}

function damageBanner(level: LevelName, d: Damaged): HTMLElement {
  const name = level === 'user' ? 'The user graph' : 'This project graph';
  const outcome = d.backup
    ? ['It was loaded from its backup ', h('code', { text: d.backup }), ': changes made after that backup was written are only in the damaged file.']
    : ['There was no valid backup, so the graph started empty: everything it held is in the damaged file.'];
  return h(
    'div',
    { class: 'banner error', role: 'alert', 'data-banner': 'damaged', 'data-level': level },
    h(
      'div',
      { class: 'text' },
      h('strong', { text: `${name}'s file was damaged and moved aside (${when(d.at)}).` }),
      h('div', {}, h('code', { text: d.path }), ' did not parse (', d.cause, '). It is kept, unchanged, as ', h('code', { text: d.moved_to }), '.'),
      h('div', {}, ...outcome),
      h('div', { class: 'small muted', text: 'To go back to it: stop KG Memory, repair the damaged copy (or keep the backup), and put it back in place of the graph file. The README says how (“Restoring a backup”).' }),
    ),
    h('button', { type: 'button', 'aria-label': 'Hide this message', text: '✕', onclick: () => dismiss(d.moved_to) }),
  );
}

function connectionBanner(): HTMLElement {
  return h(
    'div',
    { class: 'banner warn', role: 'alert', 'data-banner': 'offline' },
    h(
      'div',
      { class: 'text' },
      h('strong', { text: 'Lost the connection to the memory server.' }),
      h('div', {
        text: `Reconnecting to ${location.host} by itself… What is on screen may be out of date, and changes made here cannot be saved until it is back. If it does not come back, start KG Memory again (the tray app, or kg-memory serve).`,
      }),
    ),
  );
}

/** Draw the banners that apply now: the levels on screen and the live connection. */
export function renderBanners(): void {
  const box = $('banners');
  const hidden = dismissed();
  const banners: HTMLElement[] = [];
  // Only once the page has been live: the first connection attempt is not a loss.
  if (state.liveStatus === 'reconnecting' && state.loaded) banners.push(connectionBanner());
  for (const level of onScreen()) {
    const d = state.levels[level]?.damaged;
    if (d && !hidden.has(d.moved_to)) banners.push(damageBanner(level, d));
  }
  box.replaceChildren(...banners);
}
