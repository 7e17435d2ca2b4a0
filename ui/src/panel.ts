// Picking a node and the details panel beside the graph: its editor (gist, notes,
// touches, with the budget they cost), why it is in its tier, its edges, its times,
// and deleting it.

import { showRefusal } from './secrets';
import { actions, address, gistLength, graph, tierMark } from './app';
import { api, ApiError } from './api';
import { confirmDialog } from './confirm';
import { $, h, lines, listOf, toast, when } from './dom';
import { setProjection, toggleDrawer } from './gauges';
import type { EdgeInfo, NodeInfo } from './graphmodel';
import { describeStep, moveTier, movedKeys, runStep, showMoves, type StepDone } from './moves';
import { staleTouchParts, staleTouchesOf } from './stale';
import { state } from './state';
import { writtenTs, type LevelName, type StepAnswer, type StoredNode, type TierWhy } from './types';
import { isFile, levelOfKey, nodeKey } from './graphmodel';

type Part = HTMLElement | string | null;

// ----- picking ---------------------------------------------------------------------------------

/** Pick a node (or none), asking first when an unsaved edit would be lost. */
export function select(key: string | null): void {
  if (key && isFile(key)) {
    toast(`${key.slice(2)} is a file or path an edge points at, not a node.`);
    return;
  }
  if (key && !graph.nodes.has(key)) {
    // A node of the level not on screen: both levels show it, with its own links.
    toast(`${key.slice(2)} is a node of the ${levelOfKey(key)} graph: tick “both levels” to see it.`);
    return;
  }
  const draft = state.panel.draft;
  if (draft?.dirty && draft.key !== key && !confirm('Discard the unsaved edit?')) return;
  state.picked = key;
  state.panel.draft = null;
  graph.pick(key);
  for (const row of document.querySelectorAll<HTMLElement>('#list tbody tr')) {
    row.classList.toggle('picked', row.dataset.key === key);
    row.setAttribute('aria-selected', String(row.dataset.key === key));
  }
  setProjection(null, 0);
  renderPanel(true);
}

/** A node was renamed: a panel open on the old key follows it to the new one. */
export function followRename(from: string, to: string): void {
  if (state.picked === from) state.picked = to;
}

/** Bring a node into view (opening the drawer for an orphan) and pick it. */
export function focusNode(key: string): void {
  const info = graph.nodes.get(key);
  if (!info) return;
  if (info.tier === 'orphaned' && !graph.drawer) toggleDrawer(true);
  graph.centre(key);
  select(key);
}

// ----- the panel -------------------------------------------------------------------------------

/**
 * Show the picked node. Without `force`, an unchanged node keeps the panel as it is
 * (focus, scroll, an open form) and an unsaved edit is kept.
 */
export function renderPanel(force: boolean): void {
  const panel = $('panel');
  const key = state.picked;
  const info = key ? graph.nodes.get(key) : undefined;
  if (!key || !info) {
    graph.keepingPlace(() => {
      panel.hidden = true;
      panel.replaceChildren();
    });
    return;
  }
  const draft = state.panel.draft;
  if (draft?.dirty && !force) {
    // Keep the person's edit; say so when the node changed underneath.
    const note = panel.querySelector('#panel-stale');
    if (note) note.textContent = draft.writtenTs !== writtenTs(info.node) ? 'This node changed on the server while you edit; saving shows you both versions first.' : '';
    return;
  }
  // Unchanged node: keep the panel as it is (focus, scroll, an open form).
  const touching = [...graph.edges.values()].filter((e) => e.source === key || e.target === key).map((e) => e.key);
  const sig = JSON.stringify([info.node, info.why, info.tier, touching]);
  if (!force && sig === state.panel.sig && !panel.hidden) return;
  state.panel.sig = sig;
  const notesText = listOf(info.node.notes).join('\n');
  const touchesText = listOf(info.node.touches).join('\n');
  state.panel.draft = { key, writtenTs: writtenTs(info.node), gist: String(info.node.gist ?? ''), notes: notesText, touches: touchesText, dirty: false };
  graph.keepingPlace(() => {
    panel.hidden = false;
    panel.replaceChildren(panelBody(info, notesText, touchesText));
  }, key);
}

