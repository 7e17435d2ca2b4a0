// "Why memory spoke" (issue 37, item 7): the activity panel's second tab lists the recall
// decisions the server made for the project on screen — a file read that brought a node
// back, a second read that stayed silent because the node was already in context, a
// prompt that matched nothing — each with its reason in a sentence and the nodes it
// weighed, a click away on the graph.
//
// Run: KG_MEMORY_BIN=$PWD/target/debug/kg-memory node --test tests/browser/recall-decisions.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, openView, shot, startServer, tempRoot } from './harness.mjs';

let root;
let server;
let browser;
let shop;

const post = async (route, body) => {
  const r = await fetch(`${server.base}${route}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  assert.equal(r.status, 200, `${route}: ${text}`);
  return JSON.parse(text);
};

before(async () => {
  root = tempRoot('kg-ui-recall-');
  server = await startServer({ root, port: await freePort() });
  shop = path.join(server.home, 'shop');
  fs.mkdirSync(path.join(shop, 'src'), { recursive: true });
  fs.writeFileSync(path.join(shop, 'src', 'webhook.rs'), 'fn verify() {}\n');
  // A session whose preload was before the node existed: the node is news to it.
  const boot = await fetch(`${server.base}/api/session_bootstrap?project_path=${encodeURIComponent(shop)}&claude_session_id=cc-ui-recall&source=startup`);
  assert.equal(boot.status, 200);
  await post('/api/nodes', {
    level: 'project',
    project_path: shop,
    id: 'billing-webhook-raw-body',
    gist: 'Verify Stripe signatures on the raw body: parsing JSON first breaks them',
    touches: ['src/webhook.rs:1-20'],
  });
  const read = { session_id: 'cc-ui-recall', cwd: shop, hook_event_name: 'PostToolUse', tool_name: 'Read', tool_input: { file_path: path.join(shop, 'src', 'webhook.rs') } };
  const first = await post('/api/tool_event', read);
  assert.match(first.hookSpecificOutput.additionalContext, /billing-webhook-raw-body/);
  await post('/api/tool_event', read);
  await post('/api/prompt_context', { session_id: 'cc-ui-recall', cwd: shop, hook_event_name: 'UserPromptSubmit', prompt: 'write a haiku about autumn leaves' });
  // A person adds a node linked to the one the session used: news for its next prompt.
  await post('/api/nodes', {
    level: 'project',
    project_path: shop,
    id: 'billing-webhook-secret-rotation',
    gist: 'Webhook signing secrets rotate yearly; keep both for a day',
  });
  await post('/api/edges', { level: 'project', project_path: shop, from: 'billing-webhook-secret-rotation', to: 'billing-webhook-raw-body', rel: 'relates_to' });
  const next = await post('/api/prompt_context', { session_id: 'cc-ui-recall', cwd: shop, hook_event_name: 'UserPromptSubmit', prompt: 'and one about the sea' });
  assert.match(next.hookSpecificOutput.additionalContext, /- billing-webhook-secret-rotation \(new\): Webhook signing secrets rotate yearly/);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  const code = await server?.stop();
  assert.equal(code, 0, 'the server stops cleanly');
  if (root && !process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

for (const [width, height] of [
  [1440, 900],
  [1024, 700],
]) {
  test(`the activity panel says why the memory spoke or stayed silent (${width}×${height})`, async () => {
    const page = await openView(browser, server.base, `#project=${encodeURIComponent(shop)}`, { width, height });
    await page.locator('#activity-toggle').click();
    await page.getByRole('tab', { name: 'Why memory spoke' }).click();
    const items = page.locator('#activity .recall-list li.entry');
    await items.nth(4).waitFor();
    const texts = (await items.allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    // Newest first: the news of the person's node, the sea, the haiku, the second read,
    // the first read.
    assert.match(texts[0], /written by others .*Told the session of 1 node\(s\) others wrote on its work\. .*billing-webhook-secret-rotation/);
    for (const prompt of [texts[1], texts[2]]) {
      assert.match(prompt, /a prompt .*Nothing in memory held enough of the prompt's words|a prompt .*Too little typed text/);
    }
    assert.match(texts[3], /a file used .*Everything that matched the file was already in the session's context\. .*Read on src\/webhook\.rs/);
    assert.match(texts[4], /Showed 1 node\(s\) whose touches name the file\./);
    // The node it showed is a click away on the graph.
    await items.nth(4).getByRole('button', { name: 'billing-webhook-raw-body' }).click();
    await page.locator('#panel h2', { hasText: 'billing-webhook-raw-body' }).waitFor();
    await shot(page, `ui-recall-decisions-${width}x${height}.png`);
    assert.deepEqual(page.errors, []);
  });
}
