// The graph view is readable at first paint: on a realistic project memory (90 active,
// 60 archived nodes, ids prefixed by topic) every active label is drawn at 11 px or
// more and no two labels overlap, at 1440×900 and 1024×700, light and dark; zoom moves
// in usable steps; the same graph opens with the same picture; the topic legend filters.
//
// Run: node --test tests/browser/readable.test.mjs   (after building ui/dist and the server)
// Screenshots land in target/screenshots/ (not committed): look at them.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { freePort, launchBrowser, mcp, openView, shot, startServer, tempRoot } from './harness.mjs';
import { seedShop } from './memory-seed.mjs';

const SIZES = [
  { width: 1440, height: 900 },
  { width: 1024, height: 700 },
];
const now = Date.now() / 1000;
let root;
let server;
let browser;
let projectDir;
let memory;
const pages = [];

before(async () => {
  root = tempRoot();
  ({ projectDir, memory } = seedShop(root, now));
  server = await startServer({ root, port: await freePort() });
  browser = await launchBrowser();
});

after(async () => {
  for (const p of pages) await p.close().catch(() => undefined);
  await browser?.close();
  assert.equal(await server?.stop(), 0, 'the server stops cleanly');
  if (!process.env.KG_UI_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

/** The project memory in a fresh page of this size and theme. */
async function open(viewport, theme = 'light') {
  const page = await openView(browser, server.base, `#project=${encodeURIComponent(projectDir)}`, viewport);
  pages.push(page);
  if ((await page.evaluate(() => document.documentElement.dataset.theme)) !== theme) await page.click('#theme');
  return page;
}

const labels = (page, tier = 'active') => page.evaluate((t) => window.kgView.labels(t), tier);
const zoom = (page) => page.evaluate(() => window.kgView.zoom());

/** Pairs of drawn labels whose boxes overlap (touching edges do not count). */
function overlaps(boxes) {
  const drawn = boxes.filter((b) => b.text);
  const out = [];
  for (let i = 0; i < drawn.length; i++) {
    for (let j = i + 1; j < drawn.length; j++) {
      const a = drawn[i];
      const b = drawn[j];
      if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) out.push(`${a.text} × ${b.text}`);
    }
  }
  return out;
}

/** Page coordinates of the canvas centre. */
async function canvasCentre(page) {
  const box = await page.locator('#cy').boundingBox();
  return { x: box.x + box.width / 2, y: box.y + box.height / 2, box };
}

for (const viewport of SIZES) {
  for (const theme of ['light', 'dark']) {
    const size = `${viewport.width}x${viewport.height}`;
    test(`at ${size} (${theme}) every active label opens at 11 px or more, on screen, with no overlaps`, async () => {
      const page = await open(viewport, theme);
      await shot(page, `readable-${size}-${theme}.png`);
      const active = await labels(page);
      assert.equal(active.length, 90, 'all 90 active nodes are drawn');
      const { box } = await canvasCentre(page);
      const heights = active.map((b) => b.y2 - b.y1);
      const fonts = active.map((b) => b.fontPx);
      console.log(`${size} ${theme}: zoom ${(await zoom(page)).toFixed(3)}, label height ${Math.min(...heights).toFixed(1)}–${Math.max(...heights).toFixed(1)} px, font ${Math.min(...fonts).toFixed(1)} px, ${overlaps(active).length} overlaps`);
      for (const b of active) {
        assert.ok(b.text, `${b.key} has its label drawn`);
        assert.ok(b.y2 - b.y1 >= 11, `${b.key}: label box ${(b.y2 - b.y1).toFixed(1)} px high`);
        assert.ok(b.fontPx >= 11, `${b.key}: font ${b.fontPx.toFixed(1)} px`);
        assert.ok(b.x1 >= 0 && b.y1 >= 0 && b.x2 <= box.width && b.y2 <= box.height, `${b.key} (${b.text}) is on screen: ${JSON.stringify(b)}`);
      }
      assert.deepEqual(overlaps(active), [], 'no two active labels overlap');
      assert.ok(active.some((b) => b.text.endsWith('…')), 'a long id is cut with an ellipsis');

      // Archived labels: legible at zoom (no overlaps there either) and on hover.
      await page.evaluate(() => window.kgView.fit());
      await shot(page, `readable-${size}-${theme}-fit.png`);
      const archived = await labels(page, 'archived');
      assert.equal(archived.length, 60);
      // Zoom in with the wheel over an archived node (the zoom follows the pointer), then hover it.
      const first = memory.ids.archived[0];
      const at = await page.evaluate((k) => window.kgView.point({ key: k }), `p:${first}`);
      await page.mouse.move(at.x, at.y);
      for (let i = 0; i < 6; i++) await page.mouse.wheel(0, -100);
      await page.mouse.move(at.x + 30, at.y + 30);
      const near = await page.evaluate((k) => window.kgView.point({ key: k }), `p:${first}`);
      await page.mouse.move(near.x, near.y);
      const tip = page.locator('#tip');
      await tip.waitFor({ state: 'visible' });
      assert.match(await tip.innerText(), /superseded; kept because newer notes still point at it/);
      const zoomed = (await labels(page, 'archived')).filter((b) => b.x2 > 0 && b.x1 < box.width && b.y2 > 0 && b.y1 < box.height);
      assert.ok(zoomed.length > 0, 'archived labels are on screen when zoomed');
      for (const b of zoomed) assert.ok(b.fontPx >= 11, `${b.key}: archived label ${b.fontPx.toFixed(1)} px when zoomed`);
      assert.deepEqual(overlaps(zoomed), [], 'no two archived labels overlap');
      await shot(page, `readable-${size}-${theme}-archived-hover.png`);
      assert.deepEqual(page.errors, []);
    });
  }
}

test('one wheel notch zooms by 10–20 %, either way', async () => {
  const page = await open(SIZES[1]);
  const c = await canvasCentre(page);
  await page.mouse.move(c.x, c.y);
  const ratios = [];
  for (const dy of [100, 100, -100, -100, -100]) {
    const before = await zoom(page);
    await page.mouse.wheel(0, dy);
    await page.waitForFunction((z) => window.kgView.zoom() !== z, before);
    ratios.push((await zoom(page)) / before);
  }
  console.log(`wheel notch ratios: ${ratios.map((r) => r.toFixed(3)).join(', ')}`);
  for (const r of ratios) {
    const step = r > 1 ? r : 1 / r;
    assert.ok(step >= 1.1 && step <= 1.2, `a notch zooms by ${((step - 1) * 100).toFixed(1)} %`);
  }
  assert.ok(ratios[0] < 1 && ratios[4] > 1, 'down zooms out, up zooms in');
});

test('the + and − keys and buttons zoom in steps; 0 and Fit fit the graph', async () => {
  const page = await open(SIZES[0]);
  const start = await zoom(page);
  await page.keyboard.press('+');
  const zIn = await zoom(page);
  assert.ok(zIn > start * 1.1, `+ zooms in: ${start} → ${zIn}`);
  await page.keyboard.press('-');
  assert.ok(Math.abs((await zoom(page)) - start) < 1e-6, '- undoes +');
  await page.click('#zoom-in');
  assert.ok((await zoom(page)) > start * 1.1, 'the + button zooms in');
  await page.click('#zoom-out');
  await page.click('#zoom-out');
  assert.ok((await zoom(page)) < start / 1.1, 'the − button zooms out');
  await page.keyboard.press('0');
  const fitted = await zoom(page);
  // Fitted: every node, archived ones included, is on screen.
  const { box } = await canvasCentre(page);
  for (const b of [...(await labels(page)), ...(await labels(page, 'archived'))]) {
    assert.ok(b.x1 >= -1 && b.y1 >= -1 && b.x2 <= box.width + 1 && b.y2 <= box.height + 1, `${b.key} is in the fitted picture`);
  }
  await page.keyboard.press('+');
  await page.click('#fit');
  assert.ok(Math.abs((await zoom(page)) - fitted) < 1e-6, 'the Fit button fits as 0 does');
  await shot(page, 'readable-1440x900-light-zoomed-out.png');
  assert.deepEqual(page.errors, []);
});

/** The band titles on screen, in canvas pixels: whole, their size, and their name's box. */
const bandTitles = (page) =>
  page.evaluate(() => {
    const cy = document.querySelector('#cy').getBoundingClientRect();
    return [...document.querySelectorAll('.band-title')]
      .filter((el) => !el.hidden)
      .map((el) => {
        const b = el.getBoundingClientRect();
        const name = el.querySelector('.name').getBoundingClientRect();
        return {
          text: el.textContent,
          fontPx: parseFloat(getComputedStyle(el).fontSize),
          nameWhole: name.left >= b.left - 0.5 && name.right <= b.right + 0.5,
          x1: b.left - cy.left,
          x2: b.right - cy.left,
          y1: b.top - cy.top,
          y2: b.bottom - cy.top,
        };
      });
  });

/**
 * The band titles shown are whole, on screen, readable and clear of each other and of
 * every label drawn (labels under 7 px are not drawn). Returns them.
 */
async function checkTitles(page, when) {
  const { box } = await canvasCentre(page);
  const titles = await bandTitles(page);
  const drawn = [...(await labels(page)), ...(await labels(page, 'archived'))].filter((b) => b.text && b.fontPx >= 7);
  const meets = (a, b) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
  for (const t of titles) {
    assert.ok(t.x1 >= 0 && t.y1 >= 0 && t.x2 <= box.width && t.y2 <= box.height, `${when}: "${t.text}" is whole on screen: ${JSON.stringify(t)}`);
    assert.ok(t.fontPx >= 11, `${when}: "${t.text}" at ${t.fontPx} px`);
    assert.ok(t.nameWhole, `${when}: the name of "${t.text}" is not cut`);
    for (const l of drawn) assert.ok(!meets(t, l), `${when}: "${t.text}" overlaps the label ${l.text}`);
    for (const u of titles) assert.ok(u === t || !meets(t, u), `${when}: "${t.text}" overlaps "${u.text}"`);
  }
  return titles;
}

test('the band titles stay whole and readable at every zoom, overlapping no label', async () => {
  const page = await open(SIZES[0]);
  const first = await checkTitles(page, 'at first paint');
  assert.ok(first.some((t) => t.text.startsWith('ACTIVE (90)')), 'the active band is titled at first paint');
  await page.evaluate(() => window.kgView.fit());
  const fitted = await checkTitles(page, 'fitted');
  assert.ok(fitted.some((t) => t.text.startsWith('ARCHIVED (60)')), 'the archived band is titled when fitted');
  // Zoom in on the archived band's title all the way (the band grows far wider than
  // the window: its title used to run off both edges), then out all the way.
  const at = await page.evaluate(() => window.kgView.point({ zone: 'archive' }));
  await page.mouse.move(at.x, at.y);
  const shotLimits = new Set(); // the zoom limits shot so far
  for (const [dy, notches] of [
    [-100, 20],
    [100, 40],
  ]) {
    for (let i = 0; i < notches; i++) {
      const before = await zoom(page);
      await page.mouse.wheel(0, dy);
      // At a zoom limit the zoom stays: no change to wait for.
      await page.waitForFunction((z) => window.kgView.zoom() !== z, before, { timeout: 2000 }).catch(() => undefined);
      const z = await zoom(page);
      const titles = await checkTitles(page, `at zoom ${z.toFixed(2)}`);
      assert.ok(titles.some((t) => t.text.startsWith('ARCHIVED (60)')), `the archived band is titled at zoom ${z.toFixed(2)}`);
      const limit = dy < 0 ? 'max' : 'min';
      if (z === before && !shotLimits.has(limit)) {
        shotLimits.add(limit);
        await shot(page, `readable-band-title-zoom-${limit}.png`);
      }
    }
  }
  assert.deepEqual(page.errors, []);
});

test('the same graph opens with the same picture', async () => {
  for (const viewport of SIZES) {
    const a = await open(viewport);
    const b = await open(viewport);
    const pa = await a.evaluate(() => window.kgView.positions());
    const pb = await b.evaluate(() => window.kgView.positions());
    assert.equal(Object.keys(pa).length, 150 + 3, 'every node and artifact has a place');
    assert.deepEqual(pb, pa, `the same positions at ${viewport.width}x${viewport.height}`);
    assert.equal(await b.evaluate(() => window.kgView.zoom()), await a.evaluate(() => window.kgView.zoom()));
  }
});

test('the legend lists the topics; clicking one shows it alone, clicking again shows all', async () => {
  const page = await open(SIZES[0]);
  const chips = page.locator('#topics .topic');
  const names = await chips.evaluateAll((els) => els.map((e) => e.dataset.topic));
  assert.deepEqual([...names].sort(), ['api', 'auth', 'billing', 'ci', 'db', 'deploy', 'frontend', 'obs', 'queue', 'search']);
  assert.equal(names[0], 'auth', 'the biggest topic comes first');
  await chips.filter({ hasText: 'billing' }).click();
  assert.equal(await chips.filter({ hasText: 'billing' }).getAttribute('aria-pressed'), 'true');
  const shown = (await labels(page)).filter((b) => b.text && b.opacity > 0.5);
  assert.equal(shown.length, 11, 'only the 11 billing nodes stay');
  assert.ok(shown.every((b) => b.key.startsWith('p:billing-')), shown.map((b) => b.key).join(' '));
  await shot(page, 'readable-1440x900-light-topic-billing.png');
  await chips.filter({ hasText: 'billing' }).click();
  assert.equal((await labels(page)).filter((b) => b.text && b.opacity > 0.5).length, 90, 'every topic again');
  assert.deepEqual(page.errors, []);
});

test('hovering a node shows its gist and brings out its neighbours', async () => {
  const page = await open(SIZES[0]);
  const id = 'billing-invoice-rounding';
  const p = await page.evaluate((k) => window.kgView.point({ key: k }), `p:${id}`);
  await page.mouse.move(p.x, p.y);
  const tip = page.locator('#tip');
  await tip.waitFor({ state: 'visible' });
  assert.match(await tip.innerText(), new RegExp(id));
  assert.equal((await tip.innerText()).includes(memory.file.nodes[id].gist), true, 'the tip shows the gist');
  const neighbours = new Set(
    Object.values(memory.file.edges)
      .filter((e) => e.from === id || e.to === id)
      .map((e) => `p:${e.from === id ? e.to : e.from}`),
  );
  const all = [...(await labels(page)), ...(await labels(page, 'archived'))];
  for (const b of all) {
    if (b.key === `p:${id}` || neighbours.has(b.key)) assert.equal(b.opacity, 1, `${b.key} stands out`);
    else assert.ok(b.opacity < 0.5, `${b.key} fades (${b.opacity})`);
  }
  await shot(page, 'readable-1440x900-light-hover.png');
  assert.deepEqual(page.errors, []);
});

test('a node written while the page is open appears next to its neighbour, overlapping no label', async () => {
  const page = await open(SIZES[1]);
  const client = mcp(server.base);
  await client.initialize();
  const sid = (await client.call('kg_read', { cwd: projectDir })).match(/Session: ([0-9a-f]{8})/)[1];
  await client.call('kg_put_node', { session_id: sid, level: 'project', id: 'auth-webauthn-passkeys', gist: 'Passkeys replace TOTP for admins; keep TOTP as the fallback' });
  await client.call('kg_put_edge', { session_id: sid, level: 'project', from: 'auth-webauthn-passkeys', to: 'auth-mfa-totp-drift', rel: 'supersedes' });
  await page.waitForFunction(() => window.kgView.has('p:auth-webauthn-passkeys') && window.kgView.tierOf('p:auth-webauthn-passkeys') === 'active');
  await page.waitForTimeout(400);
  const pos = await page.evaluate(() => window.kgView.positions());
  const a = pos['p:auth-webauthn-passkeys'];
  const b = pos['p:auth-mfa-totp-drift'];
  await shot(page, 'readable-1024x700-light-new-node.png');
  const distance = Math.hypot(a.x - b.x, a.y - b.y);
  console.log(`new node placed ${distance.toFixed(0)} units from its neighbour`);
  assert.ok(distance < 400, `placed ${distance.toFixed(0)} units from its neighbour`);
  assert.deepEqual(overlaps(await labels(page)), [], 'no two active labels overlap');
  assert.deepEqual(page.errors, []);
});
