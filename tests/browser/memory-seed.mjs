// A realistic project memory for the readability tests: about 150 nodes a developer's
// agent would have written over months (90 active, 60 archived), ids prefixed by topic
// (`auth-jwt-rotation`), gists that read like notes, edges mostly within a topic and
// some across. Deterministic: the same graph every run.

import fs from 'node:fs';
import path from 'node:path';
import { makeGraph, rng, writeStorage } from './seed.mjs';

const DAY = 86400;

/** Active ids by topic: the memory an agent reads every session. */
const ACTIVE = {
  auth: ['jwt-rotation', 'refresh-token-reuse', 'session-cookie-samesite', 'oauth-pkce-flow', 'password-hash-argon2', 'mfa-totp-drift', 'api-key-scopes', 'sso-saml-clock-skew', 'rbac-role-cache', 'login-rate-limit', 'csrf-double-submit', 'service-accounts'],
  billing: ['invoice-rounding', 'stripe-webhook-signature', 'proration-midcycle', 'tax-vat-rules', 'currency-minor-units', 'dunning-retries', 'refund-idempotency', 'plan-migration-2024', 'usage-metering-lag', 'coupon-stacking', 'ledger-double-entry'],
  ci: ['e2e-clock-drift', 'cache-key-toolchain', 'flaky-arm-runners', 'docker-layer-cache', 'matrix-node-versions', 'release-tagging', 'secrets-masking', 'test-sharding', 'nightly-fuzz', 'lint-before-build'],
  db: ['pool-size-staging', 'migration-order', 'index-invoices-tenant', 'vacuum-schedule', 'read-replica-lag', 'deadlock-retry', 'uuid-v7-keys', 'backup-restore-drill', 'json-column-queries', 'connection-timeout'],
  api: ['versioning-header', 'pagination-cursors', 'error-envelope', 'idempotency-keys', 'rate-limit-per-tenant', 'openapi-codegen', 'graphql-n-plus-one', 'deprecation-policy', 'cors-allowlist'],
  search: ['reindex-window', 'synonyms-file', 'typo-tolerance', 'facet-counts', 'index-aliases', 'relevance-boosts', 'highlight-snippets', 'bulk-ingest-size'],
  deploy: ['blue-green-switch', 'k8s-readiness-probe', 'helm-values-split', 'canary-metrics', 'rollback-runbook', 'config-env-precedence', 'feature-flags-cleanup', 'region-failover'],
  frontend: ['bundle-split', 'hydration-mismatch', 'i18n-plurals', 'a11y-focus-trap', 'date-timezones', 'css-dark-theme', 'form-validation', 'service-worker-cache-invalidation'],
  queue: ['ingest-fifo-order', 'dead-letter-replay', 'visibility-timeout', 'retry-backoff', 'poison-messages', 'consumer-scaling', 'batch-size'],
  obs: ['tracing-sampling', 'log-retention', 'alert-error-budget', 'metrics-cardinality', 'dashboards-owners', 'pager-rotation', 'structured-logging'],
};

/** Archived ids by topic: older decisions and fixed problems, kept for their edges. */
const ARCHIVED = {
  auth: ['legacy-session-store', 'bcrypt-cost-10', 'remember-me-cookie', 'ldap-sync-job', 'token-in-query-string', 'okta-migration-2023', 'basic-auth-admin'],
  billing: ['paypal-sunset', 'invoice-pdf-fonts', 'annual-discount-bug', 'manual-credit-notes', 'old-price-ids', 'trial-extension-hack', 'braintree-retry'],
  ci: ['travis-migration', 'jenkins-agents', 'yarn-v1-lockfile', 'coverage-gate-80', 'macos-runner-cost', 'flaky-snapshot-tests'],
  db: ['mysql-to-postgres', 'orm-lazy-loading', 'sharding-proposal', 'timestamp-without-tz', 'pgbouncer-transaction-mode', 'enum-column-migration', 'nightly-dump-cron'],
  api: ['v1-sunset', 'xml-responses', 'offset-pagination', 'soap-bridge', 'swagger-2-spec', 'api-gateway-timeout'],
  search: ['elastic-6-upgrade', 'solr-prototype', 'stemming-german', 'index-per-tenant', 'percolator-alerts'],
  deploy: ['heroku-era', 'ansible-playbooks', 'docker-compose-prod', 'manual-dns-cutover', 'ec2-autoscaling-groups', 'chef-recipes'],
  frontend: ['jquery-removal', 'moment-to-dayjs', 'webpack-4-config', 'ie11-polyfills', 'redux-saga-retire', 'css-in-js-perf'],
  queue: ['rabbitmq-cluster', 'sidekiq-priorities', 'kafka-evaluation', 'redis-list-queue', 'beanstalk-jobs'],
  obs: ['statsd-migration', 'papertrail-logs', 'newrelic-contract', 'nagios-checks', 'sentry-quota'],
};

