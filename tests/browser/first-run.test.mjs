// The graph view on an empty memory: it says how to connect Claude Code, not "DEBT LOW"
// for a graph with nothing in it; and once a node arrives, the ordinary view replaces it.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, openView, shot, startServer, tempRoot } from './harness.mjs';

let root;
let server;
let browser;

before(async () => {
  root = tempRoot('kg-ui-first-run-');
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

test('an empty memory shows how to connect the agents, then gives way to the graph', async () => {
  const page = await openView(browser, server.base);
  const empty = page.locator('#empty.first-run');
  await empty.waitFor();
  const text = await empty.innerText();
  assert.match(text, /No memories yet/);
  assert.match(text, /kg-memory setup/);
  assert.match(text, /Codex CLI, Gemini CLI/);
  const card = page.locator('.card[data-level="user"]');
  assert.doesNotMatch(await card.innerText(), /DEBT|HEALTH/, 'an empty level shows no debt or health badges');
  await shot(page, 'ui-first-run.png');

  // The first capture (here through REST, as a hook or script would) replaces the page
  // with the graph, live.
  const res = await fetch(`${server.base}/api/nodes`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ level: 'user', id: 'first-insight', gist: 'The first thing an agent learned' }),
  });
  assert.equal(res.status, 200, await res.text());
  await page.waitForFunction(() => window.kgView.tierOf('u:first-insight') === 'active', null, { timeout: 10000 });
  assert.equal(await page.locator('#empty').isHidden(), true);
  await page.waitForFunction(() => /DEBT/.test(document.querySelector('.card[data-level="user"]')?.innerText ?? ''));
  assert.deepEqual(page.errors, []);
});
