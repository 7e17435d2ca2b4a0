// Graph files for the browser tests and the benchmark, written the way the server
// stores them (user.json, projects/<slug>/graph.json), with all three tiers.

import fs from 'node:fs';
import path from 'node:path';

const DAY = 86400;

/** A small deterministic PRNG (mulberry32), so every run draws the same graph. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SUBJECTS = [
  'retry-policy', 'ingest-queue', 'auth-tokens', 'build-cache', 'e2e-clock', 'schema-migrations',
  'release-train', 'flaky-ci', 'feature-flags', 'rate-limits', 'search-index', 'payments-webhook',
  'config-loader', 'log-rotation', 'db-pool', 'cdn-purge', 'cron-drift', 'api-versioning',
  'error-budget', 'tracing', 'lockfile', 'monorepo-tooling', 'secrets', 'backups', 'dns',
];
const FACTS = [
  'breaks when the host clock drifts more than two seconds; CI pins NTP before the suite',
  'uses exponential backoff with a 2 s base and three retries, then dead-letters the message',
  'must run migrations before the workers start, otherwise the first deploy fails half way',
  'is cached per branch; a stale cache after a toolchain bump explains most slow builds',
  'owner prefers answers first and the rationale after, with no filler',
  'is configured in two places; the environment wins over the file, which surprises people',
  'tests flake on arm runners only; the fix was a longer readiness probe',
  'limits are per tenant, not per key, so one noisy tenant can starve its own keys',
  'keeps ordering per tenant on a FIFO queue; parallel consumers would break it',
  'reindex takes 40 minutes; never trigger it during the release window',
  'webhook signatures use the raw body; parsing JSON first breaks verification',
  'pool size above 20 exhausts the database connection limit in staging',
];
const RELS = ['depends-on', 'explains', 'fixed-by', 'relates-to', 'part-of', 'supersedes', 'caused-by'];
const FILES = ['src/retry.rs', 'ci/e2e.yml', 'src/queue/mod.rs', 'docs/RELEASE.md', 'infra/db.tf', 'src/auth/token.rs', 'src/main.rs'];

function gistFor(r, i, long) {
  const s = SUBJECTS[Math.floor(r() * SUBJECTS.length)].replace(/-/g, ' ');
  const f = FACTS[Math.floor(r() * FACTS.length)];
  let g = `${s[0].toUpperCase()}${s.slice(1)} ${f} (#${i})`;
  while (long && g.length <= 330) g += `; ${FACTS[Math.floor(r() * FACTS.length)]}`;
  return g;
}

/**
 * A graph with `active`, `archived` and `orphaned` nodes. Archived nodes keep edges to
 * active ones (memory traces); some active nodes are unconnected and a few gists are
 * oversized, so the debt list has items. `prefix` keeps ids of two graphs apart.
 */
