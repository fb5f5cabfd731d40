// A dashboard wallet top-up whose Redis step failed after its commit answered 500, and its
// retry with the same Idempotency-Key answered 409 "committed its change, then failed before
// answering": the user who retries a top-up expects the top-up's answer, never a second top-up
// (decision 542). Now the retry finishes the first request: it adds the top-up to the live
// wallet (once: decision 521's mark), answers what the route answers on success, and keeps that
// answer for the key. Served in-process by the real HTTP adapter and router over the real
// Redis and Postgres, the top-up's Redis step after its commit sent on a closed connection on
// the first "instance"; the member's session is taken as checked (the caller is not what is
// tested here). `gw wallet topup` has no key to retry with: run again, it tops up again, so
// the command now says that the top-up was recorded and what adds it, and finishes it itself
// when the wallet's read after it works.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../src/accounts/users.js';
import { createOrganization } from '../src/admin/provisioning.js';
import type { WalletService } from '../src/billing/wallets.js';
import { CLI_ACTOR } from '../src/cli/context.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import type { HttpServer } from '../src/http/server.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { createAppRoute } from '../src/routes/dashboard/apps/create.js';
import { topUpWalletRoute } from '../src/routes/dashboard/wallet/top-up.js';
import { hookedPool } from './support/interleave.js';
import { serveAsOwner } from './support/owner-routes.js';
import { TEST_DATABASE_URL, uniquePrefix } from './support/env.js';
import { deletePrefix, testRedis } from './support/services.js';
import { gwWallet, gwWalletError, testWallets } from './support/wallet-cli.js';

const prefix = uniquePrefix('topupidem');
const redis = testRedis();
const unreachable = testRedis();
const db = createDbPool(TEST_DATABASE_URL, 4);
const keys = createRedisKeys(prefix);
const scripts = defineScripts(redis);
const layer = (overrides: Partial<ReturnType<typeof defineScripts>> = {}): WalletService =>
  testWallets({ db, redis, keys, scripts }, overrides);
const wallets = layer();
/** An instance that loses Redis between a top-up's commit and its Redis step. */
const cutOff = layer({ walletTopUpApply: defineScripts(unreachable).walletTopUpApply });

const FUNDED = 1_000_000n;

let userId: string;
const servers: HttpServer[] = [];

/** The dashboard's top-up (and app create) served with `walletService`, on a port of its own. */
async function instance(walletService: WalletService, pool: DbPool = db): Promise<string> {
  const { url, server } = await serveAsOwner(pool, userId, [topUpWalletRoute, createAppRoute], {
    db: pool,
    wallets: walletService,
    dashboardSettings: { walletTopUp: true },
  });
  servers.push(server);
  return url;
}

let failing: string;
let healthy: string;
/** An instance whose writes keeping a key's answer never reach Postgres (stopped before them). */
let stopping: string;

beforeAll(async () => {
  await unreachable.quit();
  const created = await createUser(db, {
    email: `${prefix}@example.com`,
    password: 'a password long enough 1',
  });
  userId = created.user_id;
  [failing, healthy] = [await instance(cutOff), await instance(wallets)];
  stopping = await instance(
    wallets,
    hookedPool(db, [
      {
        match: /^UPDATE idempotency_keys SET state = 'done'/,
        every: true,
        step: () => Promise.reject(new Error('the gateway stopped')),
      },
    ]),
  );
});

afterAll(async () => {
  for (const server of servers) server.stopAccepting();
  await deletePrefix(redis, prefix);
  await redis.quit();
  await db.end();
});

interface Answer {
  status: number;
  replayed: string | null;
  text: string;
  body: {
    transaction?: { id: string; kind: string; amount: string };
    wallet?: { balance: string; available: string };
    error?: { code: string; message: string };
  };
}

async function post(base: string, path: string, body: unknown, key: string): Promise<Answer> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    text,
    body: JSON.parse(text) as Answer['body'],
  };
}

async function fundedOrg(name: string): Promise<string> {
  const orgId = await createOrganization(db, `${name} ${prefix}`);
  await wallets.topUp(orgId, FUNDED, CLI_ACTOR);
  return orgId;
}

async function topUpRows(orgId: string): Promise<Array<{ id: string; amount: string }>> {
  const { rows } = await db.query<{ id: string; amount: string }>(
    `SELECT id::text, amount::text FROM wallet_transactions
      WHERE org_id = $1 AND kind = 'topup' ORDER BY id`,
    [orgId],
  );
  return rows;
}

const topUpPath = (orgId: string) => `/dashboard/api/orgs/${orgId}/wallet/top-ups`;
const live = (orgId: string) => redis.hget(keys.wallet(orgId), 'balance');