function panelBody(info: NodeInfo, notesText: string, touchesText: string): HTMLElement {
  return h(
    'div',
    {},
    panelHead(info),
    h('p', { class: 'small muted', id: 'panel-stale' }),
    editFields(info, notesText, touchesText),
    identitySection(info),
    whySection(info),
    edgesSection(info),
    timesSection(info),
    deleteSection(info),
  );
}

function panelHead(info: NodeInfo): HTMLElement {
  return h(
    'div',
    { class: 'head' },
    h(
      'div',
      {},
      h('h2', { text: info.id }),
      h('span', { class: `tier-badge ${info.tier}`, text: tierMark[info.tier] }),
      ' ',
      h('span', { class: 'level-badge', text: `${info.level} level` }),
      info.node.locked === true ? ' ' : null,
      info.node.locked === true
        ? h('span', { class: 'lock-badge', id: 'lock-badge', text: 'LOCKED', title: 'A person locked it: agents cannot rewrite, rename or delete it, and it is never archived' })
        : null,
    ),
    h('button', { type: 'button', 'aria-label': 'Close details (Esc)', title: 'Close (Esc)', text: '✕', onclick: () => select(null) }),
  );
}

// ----- the editor: gist, notes, touches ----------------------------------------------------------

/** The gist's length against the scan limit; `effect` is what saving would do, once
 * the server's dry run has said. */
function renderGistCounter(count: HTMLElement, info: NodeInfo, gist: string, effect: string): void {
  const length = gistLength(info.level, gist);
  count.className = `counter${length.over ? ' over' : ''}`;
  count.replaceChildren(
    h('span', { text: `${length.text}${length.over ? ' — over the scan limit: counts as maintenance debt' : ''}` }),
    h('span', { text: effect }),
  );
}

/** What saving would do to the level, from the server's dry run of the save. */
function saveEffect(ans: StepAnswer): { delta: number; text: string } {
  const delta = ans.chars_after - ans.chars_before;
  const moved = ans.rebalanced.archived.length + ans.rebalanced.restored.length + ans.rebalanced.orphaned.length;
  const size = `${delta >= 0 ? '+' : ''}${delta} chars to the level`;
  return { delta, text: moved ? `${size}; saving re-balances it (${moved} node${moved === 1 ? '' : 's'} move)` : size };
}

function clearButton(box: HTMLTextAreaElement, what: string, changed: () => void): HTMLElement {
  return h('button', {
    type: 'button',
    class: 'small',
    text: `Clear ${what}`,
    onclick: () => {
      box.value = '';
      changed();
      box.focus();
    },
  });
}

