// End-to-end tests of the graph view: the real `kg-memory serve` (target/debug),
// Debian's Chromium through playwright-core, real mouse drags, the files on disk, and
// a raw MCP client writing while the page is open.
//
// Run: node --test tests/browser/   (after `cargo build -p kg-cli` with ui/dist built)
// Screenshots land in artifacts/ (gitignored).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { drag, freePort, launchBrowser, mcp, openView, readGraph, shot, startServer, tempRoot, tierOnDisk } from './harness.mjs';
import { betaGraph, makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
let root;
let port;
let server;
let browser;
let projectDir;
let user;
let project;
let betaDir;
let bigDir;
const pages = [];

const waitFor = (page, fn, arg, timeout = 10000) => page.waitForFunction(fn, arg, { timeout });

before(async () => {
  root = tempRoot();
  const home = path.join(root, 'home');
  projectDir = path.join(home, 'src', 'alpha');
  fs.mkdirSync(projectDir, { recursive: true });
  // The user level sits between its fill line and its budget, so nothing moves by
  // itself; the project level has a cross-level edge to a user node.
  user = makeGraph({ prefix: 'u', active: 78, archived: 22, orphaned: 9, now, seed: 7 });
  project = makeGraph({
    prefix: 'p',
    active: 18,
    archived: 8,
    orphaned: 4,
    now,
    seed: 9,
    projectPath: projectDir,
    crossTo: [['p-a001-ingest-queue', 'u-a003-build-cache']],
  });
  betaDir = path.join(home, 'src', 'beta');
  fs.mkdirSync(betaDir, { recursive: true });
  // 2,000 nodes, 1,200 of them active (inside their grace period, so they stay).
  bigDir = path.join(home, 'src', 'big');
  fs.mkdirSync(bigDir, { recursive: true });
  const big = makeGraph({ prefix: 'g', active: 1200, archived: 500, orphaned: 300, now, seed: 3, projectPath: bigDir, unconnected: 40 });
  for (const n of Object.values(big.file.nodes)) n._created_ts = now - 3600;
  writeStorage(path.join(root, 'storage'), user.file, { alpha: project.file, beta: betaGraph(betaDir, now), big: big.file });
  port = await freePort();
  server = await startServer({ root, port });
  browser = await launchBrowser();
});

after(async () => {
  for (const p of pages) await p.close().catch(() => undefined);
  await browser?.close();
  const code = await server?.stop();
  assert.equal(code, 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

/** Open the view; with no graph named, the user graph (an agent's session in a project
 * would otherwise open the view there). */
async function open(hash = '#graph=user', viewport) {
  const page = await openView(browser, server.base, hash, viewport);
  pages.push(page);
  return page;
}

test('the page is served at /ui with its assets, and the level data comes from the server', async () => {
  const res = await fetch(`${server.base}/ui`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /text\/html/);
  const html = await res.text();
  const js = html.match(/src="(\/ui\/assets\/[^"]+\.js)"/)[1];
  const asset = await fetch(`${server.base}${js}`);
  assert.equal(asset.status, 200);
  assert.match(asset.headers.get('content-type'), /javascript/);
  const level = await (await fetch(`${server.base}/api/view/level?level=user`)).json();
  assert.deepEqual(level.counts, { active: 78, archived: 22, orphaned: 9 });
  assert.ok(level.budget.chars >= 14000 && level.budget.chars <= 17500, `settled level: ${level.budget.chars}`);
  assert.equal(level.budget.budget, 17500);
  assert.equal(level.budget.fill_line, 14000);
  const scored = level.nodes.find((n) => n.tier === 'active' && n.why.score !== null);
  for (const k of ['score', 'recency', 'connectedness', 'usefulness']) assert.equal(typeof scored.why[k], 'number');
  assert.ok(level.debt_items.some((d) => d.kind === 'oversized'));
  assert.ok(level.debt_items.some((d) => d.kind === 'unconnected'));
  assert.match(level.health.line, /^HEALTH: 78 nodes/);
});

test('three tiers, counts, budget gauge and badges are drawn', async () => {
  const page = await open();
  const card = page.locator('.card[data-level="user"]');
  const counts = card.locator('.counts');
  await counts.getByText('78 active').waitFor();
  await counts.getByText('22 archived').waitFor();
  await counts.getByText('9 orphaned').waitFor();
  assert.match(await card.locator('.gauge-text').innerText(), /\/ 17,500 chars rendered · fill line 14,000 \(0\.8\)/);
  assert.match(await card.locator('.badge.debt-LOW, .badge.debt-MED, .badge.debt-HIGH').innerText(), /^DEBT (LOW|MED|HIGH)/);
  // Orphans are in a collapsed drawer until it is opened.
  const orphan = `u:${user.ids.orphaned[0]}`;
  assert.equal(await page.evaluate((k) => window.kgView.point({ key: k }), orphan), null);
  await page.click('#drawer-toggle');
  await waitFor(page, (k) => window.kgView.point({ key: k }) !== null, orphan);
  await page.waitForTimeout(400);
  await shot(page, 'ui-three-tiers.png');
  // Raw factors on hover.
  await card.locator('.badge[class*="debt-"]').hover();
  assert.match(await card.locator('.badge[class*="debt-"] .factors').innerText(), /staleness[\s\S]*activity[\s\S]*deficit/);
  await shot(page, 'ui-debt-factors.png', card);
  await shot(page, 'ui-budget-gauge.png', card.locator('.gauge'));
  assert.deepEqual(page.errors, []);
});

test('dragging an archived node into the active area promotes it on disk, live in a second page, undoable', async () => {
  const a = await open();
  const b = await open();
  const id = user.ids.archived[0];
  const key = `u:${id}`;
  assert.equal(tierOnDisk(readGraph(server.storage).nodes[id]), 'archived');
  const from = await a.evaluate((k) => window.kgView.point({ key: k }), key);
  const to = await a.evaluate(() => window.kgView.point({ zone: 'active' }));
  assert.ok(from && to, 'node and target are on screen');
  await drag(a, from, to);
  await waitFor(a, (k) => window.kgView.tierOf(k) === 'active', key);
  assert.equal(tierOnDisk(readGraph(server.storage).nodes[id]), 'active', 'the file on disk shows it active');
  await waitFor(b, (k) => window.kgView.tierOf(k) === 'active', key);
  const moves = a.locator('#moves');
  assert.match(await moves.innerText(), new RegExp(`Promoted ${id}`));
  await shot(a, 'ui-promoted.png');
  await a.click('#undo');
  await waitFor(a, (k) => window.kgView.tierOf(k) === 'archived', key);
  assert.equal(tierOnDisk(readGraph(server.storage).nodes[id]), 'archived', 'undo archived it again');
  await waitFor(b, (k) => window.kgView.tierOf(k) === 'archived', key);
  assert.equal(await a.locator('#undo').count(), 0, 'nothing is left to undo');

  // An active node dropped on the archive band is archived by hand; Ctrl+Z undoes it.
  const activeId = user.ids.active[40];
  const akey = `u:${activeId}`;
  const p = await a.evaluate((k) => window.kgView.point({ key: k }), akey);
  const band = await a.evaluate(() => window.kgView.point({ zone: 'archive' }));
  await drag(a, p, band);
  await waitFor(a, (k) => window.kgView.tierOf(k) === 'archived', akey);
  assert.equal(tierOnDisk(readGraph(server.storage).nodes[activeId]), 'archived');
  await waitFor(b, (k) => window.kgView.tierOf(k) === 'archived', akey);
  await a.keyboard.press('Control+z');
  await waitFor(a, (k) => window.kgView.tierOf(k) === 'active', akey);
  assert.equal(tierOnDisk(readGraph(server.storage).nodes[activeId]), 'active');

  // An orphan dragged up is promoted with its chain rescue.
  await a.click('#drawer-toggle');
  const orphanId = user.ids.orphaned[1];
  const okey = `u:${orphanId}`;
  await waitFor(a, (k) => window.kgView.point({ key: k }) !== null, okey);
  await a.waitForTimeout(300);
  const op = await a.evaluate((k) => window.kgView.point({ key: k }), okey);
  const target = await a.evaluate(() => window.kgView.point({ zone: 'active' }));
  await drag(a, op, target);
  await waitFor(a, (k) => window.kgView.tierOf(k) === 'active', okey);
  assert.equal(tierOnDisk(readGraph(server.storage).nodes[orphanId]), 'active');
  assert.deepEqual([...a.errors, ...b.errors], []);
});

test('a promotion that overfills the level re-balances it, and the view says what moved and why', async () => {
  const page = await open(`#project=${encodeURIComponent(betaDir)}`);
  const card = page.locator('.card[data-level="project"]');
  const url = `${server.base}/api/view/level?level=project&project_path=${encodeURIComponent(betaDir)}`;
  const before = (await (await fetch(url)).json()).budget.chars;
  assert.ok(before > 17500 - 302 && before <= 17500, `just under budget: ${before}`);
  assert.match(await card.locator('.gauge-text').innerText(), new RegExp(`${before.toLocaleString('en-US')} / 17,500`));
  const key = 'p:beta-r000';
  const from = await page.evaluate((k) => window.kgView.point({ key: k }), key);
  const to = await page.evaluate(() => window.kgView.point({ zone: 'active' }));
  const fileBefore = fs.readFileSync(path.join(server.storage, 'projects', 'beta', 'graph.json'));
  const pictureBefore = await page.evaluate(() => window.kgView.positions());
  await drag(page, from, to);
  // The server's dry run names what the promotion would archive, before anything moves.
  const dialog = page.locator('#dialog', { hasText: 'Promote beta-r000?' });
  await dialog.waitFor();
  const preview = await dialog.innerText();
  assert.ok(fs.readFileSync(path.join(server.storage, 'projects', 'beta', 'graph.json')).equals(fileBefore), 'nothing is written before the confirmation');
  await shot(page, 'ui-rebalance-preview.png');
  await dialog.getByRole('button', { name: 'Promote', exact: true }).click();
  await waitFor(page, (k) => window.kgView.tierOf(k) === 'active', key);
  const moves = page.locator('#moves');
  await moves.locator('table.consequences').waitFor();
  const text = await moves.innerText();
  const archived = readGraph(server.storage, 'beta').nodes;
  const nowArchived = Object.values(archived).filter((n) => tierOnDisk(n) === 'archived').map((n) => n.id);
  assert.ok(nowArchived.length > 4, 'the maintenance pass archived active nodes');
  for (const id of nowArchived.filter((id) => !id.startsWith('beta-r'))) {
    assert.ok(preview.includes(id), `${id} was named before it moved: ${preview}`);
    assert.ok(text.includes(id), `${id} is named after: ${text}`);
  }
  assert.equal(tierOnDisk(archived['beta-r000']), 'active');
  const level = await (await fetch(url)).json();
  assert.ok(level.budget.chars <= 17500, `back within budget: ${level.budget.chars}`);
  assert.match(await card.locator('.gauge-text').innerText(), new RegExp(`${level.budget.chars.toLocaleString('en-US')} / 17,500`));
  await shot(page, 'ui-rebalanced.png');
  // Only the nodes the step moved moved: every other node kept its place.
  const samePicture = (a, b) => Object.keys(b).filter((k) => !a[k] || Math.hypot(a[k].x - b[k].x, a[k].y - b[k].y) > 1);
  const afterStep = await page.evaluate(() => window.kgView.positions());
  const stepMoved = new Set([key, ...nowArchived.map((id) => `p:${id}`)]);
  const untouched = Object.fromEntries(Object.entries(pictureBefore).filter(([k]) => !stepMoved.has(k)));
  assert.deepEqual(samePicture(afterStep, untouched), [], 'the nodes the step left alone keep their places');
  // Undo takes the whole step back, the re-balance included, to the byte, and gives
  // back the picture from before the step.
  await moves.locator('#undo').click();
  await waitFor(page, (k) => window.kgView.tierOf(k) === 'archived', key);
  assert.ok(fs.readFileSync(path.join(server.storage, 'projects', 'beta', 'graph.json')).equals(fileBefore), 'undo restores the file byte for byte');
  await page.waitForTimeout(300);
  assert.deepEqual(samePicture(await page.evaluate(() => window.kgView.positions()), pictureBefore), [], 'undo gives back the picture');
  assert.deepEqual(page.errors, []);
});

test('a longer gist that overfills the level is previewed, saved when confirmed, and undone to the byte', async () => {
  const page = await open(`#project=${encodeURIComponent(betaDir)}`);
  const file = path.join(server.storage, 'projects', 'beta', 'graph.json');
  const before = fs.readFileSync(file);
  const key = 'p:beta-0050';
  const p = await page.evaluate((k) => window.kgView.point({ key: k }), key);
  await page.mouse.click(p.x, p.y);
  await page.locator('#panel h2', { hasText: 'beta-0050' }).waitFor();
  // 245 → 400 characters: the level, 97 under its budget, goes over.
  await page.fill('#gist', 'Beta insight 050, rewritten at length in the graph view '.padEnd(400, 'y'));
  await page.click('#save');
  const dialog = page.locator('#dialog', { hasText: 'Save beta-0050?' });
  await dialog.waitFor();
  const named = (await dialog.innerText()).match(/beta-\d{4}/g) ?? [];
  assert.ok(named.length > 0, 'the dry run names what would be archived');
  assert.ok(fs.readFileSync(file).equals(before), 'nothing is written before the confirmation');
  // Cancel first: nothing happens.
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await page.waitForTimeout(300);
  assert.ok(fs.readFileSync(file).equals(before), 'cancelled: nothing written');
  await page.click('#save');
  await dialog.waitFor();
  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  await page.locator('#moves', { hasText: 'Saved beta-0050.' }).waitFor();
  const nodes = readGraph(server.storage, 'beta').nodes;
  const archived = Object.values(nodes).filter((n) => tierOnDisk(n) === 'archived' && !n.id.startsWith('beta-r')).map((n) => n.id);
  assert.deepEqual(archived.sort(), named.filter((id) => id !== 'beta-0050').sort(), 'the nodes named are the nodes archived');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+z');
  await page.locator('#moves', { hasText: 'Undone' }).waitFor();
  assert.ok(fs.readFileSync(file).equals(before), 'undo restores the file byte for byte');
  assert.deepEqual(page.errors, []);
});

test('a double-click shows a node and its neighbours within k hops, as the server computes them', async () => {
  const page = await open();
  const id = user.ids.active[3];
  const key = `u:${id}`;
  const p = await page.evaluate((k) => window.kgView.point({ key: k }), key);
  await page.mouse.dblclick(p.x, p.y);
  const bar = page.locator('#hood');
  await bar.getByText(`Around ${id}`).waitFor();
  const expected = async (k) => {
    const ans = await (await fetch(`${server.base}/api/view/neighbourhood?level=user&id=${id}&k=${k}`)).json();
    return [...ans.nodes.map((n) => `u:${n.id}`), ...ans.artifacts.map((a) => `a:${a.path}`)].sort();
  };
  const shown = () => page.evaluate(() => window.kgView.aroundKeys().sort());
  assert.deepEqual(await shown(), await expected(1));
  await shot(page, 'ui-neighbourhood.png');
  await page.keyboard.press('2');
  await bar.getByText('within 2 hops').waitFor();
  assert.deepEqual(await shown(), await expected(2));
  assert.ok((await expected(2)).length >= (await expected(1)).length);
  await page.keyboard.press('Escape'); // closes the panel the double-click opened
  await page.keyboard.press('Escape');
  await bar.waitFor({ state: 'hidden' });
  const all = await page.evaluate(() => window.kgView.aroundKeys().length);
  assert.ok(all > (await expected(2)).length, 'every node is back');
  assert.deepEqual(page.errors, []);
});

test('edges are created and deleted from the node panel, with the server\'s messages', async () => {
  const page = await open();
  const id = user.ids.active[9];
  const p = await page.evaluate((k) => window.kgView.point({ key: k }), `u:${id}`);
  await page.mouse.click(p.x, p.y);
  await page.locator('#panel h2', { hasText: id }).waitFor();
  await page.locator('#panel summary', { hasText: 'Add an edge' }).click();
  await page.getByLabel('Other end').fill('docs/edge-made-in-view.md');
  await page.getByLabel('Relation').fill('bad rel');
  await page.getByRole('button', { name: 'Add edge' }).click();
  await page.locator('#panel .error', { hasText: "Invalid rel 'bad rel'" }).waitFor();
  await page.getByLabel('Relation').fill('documented-in');
  await page.getByRole('button', { name: 'Add edge' }).click();
  await page.locator('#panel .edges', { hasText: 'docs/edge-made-in-view.md' }).waitFor();
  const key = `${id}->docs/edge-made-in-view.md:documented-in`;
  assert.ok(readGraph(server.storage).edges[key], 'the edge is on disk');
  await page.getByRole('button', { name: `Delete edge ${id} documented-in docs/edge-made-in-view.md` }).click();
  await page.locator('#dialog', { hasText: 'Delete edge?' }).waitFor();
  await page.locator('#dialog').getByRole('button', { name: 'Delete', exact: true }).click();
  await page.locator('#panel .edges', { hasText: 'docs/edge-made-in-view.md' }).waitFor({ state: 'detached' });
  assert.equal(readGraph(server.storage).edges[key], undefined, 'the artifact edge (a path with /) is deleted');
  page.errors.splice(0, page.errors.length, ...page.errors.filter((e) => !/status of 400/.test(e)));
  assert.deepEqual(page.errors, []);
});

test('editing a gist saves it to disk and an MCP kg_read returns it', async () => {
  const page = await open();
  const id = user.ids.active[5];
  const key = `u:${id}`;
  const p = await page.evaluate((k) => window.kgView.point({ key: k }), key);
  await page.mouse.click(p.x, p.y);
  await page.locator('#panel h2', { hasText: id }).waitFor();
  const gist = 'Build cache is keyed per branch and toolchain; a toolchain bump needs a cache flush (edited in the graph view)';
  await page.fill('#gist', gist);
  assert.match(await page.locator('#gist-count').innerText(), new RegExp(`${[...gist].length} / 300 characters`));
  // The gauge shows what the edit costs before it is saved.
  await page.locator('.card[data-level="user"] .gauge-projected').waitFor();
  await shot(page, 'ui-budget-gauge-edit.png', page.locator('.card[data-level="user"]'));
  await shot(page, 'ui-node-panel.png', page.locator('#panel'));
  await page.fill('#notes', 'first note\nsecond note');
  await page.click('#save');
  await page.locator('.toast', { hasText: `Saved ${id}` }).waitFor();
  const onDisk = readGraph(server.storage).nodes[id];
  assert.equal(onDisk.gist, gist);
  assert.deepEqual(onDisk.notes, ['first note', 'second note']);

  const client = mcp(server.base);
  await client.initialize();
  const text = await client.call('kg_read', { cwd: projectDir, ids: [id] });
  assert.ok(text.includes(gist), text);

  // Notes can be cleared.
  await page.locator('#panel h2', { hasText: id }).waitFor();
  await page.getByRole('button', { name: 'Clear notes' }).click();
  await page.click('#save');
  await page.waitForFunction((i) => !document.querySelector('#save') || document.querySelector('#save').disabled, id);
  await page.waitForTimeout(300);
  assert.deepEqual(readGraph(server.storage).nodes[id].notes, []);
  assert.deepEqual(page.errors, []);
});

test("an MCP client's kg_put_node appears in the open pages without reload", async () => {
  const userPage = await open();
  const both = await open(`#project=${encodeURIComponent(projectDir)}&both=1`);
  const client = mcp(server.base);
  await client.initialize();
  const first = await client.call('kg_read', { cwd: projectDir });
  const sid = first.match(/Session: ([0-9a-f]{8})/)[1];
  await client.call('kg_put_node', { session_id: sid, level: 'user', id: 'agent-user-note', gist: 'Written by an agent over MCP while the view was open' });
  await client.call('kg_put_node', { session_id: sid, level: 'project', id: 'agent-project-note', gist: 'A project insight from an agent' });
  await client.call('kg_put_edge', { session_id: sid, level: 'project', from: 'agent-project-note', to: 'p-a002-auth-tokens', rel: 'refines' });
  await waitFor(userPage, () => window.kgView.has('u:agent-user-note'));
  await waitFor(both, () => window.kgView.has('u:agent-user-note') && window.kgView.has('p:agent-project-note'));
  await userPage.locator('.toast', { hasText: 'agent-user-note' }).waitFor();
  await both.locator('.toast', { hasText: 'agent-project-note' }).first().waitFor();
  await shot(both, 'ui-both-levels-live.png');
  assert.deepEqual([...userPage.errors, ...both.errors], []);
});

test("an invalid id is refused with the server's message shown inline", async () => {
  const page = await open();
  await page.click('#new-node');
  await page.fill('#new-id', 'bad id!');
  await page.fill('#new-gist', 'whatever');
  await page.click('#new-create');
  const error = page.locator('#new-error');
  await error.filter({ hasText: 'Invalid node id' }).waitFor();
  assert.equal(
    await error.innerText(),
    "Invalid node id 'bad id!': use letters, digits, '.', '_', '-' (max 128 chars, must start alphanumeric)",
  );
  await shot(page, 'ui-invalid-id.png', page.locator('#dialog'));
  // The browser logs the refused request itself; nothing else may go wrong.
  page.errors.splice(0, page.errors.length, ...page.errors.filter((e) => !/status of 400/.test(e)));
  // A valid id goes through and opens the new node.
  await page.fill('#new-id', 'made-in-the-view');
  await page.click('#new-create');
  await page.locator('#panel h2', { hasText: 'made-in-the-view' }).waitFor();
  assert.equal(readGraph(server.storage).nodes['made-in-the-view'].gist, 'whatever');
  // Deleting asks first.
  await page.keyboard.press('Delete');
  await page.locator('#dialog', { hasText: 'Delete node?' }).waitFor();
  await page.getByRole('button', { name: 'Delete', exact: true }).click();
  await page.waitForFunction(() => !window.kgView.has('u:made-in-the-view'));
  assert.equal(readGraph(server.storage).nodes['made-in-the-view'], undefined);
  assert.deepEqual(page.errors, []);
});

test('a text that looks like a credential is refused, and a person can allow it as no secret', async () => {
  const page = await open();
  await page.click('#new-node');
  await page.fill('#new-id', 'fixture-db-url');
  await page.fill('#new-gist', 'Tests reach postgres://app:Fx7kQ2vLm9Rt@localhost/test_fixture');
  await page.click('#new-create');
  const error = page.locator('#new-error');
  await error.filter({ hasText: 'looks like a credential' }).waitFor();
  const said = await error.innerText();
  assert.match(said, /the gist holds what looks like a credential \(password in a URL\)/);
  assert.doesNotMatch(said, /Fx7kQ2vLm9Rt/);
  await shot(page, 'ui-credential-refused.png', page.locator('#dialog'));
  page.errors.splice(0, page.errors.length, ...page.errors.filter((e) => !/status of 400/.test(e)));
  await page.getByRole('button', { name: 'It is no secret: allow it and save' }).click();
  await page.locator('#panel h2', { hasText: 'fixture-db-url' }).waitFor();
  assert.match(readGraph(server.storage).nodes['fixture-db-url'].gist, /postgres:\/\/app:/);
  assert.deepEqual(page.errors, []);
});

test('search uses the server ranking; / focuses it, Enter opens the hit, Esc closes panels', async () => {
  const page = await open(`#project=${encodeURIComponent(projectDir)}&both=1`);
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'search');
  await page.keyboard.type('webhook signatures');
  const ranked = await (await fetch(`${server.base}/api/view/search?q=webhook%20signatures&levels=user,project&project_path=${encodeURIComponent(projectDir)}`)).json();
  const first = ranked.hits[0].id;
  // Answers for a prefix typed so far may show first; the answer for the whole query
  // must be the server's ranking.
  const shown = () => page.evaluate(() => [...document.querySelectorAll('#search-results [role="option"] strong')].map((e) => e.textContent));
  await waitFor(page, (id) => document.querySelector('#search-results [role="option"] strong')?.textContent === id, first).catch(async (e) => {
    throw new Error(`the page does not show the server ranking (${first} first): ${JSON.stringify(await shown())}; ${e.message}`);
  });
  assert.deepEqual(await shown(), ranked.hits.map((h) => h.id), 'the page shows the server ranking');
  await page.keyboard.press('Enter');
  await page.locator('#panel h2', { hasText: first }).waitFor();
  await shot(page, 'ui-search.png');
  await page.keyboard.press('Escape'); // leaves the search box
  await page.keyboard.press('Escape'); // closes the panel
  await page.locator('#panel').waitFor({ state: 'hidden' });
  // Delete asks, Esc cancels. (Opening the hit zoomed in on it: fit the graph to bring the node back on screen.)
  const key = `u:${user.ids.active[7]}`;
  await page.evaluate(() => window.kgView.fit());
  const p = await page.evaluate((k) => window.kgView.point({ key: k }), key);
  await page.mouse.click(p.x, p.y);
  await page.locator('#panel h2').waitFor();
  await page.keyboard.press('Delete');
  await page.locator('#dialog', { hasText: 'Delete node?' }).waitFor();
  await page.keyboard.press('Escape');
  await page.locator('#dialog').waitFor({ state: 'hidden' });
  assert.ok(readGraph(server.storage).nodes[user.ids.active[7]], 'nothing was deleted');
  // Dark theme, for the eye.
  await page.click('#theme');
  await page.waitForTimeout(300);
  await shot(page, 'ui-dark.png');
  assert.deepEqual(page.errors, []);
});

test('a 2,000-node graph draws with all three tiers (its speed is in BENCHMARKS.md)', async () => {
  const page = await open(`#project=${encodeURIComponent(bigDir)}`);
  const m = await page.evaluate(() => window.kgView.metrics);
  assert.equal(m.nodes, 2000);
  await page.click('#drawer-toggle');
  await waitFor(page, () => window.kgView.point({ key: 'p:g-o000-retry-policy' }) !== null);
  await page.waitForTimeout(300);
  await shot(page, 'ui-2000-nodes.png');
  assert.deepEqual(page.errors, []);
});

test('the view reconnects after a server restart and keeps receiving changes', async () => {
  const page = await open();
  assert.equal(await server.stop(), 0);
  await waitFor(page, () => window.kgView.live() === 'reconnecting');
  server = await startServer({ root, port });
  await waitFor(page, () => window.kgView.live() === 'live', undefined, 20000);
  const client = mcp(server.base);
  await client.initialize();
  const first = await client.call('kg_read', { cwd: projectDir });
  const sid = first.match(/Session: ([0-9a-f]{8})/)[1];
  await client.call('kg_put_node', { session_id: sid, level: 'user', id: 'after-restart', gist: 'Arrived after the server came back' });
  await waitFor(page, () => window.kgView.has('u:after-restart'));
  // Reconnect errors (the refused WebSocket while the server was down) are expected.
  assert.deepEqual(
    page.errors.filter((e) => !/WebSocket|ERR_CONNECTION_REFUSED|Failed to load resource|Failed to fetch/.test(e)),
    [],
  );
});
