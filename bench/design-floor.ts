// The design floor: the passthrough plus the I/O that DESIGN.md's request path makes every
// request pay, and no other logic. Per request: parse the JSON body, reserve.lua (one org
// wallet), the upstream call, parse the vendor's JSON for its usage, settle.lua (the usage
// record into the org's stream), then the answer; the usage writer thread drains the stream
// into Postgres as in the gateway. No auth, attribution, caps, token count, validation,
// translation or metrics: what the full path costs beyond this floor is the gateway's own
// logic, and what this floor costs beyond the passthrough is the design's two round trips and
// its ledger. Non-streaming only.
// Run: UPSTREAM_URL=… REDIS_URL=… (or REDIS_CLUSTER_NODES=…) DATABASE_URL=… REDIS_KEY_PREFIX=… PORT=0 node dist/bench/design-floor.js
import { createMoneyLayer } from '../src/billing/compose.js';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { Pool } from 'undici';
import type { RequestAccounts } from '../src/billing/budget-store.js';
import { createDbPool } from '../src/db/pool.js';
import { newRequestId } from '../src/ids.js';
import { createLogger } from '../src/log.js';
import { UsageWriterThread } from '../src/ledger/usage-writer-thread.js';
import { connectRedis } from '../src/redis/connect.js';
import { redisTarget } from '../src/redis/target.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { benchUsageRecord } from './bench-records.js';
import { listenOnLoopback, readBody, uws } from './uws-target.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`design-floor: ${name} is required`);
  return value;
};
const upstream = new URL(env('UPSTREAM_URL'));
const target = redisTarget({
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  REDIS_CLUSTER_NODES: process.env.REDIS_CLUSTER_NODES,
});
const databaseUrl = env('DATABASE_URL');
const keyPrefix = env('REDIS_KEY_PREFIX');

const logger = createLogger('warn', 'design-floor');
const redis = connectRedis(target, { maxRetriesPerRequest: 2 });
const db = createDbPool(databaseUrl, 2);
const keys = createRedisKeys(keyPrefix);
const scripts = defineScripts(redis);
const { budget } = createMoneyLayer({
  db,
  redis,
  keys,
  scripts,
  reservationTtlMs: 600_000,
});
const orgId = 'org_design_floor';
const wallet = keys.wallet(orgId);
await scripts.accountLoad(
  { account: wallet, expiries: keys.holdExpiries(wallet) },
  { field: 'balance', amount_nano: String(10n ** 15n), expire_at_ms: '' },
);
const accounts: RequestAccounts = {
  orgId,
  appConnectionId: 'conn_design_floor',
  orgCap: null,
  connectionCap: null,
  user: null,
  walletPays: true,
  credentials: null,
};
const HOLD_NANO = 1_000_000n;

new UsageWriterThread(
  {
    redis: target,
    databaseUrl,
    writeTimeoutMs: 60_000,
    keyPrefix,
    logLevel: 'warn',
    options: {
      consumerName: `floor-${randomUUID().slice(0, 8)}`,
      batchMaxRows: 500,
      flushIntervalMs: 50,
      claimIdleMs: 30_000,
    },
  },
  {
    usageRowsWritten: { inc: () => undefined },
    usageWriteFailures: { inc: () => undefined },
    usageDeadLetters: { inc: () => undefined },
  },
  logger,
).start();

const pool = new Pool(upstream.origin, {
  connections: 256,
  pipelining: 1,
  keepAliveTimeout: 30_000,
});
const statusLine = (code: number): string => `${code} ${STATUS_CODES[code] ?? ''}`;

async function serve(
  res: import('uWebSockets.js').HttpResponse,
  headers: Record<string, string>,
  body: Buffer,
  aborted: () => boolean,
): Promise<void> {
  JSON.parse(body.toString('utf8'));
  const requestId = newRequestId();
  // The design keeps a draft of each held request beside its holds (what records it if this
  // instance dies before settling it): the floor pays for writing it as the gateway does.
  const lostRecord = benchUsageRecord({
    requestId,
    orgId,
    appConnectionId: accounts.appConnectionId,
    productUserId: null,
    inputTokens: 0,
    outputTokens: 0,
    costNano: 0n,
    heldNano: HOLD_NANO,
  });
  const held = await budget.reserve({ requestId, accounts, amountNano: HOLD_NANO, lostRecord });
  if (held.kind !== 'held') throw new Error(`design-floor: reserve said ${held.kind}`);
  const answer = await pool.request({
    method: 'POST',
    path: '/v1/chat/completions',
    headers,
    body,
  });
  const bytes = Buffer.from(await answer.body.arrayBuffer());
  const payload = JSON.parse(bytes.toString('utf8')) as { usage?: Record<string, number> };
  const inputTokens = payload.usage?.prompt_tokens ?? 0;
  const outputTokens = payload.usage?.completion_tokens ?? 0;
  const record = benchUsageRecord({
    requestId,
    orgId,
    appConnectionId: accounts.appConnectionId,
    productUserId: null,
    inputTokens,
    outputTokens,
    costNano: BigInt(inputTokens + outputTokens) * 100n,
    heldNano: HOLD_NANO,
  });
  await budget.settle(record, accounts);
  if (aborted()) return;
  res.cork(() => {
    res.writeStatus(statusLine(answer.statusCode));
    res.writeHeader('content-type', 'application/json');
    res.end(bytes);
  });
}

const app = uws.App().post('/v1/chat/completions', (res, req) => {
  const headers: Record<string, string> = {};
  req.forEach((name, value) => {
    if (name === 'authorization' || name === 'content-type') headers[name] = value;
  });
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  readBody(res, (body) => {
    serve(res, headers, body, () => aborted).catch((error: unknown) => {
      logger.error({ err: error }, 'design-floor request failed');
      if (!aborted) res.cork(() => res.writeStatus('502 Bad Gateway').end());
    });
  });
});
listenOnLoopback(app, 'design-floor');
