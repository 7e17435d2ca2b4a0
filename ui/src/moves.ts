// Tier moves: promoting or archiving a node (a drag across the bands, or the panel's
// button) as a step the server first previews, undoing steps, and the box that says
// what moved and why (for this page's steps and for the maintenance ticks that arrive
// live).

import { actions, address, graph, live } from './app';
import { api, ApiError, type StepAction } from './api';
import { askDialog } from './confirm';
import { $, fmt, h, toast } from './dom';
import { nodeKey } from './graphmodel';
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

/** A step's answer, with the scores its preview was weighed with (one moment's, so
 * the dialog before and the box after show the same numbers). */
export interface StepDone extends StepAnswer {
  scores: ReadonlyMap<string, Weighed>;
}

/** A node's score and what it costs the level while active, at one moment. */
interface Weighed {
  score: number | null;
  cost: number;
}

/** A node the re-balance at the end of a step moves: in the order the budget takes it. */
interface Consequence {
  id: string;
  key: string;
  /** 1 for the first the budget takes. */
  order: number;
  to: 'archived' | 'orphaned' | 'active';
  score: number | null;
  /** The characters it costs the level while active. */
  cost: number | null;
}

/** The scores of a level's nodes now, by id. */
function scoresNow(level: LevelName): Map<string, Weighed> {
  const scores = new Map<string, Weighed>();
  for (const n of graph.nodes.values()) if (n.level === level) scores.set(n.id, { score: n.why.score, cost: n.why.cost });
  return scores;
}

/** What the re-balance at the end of a step moves (or would), in the budget's order. */
function consequences(ans: StepAnswer, scores: ReadonlyMap<string, Weighed>): Consequence[] {
  const r = ans.rebalanced;
  const rows: Consequence[] = [];
  const add = (ids: string[], to: Consequence['to']): void => {
    for (const id of ids) {
      const key = nodeKey(ans.level, id);
      const weighed = scores.get(id);
      rows.push({ id, key, order: rows.length + 1, to, score: weighed?.score ?? null, cost: weighed?.cost ?? null });
    }
  };
  add(r.archived, 'archived');
  add(r.orphaned, 'orphaned');
  add(r.restored, 'active');
  return rows;
}

const WHY_MOVES: Record<Consequence['to'], { text: string; why: string }> = {
  archived: { text: 'archived', why: 'The level is over its budget: the lowest scores leave the active tier first' },
  orphaned: { text: 'orphaned', why: 'The archived anchors are over their share: the least linked leave every read' },
  active: { text: 'restored', why: 'The level is under its fill line: the highest archived scores come back' },
};

/** The consequences as a table, in the budget's order; `keep` adds a button per row
 * that keeps the node out of the step (a lock). */
function consequenceTable(rows: Consequence[], keep?: (c: Consequence) => void): HTMLElement {
  const head = h('tr', {}, h('th', { text: '#' }), h('th', { text: 'Node' }), h('th', { class: 'num', text: 'Score' }), h('th', { class: 'num', text: 'Chars' }), h('th', { text: 'Goes' }), keep ? h('th', {}) : null);
  const body = rows.map((c) =>
    h(
      'tr',
      { 'data-key': c.key },
      h('td', { class: 'num', text: String(c.order) }),
      h('td', { class: 'id' }, h('button', { type: 'button', class: 'link', text: c.id, title: `Show ${c.id}`, onclick: () => actions.focusNode(c.key) })),
      h('td', { class: 'num', text: c.score === null ? '—' : c.score.toFixed(2) }),
      h('td', { class: 'num', text: c.cost === null ? '' : fmt(c.cost) }),
      h('td', { text: WHY_MOVES[c.to].text, title: WHY_MOVES[c.to].why }),
      keep && c.to !== 'active'
        ? h('td', {}, h('button', { type: 'button', class: 'keep', text: 'Keep', title: `Lock ${c.id} so this step leaves it active (agents cannot rewrite it either; unlock it in its panel)`, onclick: () => keep(c) }))
        : keep
          ? h('td', {})
          : null,
    ),
  );
  return h('table', { class: 'consequences' }, h('thead', {}, head), h('tbody', {}, body));
}

