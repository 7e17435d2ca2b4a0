// Tier moves: promoting or archiving a node (a drag across the bands, or the panel's
// button), undoing the last one, and the box that says what moved and why (for this
// page's moves and for the maintenance ticks that arrive live).

import { actions, address, graph, live } from './app';
import { api, ApiError } from './api';
import { $, fmt, h, toast } from './dom';
import { nodeKey } from './graph';
import { state } from './state';
import type { LevelName, TierMoveAnswer } from './types';

type Parts = (string | HTMLElement)[];

/** Show the "what moved" box, with an Undo button when `undo` is given. */
export function showMoves(parts: Parts, undo: (() => void) | null): void {
  const box = $('moves');
  const text = h('div', { class: 'text' }, parts);
  const buttons: HTMLElement[] = [];
  if (undo) buttons.push(h('button', { type: 'button', id: 'undo', text: 'Undo', title: 'Undo this move (Ctrl+Z), once', onclick: undo }));
  buttons.push(h('button', { type: 'button', 'aria-label': 'Dismiss', text: '✕', onclick: () => (box.hidden = true) }));
  box.replaceChildren(text, ...buttons);
  box.hidden = false;
}

const scoreOf = (level: LevelName, id: string): string => {
  const n = graph.nodes.get(nodeKey(level, id));
  return n?.why.score === null || n?.why.score === undefined ? '' : ` (score ${n.why.score.toFixed(2)})`;
};

/** What a move from this page did: the node, the neighbours it rescued, the re-balance. */
function describeMove(ans: TierMoveAnswer, undone: boolean): Parts {
  const verb = ans.to === 'active' ? 'Promoted' : 'Archived';
  const parts: Parts = [
    h('strong', { text: `${undone ? 'Undone: ' : ''}${verb} ${ans.id}` }),
    ` (${ans.from} → ${ans.to}${ans.to === 'active' ? ', as a read by an agent would' : ', by hand'}).`,
  ];
  const items: HTMLElement[] = [];
  if (ans.rescued.length) items.push(h('li', { text: `Rescued from the orphan drawer back to the archive (its neighbours): ${ans.rescued.join(', ')}` }));
  if (ans.rebalanced) {
    const r = ans.rebalanced;
    if (r.archived.length) items.push(h('li', { text: `Archived to stay within budget: ${r.archived.map((id) => id + scoreOf(ans.level, id)).join(', ')} — ${r.reason}.` }));
    if (r.restored.length) items.push(h('li', { text: `Restored: ${r.restored.join(', ')}` }));
    if (r.orphaned.length) items.push(h('li', { text: `Orphaned (anchors over their share): ${r.orphaned.join(', ')}` }));
  }
  if (ans.to === 'archived' && ans.budget.state === 'under_fill') {
    items.push(h('li', { text: `The level (${fmt(ans.budget.chars)} chars) is under its ${fmt(ans.budget.fill_line)} fill line: the next maintenance tick may refill archived nodes, this one included.` }));
  }
  items.push(h('li', { text: `Level now ${fmt(ans.budget.chars)} / ${fmt(ans.budget.budget)} chars.` }));
  parts.push(h('ul', {}, items));
  return parts;
}

/** What a maintenance tick (or a hand archive in another window) moved, and why. */
export function explainTick(level: LevelName, reason: string, lists: Record<'archived' | 'restored' | 'orphaned' | 'deleted', string[]>): Parts {
  const items: HTMLElement[] = [];
  if (/hand/.test(reason)) {
    items.push(h('li', { text: `Archived by hand in another window: ${lists.archived.join(', ')}` }));
    return [h('strong', { text: `A ${level}-level node was archived by hand.` }), h('ul', {}, items)];
  }
  if (lists.archived.length) items.push(h('li', { text: `Archived (lowest scores; the level was over 17,500 chars): ${lists.archived.join(', ')}` }));
  if (lists.restored.length) items.push(h('li', { text: `Restored (highest scores; the level was under its 14,000 fill line): ${lists.restored.join(', ')}` }));
  if (lists.orphaned.length) items.push(h('li', { text: `Orphaned (archived anchors over 5,250 chars; fewest links first): ${lists.orphaned.join(', ')}` }));
  if (lists.deleted.length) items.push(h('li', { text: `Deleted for good (orphaned longer than the grace period): ${lists.deleted.join(', ')}` }));
  return [h('strong', { text: `The ${level} level re-balanced (${reason || 'maintenance'}).` }), h('ul', {}, items)];
}

/** Promote or archive a node; resolves false (the drag snaps back) when refused. */
export async function moveTier(key: string, to: 'active' | 'archived'): Promise<boolean> {
  const info = graph.nodes.get(key);
  if (!info) return false;
  const projectPath = address(info.level).projectPath;
  try {
    state.ownMoveAt = Date.now();
    const ans = await api.moveTier(address(info.level), info.id, to);
    state.lastMove = { level: info.level, id: info.id, from: ans.from, to: ans.to, projectPath };
    showMoves(describeMove(ans, false), () => void undoMove());
    const keys = [key, ...ans.rescued.map((id) => nodeKey(info.level, id))];
    if (ans.rebalanced) keys.push(...[...ans.rebalanced.archived, ...ans.rebalanced.restored, ...ans.rebalanced.orphaned].map((id) => nodeKey(info.level, id)));
    await actions.refresh(false, keys);
    return true;
  } catch (e) {
    toast(`Move refused: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
    return false;
  }
}

/** Reverse the last move made from this page, once. */
export async function undoMove(): Promise<void> {
  const m = state.lastMove;
  if (!m) return;
  state.lastMove = null;
  const back: 'active' | 'archived' = m.from === 'active' ? 'active' : 'archived';
  try {
    state.ownMoveAt = Date.now();
    const ans = await api.moveTier({ level: m.level, projectPath: m.projectPath, session: live.session }, m.id, back);
    const parts = describeMove(ans, true);
    if (m.from === 'orphaned') parts.push(h('p', { class: 'small muted', text: 'It was orphaned: undo puts it back in the archive (orphaning is left to the maintenance pass).' }));
    showMoves(parts, null);
    await actions.refresh(false, [nodeKey(m.level, m.id)]);
  } catch (e) {
    toast(`Undo failed: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
}
