// The view tells the truth about states a person could mistake for normal ones: a
// graph file that was damaged and moved aside (a banner with the moved file and the
// backup, never "no nodes yet"), a lost server (a banner, then the view reconnects by
// itself), a level over its budget whose nodes are all new (under the reference's policy
// the gauge says nothing can move yet, and why; under ours, which new nodes their share
// of the budget protects), and the graph picker's counts following live writes.
//
// Run: node --test tests/browser/state.test.mjs   (after building ui/dist and the server)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { freePort, launchBrowser, openView, shot, startServer, tempRoot } from './harness.mjs';
import { makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
const DAY = 86_400;

/** A browser and a server on a storage root prepared by `prepare(storage, home)`. */
async function withServer(prepare, body, env = {}) {
  const root = tempRoot('kg-ui-state-');
  const storage = path.join(root, 'storage');
  const home = path.join(root, 'home');
  fs.mkdirSync(storage, { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  await prepare(storage, home);
  const port = await freePort();
  const server = await startServer({ root, port, env });
  const browser = await launchBrowser();
  try {
    await body({ server, browser, root, storage, home, port });
  } finally {
    await browser.close();
    await server.stop();
    if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
  }
}

test('a damaged project file shows a banner with the moved file and the backup it fell back to', async () => {
  let projectDir;
  let backupIds;
  await withServer(
    (storage, home) => {
      projectDir = path.join(home, 'src', 'shop');
      fs.mkdirSync(projectDir, { recursive: true });
      const good = makeGraph({ prefix: 'p', active: 6, archived: 2, orphaned: 0, now, seed: 2, projectPath: projectDir });
      backupIds = good.ids.active;
      writeStorage(storage, makeGraph({ prefix: 'u', active: 3, archived: 0, orphaned: 0, now }).file, { shop: good.file });
      const dir = path.join(storage, 'projects', 'shop');
      fs.copyFileSync(path.join(dir, 'graph.json'), path.join(dir, 'graph.prev'));
      fs.writeFileSync(path.join(dir, 'graph.json'), '{"nodes": {"p-0": {"id": "p-0", "gi');
    },
    async ({ server, browser, storage }) => {
      const page = await openView(browser, server.base, `#project=${encodeURIComponent(projectDir)}`, { width: 1440, height: 900 });
      const banner = page.locator('.banner[data-banner="damaged"]');
      await banner.waitFor();
      const text = await banner.innerText();
      // The graph picker says it too, for whoever picks another graph and comes back.
      await page.waitForFunction(() => /^shop · damaged file moved aside · /.test(document.getElementById('graph-select').selectedOptions[0].text), null, { timeout: 10000 });
      const dir = path.join(storage, 'projects', 'shop');
      const moved = fs.readdirSync(dir).find((f) => f.startsWith('graph.json.corrupt-'));
      assert.ok(moved, 'the damaged file was moved aside');
      assert.ok(text.includes(path.join(dir, moved)), text);
      assert.ok(text.includes(path.join(dir, 'graph.prev')), text);
      assert.match(text, /loaded from its backup/);
      assert.equal(await page.evaluate((key) => window.kgView.has(key), `p:${backupIds[0]}`), true, 'the backup is on screen');
      await shot(page, 'ui-damaged-with-backup.png');
      // Closing it is remembered for that moved file.
      await banner.locator('button').click();
      await page.reload();
      await page.waitForFunction(() => window.kgView && window.kgView.ready);
      assert.equal(await page.locator('.banner[data-banner="damaged"]').count(), 0);
      assert.deepEqual(page.errors, []);
    },
  );
});

test('a damaged user file with no backup is an empty graph that says why, not "no nodes yet"', async () => {
  await withServer(
    (storage) => fs.writeFileSync(path.join(storage, 'user.json'), '{"nodes": [1, 2'),
    async ({ server, browser }) => {
      const page = await openView(browser, server.base, '', { width: 1440, height: 900 });
      const banner = page.locator('.banner[data-banner="damaged"]');
      await banner.waitFor();
      assert.match(await banner.innerText(), /no valid backup, so the graph started empty/);
      const empty = await page.innerText('#empty');
      assert.match(empty, /damaged and moved aside/);
      assert.doesNotMatch(empty, /no nodes yet/i);
      assert.doesNotMatch(await page.innerText('.card[data-level="user"]'), /No nodes yet/);
      assert.equal(await page.locator('#empty.first-run').count(), 0, 'not the first-run page either');
      await shot(page, 'ui-damaged-no-backup.png');
      assert.deepEqual(page.errors, []);
    },
  );
});

test('a lost server shows a banner, and the view reconnects and reloads when it returns', async () => {
  await withServer(
    (storage) => writeStorage(storage, makeGraph({ prefix: 'u', active: 5, archived: 1, orphaned: 0, now }).file),
    async ({ server, browser, root, storage, port }) => {
      const page = await openView(browser, server.base, '', { width: 1440, height: 900 });
      assert.equal(await page.locator('.banner').count(), 0);
      assert.equal(await server.stop(), 0);
      const banner = page.locator('.banner[data-banner="offline"]');
      await banner.waitFor({ timeout: 15000 });
      assert.match(await banner.innerText(), /Lost the connection to the memory server/);
      await shot(page, 'ui-offline.png');

      // While it is away, the graph changes on disk (another copy of KG Memory, a
      // restored backup); the view shows it once the server is back.
      const file = path.join(storage, 'user.json');
      const graph = JSON.parse(fs.readFileSync(file, 'utf8'));
      graph.nodes['u-written-offline'] = { id: 'u-written-offline', gist: 'Written while the view was away', _created_ts: now };
      fs.writeFileSync(file, JSON.stringify(graph));
      const again = await startServer({ root, port });
      try {
        await page.waitForFunction(() => window.kgView.live() === 'live', null, { timeout: 20000 });
        await page.waitForFunction(() => window.kgView.has('u:u-written-offline'), null, { timeout: 10000 });
        assert.equal(await page.locator('.banner[data-banner="offline"]').count(), 0);
        // Failed requests while the server was away are expected console errors.
        assert.deepEqual(
          page.errors.filter((e) => !/ERR_CONNECTION_REFUSED|WebSocket|Failed to load resource/.test(e)),
          [],
        );
      } finally {
        await again.stop();
      }
    },
  );
});

test('a write made after the view read its level but before its live connection began still shows', async () => {
  await withServer(
    (storage) => writeStorage(storage, makeGraph({ prefix: 'u', active: 4, archived: 0, orphaned: 0, now }).file),
    async ({ server, browser }) => {
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      // Hold the live connection back until the level is drawn and another client wrote.
      let release;
      const released = new Promise((resolve) => (release = resolve));
      await page.routeWebSocket(/\/ws/, async (ws) => {
        await released;
        ws.connectToServer();
      });
      await page.goto(`${server.base}/ui`);
      await page.waitForFunction(() => window.kgView && window.kgView.ready, null, { timeout: 30000 });
      assert.notEqual(await page.evaluate(() => window.kgView.live()), 'live');

      const res = await fetch(`${server.base}/api/nodes`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ level: 'user', id: 'u-between', gist: 'Written between the level read and the live connection' }),
      });
      assert.equal(res.status, 200, await res.text());
      release();
      await page.waitForFunction(() => window.kgView.live() === 'live', null, { timeout: 15000 });
      // No later change comes to prompt a reload: the view notices the gap by itself.
      await page.waitForFunction(() => window.kgView.has('u:u-between'), null, { timeout: 10000 });
      assert.deepEqual(errors, []);
    },
  );
});

