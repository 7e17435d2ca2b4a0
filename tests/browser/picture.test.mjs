// The picture a person keeps their place by: a step moves only the nodes it changed, an
// undo puts the picture back, a reload opens it as it was left, opening and closing the
// node panel leaves the viewport as it was, and a saved picture that is corrupt or from
// another graph is ignored with a log line. At 1440×900 and 1024×700, light and dark,
// with real mouse events; the screenshots land in target/screenshots.
//
// Run: node --test tests/browser/picture.test.mjs   (after building ui/dist and the server)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { drag, freePort, launchBrowser, openInContext, readGraph, shot, startServer, tempRoot, tierOnDisk } from './harness.mjs';
import { betaGraph, makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
const SIZES = [
  { width: 1440, height: 900 },
  { width: 1024, height: 700 },
];
const THEMES = ['light', 'dark'];
let root;
let server;
let browser;
let betaDir;

before(async () => {
  root = tempRoot('kg-ui-picture-');
  betaDir = path.join(root, 'home', 'src', 'beta');
  fs.mkdirSync(betaDir, { recursive: true });
  const user = makeGraph({ prefix: 'u', active: 40, archived: 10, orphaned: 3, now, seed: 5 });
  writeStorage(path.join(root, 'storage'), user.file, { beta: betaGraph(betaDir, now) });
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

/** A browser profile of its own (its storage keeps the pictures), in a theme, with its
 * pages' errors and console warnings (`logs`) gathered. */
async function profile(viewport, theme) {
  const context = await browser.newContext({ viewport, colorScheme: theme });
  const logs = [];
  const errors = [];
  const open = (hash) => openInContext(context, server.base, hash, { errors, warnings: logs });
  return { context, open, logs, errors };
}

const beta = () => `#project=${encodeURIComponent(betaDir)}`;
/** Keys whose place differs by more than a pixel (model units) between two pictures, over `keys`. */
const movedBetween = (a, b, keys = Object.keys(a)) => keys.filter((k) => !a[k] || !b[k] || Math.hypot(a[k].x - b[k].x, a[k].y - b[k].y) > 1);
const positions = (page) => page.evaluate(() => window.kgView.positions());
const settle = (page) => page.waitForTimeout(500); // the picture is saved 300 ms after a change

for (const viewport of SIZES) {
  for (const theme of THEMES) {
    const size = `${viewport.width}x${viewport.height}`;
    test(`${size} ${theme}: a step moves only its nodes, undo puts the picture back, a reload opens it as left`, async () => {
      const { context, open, errors } = await profile(viewport, theme);
      const page = await open(beta());
      const before = await positions(page);
      const key = 'p:beta-r000';
      const fileBefore = fs.readFileSync(path.join(server.storage, 'projects', 'beta', 'graph.json'));
      // Scroll the archived node into view if the window is short, with the wheel as a person would.
      let from = await page.evaluate((k) => window.kgView.point({ key: k }), key);
      if (from.y > viewport.height - 60) {
        await page.evaluate(() => window.kgView.fit());
        from = await page.evaluate((k) => window.kgView.point({ key: k }), key);
      }
      const start = await positions(page);
      const to = await page.evaluate(() => window.kgView.point({ zone: 'active' }));
      await drag(page, from, to);
      const dialog = page.locator('#dialog', { hasText: 'Promote beta-r000?' });
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Promote', exact: true }).click();
      await page.waitForFunction((k) => window.kgView.tierOf(k) === 'active', key, { timeout: 10000 });
      await page.locator('#moves #undo').waitFor();
      await settle(page);
      const graph = readGraph(server.storage, 'beta').nodes;
      const archivedNow = Object.values(graph).filter((n) => tierOnDisk(n) === 'archived' && !n.id.startsWith('beta-r')).map((n) => `p:${n.id}`);
      assert.ok(archivedNow.length > 4, `the promotion re-balanced the level: ${archivedNow}`);
      const afterStep = await positions(page);
      const changed = new Set([key, ...archivedNow]);
      const untouched = Object.keys(start).filter((k) => !changed.has(k));
      assert.deepEqual(movedBetween(start, afterStep, untouched), [], 'every node the step left alone keeps its place');
      assert.deepEqual(movedBetween(start, afterStep, [...changed]).sort(), [...changed].sort(), 'the nodes the step changed moved');
      await shot(page, `picture-${size}-${theme}-after-step.png`);

      // A reload in the same browser opens the picture as the step left it.
      const again = await open(beta());
      assert.deepEqual(movedBetween(afterStep, await positions(again)), [], 'a reload opens the picture as it was left');
      await again.close();

      await page.locator('#moves #undo').click();
      await page.waitForFunction((k) => window.kgView.tierOf(k) === 'archived', key, { timeout: 10000 });
      await settle(page);
      assert.ok(fs.readFileSync(path.join(server.storage, 'projects', 'beta', 'graph.json')).equals(fileBefore), 'undo restores the file');
      assert.deepEqual(movedBetween(start, await positions(page)), [], 'undo puts every node back where it was');
      assert.deepEqual(movedBetween(before, start), [], 'the fit moved the viewport, not the nodes');
      await shot(page, `picture-${size}-${theme}-after-undo.png`);
      assert.deepEqual(errors, []);
      await context.close();
    });

    test(`${size} ${theme}: opening and closing the panel leaves the viewport as it was, the picked node in sight`, async () => {
      const { context, open, errors } = await profile(viewport, theme);
      const page = await open(beta());
      const viewportBefore = await page.evaluate(() => window.kgView.viewport());
      const picture = await positions(page);
      // The node furthest right on screen: the panel opens over that side.
      const key = await page.evaluate(() => {
        const canvas = document.getElementById('cy').getBoundingClientRect();
        let best = null;
        for (const k of Object.keys(window.kgView.positions())) {
          if (!k.startsWith('p:')) continue;
          const p = window.kgView.point({ key: k });
          if (p && p.x < canvas.right - 30 && p.y > canvas.top + 40 && p.y < canvas.bottom - 60 && (!best || p.x > best.p.x)) best = { k, p };
        }
        return best.k;
      });
      const at = await page.evaluate((k) => window.kgView.point({ key: k }), key);
      await page.mouse.click(at.x, at.y);
      await page.locator('#panel h2', { hasText: key.slice(2) }).waitFor();
      const seen = await page.evaluate((k) => {
        const p = window.kgView.point({ key: k });
        const canvas = document.getElementById('cy').getBoundingClientRect();
        const panel = document.getElementById('panel').getBoundingClientRect();
        return { p, inside: p.x >= canvas.left && p.x <= canvas.right && p.y >= canvas.top && p.y <= canvas.bottom, underPanel: p.x >= panel.left };
      }, key);
      assert.ok(seen.inside && !seen.underPanel, `the picked node stays in sight: ${JSON.stringify(seen)}`);
      await shot(page, `panel-${size}-${theme}-open.png`);
      await page.locator('#panel button[aria-label^="Close details"]').click();
      await page.waitForFunction(() => document.getElementById('panel').hidden);
      await page.waitForTimeout(200);
      const viewportAfter = await page.evaluate(() => window.kgView.viewport());
      assert.ok(Math.abs(viewportAfter.zoom - viewportBefore.zoom) < 1e-9, `zoom kept: ${viewportBefore.zoom} → ${viewportAfter.zoom}`);
      assert.ok(Math.hypot(viewportAfter.pan.x - viewportBefore.pan.x, viewportAfter.pan.y - viewportBefore.pan.y) < 1, `pan kept: ${JSON.stringify([viewportBefore, viewportAfter])}`);
      assert.deepEqual(movedBetween(picture, await positions(page)), [], 'no node moved');
      await shot(page, `panel-${size}-${theme}-closed.png`);
      assert.deepEqual(errors, []);
      await context.close();
    });
  }
}

test('a saved picture that is corrupt or from another graph is ignored with a log line, and the layout falls back', async () => {
  const { context, open, logs, errors } = await profile(SIZES[0], 'light');
  const fresh = await positions(await open(beta()));
  const id = 'project:beta';
  const cases = {
    'not JSON': '{"version":1, "graph": "project:be',
    'another graph': JSON.stringify({ version: 1, graph: 'project:gamma', bands: {}, spots: {} }),
    'a malformed position': JSON.stringify({
      version: 1,
      graph: id,
      bands: { active: { x1: 0, x2: 10, y1: 0, y2: 10 }, archive: { x1: 0, x2: 10, y1: 20, y2: 30 }, drawer: { x1: 0, x2: 10, y1: 40, y2: 50 }, head: 40, cellW: 100 },
      spots: { 'p:beta-0001': ['NaN', 3, 'active'] },
    }),
  };
  for (const [what, text] of Object.entries(cases)) {
    const setter = await open(beta());
    await setter.waitForTimeout(500); // its own save of the fresh picture first
    await setter.evaluate(([k, t]) => localStorage.setItem(k, t), [`kg-view:picture:${id}`, text]);
    await setter.close();
    logs.length = 0;
    const page = await open(beta());
    assert.ok(
      logs.some((l) => l.includes(`saved positions of ${id} are ignored`)),
      `${what}: a log line says the saved picture is ignored: ${JSON.stringify(logs)}`,
    );
    assert.deepEqual(movedBetween(fresh, await positions(page)), [], `${what}: the layout falls back to a fresh one`);
    await page.close();
  }
  assert.deepEqual(errors, []);
  await context.close();
});
