// Tier moves: promoting or archiving a node (a drag across the bands, or the panel's
// button) as a step the server first previews, undoing steps, and the box that says
// what moved and why (for this page's steps and for the maintenance ticks that arrive
// live).

import { actions, address, graph, live } from './app';
import { api, ApiError, type StepAction } from './api';
import { confirmDialog } from './dialogs';
import { $, fmt, h, toast } from './dom';
import { nodeKey } from './graph';
import { state } from './state';
import type { LevelName, StepAnswer } from './types';

type Parts = (string | HTMLElement)[];

/** Show the "what moved" box. Its Undo button stays while this page has a step to
 * take back, whatever else the box comes to explain. */
export function showMoves(parts: Parts): void {
  const box = $('moves');
  const text = h('div', { class: 'text' }, parts);
  const buttons: HTMLElement[] = [];
  const undo = state.undo;
  if (undo && undo.steps > 0) {
    const more = undo.steps > 1 ? ` (${undo.steps} steps)` : '';
    buttons.push(h('button', { type: 'button', id: 'undo', text: `Undo${more}`, title: 'Take back the last step made here, re-balance included (Ctrl+Z)', onclick: () => void undoStep() }));
  }
  buttons.push(h('button', { type: 'button', 'aria-label': 'Dismiss', text: '✕', onclick: () => (box.hidden = true) }));
  box.replaceChildren(text, ...buttons);
  box.hidden = false;
}

const scoreOf = (level: LevelName, id: string): string => {
  const n = graph.nodes.get(nodeKey(level, id));
  return n?.why.score === null || n?.why.score === undefined ? '' : ` (score ${n.why.score.toFixed(2)})`;
};

/** What the re-balance at the end of a step moves (or would), one line per kind;
 * `own` are the nodes the step itself promotes or writes. */
function rebalanced(ans: StepAnswer, own: Set<string> = new Set()): HTMLElement[] {
  const items: HTMLElement[] = [];
  const r = ans.rebalanced;
  const list = (ids: string[]) => ids.map((id) => id + scoreOf(ans.level, id)).join(', ');
  const count = (n: number) => `${n} node${n === 1 ? '' : 's'}`;
  if (r.archived.length) {
    items.push(h('li', { text: `Archived to keep the level within its budget, ${count(r.archived.length)} in the order the server takes them (their scores now): ${list(r.archived)}` }));
  }
  const backAgain = r.archived.filter((id) => own.has(id));
  if (backAgain.length) {
    items.push(
      h('li', {
        class: 'warn',
        text: `${backAgain.join(', ')} ${backAgain.length === 1 ? 'is' : 'are'} among them: even with this step, ${backAgain.length === 1 ? 'it scores' : 'they score'} lowest, so the same step archives ${backAgain.length === 1 ? 'it' : 'them'} again.`,
      }),
    );
  }
  if (r.restored.length) items.push(h('li', { text: `Restored to active (the level is under its fill line): ${r.restored.join(', ')}` }));
  if (r.orphaned.length) items.push(h('li', { text: `Orphaned (archived anchors over their share): ${r.orphaned.join(', ')}` }));
  return items;
}

/** What a step of this page did, with the level's size after it. */
export function describeStep(title: string, ans: StepAnswer): Parts {
  const items = rebalanced(ans);
  if (ans.rescued.length) items.unshift(h('li', { text: `Back from the orphan drawer to the archive (its neighbours): ${ans.rescued.join(', ')}` }));
  const budget = state.levels[ans.level]?.budget;
  if (budget) items.push(h('li', { text: `Level now ${fmt(budget.chars)} / ${fmt(budget.budget)} chars.` }));
  return [h('strong', { text: title }), h('ul', {}, items)];
}

/** What a maintenance tick (or a hand archive in another window) moved, and why. */
export function explainTick(level: LevelName, reason: string, lists: Record<'archived' | 'restored' | 'orphaned' | 'deleted', string[]>): Parts {
  const items: HTMLElement[] = [];
  if (/hand/.test(reason)) {
    items.push(h('li', { text: `Archived by hand in another window: ${lists.archived.join(', ')}` }));
    return [h('strong', { text: `A ${level}-level node was archived by hand.` }), h('ul', {}, items)];
  }
  const b = state.levels[level]?.budget;
  const n = (x: number | undefined) => (x === undefined ? '' : ` ${fmt(x)}`);
  if (lists.archived.length) items.push(h('li', { text: `Archived (lowest scores; the level was over its${n(b?.budget)} chars): ${lists.archived.join(', ')}` }));
  if (lists.restored.length) items.push(h('li', { text: `Restored (highest scores; the level was under its${n(b?.fill_line)} fill line): ${lists.restored.join(', ')}` }));
  if (lists.orphaned.length) items.push(h('li', { text: `Orphaned (archived anchors over their${n(b?.anchor_budget)}-character share; fewest links first): ${lists.orphaned.join(', ')}` }));
  if (lists.deleted.length) items.push(h('li', { text: `Deleted for good (orphaned longer than the grace period): ${lists.deleted.join(', ')}` }));
  return [h('strong', { text: `The ${level} level re-balanced (${reason || 'maintenance'}).` }), h('ul', {}, items)];
}