/** The edit form; keeps `state.panel.draft` and the gauge's projection up to date. */
function editFields(info: NodeInfo, notesText: string, touchesText: string): Part[] {
  const gistBox = h('textarea', { id: 'gist', rows: 4, 'aria-describedby': 'gist-count', value: String(info.node.gist ?? '') });
  const count = h('div', { class: 'counter', id: 'gist-count' });
  const notesBox = h('textarea', { id: 'notes', rows: 3, placeholder: 'One note per line', value: notesText, 'aria-label': 'Notes, one per line' });
  const touchesBox = h('textarea', { id: 'touches', rows: 2, placeholder: 'One file path per line', value: touchesText, 'aria-label': 'Touches, one per line' });
  const error = h('div', { class: 'error', id: 'save-error', role: 'alert' });
  const saveBtn = h('button', { class: 'primary', id: 'save', type: 'button', disabled: true, text: 'Save' });
  const revertBtn = h('button', { type: 'button', id: 'revert', disabled: true, text: 'Revert' });

  const update = () => {
    const draft = state.panel.draft;
    if (!draft) return;
    const gist = gistBox.value;
    draft.gist = gist;
    draft.notes = notesBox.value;
    draft.touches = touchesBox.value;
    draft.dirty = gist !== String(info.node.gist ?? '') || notesBox.value !== notesText || touchesBox.value !== touchesText;
    saveBtn.disabled = !draft.dirty;
    revertBtn.disabled = !draft.dirty;
    renderGistCounter(count, info, gist, '');
    setProjection(info.level, 0);
    clearTimeout(state.panel.previewTimer);
    if (!draft.dirty) return;
    // Ask the server what saving would do, once typing pauses; a later keystroke wins.
    const asked = ++state.panel.previewSeq;
    const notes = notesBox.value !== notesText ? lines(notesBox.value) : undefined;
    const touches = touchesBox.value !== touchesText ? lines(touchesBox.value) : undefined;
    state.panel.previewTimer = window.setTimeout(async () => {
      try {
        const ans = await api.step(address(info.level), [{ kind: 'put_node', id: info.id, gist, notes, touches }], true);
        if (asked !== state.panel.previewSeq || !state.panel.draft?.dirty) return;
        const effect = saveEffect(ans);
        renderGistCounter(count, info, gist, effect.text);
        setProjection(info.level, effect.delta);
      } catch {
        // An edit the server would refuse says why when saved.
      }
    }, 250);
  };
  for (const box of [gistBox, notesBox, touchesBox]) box.addEventListener('input', update);

  saveBtn.addEventListener('click', async () => {
    error.textContent = '';
    const notes = notesBox.value !== notesText ? lines(notesBox.value) : undefined;
    const touches = touchesBox.value !== touchesText ? lines(touchesBox.value) : undefined;
    saveBtn.disabled = true;
    const save = (basedOn: number) =>
      runStep(info.level, [{ kind: 'put_node', id: info.id, gist: gistBox.value, notes, touches, written_ts: basedOn }], {
        title: `Save ${info.id}?`,
        message: '',
        verb: 'Save',
      });
    try {
      let done: StepDone | null;
      try {
        done = await save(state.panel.draft?.writtenTs ?? writtenTs(info.node));
      } catch (e) {
        // Someone wrote the node since this edit began: show both, let the person choose.
        const theirs = e instanceof ApiError && e.status === 409 ? (e.data as { node?: StoredNode } | null)?.node : undefined;
        if (!theirs) throw e;
        const mine = { gist: gistBox.value, notes: notes ?? listOf(info.node.notes), touches: touches ?? listOf(info.node.touches) };
        if (!(await compareDialog(info.id, theirs, mine))) {
          // Not saved: the edit stays for the person to merge by hand. They have seen
          // the newer version now, so their next save is built on it.
          if (state.panel.draft) state.panel.draft.writtenTs = writtenTs(theirs);
          error.textContent = 'Not saved. Merge what you need from the newer version (shown in the dialog), then Save again.';
          saveBtn.disabled = false;
          return;
        }
        done = await save(writtenTs(theirs));
      }
      if (!done) {
        saveBtn.disabled = false;
        return;
      }
      state.panel.draft = null;
      setProjection(null, 0);
      await actions.refresh(false, [info.key, ...movedKeys(done)]);
      if (movedKeys(done).length) showMoves(describeStep(`Saved ${info.id}.`, done));
      else toast(`Saved ${info.id}`);
      renderPanel(true);
    } catch (e) {
      showRefusal(error, e, () => saveBtn.click());
      saveBtn.disabled = false;
    }
  });
  revertBtn.addEventListener('click', () => {
    state.panel.draft = null;
    setProjection(null, 0);
    renderPanel(true);
  });

  update();
  return [
    h('h3', {}, h('label', { for: 'gist', text: 'Gist' })),
    gistBox,
    count,
    info.tier !== 'active' ? h('p', { class: 'small muted', text: 'Saving makes this node active: any write does.' }) : null,
    h('h3', {}, h('label', { for: 'notes', text: 'Notes' })),
    notesBox,
    h('div', { class: 'row' }, clearButton(notesBox, 'notes', update)),
    h('h3', {}, h('label', { for: 'touches', text: 'Touches (files)' })),
    touchesBox,
    staleNote(info),
    h('div', { class: 'row' }, clearButton(touchesBox, 'touches', update)),
    error,
    h('div', { class: 'row' }, saveBtn, revertBtn),
  ];
}

