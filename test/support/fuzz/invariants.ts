// The state the fuzz run must leave behind: no holds, a wallet equal to its ledger, no record
// charged past its hold, and the gateway's memory back near where it started.
import { readFile } from 'node:fs/promises';
import type { RedisClient } from '../../../src/redis/connect.js';
import type pg from 'pg';
import { numericToNano } from '../../../src/money.js';
import { createRedisKeys } from '../../../src/redis/keys.js';

async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found;
}

/** Every hold still placed on the org's accounts: '<account key> <members>/<reserved>'. */
export async function heldAccounts(
  redis: RedisClient,
  prefix: string,
  orgId: string,
): Promise<string[]> {
  const orgKeys = await scanKeys(redis, `${prefix}:{o:${orgId}}:*`);
  const held: string[] = [];
  for (const key of orgKeys.sort()) {
    const type = await redis.type(key);
    const name = key.slice(prefix.length + 1);
    if (type === 'zset' && key.endsWith(':resv')) {
      const members = await redis.zcard(key);
      if (members > 0) held.push(`${name}: ${members} hold(s) in the expiry zset`);
    } else if (type === 'hash') {
      const reserved = await redis.hget(key, 'reserved');
      if (reserved !== null && reserved !== '0') held.push(`${name}: reserved=${reserved}`);
    }
  }
  return held;
}

/** Money fields in the org's Redis hashes that are not exact integers of nano-units. */
export async function inexactAmounts(
  redis: RedisClient,
  prefix: string,
  orgId: string,
): Promise<string[]> {
  const orgKeys = await scanKeys(redis, `${prefix}:{o:${orgId}}:*`);
  const inexact: string[] = [];
  for (const key of orgKeys.sort()) {
    if ((await redis.type(key)) !== 'hash') continue;
    for (const [name, value] of Object.entries(await redis.hgetall(key))) {
      const money = ['balance', 'reserved', 'spent'].includes(name) || name.startsWith('g:');
      if (money && !/^-?\d+$/.test(value))
        inexact.push(`${key.slice(prefix.length + 1)} ${name}=${value}`);
    }
  }
  return inexact;
}

/** Usage records settled in Redis and not yet written to Postgres. */
export async function unwrittenUsage(
  redis: RedisClient,
  prefix: string,
  orgId: string,
): Promise<number> {
  return redis.xlen(createRedisKeys(prefix).usageStream(orgId));
}

export interface WalletCheck {
  readonly liveBalanceNano: bigint | undefined;
  readonly fundedNano: bigint;
  readonly walletCostNano: bigint;
  readonly records: number;
}

export async function walletCheck(
  redis: RedisClient,
  db: pg.Pool,
  prefix: string,
  orgId: string,
): Promise<WalletCheck> {
  const live = await redis.hget(createRedisKeys(prefix).wallet(orgId), 'balance');
  const { rows } = await db.query<{ funded: string; spent: string; records: string }>(
    `SELECT (SELECT COALESCE(sum(amount), 0) FROM wallet_transactions WHERE org_id = $1)::text AS funded,
            (SELECT COALESCE(sum(wallet_cost), 0) FROM usage_records WHERE org_id = $1)::text AS spent,
            (SELECT count(*) FROM usage_records WHERE org_id = $1)::text AS records`,
    [orgId],
  );
  const row = rows[0]!;
  return {
    liveBalanceNano: live === null ? undefined : BigInt(live),
    fundedNano: numericToNano(row.funded),
    walletCostNano: numericToNano(row.spent),
    records: Number(row.records),
  };
}

/** Records whose charge exceeds what was held for them (n > 1 and the like), by request id. */
export async function chargedPastHold(db: pg.Pool, orgId: string): Promise<Map<string, string>> {
  const { rows } = await db.query<{ request_id: string; line: string }>(
    `SELECT request_id::text,
            concat(model, ' ', status, ' stream=', stream, ' in=', input_tokens, ' out=',
                   output_tokens, ' charged=', sell_cost::text, ' held=', reserved_amount::text) AS line
       FROM usage_records
      WHERE org_id = $1 AND sell_cost > reserved_amount
      ORDER BY created_at LIMIT 20`,
    [orgId],
  );
  return new Map(rows.map((row) => [row.request_id, row.line]));
}

/** Resident memory of a process, in bytes (Linux /proc). */
export async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN);
  return kib * 1024;
}

/** The gateway's V8 heap in use and its external memory, from its own /metrics, in bytes. */
export function heapFromMetrics(metricsText: string): { heapUsed: number; external: number } {
  const read = (name: string): number =>
    Number(new RegExp(`^${name} (\\S+)`, 'm').exec(metricsText)?.[1] ?? NaN);
  return {
    heapUsed: read('nodejs_heap_size_used_bytes'),
    external: read('nodejs_external_memory_bytes'),
  };
}