/** Per topic: what the notes say, `{s}` standing for the subject named by the id. */
const FACTS = {
  auth: ['{s}: keep the old key in the JWKS for a day after rotating', '{s} is enforced in middleware, not per route', '{s} broke when the IdP clock ran 90 s ahead; allow 2 min'],
  billing: ['{s}: amounts are integers in minor units end to end', '{s} needs the raw body; parsed JSON breaks the signature', '{s} runs nightly; retries are idempotent by invoice id'],
  ci: ['{s}: pin NTP first or token expiry tests fail', '{s} is keyed on the toolchain; stale caches slow builds', '{s} flakes on arm runners only; longer readiness probe'],
  db: ['{s}: staging has 20 connections; keep the pool at 15', '{s} must run before the workers start', '{s} needs the (tenant_id, created_at) index'],
  api: ['{s}: no Api-Version header means the oldest version', '{s} is per tenant, not per key', '{s} returns {code, message, details}, never a string'],
  search: ['{s}: a reindex takes 40 min; not in the release window', '{s} is read at index creation, not at query time', '{s} swaps through an alias, never a half-built index'],
  deploy: ['{s}: the environment wins over values files', '{s} waits for /ready (database and queue)', '{s} is in docs/RUNBOOK.md; practise it quarterly'],
  frontend: ['{s}: format dates in UTC on the server', '{s}: the admin bundle stays off the landing page', '{s} regressed twice; an e2e test guards it now'],
  queue: ['{s}: FIFO per tenant; parallel consumers break order', '{s}: 2 s backoff, three retries, then dead-letter', '{s} is 30 s; longer jobs are delivered twice'],
  obs: ['{s}: sample 10 % of traces, keep every error', '{s}: owners are named in each dashboard', '{s} pages on a 2 %/h burn rate, not single errors'],
};

const ARCHIVED_FACT = '{s}: superseded; kept because newer notes still point at it';
const RELS = ['depends-on', 'explains', 'fixed-by', 'relates-to', 'part-of', 'caused-by'];
/** Topics that talk to each other in a real system: edges across topics follow these. */
const NEAR = { auth: ['api', 'db'], billing: ['db', 'queue', 'api'], ci: ['deploy', 'frontend'], db: ['deploy', 'obs'], api: ['auth', 'search'], search: ['queue', 'db'], deploy: ['ci', 'obs'], frontend: ['api', 'ci'], queue: ['obs', 'billing'], obs: ['deploy'] };

const subject = (slug) => {
  const words = slug.replace(/-/g, ' ');
  return `${words[0].toUpperCase()}${words.slice(1)}`;
};

/**
 * The project graph file (`graph.json`) and its ids by tier. Active nodes were read
 * recently and some were marked useful, so the server keeps them active.
 */
export function projectMemory({ now, projectPath, seed = 11 }) {
  const r = rng(seed);
  const pick = (list) => list[Math.floor(r() * list.length)];
  const nodes = {};
  const edges = {};
  const ids = { active: [], archived: [] };
  const byTopic = {};
  const addEdge = (from, to, rel) => {
    if (from !== to) edges[`${from}->${to}:${rel}`] = { from, to, rel };
  };
  for (const [topic, slugs] of Object.entries(ACTIVE)) {
    byTopic[topic] = [];
    slugs.forEach((slug, i) => {
      const id = `${topic}-${slug}`;
      nodes[id] = {
        id,
        gist: pick(FACTS[topic]).replace('{s}', subject(slug)),
        _created_ts: now - (10 + r() * 120) * DAY,
        _last_read_ts: now - r() * 5 * DAY,
        _useful_ts: [now - r() * 10 * DAY],
      };
      if (i > 0) addEdge(id, pick(byTopic[topic]), pick(RELS));
      byTopic[topic].push(id);
      ids.active.push(id);
    });
  }
  for (const [topic, near] of Object.entries(NEAR)) {
    for (const other of near) for (let k = 0; k < 2; k++) addEdge(pick(byTopic[topic]), pick(byTopic[other]), pick(RELS));
  }
  addEdge('billing-stripe-webhook-signature', 'src/billing/webhook.rs', 'lives-in');
  addEdge('ci-e2e-clock-drift', 'ci/e2e.yml', 'lives-in');
  addEdge('deploy-rollback-runbook', 'docs/RUNBOOK.md', 'lives-in');
  for (const [topic, slugs] of Object.entries(ARCHIVED)) {
    for (const slug of slugs) {
      const id = `${topic}-${slug}`;
      nodes[id] = {
        id,
        gist: ARCHIVED_FACT.replace('{s}', subject(slug)),
        _created_ts: now - (200 + r() * 300) * DAY,
        _last_read_ts: now - (90 + r() * 200) * DAY,
        _archived: true,
      };
      addEdge(id, pick(byTopic[topic]), 'superseded-by');
      ids.archived.push(id);
    }
  }
  const meta = { versions: {}, project_path: projectPath, namespace: { kind: 'project', owner: null } };
  return { file: { nodes, edges, _meta: meta }, ids };
}

/**
 * A storage root under `root` holding the project memory above (folder
 * `home/src/shop`) and a small user graph: what the readability and list tests open.
 */
export function seedShop(root, now) {
  const projectDir = path.join(root, 'home', 'src', 'shop');
  fs.mkdirSync(projectDir, { recursive: true });
  const memory = projectMemory({ now, projectPath: projectDir });
  const user = makeGraph({ prefix: 'u', active: 12, archived: 4, orphaned: 2, now, seed: 5 });
  writeStorage(path.join(root, 'storage'), user.file, { shop: memory.file });
  return { projectDir, memory };
}