/** The warning when the step's own nodes are among those the budget takes again. */
function backAgainNote(rows: Consequence[], own: Set<string>): HTMLElement | null {
  const back = rows.filter((c) => c.to !== 'active' && own.has(c.id)).map((c) => c.id);
  if (!back.length) return null;
  const one = back.length === 1;
  return h('p', {
    class: 'warn',
    text: `${back.join(', ')} ${one ? 'is' : 'are'} among them: even with this step, ${one ? 'it scores' : 'they score'} lowest, so the same step archives ${one ? 'it' : 'them'} again.`,
  });
}

/** What a step of this page did, with the level's size after it and the scores it was weighed with. */
export function describeStep(title: string, ans: StepDone): Parts {
  const rows = consequences(ans, ans.scores);
  const items: HTMLElement[] = [];
  if (ans.rescued.length) items.push(h('li', { text: `Back from the orphan drawer to the archive (its neighbours): ${ans.rescued.join(', ')}` }));
  const budget = state.levels[ans.level]?.budget;
  if (budget) items.push(h('li', { text: `Level now ${fmt(budget.chars)} / ${fmt(budget.budget)} chars.` }));
  const parts: Parts = [h('strong', { text: title })];
  if (rows.length) parts.push(h('p', { class: 'small', text: 'It also moved, in the order the budget took them (scores as weighed for the step):' }), consequenceTable(rows));
  if (items.length) parts.push(h('ul', {}, items));
  return parts;
}

/** What a maintenance tick (or a hand archive in another window) moved, and why. */
export function explainTick(level: LevelName, reason: string, lists: Record<'archived' | 'restored' | 'orphaned' | 'deleted', string[]>, burst?: Burst): Parts {
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
  const parts: Parts = [h('strong', { text: `The ${level} level re-balanced (${reason || 'maintenance'}).` }), h('ul', {}, items)];
  // Those orphaned over the burst of writes, not only this write's, and not active since.
  const orphaned = [...(burst?.orphaned ?? lists.orphaned)].filter((id) => graph.nodes.get(nodeKey(level, id))?.tier !== 'active');
  if (orphaned.length) parts.push(...burstNote(level, orphaned, burst));
  return parts;
}

/** A burst of writes as the live messages told it (state.burst). */
interface Burst {
  written: ReadonlySet<string>;
  linked: ReadonlySet<string>;
  orphaned: ReadonlySet<string>;
}

/**
 * Orphaned by maintenance: say why where it happens (a burst of new nodes took the
 * budget, the fewest-linked archived nodes left every read first), and bring them back
 * in one step.
 */
function burstNote(level: LevelName, ids: string[], burst?: Burst): Parts {
  const button = h('button', {
    type: 'button',
    class: 'bring-back',
    text: `Bring back ${ids.length === 1 ? ids[0] : `these ${ids.length}`}`,
    title: 'Promote them to the active tier in one step (you see what the budget moves instead first); linking new nodes to them keeps them in',
    onclick: () => void bringBack(level, ids),
  });
  return [h('p', { class: 'small burst-why', 'data-level': level, text: burstWhy(level, burst) }), button];
}

/** Why a burst orphaned nodes, as far as the live messages told it. */
function burstWhy(level: LevelName, burst?: Burst): string {
  const written = [...(burst?.written ?? [])];
  const linked = (id: string): boolean => burst?.linked.has(id) === true || [...graph.edges.values()].some((e) => e.source === nodeKey(level, id) || e.target === nodeKey(level, id));
  const unlinked = written.filter((id) => !linked(id)).length;
  const n = written.length;
  const why = n
    ? `${n} node${n === 1 ? ' was' : 's were'} written just now${unlinked ? `, ${unlinked} of them unlinked` : ''}: they took the budget, so older nodes were archived, and the archived ones with the fewest links left every read. `
    : '';
  return `${why}Orphaned nodes are out of every read until promoted; search still finds them.`;
}

/** The burst grew (its writes arrive after the re-balance that told of the orphans): the box on screen says so. */
export function burstGrew(level: LevelName, burst: Burst): void {
  const note = document.querySelector<HTMLElement>(`#moves .burst-why[data-level="${level}"]`);
  if (note) note.textContent = burstWhy(level, burst);
}

