// A dashboard top-up whose Redis step after its commit is refused by Redis itself (here: a
// Redis full under `maxmemory` with `noeviction`, the policy money data wants; a replica left
// read-only by a failover or a Redis busy with a long script answer alike) answered 500
// `gw_internal_error`: the refusal is no error the gateway counts as a dependency down. The
// dashboard ends a create at any answer but 0/502/503/504 (web/dashboard/src/api.ts), so the
// admin's next click sent a new Idempotency-Key and topped the wallet up a second time, though
// the first was recorded and only waited for the wallet's next read (decisions 521, 542). A
// top-up that committed now answers 503 `gw_unavailable` whatever failed after its commit,
// saying it was recorded: the retry with the same key finishes it (decision 554). A private
// redis-server, since the shared one is never filled up.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../src/accounts/users.js';
import { createOrganization } from '../src/admin/provisioning.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import type { WalletService } from '../src/billing/wallets.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { createDbPool } from '../src/db/pool.js';
import type { HttpServer } from '../src/http/server.js';
import { connectRedis, type RedisClient } from '../src/redis/connect.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts, type RedisScripts } from '../src/redis/scripts.js';
import { topUpWalletRoute } from '../src/routes/dashboard/wallet/top-up.js';
import { serveAsOwner } from './support/owner-routes.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { freePort } from './support/services.js';

const dir = mkdtempSync(path.join(tmpdir(), 'gw-redis-refusal-'));
const prefix = uniquePrefix('topuprefused');
const keys = createRedisKeys(prefix);
const db = createDbPool(TEST_DATABASE_URL, 4);
let server: ChildProcess;
/** The operator's connection: fills Redis up and frees it. */
let direct: Redis;
let redis: RedisClient;
let base: string;
let userId: string;
let http: HttpServer;
let wallets: WalletService;

const killServer = (): void => {
  try {
    server?.kill('SIGKILL');
  } catch {
    // gone already
  }
};
process.once('exit', killServer);

/** Redis refuses every write from now on, as one past its `maxmemory` does. */
const full = async (): Promise<void> => {
  await direct.config('SET', 'maxmemory', '1');
};
const roomAgain = async (): Promise<void> => {
  await direct.config('SET', 'maxmemory', '0');
};

beforeAll(async () => {
  const port = await freePort();
  server = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--maxmemory-policy',
      'noeviction',
    ],
    { stdio: 'ignore' },
  );
  direct = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null });
  direct.on('error', () => undefined);
  await direct.ping();
  // The gateway's client, as src/composition/redis.ts builds it.
  redis = connectRedis(
    { kind: 'single', url: `redis://127.0.0.1:${port}` },
    { maxRetriesPerRequest: 2, commandTimeoutMs: 2_000 },
  );
  const scripts = defineScripts(redis);
  wallets = createMoneyLayer({
    db,
    redis,
    keys,
    scripts: {
      ...scripts,
      // Redis fills up between the top-up's commit and its Redis step.
      walletTopUpApply: async (...call: Parameters<RedisScripts['walletTopUpApply']>) => {
        if (fillBeforeApply) {
          fillBeforeApply = false;
          await full();
        }
        return scripts.walletTopUpApply(...call);
      },
    },
    reservationTtlMs: 60_000,
  }).wallets;
  const created = await createUser(db, {
    email: `${prefix}@example.com`,
    password: 'a password long enough 1',
  });
  userId = created.user_id;
  const served = await serveAsOwner(db, userId, [topUpWalletRoute], {
    db,
    wallets,
    dashboardSettings: { walletTopUp: true },
  });
  http = served.server;
  base = served.url;
});

afterAll(async () => {
  http?.stopAccepting();
  redis?.disconnect();
  direct?.disconnect();
  killServer();
  rmSync(dir, { recursive: true, force: true });
  await db.end();
});

let fillBeforeApply = false;
const FUNDED = 1_000_000n;

interface Answer {
  status: number;
  retryAfter: string | null;
  replayed: string | null;
  body: {
    transaction?: { id: string; kind: string; amount: string };
    wallet?: { balance: string };
    error?: { code: string; message: string };
  };
}

async function topUp(orgId: string, amount: string, key: string): Promise<Answer> {
  const response = await fetch(`${base}/dashboard/api/orgs/${orgId}/wallet/top-ups`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ amount }),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    replayed: response.headers.get('idempotent-replayed'),
    body: (await response.json()) as Answer['body'],
  };
}

async function topUpRows(orgId: string): Promise<Array<{ id: string; amount: string }>> {
  const { rows } = await db.query<{ id: string; amount: string }>(
    `SELECT id::text, amount::text FROM wallet_transactions
      WHERE org_id = $1 AND kind = 'topup' ORDER BY id`,
    [orgId],
  );
  return rows;
}

describe('a dashboard top-up whose Redis step Redis refused after its commit', () => {
  it('answers 503, saying it was recorded; the retry with its key answers it, made once', async () => {
    const orgId = await createOrganization(db, `refused ${prefix}`);
    await wallets.topUp(orgId, FUNDED, CLI_ACTOR);
    const key = `topup-${prefix}`;
    fillBeforeApply = true;
    try {
      const first = await topUp(orgId, '0.00025', key);
      const [, made] = await topUpRows(orgId);
      expect(made).toMatchObject({ amount: '0.000250000000' });
      // An answer the dashboard keeps the key for (outcome unknown: retry it), never a 500.
      expect(first.status).toBe(503);
      expect(first.retryAfter).toBe('1');
      expect(first.body.error).toEqual({
        code: 'gw_unavailable',
        message: `the top-up was recorded (wallet transaction ${made!.id}), but the wallet could not be read after it; send the same request again with the same Idempotency-Key for its answer, and do not top up again`,
      });
      // Still full: the retry finishes nothing, and says the same.
      const again = await topUp(orgId, '0.00025', key);
      expect(again.status).toBe(503);
      expect(again.body.error?.code).toBe('gw_unavailable');
    } finally {
      await roomAgain();
    }
    const retry = await topUp(orgId, '0.00025', key);
    expect(retry.status).toBe(201);
    expect(retry.replayed).toBe('true');
    expect(retry.body).toMatchObject({
      transaction: { kind: 'topup', amount: '0.000250000000' },
      wallet: { balance: '0.001250000000' },
    });
    expect(await topUpRows(orgId)).toHaveLength(2);
    expect(await redis.hget(keys.wallet(orgId), 'balance')).toBe(String(FUNDED + 250_000n));
  });
});
