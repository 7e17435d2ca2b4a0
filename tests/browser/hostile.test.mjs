// Pages of other sites against the real `kg-memory serve`, in Debian's Chromium
// (issue 17, items 2 and 9). The hostile pages come from a second origin: a tiny HTTP
// server on another port. Chromium treats a page at http://localhost:OTHER as
// cross-site to the server at http://127.0.0.1:PORT (sites differ by host), and one at
// http://127.0.0.1:OTHER as same-site (ports do not count). Each hostile page also
// sends the same kinds of request to a witness on a third port of 127.0.0.1 (the same
// site as the server), so each test checks that the browser really sent the
// `Sec-Fetch-Site` the server judges.
//
// Every test here fails on the code before the fix (checked against a build of the
// commit before it): the `<img>` and no-cors GETs were answered 200, promoted the
// archived node and evicted the agent's session; the framed view drew itself; the
// injected inline script ran.
//
// Run: node --test tests/browser/hostile.test.mjs   (after `cargo build -p kg-cli`)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, mcp, readGraph, startServer, tempRoot } from './harness.mjs';

let root;
let server;
let browser;
let other; // the second origin's port
let otherServer;
let witness; // the witness's base URL
let witnessServer;
const witnessed = [];
let client;
let flood = 0;

/** The hostile pages, keyed by path; each gets the server's base URL. */
const PAGES = {
  // Reading a node through the REST API stamps and promotes it, and saves.
  '/promote': (base) => `<!doctype html><title>promote</title>
    <img src="${base}/api/nodes/user/archived-fact">
    <img src="${witness}/img">
    <script>
      Promise.allSettled([
        fetch('${witness}/fetch', { mode: 'no-cors' }),
        fetch('${base}/api/nodes/user/archived-fact', { mode: 'no-cors' }),
        fetch('${base}/api/view/step', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' },
          body: JSON.stringify({ level: 'user', actions: [{ kind: 'promote', id: 'archived-fact' }] }) }),
      ]).then(() => { window.done = true; });
    </script>`,
  // 1,100 new session ids: the registry keeps at most 1,000, so the agent's goes.
  '/evict': (base) => `<!doctype html><title>evict</title>
    <script>
      (async () => {
        await fetch('${witness}/fetch', { mode: 'no-cors' }).catch(() => {});
        const ids = Array.from({ length: 1100 }, (_, i) => (0x10000000 + i * 7919).toString(16).slice(-8));
        for (let i = 0; i < ids.length; i += 50) {
          await Promise.allSettled(ids.slice(i, i + 50).map((id) => fetch('${base}/api/sessions/' + id + '/stats', { mode: 'no-cors' })));
        }
        window.done = true;
      })();
    </script>`,
  // Subscribing to the live change feed: Chromium sends no Sec-Fetch-Site on a
  // WebSocket handshake, so the Origin guard must tell this page from the view.
  '/subscribe': (base) => `<!doctype html><title>subscribe</title>
    <script>
      window.outcome = new Promise((resolve) => {
        const ws = new WebSocket('${base.replace(/^http/, 'ws')}/ws?scope=all');
        ws.onmessage = (m) => resolve('message: ' + m.data);
        ws.onerror = () => resolve('refused');
        ws.onclose = () => resolve('refused');
      });
    </script>`,
  // Framing the view, so this page can overlay it and steer clicks.
  '/frame': (base) => `<!doctype html><title>frame</title>
    <iframe id="view" src="${base}/ui" width="1200" height="800"></iframe>
    <iframe src="${witness}/frame" width="10" height="10"></iframe>`,
};

const SITES = [
  ['cross-site', 'localhost'],
  ['same-site', '127.0.0.1'],
];

before(async () => {
  root = tempRoot('kg-hostile-');
  server = await startServer({ root, port: await freePort() });
  client = mcp(server.base);
  await client.initialize();
  const project = path.join(server.home, 'proj');
  fs.mkdirSync(project, { recursive: true });
  const sid = (await client.call('kg_read', { cwd: project })).split('Session: ').pop().slice(0, 8);
  await client.call('kg_put_node', { session_id: sid, level: 'user', id: 'archived-fact', gist: 'kept in the archive' });
  await archive('archived-fact');
  other = await freePort();
  otherServer = http.createServer((req, res) => {
    const page = PAGES[req.url];
    res.writeHead(page ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(page ? page(server.base) : 'no such page');
  });
  await new Promise((resolve) => otherServer.listen(other, '127.0.0.1', resolve));
  const witnessPort = await freePort();
  witness = `http://127.0.0.1:${witnessPort}`;
  witnessServer = http.createServer((req, res) => {
    witnessed.push(req.headers['sec-fetch-site'] ?? null);
    res.writeHead(204);
    res.end();
  });
  await new Promise((resolve) => witnessServer.listen(witnessPort, '127.0.0.1', resolve));
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => (otherServer ? otherServer.close(resolve) : resolve()));
  await new Promise((resolve) => (witnessServer ? witnessServer.close(resolve) : resolve()));
  const code = await server?.stop();
  assert.equal(code, 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

/**
 * Open a hostile page from `host`; resolves with the number of requests it made to
 * the server, the statuses it got back, and the `Sec-Fetch-Site` values the witness
 * saw.
 */
async function visit(host, name, ready) {
  const page = await browser.newPage();
  let requests = 0;
  const statuses = [];
  page.on('request', (r) => {
    if (r.url().startsWith(server.base)) requests++;
  });
  page.on('response', (r) => {
    if (r.url().startsWith(server.base)) statuses.push(r.status());
  });
  witnessed.length = 0;
  await page.goto(`http://${host}:${other}${name}`);
  await ready(page);
  // Let the last answers arrive before counting them.
  await page.waitForLoadState('networkidle');
  return { page, sites: [...new Set(witnessed)], statuses: [...new Set(statuses)], requests };
}

/** Archive a node by hand, as the view's drag does. */
async function archive(id) {
  const res = await fetch(`${server.base}/api/view/step`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ level: 'user', actions: [{ kind: 'archive', id }] }),
  });
  assert.equal(res.status, 200, await res.text());
}