/** Promote nodes maintenance orphaned, as one step the person first sees the consequences of. */
async function bringBack(level: LevelName, ids: string[]): Promise<void> {
  const n = ids.length;
  try {
    const done = await runStep(level, ids.map((id) => ({ kind: 'promote' as const, id })), {
      title: `Bring back ${n === 1 ? ids[0] : `${n} nodes`}?`,
      message: `${n === 1 ? 'It returns' : 'They return'} to the active tier.`,
      verb: 'Bring back',
    });
    if (!done) return;
    await actions.refresh(false, [...ids.map((id) => nodeKey(level, id)), ...movedKeys(done)]);
    showMoves(describeStep(`Brought back ${n === 1 ? ids[0] : `${n} nodes`} (orphaned → active).`, done));
  } catch (e) {
    toast(`Not brought back: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
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
 * re-balance would move other nodes (or `ask.destructive`), the person confirms,
 * seeing them highlighted on the graph and listed in the budget's order, and can keep
 * any of them out with a lock (added to the same step). Resolves to the server's
 * answer, or null when cancelled; a refusal throws the server's message.
 */
export async function runStep(level: LevelName, step: StepAction[], ask: Ask): Promise<StepDone | null> {
  const where = address(level);
  const scores = scoresNow(level);
  let todo = step;
  let preview = await api.step(where, todo, true);
  const own = new Set(step.filter((a) => a.kind !== 'archive' && a.kind !== 'delete_node').map((a) => a.id));
  try {
    for (;;) {
      const rows = consequences(preview, scores);
      if (!rows.length && !ask.destructive) break;
      // The mark is as short as an id, so it covers no other label: its row in the table names the node.
      graph.markMoving(rows.map((c) => ({ key: c.key, label: `#${c.order}${c.score === null ? '' : ` · ${c.score.toFixed(2)}`}` })));
      const size = `the level goes from ${fmt(preview.chars_before)} to ${fmt(preview.chars_after)} characters`;
      const message = rows.length
        ? `${ask.message}${ask.message ? ' ' : ''}It also moves ${rows.length === 1 ? 'another node' : `${rows.length} other nodes`}, marked on the graph (#1 · score) in the order the budget takes them (${size}):`
        : ask.message;
      const kept = todo.filter((a) => a.kind === 'lock').map((a) => a.id);
      const answer = await askDialog<'go' | 'cancel' | Consequence>(
        (reply) => {
          const no = h('button', { type: 'button', text: 'Cancel', onclick: () => reply('cancel') });
          const yes = h('button', { type: 'button', class: ask.destructive ? 'danger' : 'primary', text: ask.verb, onclick: () => reply('go') });
          queueMicrotask(() => no.focus());
          return [
            h('h2', { text: ask.title }),
            h('p', { text: message }),
            rows.length ? consequenceTable(rows, (c) => reply(c)) : null,
            backAgainNote(rows, own),
            kept.length ? h('p', { class: 'small muted', text: `Kept out with a lock, in the same step: ${kept.join(', ')}.` }) : null,
            h('div', { class: 'actions' }, no, yes),
          ].filter((e): e is HTMLElement => e !== null);
        },
        'cancel',
        rows.length > 0,
      );
      if (answer === 'cancel') return null;
      if (answer === 'go') break;
      // Keep it: the same step locks it first; the budget takes the next one instead.
      todo = [{ kind: 'lock', id: answer.id, locked: true }, ...todo];
      preview = await api.step(where, todo, true);
    }
  } finally {
    graph.markMoving([]);
  }
  state.ownMoveAt = Date.now();
  const picture = graph.picture();
  const done = await api.step(where, todo, false);
  const u = state.undo;
  const earlier = u && u.level === level && u.projectPath === where.projectPath ? u.pictures : [];
  const pictures = picture ? [...earlier, picture] : earlier;
  state.undo = { level, projectPath: where.projectPath, steps: done.undo_steps, pictures: pictures.slice(-done.undo_steps) };
  return { ...done, scores };
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
