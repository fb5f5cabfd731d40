// Postgres that hangs (connections open, no answer) rather than refuses: /readyz answers within
// DEPENDENCY_CHECK_TIMEOUT_MS as `degraded` (200, so a readiness probe keeps the instance in
// its Service), the scrape says postgres is down, known keys and users are still served, and
// once Postgres answers again their records land and the instance is `ready`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { relayedTestDatabase, type FreezableRelay } from './support/freezable-relay.js';
import { bearer, postJson } from './support/http.js';
import {
  metricsUrl,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const CHECK_TIMEOUT_MS = 300;
const { env, db } = isolatedContext('pghang');
let relay: FreezableRelay;
let gateway: GatewayProcess;
let org: SeededOrg;

/** The gateway's request pool: fewer than the 24 first requests the lock holds up. */
const POOL_SIZE = 8;

beforeAll(async () => {
  org = await seed(env);
  const relayed = await relayedTestDatabase();
  relay = relayed.relay;
  gateway = await startGateway({
    ...env,
    DATABASE_URL: relayed.url,
    DEPENDENCY_CHECK_TIMEOUT_MS: String(CHECK_TIMEOUT_MS),
    METRICS_PORT: '0',
    DATABASE_POOL_SIZE: String(POOL_SIZE),
  });
});

afterAll(async () => {
  relay?.thaw();
  await gateway?.stop();
  await relay?.close();
});

const chat = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'still there?' }],
  user: 'known-customer',
};

async function readyz(): Promise<{ status: number; body: unknown; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${gateway.url}/readyz`);
  const body: unknown = await response.json();
  return { status: response.status, body, ms: performance.now() - started };
}

describe('/readyz while Postgres hangs', () => {
  it('answers degraded within the bound, the scrape says postgres is down, known users are served', async () => {
    expect((await readyz()).body).toEqual({
      status: 'ready',
      draining: false,
      checks: { redis: true, postgres: true },
    });
    const before = await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(org.api_key));
    expect(before.status).toBe(200);

    relay.freeze();
    const probes = [await readyz(), await readyz(), await readyz()];
    for (const probe of probes) {
      expect(probe.status).toBe(200);
      expect(probe.body).toEqual({
        status: 'degraded',
        draining: false,
        checks: { redis: true, postgres: false },
      });
      // Before, each waited DATABASE_TIMEOUT_MS + 2 s (12 s): past any probe's time-out. The
      // bound is well under that, with room for a loaded machine beside the 300 ms check.
      expect(probe.ms).toBeLessThan(CHECK_TIMEOUT_MS + 5_000);
    }
    const scrape = await fetch(metricsUrl(gateway)).then((response) => response.text());
    expect(scrape).toMatch(/^gw_dependency_up\{dependency="postgres"\} 0$/m);
    expect(scrape).toMatch(/^gw_dependency_up\{dependency="redis"\} 1$/m);
    const during = await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(org.api_key));
    expect(during.status).toBe(200);

    relay.thaw();
    await eventually(async () => {
      const probe = await readyz();
      return probe.status === 200 && (probe.body as { status: string }).status === 'ready'
        ? probe
        : undefined;
    }, 15_000);
    const requestIds = [before, during].map((answer) => answer.headers.get('x-request-id'));
    const rows = await eventually(async () => {
      const { rows } = await db.query<{ request_id: string }>(
        'SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])',
        [requestIds],
      );
      return rows.length === 2 ? rows : undefined;
    }, 20_000);
    expect(rows.map((row) => row.request_id).sort()).toEqual([...requestIds].sort());
  });

  it('does not read a request pool busy to its last connection as Postgres down', async () => {
    // Another transaction is inserting 24 product users and has not committed: the first
    // request of each waits for its row lock on a connection of the gateway's pool.
    const locker = await db.connect();
    const waiting: Array<Promise<unknown>> = [];
    try {
      await locker.query('BEGIN');
      const users = Array.from({ length: 24 }, (_, i) => `locked-customer-${i}`);
      for (const user of users) {
        await locker.query(
          `INSERT INTO product_users (id, org_id, app_id, external_user_id)
           VALUES ($1, $2, $3, $4)`,
          [`pu_${org.org_id}_${user}`, org.org_id, org.app_id, user],
        );
      }
      for (const user of users) {
        waiting.push(
          postJson(`${gateway.url}/v1/chat/completions`, { ...chat, user }, bearer(org.api_key)),
        );
      }
      // The pool's connections are all waiting on the lock (the other requests wait for one).
      await eventually(async () => {
        const { rows } = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND datname = current_database()`,
        );
        return rows[0]!.n >= POOL_SIZE ? true : undefined;
      }, 10_000);
      const probe = await readyz();
      expect(probe.body).toEqual({
        status: 'ready',
        draining: false,
        checks: { redis: true, postgres: true },
      });
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
      await Promise.all(waiting);
    }
  });
});
