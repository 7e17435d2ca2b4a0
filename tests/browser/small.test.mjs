// The small things a daily user trips on: a link to a user-level node drawn as that
// node (not as a file), topic colours that stay put under a flood of new nodes and
// across visits, the archived band hinted and one click away in a short window, and
// a burst of agent notes that orphans curated nodes explained where it happens, with
// one click to bring them back. Real mouse events; screenshots in target/screenshots.
//
// Run: node --test tests/browser/small.test.mjs   (after building ui/dist and the server)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, mcp, openInContext, readGraph, shot, startServer, tempRoot, tierOnDisk } from './harness.mjs';
import { makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
let root;
let server;
let browser;
let alphaDir;
let gammaDir;
let tallDir;

/**
 * A project settled between its fill line and its budget whose archived anchors are
 * near their share: 14 active nodes and 380 curated archived ones, two days old, each
 * linked to one active node. A burst of 36 unlinked agent notes takes the budget, the
 * old active nodes are archived, and the anchors' share overflows: the fewest-linked
 * archived nodes are orphaned.
 */
function gammaGraph(dir) {
  const nodes = {};
  const edges = {};
  const old = now - 2 * 86400;
  for (let i = 0; i < 14; i++) {
    const id = `gamma-${String(i).padStart(4, '0')}`;
    nodes[id] = { id, gist: `Gamma insight ${i} `.padEnd(100, 'x'), _created_ts: now - 60 * 86400, _last_read_ts: old + i * 60 };
  }
  for (let i = 0; i < 380; i++) {
    const id = `gamma-r${String(i).padStart(3, '0')}`;
    nodes[id] = { id, gist: `Curated ${i}`.padEnd(80, 'y'), _created_ts: old, _archived: true };
    const to = `gamma-${String(i % 14).padStart(4, '0')}`;
    edges[`${id}->${to}:relates`] = { from: id, to, rel: 'relates' };
  }
  return { nodes, edges, _meta: { versions: {}, project_path: dir, namespace: { kind: 'project', owner: null } } };
}

before(async () => {
  root = tempRoot('kg-ui-small-');
  const home = path.join(root, 'home', 'src');
  alphaDir = path.join(home, 'alpha');
  gammaDir = path.join(home, 'gamma');
  tallDir = path.join(home, 'tall');
  for (const d of [alphaDir, gammaDir, tallDir]) fs.mkdirSync(d, { recursive: true });
  const user = makeGraph({ prefix: 'u', active: 12, archived: 2, orphaned: 0, now, seed: 7 });
  const alpha = makeGraph({ prefix: 'p', active: 18, archived: 6, orphaned: 2, now, seed: 9, projectPath: alphaDir, crossTo: [['p-a001-ingest-queue', 'u-a003-build-cache']] });
  const tall = makeGraph({ prefix: 't', active: 160, archived: 30, orphaned: 3, now, seed: 4, projectPath: tallDir });
  writeStorage(path.join(root, 'storage'), user.file, { alpha: alpha.file, gamma: gammaGraph(gammaDir), tall: tall.file });
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

const open = (context, dir) => openInContext(context, server.base, `#project=${encodeURIComponent(dir)}`);

test('a link to a user-level node is drawn as a node of the user level, not as a file', async () => {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await open(context, alphaDir);
  const keys = Object.keys(await page.evaluate(() => window.kgView.positions()));
  assert.ok(keys.includes('u:u-a003-build-cache'), `the user node is on the canvas: ${keys.filter((k) => !k.startsWith('p:'))}`);
  assert.ok(!keys.includes('a:u-a003-build-cache'), 'not as a file');
  const looks = await page.evaluate(() => {
    const n = window.kgView.element('u:u-a003-build-cache');
    return { classes: n.classes, shape: n.shape };
  });
  assert.ok(looks.classes.includes('elsewhere') && looks.classes.includes('user'), JSON.stringify(looks));
  assert.equal(looks.shape, 'round-rectangle', 'the user level’s shape');
  // Clicking it says where it lives and how to see it.
  const at = await page.evaluate(() => window.kgView.point({ key: 'u:u-a003-build-cache' }));
  await page.mouse.click(at.x, at.y);
  await page.locator('#toasts', { hasText: 'u-a003-build-cache is a node of the user graph' }).waitFor();
  await shot(page, 'small-cross-level.png');
  // With both levels on screen it is the user graph's own node.
  await page.locator('#both-levels').click();
  await page.waitForFunction(() => window.kgView.tierOf('u:u-a003-build-cache') !== null);
  assert.ok(!(await page.evaluate(() => window.kgView.element('u:u-a003-build-cache').classes)).includes('elsewhere'));
  assert.deepEqual(page.errors, []);
  await context.close();
});

test('topic colours stay put under a flood of new nodes, through Re-layout and a new visit', async () => {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await open(context, alphaDir);
  const colours = (p) => p.evaluate(() => Object.fromEntries(Object.keys(window.kgView.positions()).filter((k) => k.startsWith('p:')).map((k) => [k, window.kgView.nodeColour(k)])));
  const before = await colours(page);
  await page.waitForTimeout(500); // the picture is saved
  // A flood: 40 nodes of a new topic, bigger than any topic on screen, and 5 of another.
  const client = mcp(server.base);
  await client.initialize();
  const sid = (await client.call('kg_read', { cwd: alphaDir })).match(/Session: ([0-9a-f]{8})/)[1];
  for (let i = 0; i < 40; i++) await client.call('kg_put_node', { session_id: sid, level: 'project', id: `flood-${i}`, gist: `Flood note ${i}` });
  for (let i = 0; i < 5; i++) await client.call('kg_put_node', { session_id: sid, level: 'project', id: `zeta-${i}`, gist: `Zeta note ${i}` });
  await page.waitForFunction(() => window.kgView.has('p:zeta-4') && window.kgView.has('p:flood-39'), null, { timeout: 20000 });
  await page.waitForTimeout(600);
  const same = async (p, when) => {
    const now = await colours(p);
    const changed = Object.keys(before).filter((k) => now[k] !== undefined && now[k] !== before[k]);
    assert.deepEqual(changed, [], `${when}: every topic keeps its colour`);
    return now;
  };
  const live = await same(page, 'live');
  assert.notEqual(live['p:flood-0'], live['p:zeta-0'], 'the new topics get colours of their own');
  await shot(page, 'small-topic-flood.png');
  await page.locator('#relayout').click();
  await page.waitForTimeout(600);
  await same(page, 'after Re-layout');
  const again = await open(context, alphaDir);
  const next = await same(again, 'a new visit');
  assert.equal(next['p:flood-0'], live['p:flood-0'], 'the flood keeps its colour too');
  // Clean up for the other tests: the flood goes.
  for (let i = 0; i < 40; i++) await client.call('kg_delete_node', { session_id: sid, level: 'project', id: `flood-${i}` }).catch(() => undefined);
  for (let i = 0; i < 5; i++) await client.call('kg_delete_node', { session_id: sid, level: 'project', id: `zeta-${i}` }).catch(() => undefined);
  assert.deepEqual([...page.errors, ...again.errors], []);
  await context.close();
});

for (const theme of ['light', 'dark']) {
  test(`at 1024x700 (${theme}) the archived band below the fold is hinted and one click away`, async () => {
    const context = await browser.newContext({ viewport: { width: 1024, height: 700 }, colorScheme: theme });
    const page = await open(context, tallDir);
    const hint = page.locator('.below-hint');
    await hint.waitFor({ state: 'visible' });
    assert.match(await hint.innerText(), /^▾ ARCHIVED \(30\) below$/);
    const archivedOnScreen = () =>
      page.evaluate(() => {
        const canvas = document.getElementById('cy').getBoundingClientRect();
        return Object.keys(window.kgView.positions())
          .filter((k) => window.kgView.tierOf(k) === 'archived')
          .some((k) => {
            const p = window.kgView.point({ key: k });
            return p && p.y > canvas.top && p.y < canvas.bottom;
          });
      });
    assert.equal(await archivedOnScreen(), false, 'the first picture leaves the archived band below');
    await shot(page, `small-below-hint-${theme}.png`);
    await hint.click();
    await page.waitForTimeout(500);
    assert.equal(await archivedOnScreen(), true, 'one click brings the archived band up');
    assert.ok(await hint.isHidden(), 'the hint goes once the band is in sight');
    await shot(page, `small-below-hint-${theme}-after.png`);
    assert.deepEqual(page.errors, []);
    await context.close();
  });
}

test('a burst of agent notes that orphans curated nodes is explained where it happens, and one click brings them back', async () => {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await open(context, gammaDir);
  const client = mcp(server.base);
  await client.initialize();
  const sid = (await client.call('kg_read', { cwd: gammaDir })).match(/Session: ([0-9a-f]{8})/)[1];
  for (let i = 0; i < 36; i++) await client.call('kg_put_node', { session_id: sid, level: 'project', id: `note-${i}`, gist: `Agent note ${i} `.padEnd(300, 'z') });
  const orphanedOnDisk = () => Object.values(readGraph(server.storage, 'gamma').nodes).filter((n) => tierOnDisk(n) === 'orphaned').map((n) => n.id);
  const orphaned = orphanedOnDisk();
  assert.ok(orphaned.length > 20, `the burst orphaned curated nodes: ${orphaned.length}`);
  const box = page.locator('#moves');
  const button = box.locator('button.bring-back');
  await button.waitFor({ timeout: 15000 });
  // The box says why, as the burst's writes arrive (they may come after the re-balance that told of the orphans).
  await page.waitForFunction(() => window.kgView.burst()?.written === 36, null, { timeout: 10000 });
  await page.waitForFunction(() => /^36 nodes/.test(document.querySelector('#moves .burst-why')?.textContent ?? ''), null, { timeout: 5000 });
  const text = await box.innerText();
  assert.match(text, /36 nodes were written just now, 36 of them unlinked: they took the budget/, text);
  assert.match(await button.innerText(), new RegExp(`^Bring back these ${orphaned.length}$`));
  await shot(page, 'small-burst-explained.png');
  await button.click();
  const dialog = page.locator('#dialog[open]', { hasText: `Bring back ${orphaned.length} nodes?` });
  await dialog.waitFor();
  await shot(page, 'small-burst-bring-back-preview.png');
  await dialog.getByRole('button', { name: 'Bring back', exact: true }).click();
  await box.getByText(`Brought back ${orphaned.length} nodes (orphaned → active).`).waitFor({ timeout: 15000 });
  const graph = readGraph(server.storage, 'gamma').nodes;
  const stillOrphaned = orphaned.filter((id) => tierOnDisk(graph[id]) === 'orphaned');
  assert.deepEqual(stillOrphaned, [], 'none of them is orphaned any more');
  await shot(page, 'small-burst-brought-back.png');
  assert.deepEqual(page.errors, []);
  await context.close();
});
