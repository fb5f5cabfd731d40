// DATABASE_POOL_SIZE bounds the Postgres connections of a gateway's request pool (decision
// 334): many instances' workers together must stay below the server's max_connections. Each
// pool names itself in pg_stat_activity. The gateway runs on a database of this file's own,
// so the connections counted are its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createDbPool } from '../src/db/pool.js';
import { isolatedContext } from './support/context.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { startGateway, type GatewayProcess } from './support/processes.js';

const { env } = isolatedContext('database-pool-size');
const DATABASE_URL = `${TEST_DATABASE_URL}_pool_size`;
const DATABASE = new URL(DATABASE_URL).pathname.slice(1);
const POOL_SIZE = 2;
const admin = createDbPool(TEST_DATABASE_URL.replace(/\/[^/]*$/, '/postgres'), 1);
let gateway: GatewayProcess;

beforeAll(async () => {
  await admin.query(`DROP DATABASE IF EXISTS "${DATABASE}" WITH (FORCE)`);
  gateway = await startGateway({
    ...env,
    DATABASE_URL,
    DATABASE_POOL_SIZE: String(POOL_SIZE),
  });
});

afterAll(async () => {
  await gateway?.stop();
  await admin.query(`DROP DATABASE IF EXISTS "${DATABASE}" WITH (FORCE)`);
  await admin.end();
});

/** The gateway's sessions on its database, by pool. */
async function sessions(): Promise<Map<string, number>> {
  const { rows } = await admin.query<{ application_name: string; n: number }>(
    `SELECT application_name, count(*)::int AS n FROM pg_stat_activity
      WHERE datname = $1 GROUP BY application_name`,
    [DATABASE],
  );
  return new Map(rows.map((row) => [row.application_name, row.n]));
}

/** An API key no one has: its first sight is a lookup on the request pool. */
const unknownKey = (): string => `gw_${randomBytes(24).toString('hex')}`;

describe('the request pool', () => {
  it(`opens at most DATABASE_POOL_SIZE connections under a burst of lookups, and every request is answered`, async () => {
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, (await sessions()).get('gw-requests') ?? 0);
      }
    })();
    const statuses: number[] = [];
    const burst = Array.from({ length: 8 }, async () => {
      for (let index = 0; index < 25; index += 1) {
        const response = await fetch(`${gateway.url}/v1/models`, {
          headers: { authorization: `Bearer ${unknownKey()}` },
        });
        await response.arrayBuffer();
        statuses.push(response.status);
      }
    });
    await Promise.all(burst);
    sampling = false;
    await sampler;
    expect(statuses).toHaveLength(200);
    expect(new Set(statuses)).toEqual(new Set([401]));
    expect(most).toBeGreaterThanOrEqual(1);
    expect(most).toBeLessThanOrEqual(POOL_SIZE);
  });

  it('names each of its pools in pg_stat_activity', async () => {
    const names = [...(await sessions()).keys()];
    expect(names).toContain('gw-requests');
    for (const name of names) {
      expect(['gw-requests', 'gw-usage-writer', 'gw-probe', 'gw-webhooks']).toContain(name);
    }
  });
});