/** How to ask before a step: the dialog's title, message and button. */
interface Ask {
  title: string;
  /** What the step does, when the title does not say it all ('' for nothing more). */
  message: string;
  verb: string;
  /** A deletion: asked even when nothing else moves, with a red button. */
  destructive?: boolean;
}

/**
 * Do a step as the view does every change: the server's dry run first; when its
 * re-balance would move other nodes (or `ask.destructive`), the person confirms, seeing
 * them. Resolves to the server's answer, or null when cancelled; a refusal throws
 * the server's message.
 */
export async function runStep(level: LevelName, step: StepAction[], ask: Ask): Promise<StepAnswer | null> {
  const where = address(level);
  const preview = await api.step(where, step, true);
  const own = new Set(step.filter((a) => a.kind !== 'archive' && a.kind !== 'delete_node').map((a) => a.id));
  const others = rebalanced(preview, own);
  if (others.length || ask.destructive) {
    const size = `the level goes from ${fmt(preview.chars_before)} to ${fmt(preview.chars_after)} characters`;
    const message = others.length ? `${ask.message}${ask.message ? ' ' : ''}It also moves other nodes (${size}):` : ask.message;
    const go = await confirmDialog(ask.title, message, ask.verb, others.length ? h('ul', {}, others) : undefined, ask.destructive);
    if (!go) return null;
  }
  state.ownMoveAt = Date.now();
  const picture = graph.picture();
  const done = await api.step(where, step, false);
  const u = state.undo;
  const earlier = u && u.level === level && u.projectPath === where.projectPath ? u.pictures : [];
  const pictures = picture ? [...earlier, picture] : earlier;
  state.undo = { level, projectPath: where.projectPath, steps: done.undo_steps, pictures: pictures.slice(-done.undo_steps) };
  return done;
}

/** The keys of the other nodes a step moved, to flash. */
export const movedKeys = (ans: StepAnswer): string[] =>
  [...ans.rescued, ...ans.rebalanced.archived, ...ans.rebalanced.restored, ...ans.rebalanced.orphaned].map((id) => nodeKey(ans.level, id));

/** Promote or archive a node; resolves false (the drag snaps back) when refused or
 * cancelled. When the re-balance would move other nodes, the server's dry run of the
 * step is shown first, and nothing happens unless the person confirms. */
export async function moveTier(key: string, to: 'active' | 'archived'): Promise<boolean> {
  const info = graph.nodes.get(key);
  if (!info) return false;
  const verb = to === 'active' ? 'Promote' : 'Archive';
  try {
    // Rescued neighbours only come back to the archive: worth saying after, not asking.
    const done = await runStep(info.level, [{ kind: to === 'active' ? 'promote' : 'archive', id: info.id }], {
      title: `${verb} ${info.id}?`,
      message: '',
      verb,
    });
    if (!done) return false;
    await actions.refresh(false, [key, ...movedKeys(done)]);
    const how = to === 'active' ? 'as a read by an agent would' : 'by hand';
    showMoves(describeStep(`${verb === 'Promote' ? 'Promoted' : 'Archived'} ${info.id} (${info.tier} → ${to}, ${how}).`, done));
    return true;
  } catch (e) {
    toast(`Move refused: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
    return false;
  }
}

/** Take back the last step made from this page, whatever the re-balance moved with it. */
export async function undoStep(): Promise<void> {
  const u = state.undo;
  if (!u || u.steps === 0) return;
  try {
    state.ownMoveAt = Date.now();
    const ans = await api.undo({ level: u.level, projectPath: u.projectPath, session: live.session });
    const picture = u.pictures.at(-1);
    state.undo = ans.undo_steps > 0 ? { ...u, steps: ans.undo_steps, pictures: u.pictures.slice(0, -1) } : null;
    await actions.refresh(false, ans.nodes.map((id) => nodeKey(u.level, id)));
    // The picture from before the step, as the person left it.
    if (picture) graph.restorePicture(picture);
    const left = ans.undo_steps ? ` ${ans.undo_steps} more can be undone.` : '';
    showMoves([h('strong', { text: `Undone: ${ans.nodes.join(', ')} ${ans.nodes.length === 1 ? 'is' : 'are'} as before the step.` }), left]);
  } catch (e) {
    // The server refuses when something changed what the step touched since.
    state.undo = null;
    toast(`Undo refused: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
    $('moves').hidden = true;
  }
}
