// Benchmark (not a test): the graph view on a 2,000-node graph, with the real server
// and Debian's headless Chromium (software rendering). Writes nothing; prints JSON.
//
//   node tests/browser/bench.mjs                       the page the server embeds
//   UI_BUILDS=before=/tmp/old/dist,after=ui/dist node tests/browser/bench.mjs
//                                                       builds side by side (see below)
//
// Two graphs of 2,000 nodes each:
//   stress    — 1,200 active (all inside their grace period, so nothing archives
//               them), 500 archived, 300 orphaned: 1,200 nodes in the active area;
//   realistic — what the 17,500-character budget leaves: 110 active, 190 archived,
//               1,700 orphaned.
//
// Each run opens a fresh page and measures:
//   first draw — in the page, from navigation start to two animation frames after the
//                layout and the bands are in place, including the REST fetch;
//   whole graph on the canvas — the first picture holds what is on screen; the rest
//                (off screen) is added right after it is painted;
//   drawer     — opening the orphan drawer, to two animation frames after (then every
//                node is drawn, and the rest is measured with the drawer open);
//   pan        — frame intervals while the mouse drags the background for one second;
//   zoom       — frame intervals while wheel events zoom in and out for one second.
// Frames per second are frames over the second's length (so one slow frame, say the
// first of a gesture, counts against it); the JSON gives the median over the runs, and
// the medians of each run's median, 95th-centile and longest frame interval.
// BENCH_FRAMES=1 prints every run's frame intervals on stderr.
//
// CPU=1 also traces each load and reports the CPU time of the page's main thread up to
// the first draw: unlike the times above, it hardly moves with the machine's load
// (a shared machine doubles wall times at a load average of 4).
//
// UI_BUILDS compares built pages (`ui/dist` folders) on the same server, graph and
// browser: each is served in place of the embedded page (the server's own headers
// kept), and the builds take turns run after run, so a machine's changing load falls
// on all of them alike. Build an older page with, say:
//   mkdir -p /tmp/old && git archive HEAD ui | tar -x -C /tmp/old &&
//   ln -s "$PWD/ui/node_modules" /tmp/old/ui/ && (cd /tmp/old/ui && npm run build)

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM, freePort, launchBrowser, startServer, tempRoot } from './harness.mjs';
import { makeGraph, writeStorage } from './seed.mjs';

const RUNS = Number(process.env.RUNS || 5);
const now = Date.now() / 1000;
const builds = (process.env.UI_BUILDS || '')
  .split(',')
  .filter(Boolean)
  .map((spec) => {
    const [name, dir] = spec.includes('=') ? spec.split('=') : [spec, spec];
    const dist = path.resolve(dir);
    if (!fs.existsSync(path.join(dist, 'index.html'))) throw new Error(`UI_BUILDS: no index.html in ${dist}`);
    return { name, dist };
  });
if (!builds.length) builds.push({ name: 'embedded', dist: null });

const CONTENT_TYPES = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' };

/** Serve `/ui` from a built folder, with the headers the server gives its own page. */
async function serveBuild(page, base, dist) {
  const index = await fetch(`${base}/ui`);
  const headers = Object.fromEntries([...index.headers.entries()].filter(([k]) => !['content-length', 'content-type', 'date'].includes(k)));
  await page.route(`${base}/ui**`, (route) => {
    const rel = new URL(route.request().url()).pathname.replace(/^\/ui\/?/, '') || 'index.html';
    const file = path.join(dist, rel);
    if (!file.startsWith(dist) || !fs.existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
    const type = CONTENT_TYPES[rel.split('.').pop()] ?? 'application/octet-stream';
    return route.fulfill({ status: 200, headers: { ...headers, 'content-type': type }, body: fs.readFileSync(file) });
  });
}

/**
 * The harness's browser. A page served by the benchmark itself (UI_BUILDS) has no
 * address Chromium's local network access checks know, so they would refuse its
 * WebSocket to the server on 127.0.0.1: turn them off for it (the embedded page, from
 * the server itself, connects either way).
 */
function browser() {
  if (!builds.some((b) => b.dist)) return launchBrowser();
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', '--disable-features=LocalNetworkAccessChecks'],
  });
}

/**
 * Frame intervals over one second while `drive` moves the viewport once per frame.
 * Runs in the page; `drive` is 'pan' (a mouse drag on the background) or 'zoom'
 * (wheel events, as a trackpad sends them).
 */