const tierOf = async (id) => {
  const level = await (await fetch(`${server.base}/api/view/level?level=user`)).json();
  return level.nodes.find((n) => n.node.id === id)?.tier;
};

for (const [kind, host] of SITES) {
  test(`a ${kind} page cannot promote an archived node with <img> and no-cors requests`, async () => {
    await archive('archived-fact');
    assert.equal(await tierOf('archived-fact'), 'archived');
    const { page, sites, statuses, requests } = await visit(host, '/promote', (p) => p.waitForFunction(() => window.done, null, { timeout: 15000 }));
    await page.close();
    assert.equal(await tierOf('archived-fact'), 'archived', 'the node stays archived');
    assert.equal(readGraph(server.storage).nodes['archived-fact']._archived, true);
    assert.ok(requests >= 3, `the page made its requests (${requests})`);
    assert.deepEqual(statuses, [403], 'every request is refused');
    assert.deepEqual(sites, [kind], 'the browser marks the requests');
  });

  test(`a ${kind} page cannot evict an agent's session by flooding session ids`, async () => {
    // A fresh agent session, in a project of its own, for each flood.
    const project = path.join(server.home, `agent-${++flood}`);
    fs.mkdirSync(project, { recursive: true });
    const text = await client.call('kg_read', { cwd: project });
    const sid = text.split('Session: ').pop().slice(0, 8);
    const state = async () => (await fetch(`${server.base}/api/session_state?project_path=${encodeURIComponent(project)}`)).json();
    assert.equal((await state()).session_id, sid);
    const { page, sites, statuses, requests } = await visit(host, '/evict', (p) => p.waitForFunction(() => window.done, null, { timeout: 120000 }));
    await page.close();
    const after = await state();
    assert.equal(after.found, true, 'the agent keeps its session');
    assert.equal(after.session_id, sid);
    assert.equal(requests, 1100);
    assert.deepEqual(statuses, [403]);
    assert.deepEqual(sites, [kind]);
  });

  test(`a ${kind} page cannot subscribe to the live changes`, async () => {
    // Before the Origin had to match the server's own, a page on another port of
    // 127.0.0.1 was let in as "local" and read every change.
    const { page } = await visit(host, '/subscribe', (p) => p.waitForFunction(() => window.outcome, null, { timeout: 15000 }));
    const outcome = await page.evaluate(() => window.outcome);
    await page.close();
    assert.equal(outcome, 'refused');
  });

  test(`a ${kind} page cannot frame the graph view`, async () => {
    const { page, sites } = await visit(host, '/frame', (p) => p.waitForFunction(() => document.readyState === 'complete', null, { timeout: 15000 }));
    const frame = page.frames().find((f) => f.url().startsWith(server.base));
    const drawn = frame ? await frame.evaluate(() => !!document.querySelector('#cy')).catch(() => false) : false;
    await page.close();
    assert.equal(drawn, false, 'the view must not render inside another site\'s page');
    assert.deepEqual(sites, [kind], 'the browser marks the frame\'s navigation');
  });
}

/** The graph view itself, opened the way a user does (typed address). */
async function openOwnPage() {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  await page.addInitScript(() => {
    window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  const res = await page.goto(`${server.base}/ui`);
  await page.waitForFunction(() => window.kgView && window.kgView.ready && window.kgView.live() === 'live', null, { timeout: 30000 });
  return { page, res, problems };
}

test('the view runs whole under its own strict CSP', async () => {
  const { page, res, problems } = await openOwnPage();
  const csp = res.headers()['content-security-policy'] ?? '';
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  // Drawn, live over the WebSocket, and nothing was blocked on the way.
  await page.waitForTimeout(500);
  assert.deepEqual(await page.evaluate(() => window.cspViolations), []);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a script injected into the view cannot run inline code or frame the view', async () => {
  const { page, problems } = await openOwnPage();
  const ran = await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.injected = true';
    document.head.append(s);
    return window.injected === true;
  });
  assert.equal(ran, false, 'an inline script must not run');
  // Even a frame of the page's own origin is refused (frame-ancestors 'none').
  const framed = await page.evaluate(
    () =>
      new Promise((resolve) => {
        const f = document.createElement('iframe');
        f.src = '/ui';
        f.onload = () => {
          try {
            resolve(!!f.contentDocument?.querySelector('#cy'));
          } catch {
            resolve(false);
          }
        };
        document.body.append(f);
      }),
  );
  assert.equal(framed, false, 'the view must not render inside a frame');
  assert.ok(
    problems.some((p) => /Content Security Policy/.test(p)),
    `the browser reports what it blocked: ${problems.join('\n')}`,
  );
  await page.close();
});
