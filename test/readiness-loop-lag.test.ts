// The bound of /readyz's checks (DEPENDENCY_CHECK_TIMEOUT_MS, decision 313) is a timer on the
// event loop. Under load the loop stalls (decision 312 saw seconds at 10,000 streams): a
// dependency's answer that arrived during the stall and the bound's timer are both due when
// the loop comes back, and Node runs due timers before it reads sockets. The answer that is
// there must win: Redis answered, so the instance is ready (a check reported down turns Redis,
// which is essential, into a 503 and takes the instance out of its Service for being busy).
import { afterAll, describe, expect, it } from 'vitest';
import { boundedDependencyChecks } from '../src/dependency-checks.js';
import { createDbPool } from '../src/db/pool.js';
import { pingAll } from '../src/redis/connect.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { testRedis } from './support/services.js';
import { stallLoop } from './support/silent-redis.js';

const redis = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 1, 5_000);

afterAll(async () => {
  await redis.quit();
  await db.end();
});

describe('a dependency check during an event-loop stall', () => {
  it('reports Redis and Postgres up when they answered during the stall', async () => {
    await pingAll(redis);
    await db.query('SELECT 1');
    const check = boundedDependencyChecks(
      {
        redis: () => pingAll(redis),
        postgres: () => db.query('SELECT 1').then(() => true),
      },
      100,
    );
    const answer = check();
    // Once both statements are sent, the loop stalls: both answers are in the sockets long
    // before it ends, and the bound's timer is due too.
    await new Promise((resolve) => setImmediate(resolve));
    stallLoop(400);
    expect(await answer).toEqual({ redis: true, postgres: true });
  });
});
