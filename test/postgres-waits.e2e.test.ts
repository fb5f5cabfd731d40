// Every wait of the gateway on Postgres is bounded (DATABASE_TIMEOUT_MS): a request whose
// statement cannot finish (here: a product user's first sight, waiting on a row lock another
// transaction holds) answers 503 gw_unavailable within the bound instead of hanging, charges
// and holds nothing, and the same request goes through once the lock is gone.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisKeys } from '../src/redis/keys.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';

const TIMEOUT_MS = 500;
const { env, db, redis, prefix } = isolatedContext('pgwaits');
const keys = createRedisKeys(prefix);
let gateway: GatewayProcess;
let org: SeededOrg;

beforeAll(async () => {
  org = await seed(env);
  gateway = await startGateway({ ...env, DATABASE_TIMEOUT_MS: String(TIMEOUT_MS) });
});

afterAll(async () => {
  await gateway?.stop();
});

const chat = (user: string) => ({
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'are you there?' }],
  user,
});

const usageRows = async (): Promise<number> =>
  Number(
    (
      await db.query<{ n: string }>(
        'SELECT count(*)::text AS n FROM usage_records WHERE org_id = $1',
        [org.org_id],
      )
    ).rows[0]!.n,
  );

describe('a request waiting on Postgres past DATABASE_TIMEOUT_MS', () => {
  it('answers 503 gw_unavailable within the bound, holds nothing, and goes through afterwards', async () => {
    // Another transaction is inserting the same product user and has not committed: the
    // gateway's first-sight upsert waits for its row lock.
    const locker: pg.PoolClient = await db.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(
        `INSERT INTO product_users (id, org_id, app_id, external_user_id)
         VALUES ($1, $2, $3, 'locked-customer')`,
        [`pu_${prefix}_locked`, org.org_id, org.app_id],
      );
      const started = performance.now();
      const refused = await postJson<{ error: { code: string; message: string } }>(
        `${gateway.url}/v1/chat/completions`,
        chat('locked-customer'),
        bearer(org.api_key),
      );
      const waitedMs = performance.now() - started;
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('gw_unavailable');
      expect(waitedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(waitedMs).toBeLessThan(TIMEOUT_MS + 4000);
      // Nothing held, nothing recorded.
      expect((await redis.hget(keys.wallet(org.org_id), 'reserved')) ?? '0').toBe('0');
      expect(await usageRows()).toBe(0);
      // Logged as what it is: a warning that a dependency is away, not an error of the gateway.
      const lines = gateway
        .output()
        .split('\n')
        .filter((line) => line.includes(refused.headers.get('x-request-id') ?? 'no request id'));
      expect(
        lines.map((line) => (JSON.parse(line) as { level: number; msg: string }).msg),
      ).toContain('route answered 503: a dependency is unavailable');
      expect(gateway.output()).not.toContain('unhandled error in route handler');
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
    const served = await postJson(
      `${gateway.url}/v1/chat/completions`,
      chat('locked-customer'),
      bearer(org.api_key),
    );
    expect(served.status).toBe(200);
    const { rows } = await db.query<{ external_user_id: string }>(
      'SELECT external_user_id FROM product_users WHERE org_id = $1',
      [org.org_id],
    );
    expect(rows).toEqual([{ external_user_id: 'locked-customer' }]);
  });
});
