// The Undo button survives live traffic: while a person has a step to take back, agents
// keep writing (through REST, as hooks and scripts do, and through MCP, as Claude Code
// does), and every one of those writes reaches the page as a live message, a toast and a
// refresh. None of them may hide or replace the Undo button, and it must still take the
// person's step back afterwards without touching what the agents wrote.
//
// Run: node --test tests/browser/undo-live.test.mjs   (after building ui/dist and the server)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { drag, freePort, launchBrowser, mcp, openView, readGraph, shot, startServer, tempRoot, tierOnDisk } from './harness.mjs';
import { makeGraph, writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
let root;
let server;
let browser;
let user;
let projectDir;

before(async () => {
  root = tempRoot('kg-ui-undo-');
  projectDir = path.join(root, 'home', 'src', 'alpha');
  fs.mkdirSync(projectDir, { recursive: true });
  // Between its fill line and its budget (the graph view.test.mjs uses): the agents'
  // few short writes re-balance nothing, so the step stays undoable.
  user = makeGraph({ prefix: 'u', active: 78, archived: 22, orphaned: 9, now, seed: 7 });
  writeStorage(path.join(root, 'storage'), user.file);
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

/** A write through REST, as a hook or a script sends it. */
async function rest(route, body) {
  const res = await fetch(`${server.base}${route}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(res.status, 200, `${route}: ${await res.text()}`);
}

test('the Undo button stays visible and usable while agents write over REST and MCP', async () => {
  const page = await openView(browser, server.base);
  const id = user.ids.archived[2];
  const key = `u:${id}`;
  const from = await page.evaluate((k) => window.kgView.point({ key: k }), key);
  const to = await page.evaluate(() => window.kgView.point({ zone: 'active' }));
  await drag(page, from, to);
  await page.waitForFunction((k) => window.kgView.tierOf(k) === 'active', key, { timeout: 10000 });
  const undo = page.locator('#moves #undo');
  await undo.waitFor();

  const client = mcp(server.base);
  await client.initialize();
  const sid = (await client.call('kg_read', { cwd: projectDir })).match(/Session: ([0-9a-f]{8})/)[1];
  const writes = [
    { what: 'a node over REST', says: 'New node agent-rest-note', key: 'u:agent-rest-note', write: () => rest('/api/nodes', { level: 'user', id: 'agent-rest-note', gist: 'Written by a hook while the person had a step to undo' }) },
    { what: 'an edge over REST', says: 'Edge agent-rest-note → relates-to', write: () => rest('/api/edges', { level: 'user', from: 'agent-rest-note', to: user.ids.active[0], rel: 'relates-to' }) },
    { what: 'a node over MCP', says: 'New node agent-mcp-note', key: 'u:agent-mcp-note', write: () => client.call('kg_put_node', { session_id: sid, level: 'user', id: 'agent-mcp-note', gist: 'Written by an agent over MCP meanwhile' }) },
    { what: 'an edge over MCP', says: 'Edge agent-mcp-note → refines', write: () => client.call('kg_put_edge', { session_id: sid, level: 'user', from: 'agent-mcp-note', to: 'agent-rest-note', rel: 'refines' }) },
  ];
  for (const { what, says, key: written, write } of writes) {
    await write();
    // The live message has arrived and been shown: its toast is up, its node is on the canvas.
    await page.locator('.toast', { hasText: says }).first().waitFor({ timeout: 10000 });
    if (written) await page.waitForFunction((k) => window.kgView.has(k), written, { timeout: 10000 });
    // The coalesced refresh (150 ms after the message) has run too.
    await page.waitForTimeout(400);
    assert.ok(await undo.isVisible(), `Undo is still visible after ${what}`);
    assert.ok(await undo.isEnabled(), `Undo is still usable after ${what}`);
    assert.match(await page.locator('#moves').innerText(), new RegExp(`Promoted ${id}`), `the box still says what the step did after ${what}`);
  }
  await shot(page, 'ui-undo-during-live-writes.png');

  await undo.click();
  await page.waitForFunction((k) => window.kgView.tierOf(k) === 'archived', key, { timeout: 10000 });
  const nodes = readGraph(server.storage).nodes;
  assert.equal(tierOnDisk(nodes[id]), 'archived', 'the undo took the promotion back on disk');
  assert.ok(nodes['agent-rest-note'] && nodes['agent-mcp-note'], "the agents' nodes are still there");
  await page.locator('#moves', { hasText: 'Undone' }).waitFor();
  assert.deepEqual(page.errors, []);
});