/** A user level written in one burst: 80 unread nodes of 240 characters, an hour old. */
function burstLevel(storage) {
  const nodes = {};
  for (let i = 0; i < 80; i++) {
    const id = `burst-${String(i).padStart(2, '0')}`;
    nodes[id] = { id, gist: `${id}: an agent's long note written in one burst `.padEnd(240, 'x'), _created_ts: now - 3600 - i };
  }
  writeStorage(storage, { nodes, edges: {}, _meta: { versions: {}, namespace: { kind: 'user', owner: null } } });
}

test("under the reference's policy, over budget with every active node in its grace period, the gauge says nothing can be archived yet", async () => {
  await withServer(
    burstLevel,
    async ({ server, browser }) => {
      const page = await openView(browser, server.base, '', { width: 1440, height: 900 });
      const gauge = page.locator('.card[data-level="user"] .gauge');
      const text = await gauge.innerText();
      assert.match(text, /nothing can be archived yet/);
      assert.match(text, /every active node is newer than 5 days/);
      assert.match(text, /The first leaves it in 5 days/);
      await shot(page, 'ui-gauge-grace-stall.png', page.locator('.card[data-level="user"]'));
      assert.deepEqual(page.errors, []);
    },
    { KG_POLICY: 'reference' },
  );
});

