// The list view, bulk actions and the activity panel, on a realistic project memory
// (90 active, 60 archived nodes): the list sorts and filters as the server's data says,
// shares the panel with the graph; nodes chosen in the list or on the canvas are
// archived, promoted or deleted as one step whose preview names exactly what the
// commit moves, and one undo restores the file byte for byte; the activity panel says
// who changed what and picks the node.
//
// Run: node --test tests/browser/list.test.mjs   (after building ui/dist and the server)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, openView, readGraph, shot, startServer, tempRoot, tierOnDisk } from './harness.mjs';
import { seedShop } from './memory-seed.mjs';

const now = Date.now() / 1000;
let root;
let server;
let browser;
let projectDir;
let memory;

before(async () => {
  root = tempRoot('kg-ui-list-');
  ({ projectDir, memory } = seedShop(root, now));
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

const open = (viewport = { width: 1440, height: 900 }) => openView(browser, server.base, `#project=${encodeURIComponent(projectDir)}`, viewport);

async function levelData() {
  const res = await fetch(`${server.base}/api/view/level?level=project&project_path=${encodeURIComponent(projectDir)}`);
  assert.equal(res.status, 200);
  return res.json();
}

const rowIds = (page) => page.$$eval('#list tbody tr', (rows) => rows.map((r) => r.querySelector('td.id').textContent));
const projectFile = () => fs.readFileSync(path.join(server.storage, 'projects', 'shop', 'graph.json'));

test('the list sorts and filters the nodes as the server reports them, and shares the panel', async () => {
  const page = await open();
  await page.click('#show-list');
  await page.locator('#list tbody tr').first().waitFor();
  const data = await levelData();
  const chars = (s) => [...s].length;

  // Biggest gists first: the order of the server's gists by length (ties by id).
  await page.click('th button[data-sort="size"]');
  const bySize = [...data.nodes].sort((a, b) => chars(b.node.gist) - chars(a.node.gist) || a.node.id.localeCompare(b.node.id)).map((r) => r.node.id);
  assert.deepEqual((await rowIds(page)).slice(0, 20), bySize.slice(0, 20));
  assert.equal(await page.getAttribute('th:has(button[data-sort="size"])', 'aria-sort'), 'descending');
  // Once more: smallest first.
  await page.click('th button[data-sort="size"]');
  const bySizeUp = [...data.nodes].sort((a, b) => chars(a.node.gist) - chars(b.node.gist) || a.node.id.localeCompare(b.node.id)).map((r) => r.node.id);
  assert.deepEqual((await rowIds(page)).slice(0, 20), bySizeUp.slice(0, 20));
  const sizes = await page.$$eval('#list tbody tr td:nth-child(8)', (cells) => cells.map((c) => Number(c.textContent.replace(/,/g, ''))));
  assert.deepEqual(sizes, [...sizes].sort((a, b) => a - b), 'ascending sizes');

  // By score, highest first: the server's scores, nodes without one last.
  await page.click('th button[data-sort="score"]');
  const scored = data.nodes.filter((r) => r.why.score !== null).sort((a, b) => b.why.score - a.why.score || a.node.id.localeCompare(b.node.id));
  assert.deepEqual((await rowIds(page)).slice(0, scored.length), scored.map((r) => r.node.id));

  // "All auth nodes": the words filter ids and gists; the tier filter narrows further.
  await page.fill('#list-filter', 'auth');
  const authIds = data.nodes.filter((r) => `${r.node.id} ${r.node.gist}`.toLowerCase().includes('auth')).map((r) => r.node.id);
  assert.deepEqual(new Set(await rowIds(page)), new Set(authIds));
  assert.ok(authIds.length > 3, 'the memory has auth nodes');
  await page.selectOption('#list-tier', 'archived');
  const archivedAuth = data.nodes.filter((r) => r.tier === 'archived' && authIds.includes(r.node.id)).map((r) => r.node.id);
  assert.deepEqual(new Set(await rowIds(page)), new Set(archivedAuth));
  assert.match(await page.innerText('#list-count'), new RegExp(`^${archivedAuth.length} of \\d+ nodes$`));
  await shot(page, 'ui-list-filtered.png');

  // A row opens the same panel as the graph.
  await page.click(`#list tbody tr[data-key="p:${archivedAuth[0]}"] td.gist`);
  await page.locator('#panel h2').waitFor();
  assert.equal(await page.innerText('#panel h2'), archivedAuth[0]);
  assert.equal(await page.getAttribute(`#list tbody tr[data-key="p:${archivedAuth[0]}"]`, 'aria-selected'), 'true');
  await shot(page, 'ui-list-panel.png');
  await page.click('#show-graph');
  assert.equal(await page.isVisible('#cy'), true);
  assert.deepEqual(page.errors, []);
  await page.close();
});

/** The step answers of the page's dry runs and commits, in order. */
function recordSteps(page) {
  const steps = [];
  page.on('response', async (res) => {
    if (!res.url().endsWith('/api/view/step')) return;
    const body = JSON.parse(res.request().postData() ?? '{}');
    steps.push({ dryRun: body.dry_run, actions: body.actions, answer: await res.json() });
  });
  return steps;
}

test('nodes chosen in the list are promoted as one step: the preview names what moves, one undo restores the file', async () => {
  const page = await open();
  const steps = recordSteps(page);
  await page.click('#show-list');
  await page.selectOption('#list-tier', 'archived');
  const chosen = (await rowIds(page)).slice(0, 5);
  assert.equal(chosen.length, 5);
  for (const id of chosen) await page.check(`#list tbody tr[data-key="p:${id}"] input[type=checkbox]`);
  await page.locator('#bulk').waitFor();
  assert.match(await page.innerText('#bulk'), /5 nodes chosen/);
  await shot(page, 'ui-bulk-chosen.png');

  const before = projectFile();
  await page.click('#bulk button[data-bulk="promote"]');
  // Five more active nodes take the level over its budget: the re-balance archives
  // others, so the view asks first and names them.
  const dialog = page.locator('#dialog[open]');
  await dialog.waitFor();
  await shot(page, 'ui-bulk-preview.png');
  const preview = steps.find((s) => s.dryRun);
  assert.ok(preview, 'a dry run came first');
  assert.deepEqual(
    preview.actions.map((a) => [a.kind, a.id]),
    chosen.map((id) => ['promote', id]),
    'one step with one action per chosen node',
  );
  const named = preview.answer.rebalanced.archived;
  assert.ok(named.length > 0, `the re-balance archives nodes: ${JSON.stringify(preview.answer)}`);
  const dialogText = await dialog.innerText();
  for (const id of named) assert.ok(dialogText.includes(id), `${id} is named in the dialog`);
  await dialog.locator('button.primary, button.danger').last().click();
  await page.waitForFunction(() => !document.querySelector('#dialog[open]'));
  await page.waitForFunction(() => document.querySelector('#moves:not([hidden]) #undo'));

  const commit = steps.find((s) => !s.dryRun);
  assert.deepEqual(commit.answer.rebalanced, preview.answer.rebalanced, 'the commit moved what the preview named');
  const onDisk = readGraph(server.storage, 'shop');
  // The server decides: a promoted node that still scores lowest is archived again by
  // the same step, and the preview said so.
  for (const id of chosen.filter((id) => !named.includes(id))) assert.equal(tierOnDisk(onDisk.nodes[id]), 'active', id);
  for (const id of named) assert.equal(tierOnDisk(onDisk.nodes[id]), 'archived', id);
  assert.equal(await page.isHidden('#bulk'), true, 'the choice is spent');
  await shot(page, 'ui-bulk-done.png');

  await page.click('#undo');
  await page.waitForFunction(() => !document.querySelector('#undo'));
  assert.ok(projectFile().equals(before), 'one undo restores the file byte for byte');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('shift-click and a shift-drawn box choose nodes on the canvas; deleting them is one step', async () => {
  const page = await open();
  const steps = recordSteps(page);
  const data = await levelData();
  const archived = data.nodes.filter((r) => r.tier === 'archived').map((r) => r.node.id);
  // Two archived nodes by shift-click (archived nodes' labels show on hover; the
  // points come from the page's own positions).
  for (const id of archived.slice(0, 2)) {
    const p = await page.evaluate((key) => window.kgView.point({ key }), `p:${id}`);
    await page.keyboard.down('Shift');
    await page.mouse.click(p.x, p.y);
    await page.keyboard.up('Shift');
  }
  await page.locator('#bulk').waitFor();
  assert.match(await page.innerText('#bulk'), /2 nodes chosen/);
  assert.equal(await page.isHidden('#panel'), true, 'shift-click chooses, it does not open the panel');

  // A box around the first active node, drawn with Shift held, adds it.
  const target = data.nodes.find((r) => r.tier === 'active').node.id;
  const p = await page.evaluate((key) => window.kgView.point({ key }), `p:${target}`);
  await page.keyboard.down('Shift');
  await page.mouse.move(p.x - 30, p.y - 30);
  await page.mouse.down();
  await page.mouse.move(p.x + 5, p.y + 5, { steps: 5 });
  await page.mouse.move(p.x + 30, p.y + 30, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForFunction((key) => window.kgView.chosen().includes(key), `p:${target}`);
  const chosen = await page.evaluate(() => window.kgView.chosen());
  assert.ok(chosen.includes(`p:${archived[0]}`) && chosen.includes(`p:${archived[1]}`), JSON.stringify(chosen));
  await shot(page, 'ui-bulk-canvas.png');

  const before = projectFile();
  await page.click('#bulk button[data-bulk="delete_node"]');
  const dialog = page.locator('#dialog[open]');
  await dialog.waitFor();
  await dialog.locator('button.danger').click();
  await page.waitForFunction(() => document.querySelector('#moves:not([hidden]) #undo'));
  const commit = steps.find((s) => !s.dryRun);
  assert.deepEqual(new Set(commit.actions.map((a) => a.id)), new Set(chosen.map((k) => k.slice(2))));
  assert.deepEqual(commit.answer.rebalanced, steps.find((s) => s.dryRun).answer.rebalanced);
  const onDisk = readGraph(server.storage, 'shop');
  for (const key of chosen) assert.equal(onDisk.nodes[key.slice(2)], undefined, `${key} deleted`);
  await page.click('#undo');
  await page.waitForFunction(() => !document.querySelector('#undo'));
  assert.ok(projectFile().equals(before), 'undo brings all of them back, byte for byte');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the activity panel says who changed what, follows live changes, and picks the node', async () => {
  const page = await open();
  await page.keyboard.press('a');
  await page.locator('#activity:not([hidden])').waitFor();
  // An agent writes through its session, as the MCP tools and hooks do.
  const reg = await (await fetch(`${server.base}/api/sessions/register?project_path=${encodeURIComponent(projectDir)}`, { method: 'POST' })).json();
  const res = await fetch(`${server.base}/api/nodes`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ level: 'project', project_path: projectDir, id: 'auth-sso-saml-clock-skew', gist: 'SAML assertions fail when the IdP clock runs 2 min ahead', session_id: reg.session_id }),
  });
  assert.equal(res.status, 200, await res.text());
  const entry = page.locator('#activity .entry', { hasText: 'wrote auth-sso-saml-clock-skew' });
  await entry.waitFor({ timeout: 10000 });
  assert.match(await entry.innerText(), new RegExp(`agent session ${reg.session_id}`));

  // The kind filter: deletions (the other tests made some) without the write; the
  // write among the writes.
  await page.selectOption('#activity-kind', 'deletions');
  const kinds = await page.$$eval('#activity .entry', (items) => items.map((i) => i.dataset.kind));
  assert.ok(kinds.every((k) => k === 'node_deleted' || k === 'edge_deleted'), kinds.join());
  assert.equal(await entry.count(), 0);
  await page.selectOption('#activity-kind', 'writes');
  await entry.waitFor();
  await page.selectOption('#activity-kind', 'all');
  await shot(page, 'ui-activity.png');

  await entry.locator('button.summary').click();
  await page.locator('#panel h2').waitFor();
  assert.equal(await page.innerText('#panel h2'), 'auth-sso-saml-clock-skew');
  assert.deepEqual(page.errors, []);
  await page.close();
});
