// The real `kg-memory serve` on a free port with a temporary HOME and storage root
// under /dev/shm, Debian's Chromium driven by playwright-core, and a raw MCP client.

import { execSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ARTIFACTS = path.join(REPO, 'artifacts');
export const BIN = process.env.KG_MEMORY_BIN || path.join(REPO, 'target', 'debug', 'kg-memory');
export const CHROMIUM = process.env.KG_CHROMIUM || '/usr/bin/chromium';

export function tempRoot(prefix = 'kg-ui-') {
  const base = fs.existsSync('/dev/shm') ? '/dev/shm' : path.join(os.homedir(), '.cache');
  const root = fs.realpathSync(fs.mkdtempSync(path.join(base, prefix)));
  if (`${root}/`.includes('/tmp/')) throw new Error(`test folders must not live under /tmp: ${root}`);
  return root;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Start `kg-memory serve`; resolves once /health answers. */
export async function startServer({ root, port, env = {} }) {
  if (!fs.existsSync(BIN)) throw new Error(`kg-memory binary not found at ${BIN}: run cargo build -p kg-cli`);
  const home = path.join(root, 'home');
  const storage = path.join(root, 'storage');
  fs.mkdirSync(home, { recursive: true });
  const log = fs.openSync(path.join(root, 'server.log'), 'a');
  const child = spawn(BIN, ['serve', '--port', String(port)], {
    env: {
      PATH: process.env.PATH,
      HOME: home,
      KG_STORAGE_ROOT: storage,
      KG_AUTOCOMMIT_INTERVAL: '0',
      KG_SAVE_INTERVAL: '3600',
      KG_LOG_LEVEL: 'INFO',
      ...env,
    },
    stdio: ['ignore', log, log],
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`kg-memory exited with ${child.exitCode}; see ${root}/server.log`);
    try {
      const res = await fetch(`${base}/health`);
      if (res.ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error('kg-memory did not answer /health within 15 s');
    await sleep(50);
  }
  return {
    child,
    base,
    home,
    storage,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const done = new Promise((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      let timer;
      const timeout = new Promise((r) => {
        timer = setTimeout(() => r('timeout'), 20000);
      });
      const code = await Promise.race([done, timeout]);
      clearTimeout(timer);
      if (code === 'timeout') {
        // Say what the server was still holding, then stop it hard.
        let sockets = '';
        try {
          sockets = execSync(`ss -tanp | grep ':${port}' || true`).toString();
        } catch {
          /* ss may be missing */
        }
        const log = fs.readFileSync(path.join(root, 'server.log'), 'utf8').split('\n').slice(-15).join('\n');
        // Where every thread is stuck, when gdb is at hand (that is how a lock-order
        // deadlock in project loading was found).
        let stacks = '';
        try {
          fs.mkdirSync(ARTIFACTS, { recursive: true });
          stacks = path.join(ARTIFACTS, `kg-memory-hang-${child.pid}.txt`);
          fs.writeFileSync(stacks, execSync(`gdb -p ${child.pid} -batch -ex 'thread apply all bt' 2>&1`, { timeout: 60000 }));
        } catch {
          stacks = '';
        }
        child.kill('SIGKILL');
        throw new Error(`kg-memory did not stop within 20 s of SIGTERM.\nSockets:\n${sockets}\nLog tail:\n${log}${stacks ? `\nThread stacks: ${stacks}` : ''}`);
      }
      return code;
    },
  };
}

/** A raw MCP client: JSON-RPC over POST with both Accept types, as Claude Code sends. */
export function mcp(base) {
  let id = 0;
  const post = async (body) => {
    const res = await fetch(`${base}/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (!text) return { status: res.status };
    const json = text.startsWith('{') ? JSON.parse(text) : JSON.parse(text.split('\n').find((l) => l.startsWith('data:')).slice(5));
    return { status: res.status, json };
  };
  return {
    async initialize() {
      const r = await post({
        jsonrpc: '2.0',
        id: ++id,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'browser-test', version: '0' } },
      });
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return r.json.result;
    },
    async call(name, args) {
      const r = await post({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } });
      if (r.json.error) throw new Error(`${name}: ${JSON.stringify(r.json.error)}`);
      return r.json.result.content.map((c) => c.text).join('\n');
    },
  };
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/** Open the view and wait until its first full draw. */
export async function openView(browser, base, hash = '', viewport = { width: 1600, height: 1000 }) {
  return openPage(await browser.newPage({ viewport }), base, hash);
}

/**
 * Open the view in a browser context the caller keeps (its storage, so the saved
 * picture and the last graph looked at, lasts across pages), as openView does. The
 * page's errors and console warnings go to `page.errors` and `page.warnings`, or to the
 * caller's lists (`into`), shared by its pages.
 */
export async function openInContext(context, base, hash = '', into = {}) {
  return openPage(await context.newPage(), base, hash, into);
}

async function openPage(page, base, hash, { errors = [], warnings = [] } = {}) {
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
    if (m.type() === 'warning') warnings.push(m.text());
  });
  await page.goto(`${base}/ui${hash}`);
  await page.waitForFunction(() => window.kgView && window.kgView.ready && window.kgView.live() === 'live', null, { timeout: 30000 });
  page.errors = errors;
  page.warnings = warnings;
  return page;
}

/** Drag with real mouse events from one page point to another. */
export async function drag(page, from, to) {
  // A node drawn under an overlay (legend, drawer toggle) could not be grabbed by a user either.
  const under = await page.evaluate(({ x, y }) => {
    const e = document.elementFromPoint(x, y);
    return e && e.closest('#cy') ? null : e ? e.outerHTML.slice(0, 80) : 'nothing (off screen)';
  }, from);
  if (under) throw new Error(`the node at (${from.x}, ${from.y}) is covered by ${under}`);
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  const steps = 12;
  for (let i = 1; i <= steps; i++) {
    await page.mouse.move(from.x + ((to.x - from.x) * i) / steps, from.y + ((to.y - from.y) * i) / steps);
  }
  await page.mouse.up();
}

export function readGraph(storage, slug = null) {
  const file = slug ? path.join(storage, 'projects', slug, 'graph.json') : path.join(storage, 'user.json');
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

export const tierOnDisk = (node) => (node._orphaned_ts !== undefined ? 'orphaned' : node._archived ? 'archived' : 'active');

/** Where the browser tests leave their screenshots (not committed): look at them. */
export const SCREENSHOTS = path.join(REPO, 'target', 'screenshots');

export async function shot(page, name, locator = null) {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, name);
  if (locator) await locator.screenshot({ path: file });
  else await page.screenshot({ path: file });
  return file;
}
