// The usage writer's statements are bounded (USAGE_WRITE_TIMEOUT_MS, decision 314). Its batch's
// webhook events are written behind a savepoint so that events that cannot be written for
// what they hold never stall the ledger; an events statement that merely waited too long (its
// bound passed, a lock held elsewhere) is no such event: the batch must fail and be written
// again, events included, not commit without them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { newId } from '../src/ids.js';
import { createLogger } from '../src/log.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import { UsageEvents } from '../src/usage-events/usage-events.js';
import { isolatedContext } from './support/context.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { seed, type SeededOrg } from './support/processes.js';
import { usageRecord } from './support/records.js';
import { addCatchAllEndpoint, messageData } from './support/webhook-messages.js';

const { env, db } = isolatedContext('ev-bound');
const WRITE_TIMEOUT_MS = 1_000;
let writerPool: DbPool;
let org: SeededOrg;

beforeAll(async () => {
  org = await seed(env, ['--wallet', '100.00']);
  await addCatchAllEndpoint(db, org.org_id);
  await db.query('UPDATE wallets SET low_balance_threshold = 5 WHERE org_id = $1', [org.org_id]);
  writerPool = createDbPool(TEST_DATABASE_URL, 2, WRITE_TIMEOUT_MS);
});

afterAll(async () => {
  await writerPool?.end();
});

describe("a batch whose events statement passes the writer's bound", () => {
  it('is written again with its events, never committed without them', async () => {
    const sink = new PostgresUsageSink(writerPool, {
      writer: new UsageEvents(),
      logger: createLogger('silent'),
    });
    // A charge of 2 that leaves 4: the wallet crosses its threshold of 5 (wallet.low_balance).
    const record = usageRecord(org.org_id, 2_000_000_000n, {
      walletCostNano: 2_000_000_000n,
      walletBalanceAfterNano: 4_000_000_000n,
    });
    const dedupeKey = `wallet.low_balance:${record.requestId}`;

    // Another transaction holds the event's dedupe key past the writer's bound, then gives up.
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query(
      `INSERT INTO webhook_messages (id, org_id, event_type, payload, dedupe_key)
       VALUES ($1, $2, 'wallet.low_balance', '{}', $3)`,
      [newId('msg'), org.org_id, dedupeKey],
    );
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        void holder
          .query('ROLLBACK')
          .then(() => holder.release())
          .then(resolve);
      }, WRITE_TIMEOUT_MS * 2),
    );

    // What the usage writer does: the batch again until it is written.
    let failures = 0;
    for (;;) {
      try {
        await sink.write([record]);
        break;
      } catch {
        failures += 1;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await released;

    const { rows } = await db.query(
      'SELECT 1 FROM usage_records WHERE request_id = $1::uuid AND org_id = $2',
      [record.requestId, org.org_id],
    );
    expect(rows).toHaveLength(1);
    const events = await messageData<{ balance: string }>(db, org.org_id, 'wallet.low_balance');
    expect(events).toEqual([expect.objectContaining({ balance: '4.000000000000' })]);
    expect(failures).toBeGreaterThan(0);
  });
});
