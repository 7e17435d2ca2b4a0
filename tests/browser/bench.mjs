// Benchmark (not a test): time to the first full draw of a 2,000-node graph in the
// graph view, with the real server and Debian's headless Chromium (software
// rendering). Writes nothing; prints JSON. Run: node tests/browser/bench.mjs
//
// Two graphs of 2,000 nodes each:
//   stress    — 1,200 active (all inside their grace period, so nothing archives
//               them), 500 archived, 300 orphaned: 1,200 nodes in the active area;
//   realistic — what the 17,500-character budget leaves: 110 active, 190 archived,
//               1,700 orphaned (the drawer open, so all 2,000 are drawn).
// "first draw" is measured in the page from navigation start to two animation
// frames after the layout and the bands are in place, including the REST fetch.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, launchBrowser, startServer, tempRoot } from './harness.mjs';
import { makeGraph, writeStorage } from './seed.mjs';

const RUNS = Number(process.env.RUNS || 5);
const now = Date.now() / 1000;

async function measure(name, spec, drawerOpen) {
  const root = tempRoot('kg-bench-');
  const g = makeGraph({ prefix: 'b', now, seed: 3, ...spec });
  if (spec.inGrace) for (const n of Object.values(g.file.nodes)) n._created_ts = now - 3600;
  writeStorage(path.join(root, 'storage'), g.file, {});
  const port = await freePort();
  const server = await startServer({ root, port });
  const browser = await launchBrowser();
  const results = [];
  const errors = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${server.base}/ui`);
      await page.waitForFunction(() => window.kgView && window.kgView.ready, null, { timeout: 120000 });
      const m = await page.evaluate(() => ({ ...window.kgView.metrics }));
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
        await page.waitForTimeout(400);
      }
      // Fluidity: frame intervals while the viewport pans and zooms for one second.
      const frames = await page.evaluate(
        () =>
          new Promise((resolve) => {
            const times = [];
            const start = performance.now();
            const tick = (t) => {
              times.push(t);
              if (t - start < 1000) requestAnimationFrame(tick);
              else {
                const gaps = times.slice(1).map((x, j) => x - times[j]);
                gaps.sort((a, b) => a - b);
                resolve({ frames: gaps.length, median: gaps[Math.floor(gaps.length / 2)], p95: gaps[Math.floor(gaps.length * 0.95)] });
              }
            };
            // Drive the viewport with wheel-like steps every frame.
            const el = document.querySelector('#cy');
            let k = 0;
            const step = () => {
              el.dispatchEvent(new WheelEvent('wheel', { deltaY: k++ % 20 < 10 ? -40 : 40, clientX: 800, clientY: 500, bubbles: true }));
              if (performance.now() - start < 1000) requestAnimationFrame(step);
            };
            requestAnimationFrame(tick);
            requestAnimationFrame(step);
          }),
      );
      results.push({ ...m, drawerMs, frames });
      await page.close();
    }
  } finally {
    await browser.close();
    await server.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    name,
    nodes: results[0].nodes,
    edges: results[0].edges,
    runs: RUNS,
    first_draw_ms_median: Math.round(med(results.map((r) => r.firstDrawMs))),
    first_draw_ms_all: results.map((r) => Math.round(r.firstDrawMs)),
    layout_ms_median: Math.round(med(results.map((r) => r.layoutMs))),
    fetch_ms_median: Math.round(med(results.map((r) => r.fetchMs))),
    drawer_open_ms_median: Math.round(med(results.map((r) => r.drawerMs))),
    zoom_frame_ms_median: Math.round(med(results.map((r) => r.frames.median))),
    zoom_frame_ms_p95_median: Math.round(med(results.map((r) => r.frames.p95))),
    page_errors: errors,
  };
}

const out = {
  machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
  results: [
    await measure('stress', { active: 1200, archived: 500, orphaned: 300, inGrace: true, unconnected: 40 }, true),
    await measure('realistic', { active: 110, archived: 190, orphaned: 1700, unconnected: 5 }, true),
  ],
};
console.log(JSON.stringify(out, null, 2));
