// The structure check itself: it finds a circle (type-only imports too) and an
// oversized module, and passes a layered folder.
// Run: node --test ui/scripts/

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { codeLines, findCycles, MAX_CODE_LINES, problems } from './structure.mjs';

const made = [];
after(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function folder(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kg-ui-structure-'));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

test('a layered folder passes', () => {
  const dir = folder({
    'state.ts': 'export const state = {};\n',
    'canvas.ts': "import { state } from './state';\nexport const draw = () => state;\n",
    'main.ts': "import './styles.css';\nimport { draw } from './canvas';\ndraw();\n",
  });
  assert.deepEqual(problems(dir), []);
});

test('a circle is found, through a type-only import and a sub-folder', () => {
  const dir = folder({
    'a.ts': "import { b } from './b';\nexport const a = () => b;\n",
    'b.ts': "import type { C } from './nested/c';\nexport const b = 1 as unknown as C;\n",
    'nested/c.ts': "export type { A } from '../a';\nexport type C = number;\n",
    'd.ts': "import { a } from './a';\nexport const d = a;\n",
  });
  assert.deepEqual(findCycles(dir), [['a.ts', 'b.ts', path.join('nested', 'c.ts')]]);
  assert.match(problems(dir)[0], /^import circle: a\.ts → b\.ts → nested\/c\.ts/);
});

test('a module over the limit is named; comments and blank lines do not count', () => {
  const code = Array.from({ length: MAX_CODE_LINES + 1 }, (_, i) => `export const v${i} = ${i};`).join('\n');
  const commented = `/**\n * A long comment\n */\n// and another\n\n${Array.from({ length: MAX_CODE_LINES }, (_, i) => `const w${i} = ${i}; // note`).join('\n')}\n`;
  assert.equal(codeLines(commented), MAX_CODE_LINES);
  const dir = folder({ 'big.ts': code, 'fine.ts': commented });
  assert.deepEqual(problems(dir), [`big.ts has ${MAX_CODE_LINES + 1} lines of code, over ${MAX_CODE_LINES}: split it by what a person sees`]);
});

test("a write to another module's slice of state is named; the owner's own writes and reads are not", () => {
  const dir = folder({
    'state.ts': [
      'export const state = {',
      '  /** The node in the panel. @owner panel.ts */',
      '  picked: null as string | null,',
      '  /** The nodes chosen,',
      '   * for a bulk action. @owner bulk.ts */',
      '  chosen: new Set<string>(),',
      '  loose: 0,',
      '};',
      '',
    ].join('\n'),
    'panel.ts': "import { state } from './state';\nexport const pick = (k: string) => { state.picked = k; };\n",
    'bulk.ts': "import { state } from './state';\nexport const choose = (k: string) => state.chosen.add(k);\nexport const same = (k: string) => state.picked === k || state.picked !== null;\n",
    'updates.ts': "import { state } from './state';\nexport const follow = (a: string, b: string) => { if (state.picked === a) state.picked = b; state.chosen.clear(); };\n",
  });
  assert.deepEqual(problems(dir), [
    'state.loose names no @owner in state.ts',
    'updates.ts writes state.picked, which panel.ts owns: call an update panel.ts exposes',
    'updates.ts writes state.chosen, which bulk.ts owns: call an update bulk.ts exposes',
  ]);
});
