// The modal dialog that asks before an action. A leaf: what asks (moves, panel, sync)
// imports it, and it imports nothing of theirs.

import { $, h } from './dom';

/**
 * Show the dialog with `content` and its buttons; resolves with the value a button
 * gives (`answer`), or `cancelled` when it closes otherwise (Esc). `wide` places it
 * beside the graph with a light backdrop, for dialogs about what the graph shows.
 */
export function askDialog<T>(content: (answer: (value: T) => void) => HTMLElement[], cancelled: T, wide = false): Promise<T> {
  const dialog = $<HTMLDialogElement>('dialog');
  return new Promise((resolve) => {
    const answer = (value: T): void => {
      dialog.onclose = null;
      dialog.close();
      dialog.classList.remove('beside-graph');
      resolve(value);
    };
    dialog.replaceChildren(...content(answer));
    dialog.classList.toggle('beside-graph', wide);
    dialog.onclose = () => {
      dialog.classList.remove('beside-graph');
      resolve(cancelled);
    };
    if (!dialog.open) dialog.showModal();
  });
}

/** Ask before an action; resolves true on `action`. `detail` goes under the message;
 * a `destructive` action's button is red. */
export function confirmDialog(title: string, message: string, action: string, detail?: HTMLElement, destructive = true): Promise<boolean> {
  return askDialog<boolean>((answer) => {
    const no = h('button', { type: 'button', text: 'Cancel', onclick: () => answer(false) });
    const yes = h('button', { type: 'button', class: destructive ? 'danger' : 'primary', text: action, onclick: () => answer(true) });
    queueMicrotask(() => no.focus());
    return [h('h2', { text: title }), h('p', { text: message }), ...(detail ? [detail] : []), h('div', { class: 'actions' }, no, yes)];
  }, false);
}