/** The two versions of a node side by side: the one written since the edit began
 * (theirs) and the person's edit. Resolves true to save the edit over theirs. */
function compareDialog(id: string, theirs: StoredNode, mine: { gist: string; notes: string[]; touches: string[] }): Promise<boolean> {
  const who = theirs._written?.by ? `an agent (session ${theirs._written.by})` : 'someone else';
  const side = (title: string, gist: string, notes: string[], touches: string[], other: { gist: string; notes: string[]; touches: string[] }) =>
    h(
      'section',
      {},
      h('h3', { text: title }),
      h('p', { class: gist !== other.gist ? 'changed' : '', text: gist }),
      notes.length ? h('ul', {}, notes.map((n) => h('li', { class: other.notes.includes(n) ? '' : 'changed', text: n }))) : h('p', { class: 'small muted', text: 'no notes' }),
      touches.length ? h('p', { class: 'small', text: touches.join(' · ') }) : null,
    );
  const current = { gist: String(theirs.gist ?? ''), notes: listOf(theirs.notes), touches: listOf(theirs.touches) };
  const detail = h(
    'div',
    { class: 'compare', id: 'compare' },
    side('Written since you began', current.gist, current.notes, current.touches, mine),
    side('Your edit', mine.gist, mine.notes, mine.touches, current),
  );
  return confirmDialog(
    `${id} changed while you edited it`,
    `${who} wrote this node after you opened it. What differs is in bold. Saving replaces their version with yours; Cancel keeps your edit unsaved, to merge by hand.`,
    'Save mine over it',
    detail,
    false,
  );
}

// ----- its id and its lock -------------------------------------------------------------------------

function identitySection(info: NodeInfo): Part[] {
  const locked = info.node.locked === true;
  return [
    h('h3', { text: 'Id and lock' }),
    h(
      'p',
      { class: 'small muted' },
      locked
        ? 'Locked: agents cannot rewrite, rename or delete it, and compaction never archives it. You still can.'
        : 'Lock it to keep agents from rewriting, renaming or deleting it, and compaction from archiving it.',
    ),
    h(
      'div',
      { class: 'row' },
      h('button', { type: 'button', id: 'rename', text: 'Rename…', title: 'Give it a new id; its edges in every graph follow', onclick: () => void renameNode(info) }),
      h('button', { type: 'button', id: 'lock', text: locked ? 'Unlock' : 'Lock', onclick: () => void setLock(info, !locked) }),
    ),
  ];
}