function frames(drive) {
  const el = document.querySelector('#cy');
  const box = el.getBoundingClientRect();
  // Pan: press on the background, away from every node's dot (a press on a dot would
  // drag the node): the view's own hooks give node positions and the zoom.
  let start = { x: box.left + box.width / 2, y: box.top + box.height / 2 };
  if (drive === 'pan') {
    const view = window.kgView;
    const pos = view.positions();
    const keys = Object.keys(pos);
    const zoom = view.zoom();
    const ref = keys.map((k) => [k, view.point({ key: k })]).find(([, p]) => p);
    const dots = keys.map((k) => ({ x: ref[1].x + (pos[k].x - pos[ref[0]].x) * zoom, y: ref[1].y + (pos[k].y - pos[ref[0]].y) * zoom }));
    const clear = (x, y) => dots.every((d) => Math.abs(d.x - x) > 14 || Math.abs(d.y - y) > 14) && el.contains(document.elementFromPoint(x, y));
    outer: for (let r = 0; r < Math.min(box.width, box.height) / 2; r += 5) {
      for (let a = 0; a < 16; a++) {
        const x = start.x + r * Math.cos((a * Math.PI) / 8);
        const y = start.y + r * Math.sin((a * Math.PI) / 8);
        if (clear(x, y)) {
          start = { x, y };
          break outer;
        }
      }
    }
  }
  return new Promise((resolve, reject) => {
    const times = [];
    const t0 = performance.now();
    let k = 0;
    // Cytoscape takes a press only on an element inside its container (its canvas).
    const target = document.elementFromPoint(start.x, start.y);
    const probe = () => window.kgView.point({ key: Object.keys(window.kgView.positions())[0] });
    const before = probe();
    if (drive === 'pan') target.dispatchEvent(new MouseEvent('mousedown', { clientX: start.x, clientY: start.y, button: 0, buttons: 1, bubbles: true }));
    const step = (t) => {
      times.push(t);
      if (times.length === 6) {
        const p = probe();
        if (p?.x === before?.x && p?.y === before?.y) return reject(new Error(`the ${drive} did not move the view`));
      }
      if (t - t0 >= 1000) {
        if (drive === 'pan') window.dispatchEvent(new MouseEvent('mouseup', { clientX: start.x, clientY: start.y, button: 0, bubbles: true }));
        const gaps = times.slice(1).map((x, j) => x - times[j]);
        const span = times[times.length - 1] - times[0];
        const sorted = [...gaps].sort((a, b) => a - b);
        resolve({ fps: (gaps.length * 1000) / span, median: sorted[Math.floor(gaps.length / 2)], p95: sorted[Math.floor(gaps.length * 0.95)], max: sorted[gaps.length - 1], gaps: gaps.map(Math.round) });
        return;
      }
      // Back and forth: ten frames one way, ten back.
      const phase = k++ % 20;
      if (drive === 'pan') {
        const off = (phase < 10 ? phase + 1 : 20 - phase) * 12;
        window.dispatchEvent(new MouseEvent('mousemove', { clientX: start.x + off, clientY: start.y + off / 2, button: 0, buttons: 1, bubbles: true }));
      } else {
        target.dispatchEvent(new WheelEvent('wheel', { deltaY: phase < 10 ? -40 : 40, clientX: start.x, clientY: start.y, bubbles: true, cancelable: true }));
      }
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  });
}

/** CPU time of the page's main thread from navigation start to `untilMs` after it, from a trace. */
function mainThreadCpu(trace, untilMs) {
  const events = trace.traceEvents;
  const nav = events
    .filter((e) => e.name === 'navigationStart' && String(e.args?.data?.documentLoaderURL).endsWith('/ui'))
    .reduce((a, b) => (a.ts > b.ts ? a : b));
  const main = events.find((e) => e.name === 'thread_name' && e.pid === nav.pid && e.args?.name === 'CrRendererMain');
  const end = nav.ts + untilMs * 1000;
  const tasks = events.filter((e) => e.pid === main.pid && e.tid === main.tid && e.name === 'RunTask' && e.ph === 'X' && e.ts >= nav.ts && e.ts <= end);
  return tasks.reduce((sum, e) => sum + (e.tdur ?? 0) / 1000, 0);
}

async function runOnce(chrome, server, build, drawerOpen, errors) {
  const page = await chrome.newPage({ viewport: { width: 1600, height: 1000 } });
  page.on('pageerror', (e) => errors.push(`${build.name}: ${e}`));
  if (build.dist) await serveBuild(page, server.base, build.dist);
  if (process.env.CPU) await chrome.startTracing(page, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink.user_timing'] });
  await page.goto(`${server.base}/ui`);
  await page.waitForFunction(() => window.kgView && window.kgView.ready, null, { timeout: 120000 });
  const m = await page.evaluate(() => ({ ...window.kgView.metrics }));
  if (process.env.CPU) m.cpuMs = mainThreadCpu(JSON.parse(String(await chrome.stopTracing())), m.firstDrawMs);
  // The first picture holds what is on screen; the rest of the graph joins the canvas
  // right after it, and graph.ts marks the moment (a page without the mark drew it all
  // at once).
  const mark = await page.evaluate(
    (name) =>
      new Promise((resolve) => {
        const t0 = performance.now();
        const poll = () => {
          const at = performance.getEntriesByName(name).at(-1)?.startTime;
          if (at !== undefined || performance.now() - t0 > 3000) resolve(at ?? 0);
          else setTimeout(poll, 10);
        };
        poll();
      }),
    'kg-view: graph complete',
  );
  const completeMs = Math.max(m.firstDrawMs, mark);
  let drawerMs = 0;
  if (drawerOpen) {
    drawerMs = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const t0 = performance.now();
          window.kgView.drawer(true);
          requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
        }),
    );
  }
  // Let the drawer's animation and any texture building settle first.
  await page.waitForTimeout(600);
  const pan = await page.evaluate(frames, 'pan');
  await page.waitForTimeout(400);
  const zoom = await page.evaluate(frames, 'zoom');
  await page.close();
  if (process.env.BENCH_FRAMES) console.error(build.name, 'pan', pan.gaps.join(' '), '\nzoom', zoom.gaps.join(' '));
  return { ...m, completeMs, drawerMs, pan, zoom };
}

