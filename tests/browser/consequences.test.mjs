// A step's consequences on the graph: before a promotion that re-balances the level, the
// nodes it would archive are marked on the graph in the order the budget takes them,
// with their scores, and the dialog lists them as a table with the same numbers; one
// click keeps a node out (a lock in the same step); the nodes that move are exactly
// those marked, and the box after the step shows the same scores. At 1440×900 and
// 1024×700, light and dark, with real mouse events; screenshots in target/screenshots.
//
// Run: node --test tests/browser/consequences.test.mjs   (after building ui/dist and the server)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { drag, freePort, launchBrowser, openInContext, readGraph, shot, startServer, tempRoot, tierOnDisk } from './harness.mjs';
import { betaGraph, makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
let root;
let server;
let browser;
let betaDir;

before(async () => {
  root = tempRoot('kg-ui-consequences-');
  betaDir = path.join(root, 'home', 'src', 'beta');
  fs.mkdirSync(betaDir, { recursive: true });
  const user = makeGraph({ prefix: 'u', active: 10, archived: 2, orphaned: 0, now, seed: 5 });
  writeStorage(path.join(root, 'storage'), user.file, { beta: betaGraph(betaDir, now) });
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

/** The dialog's or the box's table: [order, id, score] per row. */
const tableRows = (locator) =>
  locator.locator('table.consequences tbody tr').evaluateAll((rows) => rows.map((r) => [...r.cells].slice(0, 3).map((c) => c.textContent.trim())));

for (const viewport of [
  { width: 1440, height: 900 },
  { width: 1024, height: 700 },
]) {
  for (const theme of ['light', 'dark']) {
    const size = `${viewport.width}x${viewport.height}`;
    test(`${size} ${theme}: a re-balancing promotion marks what it will move, keeps one out on a click, and moves exactly the marked ones`, async () => {
      const context = await browser.newContext({ viewport, colorScheme: theme });
      const page = await openInContext(context, server.base, `#project=${encodeURIComponent(betaDir)}`);
      const errors = page.errors;
      const file = path.join(server.storage, 'projects', 'beta', 'graph.json');
      const fileBefore = fs.readFileSync(file);
      await page.evaluate(() => window.kgView.fit());
      const start = await page.evaluate(() => window.kgView.positions());
      const key = 'p:beta-r000';
      await drag(page, await page.evaluate((k) => window.kgView.point({ key: k }), key), await page.evaluate(() => window.kgView.point({ zone: 'active' })));
      const dialog = page.locator('#dialog[open]', { hasText: 'Promote beta-r000?' });
      await dialog.waitFor();

      // The marks on the graph are the dialog's rows, in its order, with its scores.
      const marked = await page.evaluate(() => window.kgView.moving());
      const rows = await tableRows(dialog);
      assert.ok(rows.length > 4, `the dialog lists what moves: ${JSON.stringify(rows)}`);
      assert.deepEqual(
        marked.map((m) => [m.key, m.label]),
        rows.map(([order, id, score]) => [`p:${id}`, `#${order} · ${score}`]),
        'the graph marks the same nodes, in the same order, with the same scores',
      );
      const scores = rows.map((r) => Number(r[2]));
      assert.deepEqual([...scores].sort((a, b) => a - b), scores, 'the budget takes the lowest scores first');
      for (const m of marked) {
        const p = await page.evaluate((k) => window.kgView.point({ key: k }), m.key);
        assert.ok(p, `${m.key} is on the canvas`);
      }
      await shot(page, `consequences-${size}-${theme}-marked.png`);

      // One click keeps the first out; the budget takes the next lowest instead.
      const [firstOrder, firstId] = rows[0];
      assert.equal(firstOrder, '1');
      await dialog.locator(`tr[data-key="p:${firstId}"] button.keep`).click();
      await page.waitForFunction((id) => !window.kgView.moving().some((m) => m.key === `p:${id}`) && window.kgView.moving().length > 0, firstId);
      await dialog.getByText(`Kept out with a lock, in the same step: ${firstId}.`).waitFor();
      assert.ok(fs.readFileSync(file).equals(fileBefore), 'nothing is written before the confirmation');
      const rowsAfterKeep = await tableRows(dialog);
      assert.ok(!rowsAfterKeep.some((r) => r[1] === firstId), 'the kept node is out of the list');
      const willMove = (await page.evaluate(() => window.kgView.moving())).map((m) => m.key);
      await shot(page, `consequences-${size}-${theme}-kept.png`);

      await dialog.getByRole('button', { name: 'Promote', exact: true }).click();
      await page.waitForFunction((k) => window.kgView.tierOf(k) === 'active', key, { timeout: 10000 });
      const moves = page.locator('#moves');
      await moves.locator('table.consequences').waitFor();
      assert.deepEqual(await page.evaluate(() => window.kgView.moving()), [], 'the marks go once the step is done');

      // Exactly the marked nodes moved, on disk and on the canvas.
      const graph = readGraph(server.storage, 'beta').nodes;
      const archived = Object.values(graph).filter((n) => tierOnDisk(n) === 'archived' && !n.id.startsWith('beta-r')).map((n) => `p:${n.id}`);
      assert.deepEqual(archived.sort(), [...willMove].sort(), 'the nodes archived are the ones marked');
      assert.equal(tierOnDisk(graph[firstId]), 'active', 'the kept node stayed active');
      assert.equal(graph[firstId].locked, true, 'kept with a lock');
      await page.waitForTimeout(400);
      const after = await page.evaluate(() => window.kgView.positions());
      const movedOnCanvas = Object.keys(start).filter((k) => Math.hypot(start[k].x - after[k].x, start[k].y - after[k].y) > 1);
      assert.deepEqual(movedOnCanvas.sort(), [key, ...willMove].sort(), 'on the canvas too, only they and the promoted node moved');

      // The box after the step shows the scores the dialog showed.
      const boxRows = await tableRows(moves);
      assert.deepEqual(boxRows, rowsAfterKeep, 'the same nodes, order and scores after the step');
      await shot(page, `consequences-${size}-${theme}-after.png`);

      await moves.locator('#undo').click();
      await page.waitForFunction((k) => window.kgView.tierOf(k) === 'archived', key, { timeout: 10000 });
      assert.ok(fs.readFileSync(file).equals(fileBefore), 'one undo takes back the step and its lock');
      assert.deepEqual(errors, []);
      await context.close();
    });
  }
}
