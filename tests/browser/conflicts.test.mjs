// A merge conflict in the graph view: a node whose notes hold one ("[merge conflict] …",
// what a sync's merge leaves when two machines wrote different gists) shows in the
// level's DEBT badge, its factors, the debt list and the graph picker, and goes away
// from all of them once the note is removed.
//
// Run: KG_MEMORY_BIN=$PWD/target/debug/kg-memory node --test tests/browser/conflicts.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, openView, shot, startServer, tempRoot } from './harness.mjs';
import { makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
let root;
let server;
let browser;
let conflicted;

before(async () => {
  root = tempRoot('kg-ui-conflicts-');
  const user = makeGraph({ prefix: 'u', active: 12, archived: 3, orphaned: 0, now, seed: 5 });
  conflicted = user.ids.active[4];
  user.file.nodes[conflicted].notes = [
    '[merge conflict] This node was edited in two places and merged. The newer gist was kept; the other one was: an older wording.',
    'An ordinary note.',
  ];
  // An archived node counts too.
  user.file.nodes[user.ids.archived[0]].notes = ['[merge conflict] The other gist was: x.'];
  writeStorage(path.join(root, 'storage'), user.file);
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  const code = await server?.stop();
  assert.equal(code, 0, 'the server stops cleanly');
  if (root && !process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

test('merge conflicts show in the debt badge, its factors, the debt list and the picker until their notes go', async () => {
  const page = await openView(browser, server.base);
  const card = page.locator('.card[data-level="user"]');
  const badge = card.locator('.badge[class*="debt-"]');
  assert.match(await badge.getAttribute('aria-label'), /, merged with conflicts: 2$/);
  assert.match(await badge.innerText(), /^DEBT (MED|HIGH) [\d.]+ · conflicts: 2/);
  await badge.hover();
  assert.match(
    await badge.locator('.factors').innerText(),
    /conflicts\s*2 merge conflict\(s\) waiting in node notes starting "\[merge conflict\]"[\s\S]*merged with conflicts: 2 \(see the node notes/,
  );
  const items = card.locator('.debt-list li');
  assert.equal(await items.filter({ hasText: 'merge conflict' }).count(), 2);
  assert.equal(await items.first().locator('button').innerText(), conflicted, 'conflicts come first');
  const picker = page.locator('#graph-select option[value="user"]');
  assert.match(await picker.innerText(), /· merged with conflicts: 2$/);
  await shot(page, 'ui-debt-merge-conflicts.png', card);

  // A link in the list picks the node (once the factors' tooltip is out of the way).
  await card.locator('h2').hover();
  await items.first().locator('button').click();
  await page.locator('#panel h2', { hasText: conflicted }).waitFor();
  await page.keyboard.press('Escape');

  // Settling one conflict: the node rewritten without its note (as an agent's
  // kg_put_node would), live.
  const gist = (await (await fetch(`${server.base}/api/view/level?level=user`)).json()).nodes.find((n) => n.node.id === conflicted).node.gist;
  const res = await fetch(`${server.base}/api/nodes`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ level: 'user', id: conflicted, gist, notes: ['An ordinary note.'] }),
  });
  assert.equal(res.status, 200, await res.text());
  await page.waitForFunction(
    () => /· conflicts: 1$/.test(document.querySelector('.card[data-level="user"] .badge[class*="debt-"]')?.firstChild?.textContent ?? ''),
    null,
    { timeout: 10000 },
  );
  assert.equal(await items.filter({ hasText: 'merge conflict' }).count(), 1);
  await page.waitForFunction(() => /merged with conflicts: 1$/.test(document.querySelector('#graph-select option[value="user"]')?.textContent ?? ''), null, {
    timeout: 10000,
  });
  assert.deepEqual(page.errors, []);
});
