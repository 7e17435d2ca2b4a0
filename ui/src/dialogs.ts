// The "New node" dialog (confirm.ts asks yes or no).

import { showRefusal } from './secrets';
import { actions, address, gistLength, graph } from './app';
import { api, type StepAction } from './api';
import { $, h, lines, toast } from './dom';
import { nodeKey } from './graphmodel';
import { describeStep, movedKeys, runStep, showMoves } from './moves';
import { onScreen } from './state';
import type { LevelName } from './types';

/** The "+ Node" dialog: creates a node in one of the levels on screen, then opens it. */
export function createDialog(): void {
  const dialog = $<HTMLDialogElement>('dialog');
  const levels = onScreen();
  const level = h('select', { id: 'new-level' }, levels.map((l) => h('option', { value: l, text: l === 'user' ? 'user graph' : 'project graph' })));
  const id = h('input', { type: 'text', id: 'new-id', placeholder: 'kebab-case-id', autocomplete: 'off' });
  const gist = h('textarea', { id: 'new-gist', rows: 3, placeholder: 'One line: the insight' });
  const count = h('div', { class: 'counter' });
  const notes = h('textarea', { id: 'new-notes', rows: 2, placeholder: 'Notes, one per line (optional)' });
  const touches = h('textarea', { id: 'new-touches', rows: 2, placeholder: 'Files, one per line (optional)' });
  const warn = h('p', { class: 'small muted' });
  const error = h('div', { class: 'error', id: 'new-error', role: 'alert' });
  const cancel = h('button', { type: 'button', text: 'Cancel', onclick: () => dialog.close() });
  const create = h('button', { type: 'button', class: 'primary', id: 'new-create', text: 'Create' });
  const check = () => {
    const length = gistLength(level.value as LevelName, gist.value);
    count.textContent = `${length.text}${length.over ? ' — over the scan limit' : ''}`;
    count.className = `counter${length.over ? ' over' : ''}`;
    const exists = graph.nodes.has(nodeKey(level.value as LevelName, id.value.trim()));
    warn.textContent = exists ? 'A node with this id exists in that graph: creating replaces its gist.' : '';
  };
  gist.addEventListener('input', check);
  id.addEventListener('input', check);
  level.addEventListener('change', check);
  check();
  const submit = async (): Promise<void> => {
    error.textContent = '';
    const lv = level.value as LevelName;
    const nodeId = id.value.trim();
    const step: StepAction[] = [{ kind: 'put_node', id: nodeId, gist: gist.value, notes: lines(notes.value).length ? lines(notes.value) : undefined, touches: lines(touches.value).length ? lines(touches.value) : undefined }];
    try {
      // Check the node with a dry run while the form is open, so a refusal is shown here.
      await api.step(address(lv), step, true);
      dialog.close();
      const done = await runStep(lv, step, { title: `Create ${nodeId}?`, message: '', verb: 'Create' });
      if (!done) return;
      const key = nodeKey(lv, nodeId);
      await actions.refresh(false, [key, ...movedKeys(done)]);
      actions.focusNode(key);
      if (movedKeys(done).length) showMoves(describeStep(`Created ${nodeId}.`, done));
      else toast(`Created ${nodeId}`);
    } catch (e) {
      showRefusal(error, e, () => void submit());
      id.focus();
    }
  };
  create.addEventListener('click', () => void submit());
  dialog.replaceChildren(
    h('h2', { text: 'New node' }),
    h(
      'div',
      { class: 'form-grid' },
      levels.length > 1 ? h('label', {}, 'Graph', level) : null,
      h('label', {}, 'Id', id),
      h('label', {}, 'Gist', gist),
      count,
      h('label', {}, 'Notes', notes),
      h('label', {}, 'Touches', touches),
      warn,
      error,
    ),
    h('div', { class: 'actions' }, cancel, create),
  );
  dialog.onclose = null;
  dialog.showModal();
  id.focus();
}
