// The storage root's git sync in the top bar: "Synced 3 min ago", "Sync offline since
// 09:10", "Sync failed: …", and the merge conflicts waiting. Its tooltip is the
// server's own summary; a click offers "Sync now". Hidden while nothing syncs. Read
// from `GET /api/sync` at start, every minute, after "Sync now", and soon after a
// change arrives from another machine.

import { api, ApiError, type SyncAnswer, type SyncRepo } from './api';
import { confirmDialog } from './confirm';
import { $, fill, h, toast } from './dom';
import { state } from './state';

/** How often the status is read again: the server syncs on its own timer. */
const POLL_MS = 60_000;
/** Changes from a sync arrive in a burst: the status is read once it is over. */
const SETTLE_MS = 1_000;


/** Where sync stands overall: the worst of the repositories that sync. */
export type Overall =
  | { kind: 'off' }
  | { kind: 'not-yet' }
  | { kind: 'synced'; at: number }
  | { kind: 'offline'; since: number; repo: SyncRepo }
  | { kind: 'failed'; at: number | null; repo: SyncRepo };

const repos = (a: SyncAnswer): SyncRepo[] => [a, ...(a.projects ?? [])];

/** A failure that needs a person first, then an unreachable remote (the earliest),
 * then the oldest last sync — the same order as the tray's. */
export function overall(a: SyncAnswer): Overall {
  const on = repos(a).filter((r) => r.on);
  if (!on.length) return { kind: 'off' };
  const failed = on.find((r) => r.last_error && r.offline_since == null);
  if (failed) return { kind: 'failed', at: failed.last_attempt, repo: failed };
  const offline = on
    .filter((r): r is SyncRepo & { offline_since: number } => r.offline_since != null)
    .sort((x, y) => x.offline_since - y.offline_since)[0];
  if (offline) return { kind: 'offline', since: offline.offline_since, repo: offline };
  const synced = on.map((r) => r.last_success);
  if (synced.every((ts): ts is number => ts != null)) return { kind: 'synced', at: Math.min(...synced) };
  return { kind: 'not-yet' };
}

/** `just now`, `3 min ago`, `2 h ago`, `4 days ago`. */
function ago(ts: number): string {
  const secs = Math.max(0, Date.now() / 1000 - ts);
  if (secs < 90) return 'just now';
  if (secs < 5400) return `${Math.round(secs / 60)} min ago`;
  if (secs < 129600) return `${Math.round(secs / 3600)} h ago`;
  return `${Math.round(secs / 86400)} days ago`;
}

/** `09:10` today, else `Dec 1, 09:10`. */
function clock(ts: number): string {
  const d = new Date(ts * 1000);
  const today = d.toDateString() === new Date().toDateString();
  return today
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
    : d.toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
}

/** The gist of a server error sentence: its first clause, without the parenthesised
 * details (the remote's URL, git's own words). */
export function shortCause(error: string): string {
  let out = '';
  let depth = 0;
  const text = error.trim();
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth += 1;
    else if (c === ')') depth = Math.max(0, depth - 1);
    else if (depth > 0) continue;
    else if ((c === '.' || c === ';') && (i + 1 === text.length || /\s/.test(text[i + 1]))) break;
    else out += c;
  }
  const short = out.split(/\s+/).filter(Boolean).join(' ');
  return short || 'no reason given';
}

const ofWhat = (r: SyncRepo): string => (r.project ? ` (project ${r.project})` : '');
const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** The top bar's words (`brief`: for a narrow window, where the tooltip says the
 * rest), and how worried they should look. */
export function describe(a: SyncAnswer): { text: string; brief: string; kind: 'ok' | 'warn' | 'error' } | null {
  const o = overall(a);
  const conflicts = repos(a).reduce((n, r) => n + (r.conflicts || 0), 0);
  let text: string;
  let brief: string;
  let kind: 'ok' | 'warn' | 'error';
  switch (o.kind) {
    case 'off':
      return null;
    case 'not-yet':
      [text, brief, kind] = ['Waiting for the first sync', 'Sync waiting', 'warn'];
      break;
    case 'synced':
      [text, brief, kind] = [`Synced ${ago(o.at)}`, 'Synced', 'ok'];
      break;
    case 'offline':
      [text, brief, kind] = [`Sync offline since ${clock(o.since)}${ofWhat(o.repo)}`, 'Sync offline', 'warn'];
      break;
    case 'failed':
      [text, brief, kind] = [`Sync failed${ofWhat(o.repo)}: ${shortCause(o.repo.last_error ?? '')}`, 'Sync failed', 'error'];
      break;
  }
  if (conflicts) {
    text += ` · ${plural(conflicts, 'conflict', 'conflicts')}`;
    brief += ` · ${conflicts}`;
    if (kind === 'ok') kind = 'warn';
  }
  return { text, brief, kind };
}

/** The server's summaries: the storage root's, then each project's that syncs. */
const summary = (a: SyncAnswer): string =>
  repos(a)
    .filter((r, i) => i === 0 || r.on)
    .map((r) => r.summary.trim())
    .join('\n\n');

function render(): void {
  const el = $<HTMLButtonElement>('sync');
  const shown = state.sync.last ? describe(state.sync.last) : null;
  el.hidden = !shown;
  if (!shown || !state.sync.last) return;
  const [text, brief] = state.sync.running ? ['Syncing…', 'Syncing…'] : [shown.text, shown.brief];
  fill(el, h('span', { class: 'full', text }), h('span', { class: 'brief', text: brief }));
  el.setAttribute('aria-label', `${text}. Sync now…`);
  el.dataset.state = state.sync.running ? 'running' : shown.kind;
  el.disabled = state.sync.running;
  el.title = `${summary(state.sync.last)}\n\nClick to sync now.`;
}

/** Read the sync state again and show it. A server that does not answer leaves the
 * last state on screen (the connection banner says the rest). */
export async function checkSync(): Promise<void> {
  try {
    state.sync.last = await api.sync();
  } catch {
    return;
  }
  render();
}

/** A change arrived from another machine: read the state once the burst is over. */
export function syncChanged(): void {
  window.clearTimeout(state.sync.settle);
  state.sync.settle = window.setTimeout(() => void checkSync(), SETTLE_MS);
}

async function offerSyncNow(): Promise<void> {
  if (!state.sync.last || state.sync.running) return;
  const detail = h('pre', { class: 'sync-summary', text: summary(state.sync.last) });
  const go = await confirmDialog(
    'Sync with the remote',
    'KG Memory syncs on its own on a timer. Sync now to send this machine’s changes and bring in the other machines’ at once.',
    'Sync now',
    detail,
    false,
  );
  if (!go) return;
  state.sync.running = true;
  render();
  try {
    const answer = await api.syncNow();
    toast(answer.message, 'info');
  } catch (e) {
    const why = (e instanceof ApiError ? e.detail : String(e)).trim();
    // The server's reason is a clause ("cannot reach the remote …"): said as a sentence.
    toast(`${why.charAt(0).toUpperCase()}${why.slice(1)}${/[.!?]$/.test(why) ? '' : '.'}`, 'error');
  } finally {
    state.sync.running = false;
    render();
  }
  await checkSync();
}

export function wireSync(): void {
  $('sync').addEventListener('click', () => void offerSyncNow());
  void checkSync();
  window.setInterval(() => void checkSync(), POLL_MS);
}