export function makeGraph({ prefix, active, archived, orphaned, edgesPerNode = 1.2, now, seed = 1, projectPath = null, oversized = 2, unconnected = 3, artifacts = true, crossTo = [] }) {
  const r = rng(seed);
  const nodes = {};
  const edges = {};
  const ids = { active: [], archived: [], orphaned: [] };
  const addNode = (tier, i) => {
    const id = `${prefix}-${tier === 'active' ? 'a' : tier === 'archived' ? 'r' : 'o'}${String(i).padStart(3, '0')}-${SUBJECTS[i % SUBJECTS.length]}`;
    const node = {
      id,
      gist: gistFor(r, i, tier === 'active' && i < oversized),
      notes: r() < 0.4 ? [`Seen ${1 + Math.floor(r() * 9)} times in the last month`] : undefined,
      touches: artifacts && r() < 0.3 ? [FILES[Math.floor(r() * FILES.length)]] : undefined,
      _created_ts: now - (20 + r() * 200) * DAY,
      _last_read_ts: now - r() * 40 * DAY,
    };
    if (r() < 0.3) node._useful_ts = [now - r() * 100 * DAY];
    if (tier !== 'active') node._archived = true;
    if (tier === 'orphaned') node._orphaned_ts = now - (1 + r() * 30) * DAY;
    for (const k of Object.keys(node)) if (node[k] === undefined) delete node[k];
    nodes[id] = node;
    ids[tier].push(id);
  };
  for (let i = 0; i < active; i++) addNode('active', i);
  for (let i = 0; i < archived; i++) addNode('archived', i);
  for (let i = 0; i < orphaned; i++) addNode('orphaned', i);
  const addEdge = (from, to, rel) => {
    if (from === to) return;
    edges[`${from}->${to}:${rel}`] = { from, to, rel };
  };
  // Active nodes: a connected core, leaving the last `unconnected` ones alone.
  const connected = ids.active.slice(0, Math.max(0, ids.active.length - unconnected));
  const pick = (list) => list[Math.floor(r() * list.length)];
  for (let i = 1; i < connected.length; i++) {
    addEdge(connected[i], connected[Math.floor(r() * i)], pick(RELS));
    if (r() < edgesPerNode - 1) addEdge(connected[i], pick(connected), pick(RELS));
  }
  for (const id of ids.archived) {
    if (connected.length) addEdge(id, pick(connected), pick(RELS));
    if (r() < 0.3 && ids.archived.length > 1) addEdge(id, pick(ids.archived), pick(RELS));
  }
  for (const id of ids.orphaned) {
    if (ids.archived.length) addEdge(pick(ids.archived), id, pick(RELS));
  }
  if (artifacts) for (const id of connected.slice(0, Math.ceil(connected.length / 4))) addEdge(id, pick(FILES), 'lives-in');
  for (const [from, to] of crossTo) addEdge(from, to, 'applies');
  const meta = { versions: {}, namespace: { kind: projectPath ? 'project' : 'user', owner: null } };
  if (projectPath) meta.project_path = projectPath;
  return { file: { nodes, edges, _meta: meta }, ids };
}

/** Write a storage root: user.json and projects/<slug>/graph.json. */
export function writeStorage(storage, user, projects = {}) {
  fs.mkdirSync(storage, { recursive: true });
  fs.writeFileSync(path.join(storage, 'user.json'), JSON.stringify(user, null, 2));
  for (const [slug, graph] of Object.entries(projects)) {
    const dir = path.join(storage, 'projects', slug);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'graph.json'), JSON.stringify(graph, null, 2));
  }
}

/**
 * A project level about 100 characters under its budget (ids of one length, so every
 * citation costs the same 26 characters): 60 active lines of 259, 67 citations, five
 * anchors and the two heads, 17,403 in all. Promoting `beta-r000` (a 300-character
 * gist: its line replaces its anchor, +302) takes it over 17,500.
 */
export function betaGraph(dir, now) {
  const nodes = {};
  const edges = {};
  const old = now - 60 * 86400;
  const gist = (i, n) => `Beta insight ${String(i).padStart(3, '0')} `.padEnd(n, 'x');
  for (let i = 0; i < 60; i++) {
    const id = `beta-${String(i).padStart(4, '0')}`;
    nodes[id] = { id, gist: gist(i, 245), _created_ts: old, _last_read_ts: old + i * 3600 };
    if (i > 0) {
      const from = `beta-${String(i - 1).padStart(4, '0')}`;
      edges[`${from}->${id}:relates`] = { from, to: id, rel: 'relates' };
    }
  }
  for (let i = 0; i < 5; i++) {
    const id = `beta-r${String(i).padStart(3, '0')}`;
    nodes[id] = { id, gist: gist(100 + i, i === 0 ? 300 : 120), _created_ts: old, _archived: true };
    const to = `beta-${String(10 + i).padStart(4, '0')}`;
    edges[`${id}->${to}:relates`] = { from: id, to, rel: 'relates' };
  }
  // The node to promote is well connected and liked, so it stays once promoted.
  nodes['beta-r000']._useful_ts = [now - 3600, now - 7200];
  for (const to of ['beta-0020', 'beta-0030', 'beta-0040']) edges[`${to}->beta-r000:relates`] = { from: to, to: 'beta-r000', rel: 'relates' };
  return { nodes, edges, _meta: { versions: {}, project_path: dir, namespace: { kind: 'project', owner: null } } };
}
