// Stale touches: a node's touch that names a file which is gone, with the path git says
// the file was renamed to and a one-click fix (a `retouch` step, undoable like every step
// this page takes). The level card's debt list and the node's panel both show them.

import { actions } from './app';
import { ApiError } from './api';
import { h, toast } from './dom';
import { nodeKey } from './graphmodel';
import { describeStep, movedKeys, runStep, showMoves } from './moves';
import { state } from './state';
import type { DebtItem, LevelName } from './types';

/** The stale touches of node `id`, from its level's debt items. */
export const staleTouchesOf = (level: LevelName, id: string): DebtItem[] =>
  (state.levels[level]?.debt_items ?? []).filter((i) => i.kind === 'stale_touch' && i.id === id);

/** "src/a.rs no longer exists; git says it became src/b.rs — [Use src/b.rs]". */
export function staleTouchParts(level: LevelName, item: DebtItem): (string | HTMLElement)[] {
  const file = item.file ?? item.touch ?? '';
  const gone = h('code', { text: file, title: item.touch ?? file });
  const to = item.renamed_to;
  if (!to) return [gone, ' no longer exists; git knows no new name for it.'];
  return [
    gone,
    ' no longer exists; git says it became ',
    h('code', { text: to }),
    ' — ',
    h('button', {
      type: 'button',
      class: 'fix-touch',
      text: `Use ${to}`,
      title: `Point this touch at ${to}, keeping its line range or symbol (undoable)`,
      onclick: () => void useRenamed(level, item, to),
    }),
  ];
}

/** Point a stale touch at the path git gave, as one step of this page. */
async function useRenamed(level: LevelName, item: DebtItem, to: string): Promise<void> {
  const file = item.file ?? item.touch ?? '';
  try {
    const done = await runStep(level, [{ kind: 'retouch', id: item.id, from: item.touch ?? '', to }], {
      title: `Point ${item.id} at ${to}?`,
      message: '',
      verb: `Use ${to}`,
    });
    if (!done) return;
    await actions.refresh(false, [nodeKey(level, item.id), ...movedKeys(done)]);
    showMoves(describeStep(`${item.id} now touches ${to} instead of ${file}.`, done));
  } catch (e) {
    toast(`The touch was not changed: ${e instanceof ApiError ? e.detail : String(e)}`, 'error');
  }
}
