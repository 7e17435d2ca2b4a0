// Live updates: what the view does with each message of the live connection (live.ts)
// and with its status: a toast saying who changed what, a coalesced refresh that
// flashes the changed nodes, and the box explaining a maintenance tick.

import { graph, live } from './app';
import { renderBanners } from './banners';
import { $, toast } from './dom';
import { nodeKey } from './graphmodel';
import type { LiveStatus } from './live';
import { catchUpWithLive, loadGraphs, refresh, scheduleGraphs, scheduleRefresh } from './load';
import { burstGrew, explainTick, showMoves } from './moves';
import { followRename } from './panel';
import { onScreen, projectOnScreen, state } from './state';
import { checkSync, syncChanged } from './syncstatus';
import type { LevelName, LiveMessage } from './types';

/** A change of the store (the messages that name a level). */
type Change = Extract<LiveMessage, { level: LevelName }>;

export function onLiveStatus(s: LiveStatus, reconnected: boolean): void {
  state.liveStatus = s;
  const el = $('live');
  el.textContent = s === 'live' ? 'live' : s === 'reconnecting' ? 'reconnecting…' : 'connecting…';
  el.classList.toggle('on', s === 'live');
  el.title = s === 'live' ? 'Changes made by agents appear here as they happen' : 'The memory server does not answer; retrying';
  renderBanners();
  if (s === 'live' && reconnected) {
    toast('Reconnected to the memory server', 'live');
    void loadGraphs();
    void checkSync();
    void refresh(false);
  } else if (s === 'live') {
    catchUpWithLive();
  }
}

/** How the server marks the source of a change that arrived through git sync. */
const SYNC_SOURCE = 'sync:';

/** Whether this page made a step in the last 3 s: its own box explains what came of it. */
const ownStepJustNow = (): boolean => Date.now() - state.ownMoveAt < 3000;

/** Say what changed (by whom) and return the keys of the nodes to flash. */
function announce(m: Change, level: LevelName): string[] {
  const k = (id: string) => nodeKey(level, id);
  const keys: string[] = [];
  const source = 'source_session' in m ? m.source_session : null;
  const who = !source
    ? 'a client without a session'
    : source.startsWith(SYNC_SOURCE)
      ? `another machine, via ${source.slice(SYNC_SOURCE.length)}`
      : 'another session';
  // This page's own writes come back too: it has said what they did already.
  const say = (text: string) => {
    if (!source || source !== live.session) toast(text, 'live');
  };
  switch (m.type) {
    case 'node_updated':
      if (m.node) {
        keys.push(k(String(m.node.id)));
        if (!graph.nodes.has(k(String(m.node.id)))) inBurst(level, { written: [String(m.node.id)] });
        say(`${graph.nodes.has(k(String(m.node.id))) ? 'Updated' : 'New'} node ${m.node.id} (by ${who})`);
      }
      break;
    case 'node_renamed':
      if (m.node) {
        keys.push(k(String(m.node.id)));
        // A panel open on the old id follows the node to its new one.
        followRename(k(m.old_id), k(String(m.node.id)));
        if (!ownStepJustNow()) say(`Renamed ${m.old_id} to ${m.node.id} (by ${who})`);
      }
      break;
    case 'edge_updated':
      if (m.edge) inBurst(level, { linked: [m.edge.from, m.edge.to] });
      if (m.edge) say(`Edge ${m.edge.from} → ${m.edge.rel} → ${m.edge.to} (by ${who})`);
      break;
    case 'node_deleted':
      say(`Deleted node ${m.node_id} (by ${who})`);
      break;
    case 'node_recalled':
      if (m.node) keys.push(k(String(m.node.id)));
      for (const id of m.rescued_from_orphan ?? []) keys.push(k(id));
      say(`Recalled ${m.node?.id} to active (by ${who})`);
      break;
    case 'tiers_moved': {
      const lists = { archived: m.archived ?? [], restored: m.restored ?? [], orphaned: m.orphaned ?? [], deleted: m.deleted ?? [] };
      for (const id of [...lists.archived, ...lists.restored, ...lists.orphaned]) keys.push(k(id));
      // This page's own step is already explained by its own box.
      if (!ownStepJustNow()) showMoves(explainTick(level, m.reason ?? '', lists, inBurst(level, { orphaned: lists.orphaned })));
      break;
    }
    case 'quarantined':
      toast(`A ${level}-level graph file was damaged and moved aside: see the message above the graph.`, 'error');
      break;
    case 'step_undone':
      for (const id of m.nodes) keys.push(k(id));
      if (!ownStepJustNow()) toast(`A step of the graph view was undone in another window: ${m.nodes.join(', ')}`, 'live');
      break;
    default:
      break;
  }
  return keys;
}

/** How long after one write's re-balance the next still counts as the same burst. */
const BURST_GAP_MS = 30_000;

/** Add to the burst of writes on a level (a new one after a pause) and return it. */
function inBurst(level: LevelName, add: { written?: string[]; linked?: string[]; orphaned?: string[] }): NonNullable<typeof state.burst> {
  const now = Date.now();
  const last = state.burst;
  const burst = last && last.level === level && now - last.at < BURST_GAP_MS ? last : { level, written: new Set<string>(), linked: new Set<string>(), orphaned: new Set<string>(), at: now };
  for (const id of add.written ?? []) burst.written.add(id);
  for (const id of add.linked ?? []) burst.linked.add(id);
  for (const id of add.orphaned ?? []) burst.orphaned.add(id);
  burst.at = now;
  state.burst = burst;
  burstGrew(level, burst);
  return burst;
}

export function onLive(m: LiveMessage): void {
  if (m.type === 'resync') {
    // The server dropped changes this page had not taken yet: what is on screen may
    // be out of date, so read every level again, and say why the picture redraws.
    toast(`The view fell ${m.missed} change(s) behind the memory; it read the graph again.`, 'live');
    scheduleRefresh([]);
    return;
  }
  if (m.type === 'pong' || !('level' in m)) return;
  // Whatever graph it touched, a change from another machine means a sync just ran.
  if ('source_session' in m && m.source_session?.startsWith(SYNC_SOURCE)) syncChanged();
  const mine = m.level === 'user' ? onScreen().includes('user') : !!projectOnScreen() && m.project_path === projectOnScreen();
  if (!mine) {
    scheduleGraphs();
    return;
  }
  scheduleRefresh(announce(m, m.level));
  scheduleGraphs();
}
