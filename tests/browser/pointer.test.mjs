// The graph stays under the pointer. Opening the node panel narrows the canvas, and
// with many topics the topic bar above it wraps onto another row; the nodes must stay
// where they were on the page, or a person's double-click (two clicks a moment apart)
// gives its second click to the node that moved under the pointer. Activity opens in
// the panel's column, so the graph keeps its width with both. And the many topics each
// get a colour of their own.
//
// Run: KG_MEMORY_BIN=$PWD/target/debug/kg-memory node --test tests/browser/pointer.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { freePort, launchBrowser, openView, shot, startServer, tempRoot } from './harness.mjs';
import { writeStorage } from './seed.mjs';

const now = Date.now() / 1000;
const TOPICS = ['auth', 'billing', 'build', 'cache', 'deploy', 'docs', 'email', 'frontend', 'infra', 'logging', 'search', 'testing', 'worker', 'queue'];

/** Three nodes in each of many topics, linked within their topic. */
function manyTopics() {
  const nodes = {};
  const edges = {};
  for (const topic of TOPICS) {
    for (let i = 0; i < 3; i++) {
      const id = `${topic}-note-${i}`;
      nodes[id] = { id, gist: `What the team learned about ${topic}, part ${i}`, _created_ts: now - 30 * 86400, _last_read_ts: now - i * 3600 };
      if (i > 0) edges[`${topic}-note-0->${id}:relates-to`] = { from: `${topic}-note-0`, to: id, rel: "relates-to" };
    }
  }
  return { nodes, edges, _meta: { versions: {}, namespace: { kind: 'user', owner: null } } };
}

/** A browser and a server on a storage root holding `manyTopics()`. */
async function withManyTopics(body) {
  const root = tempRoot('kg-ui-pointer-');
  const storage = path.join(root, 'storage');
  fs.mkdirSync(storage, { recursive: true });
  writeStorage(storage, manyTopics());
  const server = await startServer({ root, port: await freePort() });
  const browser = await launchBrowser();
  try {
    await body({ server, browser });
  } finally {
    await browser.close();
    await server.stop();
    if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
  }
}

test("opening the panel leaves every node where it was, and a person's double-click shows that node's neighbourhood", async () => {
  await withManyTopics(async ({ server, browser }) => {
    const page = await openView(browser, server.base, '', { width: 1440, height: 900 });
    const rows = () => page.evaluate(() => new Set([...document.querySelectorAll('#topics .topic')].map((b) => Math.round(b.getBoundingClientRect().top))).size);
    const positions = () => page.evaluate((ids) => Object.fromEntries(ids.map((id) => [id, window.kgView.point({ key: `u:${id}` })])), Object.keys(manyTopics().nodes));
    const barRows = await rows();
    const before = await positions();
    const id = 'infra-note-1';
    const p = before[id];
    await page.mouse.click(p.x, p.y);
    await page.locator('#panel h2', { hasText: id }).waitFor();
    await page.waitForTimeout(150);
    assert.ok((await rows()) > barRows, 'this test needs the topic bar to wrap when the panel opens');
    const after = await positions();
    const moved = Object.keys(before).filter((k) => Math.hypot(after[k].x - before[k].x, after[k].y - before[k].y) > 1);
    assert.deepEqual(moved, [], 'nodes moved on the page when the panel opened');
    // Activity opens in the panel's column: the graph keeps its width and its place.
    const width = () => page.evaluate(() => document.getElementById('cy').getBoundingClientRect().width);
    const withPanel = await width();
    await page.click('#activity-toggle');
    await page.locator('#activity .head').waitFor();
    assert.equal(await width(), withPanel, 'the canvas narrowed when Activity opened beside the panel');
    await shot(page, 'ui-pointer-panel-and-activity.png');
    await page.click('#activity-toggle');

    // A person's double-click on a fresh page: the second click a moment after the first.
    await page.reload();
    await page.waitForFunction(() => window.kgView && window.kgView.ready && window.kgView.live() === 'live');
    const q = await page.evaluate((k) => window.kgView.point({ key: k }), `u:${id}`);
    await page.mouse.click(q.x, q.y);
    await page.waitForTimeout(120);
    await page.mouse.click(q.x, q.y, { clickCount: 2 });
    await page.locator('#hood').getByText(`Around ${id}`).waitFor({ timeout: 5000 });
    await shot(page, 'ui-pointer-double-click.png');
    assert.deepEqual(page.errors, []);
  });
});

test('fourteen topics each get a colour of their own, in the legend and on the nodes', async () => {
  await withManyTopics(async ({ server, browser }) => {
    for (const theme of ['light', 'dark']) {
      const page = await openView(browser, server.base, '', { width: 1440, height: 900 });
      if (theme === 'dark') await page.click('#theme');
      const swatches = await page.evaluate(() =>
        Object.fromEntries([...document.querySelectorAll('#topics .topic')].map((b) => [b.dataset.topic, getComputedStyle(b.querySelector('.sw-topic')).backgroundColor])),
      );
      assert.equal(Object.keys(swatches).length, TOPICS.length);
      assert.equal(new Set(Object.values(swatches)).size, TOPICS.length, `${theme}: ${JSON.stringify(swatches)}`);
      // Each node is drawn in its topic's colour.
      const drawn = await page.evaluate((ids) => ids.map((id) => [id.split('-')[0], window.kgView.nodeColour(`u:${id}`)]), Object.keys(manyTopics().nodes));
      const byTopic = new Map();
      for (const [topic, colour] of drawn) byTopic.set(topic, new Set([...(byTopic.get(topic) ?? []), colour]));
      assert.ok([...byTopic.values()].every((colours) => colours.size === 1), 'one colour per topic');
      assert.equal(new Set([...byTopic.values()].map((c) => [...c][0])).size, TOPICS.length, `${theme}: topics share a node colour`);
      await page.close();
    }
  });
});
