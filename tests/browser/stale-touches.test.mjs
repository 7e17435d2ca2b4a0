// Stale touches in the graph view: a node's touch naming a file that git renamed shows
// in the level card's debt list and in the node's panel as "src/a.rs no longer exists;
// git says it became src/parse/a.rs — [Use src/parse/a.rs]"; one click points the touch
// at the new path (its line range kept), as an undoable step. The history is built with
// real git in the test's project folder.
//
// Run: KG_MEMORY_BIN=$PWD/target/debug/kg-memory node --test tests/browser/stale-touches.test.mjs

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, mcp, openView, readGraph, shot, startServer, tempRoot } from './harness.mjs';

let root;
let server;
let browser;
let shop;

const git = (...args) =>
  execFileSync('git', ['-c', 'user.name=KG Test', '-c', 'user.email=kg@test.invalid', '-c', 'init.defaultBranch=main', ...args], {
    cwd: shop,
    env: { PATH: process.env.PATH, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

const write = (rel) => {
  fs.mkdirSync(path.dirname(path.join(shop, rel)), { recursive: true });
  fs.writeFileSync(path.join(shop, rel), `// ${rel}\n`);
};

before(async () => {
  root = tempRoot('kg-ui-stale-');
  server = await startServer({ root, port: await freePort() });
  shop = path.join(server.home, 'shop');
  for (const rel of ['src/a.rs', 'lib/util.rs', 'docs/guide.md']) write(rel);
  git('init', '--quiet');
  git('add', '-A');
  git('commit', '--quiet', '-m', 'first');
  const client = mcp(server.base);
  await client.initialize();
  const read = await client.call('kg_read', { cwd: shop });
  const sid = /session_id: ([0-9a-f]{8})/.exec(read)?.[1] ?? /Session: ([0-9a-f]{8})/.exec(read)?.[1];
  assert.ok(sid, read);
  const put = (id, gist, touches) => client.call('kg_put_node', { session_id: sid, level: 'project', id, gist, touches });
  await put('ledger-parser', 'The ledger parser reads one posting per line', ['src/a.rs:12-40 (parser)', 'docs/guide.md']);
  await put('util-helpers', 'Small helpers shared by the parser and the CLI', ['lib/util.rs']);
  // Then the files move on.
  fs.mkdirSync(path.join(shop, 'src/parse'), { recursive: true });
  git('mv', 'src/a.rs', 'src/parse/a.rs');
  git('mv', 'lib/util.rs', 'lib/help.rs');
  git('rm', '--quiet', 'docs/guide.md');
  git('commit', '--quiet', '-m', 'reorganise');
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  const code = await server?.stop();
  assert.equal(code, 0, 'the server stops cleanly');
  if (root && !process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

const touchesOf = (id) => readGraph(server.storage, 'shop').nodes[id].touches;

test('a renamed file is offered in the debt list and the panel, and one click uses it', async () => {
  const page = await openView(browser, server.base, `#project=${encodeURIComponent(shop)}`);
  const card = page.locator('.card[data-level="project"]');
  const stale = card.locator('.debt-list li.stale-touch');
  await stale.first().waitFor();
  assert.equal(await stale.count(), 3);
  const parser = stale.filter({ hasText: 'src/a.rs' });
  assert.equal(
    (await parser.locator('.fix').innerText()).replace(/\s+/g, ' ').trim(),
    'src/a.rs no longer exists; git says it became src/parse/a.rs — Use src/parse/a.rs',
  );
  assert.match(await stale.filter({ hasText: 'docs/guide.md' }).innerText(), /docs\/guide\.md no longer exists; git knows no new name for it\./);
  // The picker counts the same debt as the card.
  const badge = (await card.locator('.badge[class*="debt-"]').innerText()).split('\n')[0];
  const picked = await page.locator('#graph-select').evaluate((s) => s.selectedOptions[0].text);
  assert.ok(picked.endsWith(badge), `${picked} / ${badge}`);
  // The badge's factors say what the stale touches add to the deficit.
  await card.locator('.badge[class*="debt-"]').hover();
  assert.match(
    await card.locator('.badge[class*="debt-"] .factors').innerText(),
    /\+ 0\.5 × 2 with stale touches \(3 touches name files that are gone\)/,
  );
  await card.locator('h2').hover();
  await shot(page, 'ui-stale-touches-debt-list.png', card);

  // Accepted in the debt list.
  await parser.getByRole('button', { name: 'Use src/parse/a.rs' }).click();
  await page.waitForFunction(() => document.querySelectorAll('.card[data-level="project"] .debt-list li.stale-touch').length === 2, null, { timeout: 10000 });
  assert.deepEqual(touchesOf('ledger-parser'), ['src/parse/a.rs:12-40 (parser)', 'docs/guide.md']);
  assert.match(await page.locator('#moves').innerText(), /ledger-parser now touches src\/parse\/a\.rs instead of src\/a\.rs\./);
  await shot(page, 'ui-stale-touches-accepted.png');

  // Undo takes it back, like any step of the view.
  await page.locator('#undo').click();
  await page.waitForFunction(() => document.querySelectorAll('.card[data-level="project"] .debt-list li.stale-touch').length === 3, null, { timeout: 10000 });
  assert.deepEqual(touchesOf('ledger-parser'), ['src/a.rs:12-40 (parser)', 'docs/guide.md']);

  // Accepted in the node's panel.
  await card.locator('.debt-list li.stale-touch', { hasText: 'lib/util.rs' }).locator('button.link').click();
  const panel = page.locator('#panel');
  await panel.locator('h2', { hasText: 'util-helpers' }).waitFor();
  const note = panel.locator('ul.stale-touches li');
  assert.equal((await note.innerText()).replace(/\s+/g, ' ').trim(), 'lib/util.rs no longer exists; git says it became lib/help.rs — Use lib/help.rs');
  await shot(page, 'ui-stale-touches-panel.png', panel);
  await note.getByRole('button', { name: 'Use lib/help.rs' }).click();
  await page.waitForFunction(() => document.querySelectorAll('.card[data-level="project"] .debt-list li.stale-touch').length === 2, null, { timeout: 10000 });
  assert.deepEqual(touchesOf('util-helpers'), ['lib/help.rs']);
  await panel.locator('ul.stale-touches').waitFor({ state: 'detached', timeout: 10000 });
  assert.deepEqual(page.errors, []);
});