/** Lock or unlock a node, as a step (undo takes it back). */
async function setLock(info: NodeInfo, locked: boolean): Promise<void> {
  try {
    const done = await runStep(info.level, [{ kind: 'lock', id: info.id, locked }], { title: `${locked ? 'Lock' : 'Unlock'} ${info.id}?`, message: '', verb: locked ? 'Lock' : 'Unlock' });
    if (!done) return;
    await actions.refresh(false, [info.key, ...movedKeys(done)]);
    showMoves(describeStep(`${locked ? 'Locked' : 'Unlocked'} ${info.id}.`, done));
    renderPanel(true);
  } catch (e) {
    toast(`${locked ? 'Lock' : 'Unlock'} refused: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
}

/** Ask for a new id and rename the node (a step: undo brings the old id back). */
function renameNode(info: NodeInfo): void {
  const dialog = $<HTMLDialogElement>('dialog');
  const input = h('input', { type: 'text', id: 'rename-id', value: info.id, autocomplete: 'off', 'aria-label': 'New id' });
  const error = h('div', { class: 'error', id: 'rename-error', role: 'alert' });
  const cancel = h('button', { type: 'button', text: 'Cancel', onclick: () => dialog.close() });
  const go = h('button', { type: 'button', class: 'primary', id: 'rename-go', text: 'Rename' });
  go.addEventListener('click', async () => {
    error.textContent = '';
    const newId = input.value.trim();
    const step = [{ kind: 'rename' as const, id: info.id, new_id: newId }];
    try {
      await api.step(address(info.level), step, true);
      dialog.close();
      const done = await runStep(info.level, step, { title: `Rename ${info.id} to ${newId}?`, message: '', verb: 'Rename' });
      if (!done) return;
      const key = nodeKey(info.level, newId);
      state.picked = key;
      await actions.refresh(false, [key]);
      actions.focusNode(key);
      const moved = done.renamed?.edges_rewired ?? 0;
      showMoves([h('strong', { text: `Renamed ${info.id} to ${newId}.` }), ` Its edges moved with it (${moved} reference(s), in every graph).`]);
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.detail : String(e);
      input.focus();
    }
  });
  dialog.replaceChildren(
    h('h2', { text: `Rename ${info.id}` }),
    h('p', { class: 'small muted', text: 'The id names the subject in 3–5 words; the claim belongs in the gist. Its edges, history and likes come along.' }),
    h('div', { class: 'form-grid' }, h('label', {}, 'New id', input), error),
    h('div', { class: 'actions' }, cancel, go),
  );
  dialog.onclose = null;
  dialog.showModal();
  input.select();
}

/** The node's touches whose file is gone, each with git's new path and its fix. */
function staleNote(info: NodeInfo): HTMLElement | null {
  const stale = staleTouchesOf(info.level, info.id);
  if (!stale.length) return null;
  return h(
    'ul',
    { class: 'stale-touches', 'aria-label': 'Touches whose file is gone' },
    stale.map((item) => h('li', {}, staleTouchParts(info.level, item))),
  );
}

// ----- why it is in its tier ---------------------------------------------------------------------

function bar(name: string, value: number | null): HTMLElement[] {
  const v = value ?? 0;
  return [
    h('span', { text: name }),
    h('span', { class: 'bar', role: 'img', 'aria-label': `${name} ${value === null ? 'n/a' : Math.round(v * 100) + '%'}` }, h('i', { style: `width:${(v * 100).toFixed(1)}%` })),
    h('span', { text: value === null ? '—' : `${Math.round(v * 100)}%` }),
  ];
}

function scoreBars(w: TierWhy): HTMLElement {
  return h(
    'div',
    { class: 'bars', 'aria-label': 'Score and percentiles' },
    ...bar('score', w.score),
    ...bar('recency', w.recency),
    ...bar('connectedness', w.connectedness),
    ...bar('usefulness', w.usefulness),
  );
}

/** The nodes a score's percentiles are taken among. Under a grace share (our policy),
 * compaction ranks the new nodes the share does not cover with the older ones. */
function poolNodes(info: NodeInfo): string {
  if (info.why.pool !== 'active') return 'active and archived nodes past grace';
  return state.levels[info.level]?.budget.grace_share ? 'active nodes past grace and new ones beyond their share of the budget' : 'active nodes past grace';
}

/** Which pool the percentiles are taken in, its place in the order, and what it costs. */
function rankNote(info: NodeInfo): HTMLElement {
  const w = info.why;
  return h(
    'p',
    { class: 'small muted' },
    w.pool ? `Percentiles among ${poolNodes(info)}. ` : '',
    w.rank ? `Place ${w.rank} of ${w.rank_of} in the ${info.tier === 'active' ? 'archive' : 'refill'} order. ` : '',
    info.tier === 'active' ? `Costs ${w.cost} chars of the level (its line and the edges cited under it).` : info.tier === 'archived' ? `Its anchor costs ${w.cost} chars; ${w.traces} memory trace(s) to active nodes.` : 'Costs nothing: not rendered.',
  );
}

function moveButton(info: NodeInfo): HTMLElement {
  return info.tier === 'active'
    ? h('button', { type: 'button', text: 'Archive by hand', title: 'Same as dropping it on the ARCHIVED band', onclick: () => void moveTier(info.key, 'archived') })
    : h('button', { type: 'button', class: 'primary', text: 'Promote to active', title: 'Same as dragging it to the active area (a read: orphaned neighbours are rescued)', onclick: () => void moveTier(info.key, 'active') });
}

function whySection(info: NodeInfo): Part[] {
  return [
    h('h3', { text: `Why it is ${info.tier}` }),
    h('p', { class: 'reason', text: info.why.reason }),
    scoreBars(info.why),
    rankNote(info),
    h('div', { class: 'row' }, moveButton(info)),
  ];
}

// ----- edges -----------------------------------------------------------------------------------

/** One edge of the node: its relation, the peer (a link when it is a node), a delete button. */
function edgeItem(info: NodeInfo, e: EdgeInfo): HTMLElement {
  const out = e.source === info.key;
  const peerKey = out ? e.target : e.source;
  const peerId = out ? e.edge.to : e.edge.from;
  const peer = graph.nodes.get(peerKey);
  return h(
    'li',
    {},
    h('span', { class: 'rel', text: out ? `→ ${e.edge.rel} →` : `← ${e.edge.rel} ←` }),
    peer
      ? h('button', { class: 'link peer', text: peerId, title: `${peer.tier} · ${peer.level} · ${String(peer.node.gist ?? '')}`, onclick: () => focusNode(peerKey) })
      : h('span', { class: 'peer', text: peerId, title: peerKey.startsWith('a:') ? 'a file or path' : '' }),
    h('span', { class: 'small muted', text: e.kind === 'normal' ? '' : e.kind === 'artifact' ? 'file' : e.kind }),
    h('button', {
      class: 'x',
      type: 'button',
      'aria-label': `Delete edge ${e.edge.from} ${e.edge.rel} ${e.edge.to}`,
      title: 'Delete this edge',
      text: '✕',
      onclick: () => void deleteEdge(e.level, e.edge),
    }),
  );
}

function edgesSection(info: NodeInfo): Part[] {
  const edgesOut: HTMLElement[] = [];
  const edgesIn: HTMLElement[] = [];
  for (const e of graph.edges.values()) {
    const out = e.source === info.key;
    const inc = e.target === info.key;
    if (!out && !inc) continue;
    (out ? edgesOut : edgesIn).push(edgeItem(info, e));
  }
  return [
    h('h3', { text: `Edges (${edgesOut.length} out, ${edgesIn.length} in)` }),
    edgesOut.length ? h('ul', { class: 'edges', 'aria-label': 'Outgoing edges' }, edgesOut) : h('p', { class: 'small muted', text: 'No outgoing edges.' }),
    edgesIn.length ? h('ul', { class: 'edges', 'aria-label': 'Incoming edges' }, edgesIn) : h('p', { class: 'small muted', text: 'No incoming edges.' }),
    edgeForm(info),
  ];
}

/** "Add an edge": from or to this node, to a node id or a file path. */
function edgeForm(info: NodeInfo): HTMLElement {
  const dir = h('select', { 'aria-label': 'Direction' }, h('option', { value: 'out', text: `${info.id} → other` }), h('option', { value: 'in', text: `other → ${info.id}` }));
  const other = h('input', { type: 'text', placeholder: 'node id or file path', 'aria-label': 'Other end' });
  const rel = h('input', { type: 'text', placeholder: 'relation, e.g. depends-on', 'aria-label': 'Relation' });
  const notes = h('input', { type: 'text', placeholder: 'note (optional)', 'aria-label': 'Edge note' });
  const error = h('div', { class: 'error', role: 'alert' });
  const add = h('button', { type: 'button', class: 'primary', text: 'Add edge' });
  add.addEventListener('click', async () => {
    error.textContent = '';
    const from = dir.value === 'out' ? info.id : other.value.trim();
    const to = dir.value === 'out' ? other.value.trim() : info.id;
    try {
      await api.putEdge(address(info.level), from, to, rel.value.trim(), notes.value.trim() ? [notes.value.trim()] : undefined);
      toast(`Edge ${from} → ${rel.value.trim()} → ${to} saved`);
      await actions.refresh(false);
      renderPanel(true);
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.detail : String(e);
    }
  });
  return h('details', {}, h('summary', { text: 'Add an edge' }), h('div', { class: 'form-grid' }, dir, other, rel, notes, error, h('div', { class: 'row' }, add)));
}

// ----- times and delete ------------------------------------------------------------------------

function timesSection(info: NodeInfo): Part[] {
  const w = info.why;
  const useful = Array.isArray(info.node._useful_ts) ? info.node._useful_ts : [];
  return [
    h('h3', { text: 'Times' }),
    h(
      'dl',
      { class: 'times' },
      h('dt', { text: 'created' }),
      h('dd', { text: when(info.node._created_ts) }),
      h('dt', { text: 'last read' }),
      h('dd', { text: when(info.node._last_read_ts) }),
      h('dt', { text: 'liked' }),
      h('dd', { text: useful.length ? `${useful.length}× · last ${when(useful[useful.length - 1])}` : 'never' }),
      info.node._orphaned_ts ? h('dt', { text: 'orphaned' }) : null,
      info.node._orphaned_ts ? h('dd', { text: when(info.node._orphaned_ts) }) : null,
      w.deleted_at ? h('dt', { text: 'deleted' }) : null,
      w.deleted_at ? h('dd', { text: when(w.deleted_at) }) : null,
    ),
  ];
}

function deleteSection(info: NodeInfo): Part[] {
  return [h('h3', { text: 'Delete' }), h('button', { type: 'button', class: 'danger', text: 'Delete node… (Del)', onclick: () => void deleteNode(info) })];
}

/** Delete a node and its edges, after asking. */
export async function deleteNode(info: NodeInfo): Promise<void> {
  let n = 0;
  for (const e of graph.edges.values()) if (e.level === info.level && (e.edge.from === info.id || e.edge.to === info.id)) n++;
  try {
    const done = await runStep(info.level, [{ kind: 'delete_node', id: info.id }], {
      title: 'Delete node?',
      message: `Delete “${info.id}” and its ${n} edge(s) from the ${info.level} graph? Undo brings them back.`,
      verb: 'Delete',
      destructive: true,
    });
    if (!done) return;
    select(null);
    await actions.refresh(false, movedKeys(done));
    showMoves(describeStep(`Deleted ${info.id} and ${done.edges_deleted} edge(s).`, done));
  } catch (e) {
    toast(`Delete failed: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
}

async function deleteEdge(level: LevelName, e: { from: string; to: string; rel: string }): Promise<void> {
  const ok = await confirmDialog('Delete edge?', `Delete ${e.from} → ${e.rel} → ${e.to} from the ${level} graph?`, 'Delete');
  if (!ok) return;
  try {
    const r = await api.deleteEdge(address(level), e);
    toast(r.deleted ? 'Edge deleted' : 'That edge was already gone');
    await actions.refresh(false);
    renderPanel(true);
  } catch (err) {
    toast(`Delete failed: ${err instanceof ApiError ? err.detail : String(err)}`, 'error');
  }
}
