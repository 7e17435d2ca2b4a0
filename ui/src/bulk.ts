// Bulk actions: the nodes chosen with shift-click, a box drawn with Shift held, or the
// list's check boxes, and the bar that promotes, archives or deletes them as one step
// (one preview of what the re-balance moves, one undo).

import { actions, graph } from './app';
import { ApiError, type StepAction } from './api';
import { $, fill, h, toast } from './dom';
import type { NodeInfo } from './graphmodel';
import { describeStep, movedKeys, runStep, showMoves } from './moves';
import { state } from './state';
import type { LevelName } from './types';

const listeners: (() => void)[] = [];

/** Call `fn` whenever the chosen set changes (the list redraws its check boxes). */
export function onChosenChange(fn: () => void): void {
  listeners.push(fn);
}

function changed(): void {
  graph.markChosen([...state.chosen]);
  renderBulk();
  for (const fn of listeners) fn();
}

/** Add a node to the chosen set, or take it out. */
export function toggleChosen(key: string): void {
  if (!graph.nodes.has(key)) return;
  if (state.chosen.has(key)) state.chosen.delete(key);
  else state.chosen.add(key);
  changed();
}

/** Choose these nodes, added to the chosen ones (`add`) or instead of them. */
export function choose(keys: string[], add: boolean): void {
  if (!add) state.chosen.clear();
  for (const k of keys) if (graph.nodes.has(k)) state.chosen.add(k);
  changed();
}

export function clearChosen(): void {
  if (!state.chosen.size) return;
  state.chosen.clear();
  changed();
}

/** Forget chosen nodes that are no longer on screen (after a reload). */
export function pruneChosen(): void {
  const before = state.chosen.size;
  for (const k of state.chosen) if (!graph.nodes.has(k)) state.chosen.delete(k);
  if (state.chosen.size !== before) changed();
  else graph.markChosen([...state.chosen]);
}

const chosenInfos = (): NodeInfo[] => [...state.chosen].map((k) => graph.nodes.get(k)).filter((n): n is NodeInfo => !!n);

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

type BulkKind = 'promote' | 'archive' | 'delete_node' | 'lock' | 'unlock';

const isLocked = (n: NodeInfo): boolean => n.node.locked === true;

/** Whether a bulk action changes node `n`. */
function appliesTo(kind: BulkKind, n: NodeInfo): boolean {
  switch (kind) {
    case 'promote':
      return n.tier !== 'active';
    case 'archive':
      return n.tier === 'active' && !isLocked(n);
    case 'lock':
      return !isLocked(n);
    case 'unlock':
      return isLocked(n);
    default:
      return true;
  }
}

const VERB: Record<BulkKind, [string, string]> = {
  promote: ['Promote', 'Promoted'],
  archive: ['Archive', 'Archived'],
  delete_node: ['Delete', 'Deleted'],
  lock: ['Lock', 'Locked'],
  unlock: ['Unlock', 'Unlocked'],
};

/** Do one bulk action on the chosen nodes it applies to, as one step of their level. */
async function run(kind: BulkKind): Promise<void> {
  const infos = chosenInfos();
  const levels = new Set(infos.map((n) => n.level));
  if (levels.size !== 1) return; // the bar offers no action then
  const level = [...levels][0] as LevelName;
  const applies = infos.filter((n) => appliesTo(kind, n));
  if (!applies.length) return;
  const ids = applies.map((n) => n.id);
  const step: StepAction[] = ids.map((id) =>
    kind === 'lock' || kind === 'unlock' ? { kind: 'lock', id, locked: kind === 'lock' } : { kind, id },
  );
  const [verb, did] = VERB[kind];
  const shown = ids.length > 12 ? `${ids.slice(0, 12).join(', ')} and ${ids.length - 12} more` : ids.join(', ');
  try {
    const done = await runStep(level, step, {
      title: `${verb} ${plural(ids.length, 'node')}?`,
      message: kind === 'delete_node' ? `Delete ${shown}, with their edges? Undo brings them all back.` : `${verb} ${shown}.`,
      verb,
      destructive: kind === 'delete_node',
    });
    if (!done) return;
    if (kind === 'delete_node' && state.picked && state.chosen.has(state.picked)) actions.select(null);
    state.chosen.clear();
    changed();
    const keys = applies.map((n) => n.key);
    await actions.refresh(false, [...keys, ...movedKeys(done)]);
    showMoves(describeStep(`${did} ${plural(ids.length, 'node')} in one step: ${shown}.`, done));
  } catch (e) {
    toast(`${verb} refused: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
}

/** The bar under the graph while nodes are chosen. */
export function renderBulk(): void {
  const bar = $('bulk');
  const infos = chosenInfos();
  if (!infos.length) {
    bar.hidden = true;
    bar.replaceChildren();
    return;
  }
  const levels = new Set(infos.map((n) => n.level));
  const count = (pred: (n: NodeInfo) => boolean) => infos.filter(pred).length;
  const button = (kind: BulkKind, label: string, n: number, title: string) =>
    h('button', {
      type: 'button',
      class: kind === 'delete_node' ? 'danger' : '',
      'data-bulk': kind,
      text: n === infos.length ? label : `${label} (${n})`,
      title,
      disabled: n === 0 || levels.size !== 1,
      onclick: () => void run(kind),
    });
  fill(
    bar,
    h('strong', { text: `${plural(infos.length, 'node')} chosen` }),
    levels.size !== 1 ? h('span', { class: 'small muted', text: 'from both levels: choose nodes of one level to act on them together' }) : null,
    button('promote', 'Promote', count((n) => n.tier !== 'active'), 'Bring the archived and orphaned ones back to the active graph'),
    button('archive', 'Archive', count((n) => appliesTo('archive', n)), 'Move the active ones to the archive (locked ones stay)'),
    button('lock', 'Lock', count((n) => appliesTo('lock', n)), 'Keep agents from rewriting, renaming or deleting them, and compaction from archiving them'),
    button('unlock', 'Unlock', count((n) => appliesTo('unlock', n)), 'Let agents change them again'),
    button('delete_node', 'Delete', infos.length, 'Delete them and their edges'),
    h('button', { type: 'button', text: 'Clear', title: 'Choose none (Esc)', onclick: clearChosen }),
    h('span', { class: 'small muted', text: 'Shift-click adds or removes a node; Shift-drag draws a box.' }),
  );
  bar.hidden = false;
}
