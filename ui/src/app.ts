// What every concern shares: the graph on screen, the live connection, where writes go,
// and the few actions a module needs from one built on top of it.
//
// The modules are layered (state, app, dialogs, syncstatus, gauges, moves, panel,
// search, hook, load, updates, chrome, main) and each imports only from the ones before
// it. A call that goes the other way (a debt-list link that picks a node, a save that
// reloads the level) goes through `actions`, which main.ts binds before anything runs.

import type { Address } from './api';
import { $, toast } from './dom';
import { GraphView } from './graph';
import { Live, type LiveStatus } from './live';
import { state } from './state';
import type { LevelName, LiveMessage, TierName } from './types';

/** The length over which a gist counts as maintenance debt, as the server says (null
 * until the level has loaded). */
export const scanLimit = (level: LevelName): number | null => state.levels[level]?.budget.scan_limit ?? null;

/** "120 / 300 characters", and whether that is over the limit. */
export function gistLength(level: LevelName, gist: string): { text: string; over: boolean } {
  const n = [...gist].length;
  const limit = scanLimit(level);
  const over = limit !== null && n > limit;
  return { text: limit === null ? `${n} characters` : `${n} / ${limit} characters`, over };
}

export const tierMark: Record<TierName, string> = { active: '● ACTIVE', archived: '◌ ARCHIVED', orphaned: '○ ORPHANED' };

export interface Actions {
  /** Fetch the levels on screen and show them, a full layout when `relayout` (load.ts). */
  refresh(relayout?: boolean, flash?: string[]): Promise<void>;
  /** Pick a node (or none) and show it in the panel (panel.ts). */
  select(key: string | null): void;
  /** Bring a node into view, opening the drawer if need be, and pick it (panel.ts). */
  focusNode(key: string): void;
  /** Move a node to another tier, as a drag or the panel asks (moves.ts). */
  moveTier(key: string, to: 'active' | 'archived'): Promise<boolean>;
  /** Add a node to the nodes chosen for a bulk action, or take it out (bulk.ts). */
  toggleChosen(key: string): void;
  /** Choose nodes for a bulk action, added to the chosen ones or instead (bulk.ts). */
  choose(keys: string[], add: boolean): void;
  /** Show a node's neighbourhood (neighbourhood.ts). */
  showAround(key: string, k?: number): Promise<void>;
  /** A change or a resync arrived on the live connection (updates.ts). */
  onLive(m: LiveMessage): void;
  /** The live connection's status changed (updates.ts). */
  onLiveStatus(s: LiveStatus, reconnected: boolean): void;
}

const unbound = (): never => {
  throw new Error('an action was called before main.ts bound it');
};

export const actions: Actions = {
  refresh: unbound,
  select: unbound,
  focusNode: unbound,
  moveTier: unbound,
  toggleChosen: unbound,
  choose: unbound,
  showAround: unbound,
  onLive: unbound,
  onLiveStatus: unbound,
};

/** Called once by main.ts, before anything runs. */
export function bindActions(impl: Actions): void {
  Object.assign(actions, impl);
}

export const graph = new GraphView($('cy'), $('tip'), {
  select: (key) => actions.select(key),
  toggleChosen: (key) => actions.toggleChosen(key),
  chooseBox: (keys) => actions.choose(keys, true),
  move: (key, to) => actions.moveTier(key, to),
  around: (key) => void actions.showAround(key),
  refuse: (m) => toast(m, 'error'),
});

export const live = new Live(
  (m) => actions.onLive(m),
  (s, reconnected) => actions.onLiveStatus(s, reconnected),
);

/** Where a write to `level` goes: the project on screen, with this page's live session. */
export const address = (level: LevelName): Address => ({
  level,
  projectPath: level === 'project' ? (state.levels.project?.project_path ?? state.project) : null,
  session: live.session,
});
