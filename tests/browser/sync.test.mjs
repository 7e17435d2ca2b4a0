// The git sync's status in the top bar (issue 23): a storage root set up with
// `kg-memory sync setup` on a bare repository of this machine, served by the real
// server. The status says when it last synced; "Sync now" sends a change and says so;
// a change another machine pushed refreshes the status when it arrives; and with the
// remote moved away, the status says it is offline until the remote is back.
//
// Run: KG_MEMORY_BIN=$PWD/target/debug/kg-memory node --test tests/browser/sync.test.mjs

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { BIN, freePort, launchBrowser, mcp, openView, shot, startServer, tempRoot } from './harness.mjs';
import { makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
let root;
let remote;
let server;
let other;
let browser;

/** Git and kg-memory see only the test's folders: no system or user git config. */
const envFor = (machine) => ({
  PATH: process.env.PATH,
  HOME: path.join(machine, 'home'),
  KG_STORAGE_ROOT: path.join(machine, 'storage'),
  GIT_CONFIG_NOSYSTEM: '1',
  XDG_CONFIG_HOME: path.join(machine, 'home', '.config'),
  LC_ALL: 'C',
});

function setUpSync(machine) {
  fs.mkdirSync(path.join(machine, 'home'), { recursive: true });
  return execFileSync(BIN, ['sync', 'setup', remote], { env: envFor(machine), encoding: 'utf8' });
}

const git = (...args) => execFileSync('git', args, { env: envFor(root), encoding: 'utf8' }).trim();
const remoteCommits = () => Number(git(`--git-dir=${remote}`, 'rev-list', '--count', 'main'));

async function post(base, url, body) {
  const res = await fetch(`${base}${url}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

before(async () => {
  root = tempRoot('kg-ui-sync-');
  remote = path.join(root, 'remote.git');
  fs.mkdirSync(remote);
  git('init', '--quiet', '--bare', '--initial-branch=main', remote);
  const user = makeGraph({ prefix: 'u', active: 14, archived: 4, orphaned: 0, now, seed: 11 });
  writeStorage(path.join(root, 'storage'), user.file);
  setUpSync(root);
  const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', XDG_CONFIG_HOME: path.join(root, 'home', '.config') };
  server = await startServer({ root, port: await freePort(), env: gitEnv });
  // Another machine on the same remote, with its own server.
  const machine = path.join(root, 'other');
  setUpSync(machine);
  other = await startServer({
    root: machine,
    port: await freePort(),
    env: { GIT_CONFIG_NOSYSTEM: '1', XDG_CONFIG_HOME: path.join(machine, 'home', '.config') },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  for (const s of [server, other]) assert.equal(await s?.stop(), 0, 'the server stops cleanly');
  if (root && !process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

/** Click the status, then "Sync now" in the dialog it opens; the toast it leaves
 * (live toasts about other changes may come and go meanwhile). */
async function syncNowFromTheView(page, said) {
  await page.locator('#sync').click();
  const dialog = page.locator('#dialog');
  await dialog.locator('h2', { hasText: 'Sync with the remote' }).waitFor();
  assert.match(await dialog.locator('.sync-summary').innerText(), /Sync: on for .*, with the remote origin/);
  await shot(page, 'ui-sync-dialog.png', dialog);
  await dialog.getByRole('button', { name: 'Sync now' }).click();
  const toast = page.locator('#toasts .toast', { hasText: said });
  await toast.waitFor({ timeout: 60000 });
  return toast;
}

test('the top bar shows the sync, syncs now, follows changes from another machine, and says when the remote is gone', async () => {
  const page = await openView(browser, server.base, '', { width: 1024, height: 700 });
  const status = page.locator('#sync');
  await status.waitFor({ state: 'visible', timeout: 15000 });
  // A 1024 px window shows the brief words; the full ones are its label and, wider, its text.
  assert.equal(await status.innerText(), 'Synced');
  assert.match(await status.getAttribute('aria-label'), /^Synced (just now|\d+ min ago)\. Sync now…$/);
  assert.equal(await status.getAttribute('data-state'), 'ok');
  assert.match(await status.getAttribute('title'), /^Sync: on for .*\nLast sync: \d{4}-\d\d-\d\d \d\d:\d\d\n[\s\S]*Click to sync now\.$/);
  // On one row with the rest of the bar, whole, inside a 1024 px window.
  const box = await status.boundingBox();
  const bar = await page.locator('header.top').boundingBox();
  assert.equal(bar.height, 52, 'the bar keeps to one row');
  assert.ok(box.x >= 0 && box.x + box.width <= 1024 && box.y >= bar.y && box.y + box.height <= bar.y + bar.height, JSON.stringify({ box, bar }));
  assert.ok(await status.evaluate((el) => el.scrollWidth <= el.clientWidth), 'the status is not cut');
  await shot(page, 'ui-sync-light.png', page.locator('header.top'));
  await page.locator('#theme').click();
  await shot(page, 'ui-sync-dark.png', page.locator('header.top'));

  // A node written here goes out with "Sync now", and the answer says so.
  const put = await post(server.base, '/api/nodes', { level: 'user', id: 'sync-probe', gist: 'Written on the first machine.' });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const before = remoteCommits();
  const toast = await syncNowFromTheView(page, /^Synced:/);
  assert.match(await toast.innerText(), /^Synced: received \d+ commit\(s\), sent [1-9]\d*/);
  assert.ok(remoteCommits() > before, 'the change reached the remote');
  await shot(page, 'ui-sync-now.png');
  await page.waitForFunction(() => /^Synced just now$/.test(document.querySelector('#sync .full')?.textContent ?? ''));

  // Another machine pushes a node; when this server's sync brings it in, the live
  // message makes the page read the sync state again.
  const theirs = await post(other.base, '/api/nodes', { level: 'user', id: 'from-elsewhere', gist: 'Written on the other machine.' });
  assert.equal(theirs.status, 200, JSON.stringify(theirs.body));
  assert.equal((await post(other.base, '/api/sync/now', {})).status, 200);
  const reread = page.waitForRequest((req) => req.url().endsWith('/api/sync') && req.method() === 'GET', { timeout: 10000 });
  const pulled = await post(server.base, '/api/sync/now', {});
  assert.equal(pulled.status, 200, JSON.stringify(pulled.body));
  assert.ok(pulled.body.received >= 1, JSON.stringify(pulled.body));
  await reread;

  // The remote disappears: "Sync now" says why, and the status says offline.
  fs.renameSync(remote, `${remote}-gone`);
  const failed = await syncNowFromTheView(page, /^Cannot reach|^cannot reach/);
  assert.match(await failed.innerText(), /^Cannot reach the remote origin .*Nothing was lost: .* next sync\.$/);
  assert.match(await failed.getAttribute('class'), /\berror\b/);
  await page.waitForFunction(() => /^Sync offline since \d\d:\d\d/.test(document.querySelector('#sync .full')?.textContent ?? ''));
  assert.equal(await status.getAttribute('data-state'), 'warn');
  assert.equal(await status.innerText(), 'Sync offline');
  assert.match(await status.getAttribute('title'), /Remote unreachable since/);
  await shot(page, 'ui-sync-offline-dark.png', page.locator('header.top'));
  await page.locator('#theme').click();
  await shot(page, 'ui-sync-offline-light.png', page.locator('header.top'));
  // Wider, the full words show, still on the bar's one row.
  await page.setViewportSize({ width: 1440, height: 900 });
  assert.match(await status.innerText(), /^Sync offline since \d\d:\d\d$/);
  assert.equal((await page.locator('header.top').boundingBox()).height, bar.height);
  await shot(page, 'ui-sync-offline-wide.png', page.locator('header.top'));

  // Back again: the next sync clears it.
  fs.renameSync(`${remote}-gone`, remote);
  const back = await syncNowFromTheView(page, /^Synced:/);
  assert.match(await back.innerText(), /^Synced: received/);
  await page.waitForFunction(() => /^Synced just now$/.test(document.querySelector('#sync .full')?.textContent ?? ''));

  // Someone pushes a graph file that does not parse: refused, and the status turns red.
  const clone = path.join(root, 'clone');
  git('clone', '--quiet', remote, clone);
  fs.writeFileSync(path.join(clone, 'user.json'), '{"nodes": {');
  git('-C', clone, '-c', 'user.name=Test', '-c', 'user.email=test@example.com', 'commit', '--quiet', '-am', 'A broken graph');
  git('-C', clone, 'push', '--quiet', 'origin', 'HEAD:main');
  const refused = await syncNowFromTheView(page, /not a readable memory graph/);
  assert.match(await refused.innerText(), /^The remote's user\.json is not a readable memory graph .*the local memory is untouched/);
  await page.waitForFunction(() => document.getElementById('sync')?.dataset.state === 'error');
  assert.equal(
    await status.locator('.full').innerText(),
    "Sync failed: the remote's user.json is not a readable memory graph",
  );
  // A long reason is cut with an ellipsis (the tooltip has it all); the bar keeps one row.
  assert.equal((await page.locator('header.top').boundingBox()).height, bar.height);
  await shot(page, 'ui-sync-failed-wide.png', page.locator('header.top'));
  await page.setViewportSize({ width: 1024, height: 700 });
  assert.equal(await status.innerText(), 'Sync failed');
  await shot(page, 'ui-sync-failed.png', page.locator('header.top'));
  // The browser logs the refused sync (502) itself; nothing else may go wrong.
  assert.deepEqual(
    page.errors.filter((e) => !/status of 502 \(Bad Gateway\)/.test(e)),
    [],
  );
});

test('with the sync status shown, the top bar keeps to one row at every window width', async () => {
  const page = await openView(browser, server.base, '', { width: 1600, height: 700 });
  await page.locator('#sync').waitFor({ state: 'visible', timeout: 15000 });
  const wrapped = [];
  // Every width from a small laptop's to a wide monitor's, where the items' natural
  // sizes once summed past the row (1201–1226 px wrapped the bar onto two rows).
  for (let width = 1000; width <= 1600; width += 10) {
    await page.setViewportSize({ width, height: 700 });
    const height = await page.evaluate(() => document.querySelector('header.top').getBoundingClientRect().height);
    if (height > 52) wrapped.push(`${width} px: ${height} px high (${await page.locator('#sync').innerText()})`);
  }
  assert.deepEqual(wrapped, []);
  // With a project on screen, the button to the user graph joins the bar too.
  const shop = path.join(root, 'home', 'src', 'shop');
  fs.mkdirSync(shop, { recursive: true });
  const client = mcp(server.base);
  await client.initialize();
  const sid = (await client.call('kg_read', { cwd: shop })).match(/Session: ([0-9a-f]{8})/)[1];
  await client.call('kg_put_node', { session_id: sid, level: 'project', id: 'cart-totals', gist: 'Cart totals round per line, then sum' });
  await page.setViewportSize({ width: 1600, height: 700 });
  await page.goto(`${server.base}/ui#project=${encodeURIComponent(shop)}`);
  await page.waitForFunction(() => window.kgView?.ready && window.kgView.has('p:cart-totals'), null, { timeout: 30000 });
  await page.locator('#switch-graph').waitFor({ state: 'visible' });
  await page.locator('#sync').waitFor({ state: 'visible', timeout: 15000 });
  for (let width = 1000; width <= 1600; width += 10) {
    await page.setViewportSize({ width, height: 700 });
    const height = await page.evaluate(() => document.querySelector('header.top').getBoundingClientRect().height);
    if (height > 52) wrapped.push(`${width} px with a project: ${height} px high (${await page.locator('#sync').innerText()})`);
  }
  assert.deepEqual(wrapped, []);
  await page.close();
});

test('the status stays hidden while the storage root does not sync', async () => {
  const plain = tempRoot('kg-ui-nosync-');
  const s = await startServer({ root: plain, port: await freePort() });
  try {
    const page = await browser.newPage({ viewport: { width: 1024, height: 700 } });
    const answered = page.waitForResponse((r) => r.url().endsWith('/api/sync'), { timeout: 15000 });
    await page.goto(`${s.base}/ui`);
    const state = await (await answered).json();
    assert.equal(state.on, false);
    await page.waitForFunction(() => window.kgView && window.kgView.ready, null, { timeout: 30000 });
    assert.equal(await page.locator('#sync').isHidden(), true);
    await page.close();
  } finally {
    assert.equal(await s.stop(), 0);
    if (!process.env.KG_UI_KEEP) fs.rmSync(plain, { recursive: true, force: true });
  }
});