const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;

async function measure(name, spec, drawerOpen) {
  const root = tempRoot('kg-bench-');
  const g = makeGraph({ prefix: 'b', now, seed: 3, ...spec });
  if (spec.inGrace) for (const n of Object.values(g.file.nodes)) n._created_ts = now - 3600;
  writeStorage(path.join(root, 'storage'), g.file, {});
  const server = await startServer({ root, port: await freePort() });
  const chrome = await browser();
  const results = new Map(builds.map((b) => [b.name, []]));
  const errors = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      // Take turns, starting with a different build each run.
      for (let j = 0; j < builds.length; j++) {
        const build = builds[(i + j) % builds.length];
        results.get(build.name).push(await runOnce(chrome, server, build, drawerOpen, errors));
      }
    }
  } finally {
    await chrome.close();
    await server.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
  const summary = (rs) => ({
    nodes: rs[0].nodes,
    edges: rs[0].edges,
    first_draw_ms_median: round(med(rs.map((r) => r.firstDrawMs))),
    first_draw_ms_all: rs.map((r) => round(r.firstDrawMs)),
    ...(process.env.CPU ? { main_thread_cpu_ms_median: round(med(rs.map((r) => r.cpuMs))) } : {}),
    whole_graph_on_canvas_ms_median: round(med(rs.map((r) => r.completeMs))),
    layout_ms_median: round(med(rs.map((r) => r.layoutMs))),
    fetch_ms_median: round(med(rs.map((r) => r.fetchMs))),
    drawer_open_ms_median: round(med(rs.map((r) => r.drawerMs))),
    pan_fps_median: round(med(rs.map((r) => r.pan.fps)), 1),
    pan_frame_ms_median: round(med(rs.map((r) => r.pan.median)), 1),
    pan_frame_ms_p95_median: round(med(rs.map((r) => r.pan.p95)), 1),
    pan_frame_ms_max_median: round(med(rs.map((r) => r.pan.max)), 1),
    zoom_fps_median: round(med(rs.map((r) => r.zoom.fps)), 1),
    zoom_frame_ms_median: round(med(rs.map((r) => r.zoom.median)), 1),
    zoom_frame_ms_p95_median: round(med(rs.map((r) => r.zoom.p95)), 1),
    zoom_frame_ms_max_median: round(med(rs.map((r) => r.zoom.max)), 1),
  });
  return {
    name,
    runs: RUNS,
    builds: Object.fromEntries([...results.entries()].map(([b, rs]) => [b, summary(rs)])),
    page_errors: errors,
  };
}

const out = {
  machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
  load_average_at_start: os.loadavg().map((x) => round(x, 1)),
  results: [
    await measure('stress', { active: 1200, archived: 500, orphaned: 300, inGrace: true, unconnected: 40 }, true),
    await measure('realistic', { active: 110, archived: 190, orphaned: 1700, unconnected: 5 }, true),
  ],
};
out.load_average_at_end = os.loadavg().map((x) => round(x, 1));
console.log(JSON.stringify(out, null, 2));