test("under our policy the same level can shrink: the gauge and the panel explain the new nodes' share of the budget", async () => {
  await withServer(burstLevel, async ({ server, browser }) => {
    const page = await openView(browser, server.base, '', { width: 1440, height: 900 });
    const card = page.locator('.card[data-level="user"]');
    const text = await card.locator('.gauge').innerText();
    assert.doesNotMatch(text, /nothing can be archived/);
    assert.match(text, /the next write or tick archives the lowest-scored of \d+ active nodes, and spares the \d+ newest: nodes written in the last 5 days are protected while their lines fit in 35% of the budget \(6,125 characters\), newest first/);
    await shot(page, 'ui-gauge-grace-share.png', card);
    // The oldest of the burst is past the share: ranked with the older nodes, and the
    // panel says why; the newest is protected by the share.
    const opened = async (id) => {
      const p = await page.evaluate((k) => window.kgView.point({ key: k }), `u:${id}`);
      await page.mouse.click(p.x, p.y);
      await page.locator('#panel h2', { hasText: id }).waitFor();
      return page.locator('#panel');
    };
    const oldest = await opened('burst-79');
    assert.match(await oldest.locator('.reason').innerText(), /^Active: new \(.*newer nodes already fill the 35% of the level's budget \(6,125 characters\) that protects new nodes, so it is scored like an older node: score /);
    assert.match(await oldest.innerText(), /Percentiles among active nodes past grace and new ones beyond their share of the budget\. Place \d+ of \d+ in the archive order/);
    await shot(page, 'ui-panel-grace-share.png', oldest);
    await page.keyboard.press('Escape');
    const newest = await opened('burst-00');
    assert.match(await newest.locator('.reason').innerText(), /fit in a 35% share of the level's budget \(6,125 characters\), newest first; this one fits, so compaction does not archive it\.$/);
    assert.deepEqual(page.errors, []);
  });
});

test("the graph picker's counts and debt follow live writes", async () => {
  await withServer(
    (storage) => writeStorage(storage, makeGraph({ prefix: 'u', active: 5, archived: 1, orphaned: 0, now: now - 30 * DAY }).file),
    async ({ server, browser }) => {
      const page = await openView(browser, server.base, '', { width: 1440, height: 900 });
      const option = page.locator('#graph-select option[value="user"]');
      assert.match(await option.innerText(), /^User graph · 5\/1\/0 · DEBT /);
      const res = await fetch(`${server.base}/api/nodes`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ level: 'user', id: 'u-live', gist: 'Arrives while the view is open' }),
      });
      assert.equal(res.status, 200, await res.text());
      // The write also re-balances the level (it is under its fill line, so the
      // archived node comes back): the picker shows what the server now says.
      const row = (await (await fetch(`${server.base}/api/view/graphs`)).json()).graphs.find((g) => g.level === 'user');
      const expected = `User graph · ${row.counts.active}/${row.counts.archived}/${row.counts.orphaned} · DEBT ${row.debt.level} ${row.debt.score}`;
      assert.notEqual(row.counts.active, 5);
      await page.waitForFunction((text) => document.querySelector('#graph-select option[value="user"]').textContent === text, expected, { timeout: 10000 });
      assert.deepEqual(page.errors, []);
    },
  );
});