describe('a dashboard top-up whose Redis step failed after its commit, retried with its key', () => {
  it("answers the top-up's own answer, with the top-up in the wallet, once, and keeps it", async () => {
    const orgId = await fundedOrg('resumed');
    const key = `topup-${prefix}-1`;
    const first = await post(failing, topUpPath(orgId), { amount: '0.00025' }, key);
    expect(first.status).toBe(503);
    const [, made] = await topUpRows(orgId);
    expect(made).toMatchObject({ amount: '0.000250000000' });
    expect(await live(orgId)).toBe(String(FUNDED));

    const retry = await post(healthy, topUpPath(orgId), { amount: '0.00025' }, key);
    expect(retry.status).toBe(201);
    expect(retry.replayed).toBe('true');
    expect(retry.body).toMatchObject({
      transaction: { id: made!.id, kind: 'topup', amount: '0.000250000000' },
      wallet: { balance: '0.001250000000', available: '0.001250000000' },
    });
    expect(await topUpRows(orgId)).toHaveLength(2);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(0);

    // Kept: a later retry replays it byte for byte, on either instance, adding nothing.
    for (const base of [healthy, failing]) {
      const again = await post(base, topUpPath(orgId), { amount: '0.00025' }, key);
      expect(again.status).toBe(201);
      expect(again.replayed).toBe('true');
      expect(again.text).toBe(retry.text);
    }
    expect(await topUpRows(orgId)).toHaveLength(2);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));
  });

  it('while Redis still fails, fails again, adding nothing; once it is back, answers', async () => {
    const orgId = await fundedOrg('resumed-later');
    const key = `topup-${prefix}-2`;
    expect((await post(failing, topUpPath(orgId), { amount: '0.00025' }, key)).status).toBe(503);
    // The retry reaches an instance whose Redis step fails too: the top-up is still owed.
    expect((await post(failing, topUpPath(orgId), { amount: '0.00025' }, key)).status).toBe(503);
    expect(await live(orgId)).toBe(String(FUNDED));
    expect(await redis.hlen(keys.walletPendingTopUps(orgId))).toBe(1);
    const retry = await post(healthy, topUpPath(orgId), { amount: '0.00025' }, key);
    expect(retry.status).toBe(201);
    expect(retry.body.wallet).toMatchObject({ balance: '0.001250000000' });
    expect(await topUpRows(orgId)).toHaveLength(2);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));
  });

  it('whose gateway stopped after its commit, before keeping its answer, is answered by the retry once the lease lapsed (decision 576)', async () => {
    const orgId = await fundedOrg('stopped');
    const key = `topup-${prefix}-stopped`;
    // Its answer went out; the write keeping it for the key did not: the key is left running,
    // committed and named, and its lease lapses (its ten seconds taken off the row here).
    const first = await post(stopping, topUpPath(orgId), { amount: '0.00025' }, key);
    expect(first.status).toBe(201);
    await db.query(
      `UPDATE idempotency_keys
          SET created_at = created_at - interval '11 seconds',
              lease_expires_at = lease_expires_at - interval '11 seconds'
        WHERE org_id = $1 AND key = $2`,
      [orgId, key],
    );
    const retry = await post(healthy, topUpPath(orgId), { amount: '0.00025' }, key);
    expect(retry.status).toBe(201);
    expect(retry.replayed).toBe('true');
    expect(retry.body.transaction).toEqual(first.body.transaction);
    expect(retry.body.wallet).toMatchObject({ balance: '0.001250000000' });
    const again = await post(healthy, topUpPath(orgId), { amount: '0.00025' }, key);
    expect(again.text).toBe(retry.text);
    expect(await topUpRows(orgId)).toHaveLength(2);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));
  });

  it('the key with another amount is still refused as reused, adding nothing', async () => {
    const orgId = await fundedOrg('resumed-reused');
    const key = `topup-${prefix}-3`;
    expect((await post(failing, topUpPath(orgId), { amount: '0.00025' }, key)).status).toBe(503);
    const other = await post(healthy, topUpPath(orgId), { amount: '0.0005' }, key);
    expect(other.status).toBe(409);
    expect(other.body.error?.code).toBe('gw_idempotency_key_reused');
    expect(await topUpRows(orgId)).toHaveLength(2);
    // The wallet's read still adds the top-up (decision 521).
    expect((await wallets.liveBalance(orgId)).balanceNano).toBe(FUNDED + 250_000n);
  });
});

describe('another create that committed, then failed before answering', () => {
  it('is still answered 409 "committed", never run again (it declares no way to finish)', async () => {
    const orgId = await fundedOrg('app-failed');
    const key = `app-${prefix}`;
    const name = `app ${prefix}`;
    const made = await post(healthy, `/dashboard/api/orgs/${orgId}/apps`, { name }, key);
    expect(made.status).toBe(201);
    // As a create whose answer could not be made after its commit leaves its key.
    await db.query(
      `UPDATE idempotency_keys SET state = 'failed', status = NULL, answer_clear = NULL,
              answer_clear_text = NULL
        WHERE org_id = $1 AND key = $2`,
      [orgId, key],
    );
    const retry = await post(healthy, `/dashboard/api/orgs/${orgId}/apps`, { name }, key);
    expect(retry.status).toBe(409);
    expect(retry.body.error?.message).toBe(
      'the first request with this Idempotency-Key committed its change, then failed before answering; check what it made, then use a new key',
    );
    const { rows } = await db.query('SELECT 1 FROM apps WHERE org_id = $1 AND name = $2', [
      orgId,
      name,
    ]);
    expect(rows).toHaveLength(1);
  });
});

describe('gw wallet topup whose Redis step failed after its commit', () => {
  it('says the top-up was recorded and is added at the next read; that read adds it once', async () => {
    const orgId = await fundedOrg('cli');
    const topUp = ['topup', '--org-id', orgId, '--amount', '0.00025'];
    const failed = await gwWalletError(db, cutOff, topUp);
    const [, made] = await topUpRows(orgId);
    expect(made).toMatchObject({ amount: '0.000250000000' });
    expect(failed.code).toBe('gw_unavailable');
    expect(failed.message).toBe(
      `the top-up was recorded (wallet transaction ${made!.id}), but the wallet could not be read after it: the live balance gets the top-up at the wallet's next read (gw wallet show --org-id ${orgId}) or by gw reconcile, once; do not top it up again`,
    );
    const shown = JSON.parse(await gwWallet(db, wallets, ['show', '--org-id', orgId])) as {
      balance: string;
    };
    expect(shown.balance).toBe('0.001250000000');
    expect(await topUpRows(orgId)).toHaveLength(2);
    expect(await live(orgId)).toBe(String(FUNDED + 250_000n));
  });
});
