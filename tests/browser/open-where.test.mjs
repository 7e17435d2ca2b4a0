// The view opens where the person works: on the project of the session used last (an
// agent's kg_read in that folder), else on the last graph looked at in this browser, with
// the user graph one click away (and the project one click back). At 1440×900 and
// 1024×700, light and dark; screenshots in target/screenshots.
//
// Run: node --test tests/browser/open-where.test.mjs   (after building ui/dist and the server)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, mcp, openInContext, shot, startServer, tempRoot } from './harness.mjs';
import { makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
let root;
let server;
let browser;
let alphaDir;
let betaDir;

before(async () => {
  root = tempRoot('kg-ui-open-');
  alphaDir = path.join(root, 'home', 'src', 'alpha');
  betaDir = path.join(root, 'home', 'src', 'beta');
  fs.mkdirSync(alphaDir, { recursive: true });
  fs.mkdirSync(betaDir, { recursive: true });
  const user = makeGraph({ prefix: 'u', active: 6, archived: 1, orphaned: 0, now, seed: 3 });
  const alpha = makeGraph({ prefix: 'al', active: 20, archived: 4, orphaned: 1, now, seed: 4, projectPath: alphaDir });
  const beta = makeGraph({ prefix: 'be', active: 30, archived: 6, orphaned: 2, now, seed: 5, projectPath: betaDir });
  writeStorage(path.join(root, 'storage'), user.file, { alpha: alpha.file, beta: beta.file });
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

const openIn = (context, hash = '') => openInContext(context, server.base, hash);

const picked = (page) => page.evaluate(() => document.getElementById('graph-select').value);
const nodeKeys = (page) => page.evaluate(() => Object.keys(window.kgView.positions()).filter((k) => !k.startsWith('a:')));

test('with no session yet, the view opens on the user graph, then on the last graph looked at', async () => {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const first = await openIn(context);
  assert.equal(await picked(first), 'user');
  assert.ok(await first.locator('#switch-graph').isHidden(), 'no project to go back to yet');
  // The person looks at alpha; the next visit opens there.
  await first.selectOption('#graph-select', `p:${alphaDir}`);
  await first.waitForFunction(() => Object.keys(window.kgView.positions()).some((k) => k.startsWith('p:al-')));
  await first.close();
  const again = await openIn(context);
  assert.equal(await picked(again), `p:${alphaDir}`);
  assert.ok((await nodeKeys(again)).every((k) => k.startsWith('p:al-')), 'alpha is drawn');
  assert.deepEqual([...first.errors, ...again.errors], []);
  await context.close();
});

const SIZES = [
  { width: 1440, height: 900 },
  { width: 1024, height: 700 },
];

test('the view opens on the project of the most recent session, the user graph one click away', async () => {
  // Two agents: one in alpha, then one in beta (the most recent).
  for (const dir of [alphaDir, betaDir]) {
    const client = mcp(server.base);
    await client.initialize();
    await client.call('kg_read', { cwd: dir });
  }
  for (const viewport of SIZES) {
    for (const theme of ['light', 'dark']) {
      const where = `${viewport.width}x${viewport.height} ${theme}`;
      // A browser that last looked at alpha still opens on beta, where the work is.
      const context = await browser.newContext({ viewport, colorScheme: theme });
      await context.addInitScript((alpha) => {
        if (!localStorage.getItem('kg-view:last-graph')) localStorage.setItem('kg-view:last-graph', `p:${alpha}`);
      }, alphaDir);
      const page = await openIn(context);
      assert.equal(await picked(page), `p:${betaDir}`, `${where}: opens on beta`);
      assert.match(decodeURIComponent(await page.evaluate(() => location.hash)), new RegExp(`project=${betaDir}`), 'the URL names it');
      const keys = await nodeKeys(page);
      assert.ok(keys.length > 30 && keys.every((k) => k.startsWith('p:be-')), `${where}: beta is drawn`);
      await shot(page, `open-where-${viewport.width}x${viewport.height}-${theme}.png`);
      // One click to the user graph, one click back.
      const button = page.locator('#switch-graph');
      assert.equal(await button.innerText(), 'User graph');
      await button.click();
      await page.waitForFunction(() => Object.keys(window.kgView.positions()).some((k) => k.startsWith('u:')));
      assert.equal(await picked(page), 'user');
      assert.match(await button.innerText(), /beta/);
      await shot(page, `open-where-${viewport.width}x${viewport.height}-${theme}-user.png`);
      await button.click();
      await page.waitForFunction(() => Object.keys(window.kgView.positions()).some((k) => k.startsWith('p:be-')));
      assert.equal(await picked(page), `p:${betaDir}`);
      // A URL that names a graph wins.
      const named = await openIn(context, '#graph=user');
      assert.equal(await picked(named), 'user');
      assert.deepEqual([...page.errors, ...named.errors], []);
      await context.close();
    }
  }
});

test('with the graph switch shown, the top bar keeps to one row at every window width', async () => {
  const context = await browser.newContext({ viewport: { width: 1600, height: 700 } });
  const page = await openIn(context, `#project=${encodeURIComponent(betaDir)}`);
  await page.locator('#switch-graph').waitFor({ state: 'visible' });
  const wrapped = [];
  for (let width = 1000; width <= 1600; width += 10) {
    await page.setViewportSize({ width, height: 700 });
    const height = await page.evaluate(() => document.querySelector('header.top').getBoundingClientRect().height);
    if (height > 52) wrapped.push(`${width} px: ${height} px high`);
  }
  assert.deepEqual(wrapped, []);
  await context.close();
});
