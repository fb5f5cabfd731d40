// A client that leaves while its vendor call still waits for a connection (the pool is at
// UPSTREAM_CONNECTIONS, or the vendor's connect hangs): the call ends at once, not when a
// connection frees up or the connect times out (~10 s). Its holds are released within a
// moment, it is charged nothing (`client_gone_before_dispatch`, docs/charging.md), the vendor
// never receives it, and the requests queued behind it are served as before (decision 316).
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { startClosingFront, type ClosingFront } from './support/closing-vendor.js';
import { isolatedContext } from './support/context.js';
import { vendorsAt } from './support/env.js';
import { bearer, postJson, postSse } from './support/http.js';
import {
  metricsUrl,
  runCliJson,
  seed,
  setProductUserCap,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';
import { eventually } from './support/services.js';
import { startUnacceptingVendor, type UnacceptingVendor } from './support/unaccepting-vendor.js';

const { prefix, env, db, redis } = isolatedContext('abort-queued');
const keys = createRedisKeys(prefix);
let vendor: RunningMockVendors;
/**
 * Counts the requests that reach the mock vendor behind it, and holds those marked
 * `front:hold=<name>` until the test releases them: a vendor that thinks until then.
 */
let front: ClosingFront;
/** One vendor connection: a second call waits for the first one's to free up. */
let pooled: GatewayProcess;
let unaccepting: UnacceptingVendor;
/** Vendors whose connects hang. */
let hung: GatewayProcess;

/**
 * Well under the old wait for a connect that hangs (its 10 s time-out), and long for a loaded
 * machine. Behind a full pool, the release is checked by what still holds the connection.
 */
const RELEASED_WITHIN_MS = 5_000;

/** Reads, at any later moment, whether `promise` has settled yet. */
function settledYet(promise: Promise<unknown>): () => boolean {
  let settled = false;
  const done = () => {
    settled = true;
  };
  promise.then(done, done);
  return () => settled;
}

beforeAll(async () => {
  vendor = await startMockVendors({ port: 0 });
  front = await startClosingFront({ mode: 'pass', upstreamPort: vendor.port });
  unaccepting = await startUnacceptingVendor();
  pooled = await startGateway({ ...env, ...vendorsAt(front.url), UPSTREAM_CONNECTIONS: '1' });
  hung = await startGateway({ ...env, ...vendorsAt(unaccepting.url) });
});

afterAll(async () => {
  await pooled?.stop();
  await hung?.stop();
  await front?.stop();
  await unaccepting?.stop();
  await vendor?.close();
});

interface Variant {
  readonly name: string;
  readonly path: string;
  readonly body: Record<string, unknown>;
}

const content = (text: string) => [{ role: 'user', content: `${text} mock:output_tokens=3` }];
const variants: Variant[] = [
  {
    name: 'chat completions, streamed',
    path: '/v1/chat/completions',
    body: { model: 'vendor_b/gpt-4o-mini', stream: true, messages: content('chat stream') },
  },
  {
    name: 'chat completions, JSON',
    path: '/v1/chat/completions',
    body: { model: 'vendor_b/gpt-4o-mini', messages: content('chat json') },
  },
  {
    name: 'messages, streamed',
    path: '/v1/messages',
    body: {
      model: 'vendor_a/claude-haiku-4-5',
      max_tokens: 50,
      stream: true,
      messages: content('messages stream'),
    },
  },
  {
    name: 'messages, JSON',
    path: '/v1/messages',
    body: { model: 'vendor_a/claude-haiku-4-5', max_tokens: 50, messages: content('messages') },
  },
];

/** The product user every request that leaves is made for (its allowance is held too). */
const LEAVER = 'leaver';

/** An org whose product user LEAVER has an enforced allowance: a request holds on it. */
async function seedWithAllowance(): Promise<SeededOrg> {
  const org = await seed(env);
  await setProductUserCap(env, org.app_id, LEAVER, '10', ['--credit-mode', 'enforce']);
  return org;
}

/** What is held on the org's product users' allowances this period (each account's `reserved`). */
async function userHolds(org: SeededOrg): Promise<string[]> {
  const accounts = await redis.keys(`${prefix}:{o:${org.org_id}}:pu:*:spend:*`);
  const spend = accounts.filter((key) => !key.endsWith(':resv'));
  return Promise.all(spend.map(async (key) => (await redis.hget(key, 'reserved')) ?? '0'));
}

/** Sends a request on a raw connection, to be closed mid-way (the client leaving). */
async function sendRequest(
  gateway: GatewayProcess,
  org: SeededOrg,
  variant: Variant,
): Promise<Socket> {
  const body = JSON.stringify(variant.body);
  const socket = connect(gateway.port, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write(
    `POST ${variant.path} HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n` +
      `authorization: Bearer ${org.api_key}\r\nx-gw-external-user-id: ${LEAVER}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return socket;
}

/** The org's one request held and not settled (its id), once admission placed the hold. */
async function heldRequest(org: SeededOrg): Promise<string> {
  return eventually(async () => {
    const held = await redis.hkeys(keys.inFlight(org.org_id));
    return held.length === 1 ? held[0] : undefined;
  });
}

/**
 * Whether the request's holds are gone: settled, and nothing held on the org's wallet or its
 * product user's allowance.
 */
async function released(org: SeededOrg, requestId: string): Promise<boolean> {
  const [inFlight, walletHeld, usersHeld] = await Promise.all([
    redis.hexists(keys.inFlight(org.org_id), requestId),
    redis.hget(keys.wallet(org.org_id), 'reserved'),
    userHolds(org),
  ]);
  return inFlight === 0 && (walletHeld ?? '0') === '0' && usersHeld.every((held) => held === '0');
}

/** Closes the client's connection and measures the time until its holds are released. */
async function leaveAndTimeRelease(
  socket: Socket,
  org: SeededOrg,
  requestId: string,
): Promise<number> {
  expect(await released(org, requestId)).toBe(false);
  expect((await userHolds(org)).filter((held) => held !== '0')).toHaveLength(1);
  const leftAtMs = Date.now();
  socket.destroy();
  for (;;) {
    if (await released(org, requestId)) return Date.now() - leftAtMs;
    if (Date.now() - leftAtMs > 15_000) throw new Error('the holds were not released in 15 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function expectChargedNothing(requestId: string): Promise<void> {
  const row = await ledgerRow(
    db,
    requestId,
    'status, end_reason, upstream_status, input_tokens, output_tokens, sell_cost::text',
  );
  expect(row).toEqual({
    status: 'client_aborted',
    end_reason: 'client_gone_before_dispatch',
    upstream_status: null,
    input_tokens: 0,
    output_tokens: 0,
    sell_cost: '0.000000000000',
  });
}

const requestsReached = async (): Promise<number> => (await front.stats()).requests;
/** The gateway's vendor calls waiting for a connection, as its metrics report them. */
const callsWaiting = async (gateway: GatewayProcess): Promise<number> => {
  const scrape = await (await fetch(metricsUrl(gateway))).text();
  const value = /^gw_upstream_calls_waiting (\d+)$/m.exec(scrape)?.[1];
  if (value === undefined) throw new Error('no gw_upstream_calls_waiting in the scrape');
  return Number(value);
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a client gone while its call waits for a vendor connection', () => {
  it('behind a full pool: each protocol, streamed or not, ends at once and charges nothing; the queue goes on', async () => {
    const occupierOrg = await seed(env);
    const orgs = await Promise.all(variants.map(() => seedWithAllowance()));
    const reachedBefore = await requestsReached();
    // Holds the only vendor connection until released (the vendor has not answered yet).
    const occupier = postSse(
      `${pooled.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        stream: true,
        messages: content('occupy front:hold=full-pool-occupier'),
      },
      bearer(occupierOrg.api_key),
    );
    const occupierDone = settledYet(occupier);
    await eventually(async () =>
      (await requestsReached()) === reachedBefore + 1 ? true : undefined,
    );

    const sockets = await Promise.all(
      variants.map((variant, index) => sendRequest(pooled, orgs[index]!, variant)),
    );
    const requestIds = await Promise.all(orgs.map((org) => heldRequest(org)));
    // each call is queued behind the occupier's connection
    await eventually(async () =>
      (await callsWaiting(pooled)) === variants.length ? true : undefined,
    );

    // released while the occupier still holds the connection, not once it frees up
    const occupierStillThere = await Promise.all(
      variants.map((_, index) =>
        leaveAndTimeRelease(sockets[index]!, orgs[index]!, requestIds[index]!).then(
          () => !occupierDone(),
        ),
      ),
    );
    for (const [index, stillThere] of occupierStillThere.entries()) {
      expect(stillThere, variants[index]!.name).toBe(true);
    }
    for (const requestId of requestIds) await expectChargedNothing(requestId);
    // Out of the gateway's line for the vendor's connections, not only settled (decision 320).
    expect(await callsWaiting(pooled)).toBe(0);

    // A request queued behind the same connection after they left is served once it frees up.
    const queuedOrg = await seed(env);
    const queued = postJson<{ choices: unknown[] }>(
      `${pooled.url}/v1/chat/completions`,
      { model: 'vendor_b/gpt-4o-mini', messages: content('queued behind') },
      bearer(queuedOrg.api_key),
    );
    await eventually(async () => ((await callsWaiting(pooled)) === 1 ? true : undefined));
    expect(occupierDone()).toBe(false);
    front.release('full-pool-occupier');
    const [occupied, served] = await Promise.all([occupier, queued]);
    expect(occupied.data.at(-1)).toBe('[DONE]');
    expect(served.status).toBe(200);
    expect(served.body.choices).toHaveLength(1);
    // The vendor got the occupier and the queued request, none of the four that left.
    await sleep(200);
    expect(await requestsReached()).toBe(reachedBefore + 2);
    const wallet = await runCliJson<{ balance: string }>(
      ['wallet', 'show', '--org-id', orgs[0]!.org_id],
      env,
    );
    expect(wallet.balance).toBe('100.000000000000');
  }, 30_000);

  it('between two failover attempts: the next credential is not tried, nothing is charged', async () => {
    const org = await seedWithAllowance();
    for (const [name, secret, priority] of [
      ['first', 'mock-429-first', '1'],
      ['second', 'mock-ok-second', '2'],
    ] as const) {
      await runCliJson(
        [
          'credentials',
          'add',
          '--org-id',
          org.org_id,
          '--provider',
          'vendor_b',
          '--name',
          name,
          '--secret-stdin',
          '--app-connection-id',
          org.app_connection_id,
          '--priority',
          priority,
        ],
        env,
        { stdin: secret },
      );
    }
    const otherOrg = await seed(env);
    const reachedBefore = await requestsReached();
    /** A request the vendor answers once the test releases `name`. */
    const long = (text: string, name: string) =>
      postSse(
        `${pooled.url}/v1/chat/completions`,
        {
          model: 'vendor_b/gpt-4o-mini',
          stream: true,
          messages: content(`${text} front:hold=${name}`),
        },
        bearer(otherOrg.api_key),
      );
    const occupier = long('occupy', 'failover-occupier');
    await eventually(async () =>
      (await requestsReached()) === reachedBefore + 1 ? true : undefined,
    );
    // The first attempt (the rate-limited credential) waits for the connection; a long
    // request queues behind it and takes the connection as the 429 frees it, so the second
    // attempt waits for the connection in turn.
    const socket = await sendRequest(pooled, org, variants[0]!);
    const requestId = await heldRequest(org);
    await eventually(async () => ((await callsWaiting(pooled)) === 1 ? true : undefined));
    const next = long('next in line', 'failover-next');
    const nextDone = settledYet(next);
    await eventually(async () => ((await callsWaiting(pooled)) === 2 ? true : undefined));
    front.release('failover-occupier');
    await eventually(async () =>
      Object.keys(await redis.hgetall(keys.credentialCooldowns(org.org_id))).length === 1
        ? true
        : undefined,
    );
    // occupier, first attempt, next; then the second attempt is queued behind next
    await eventually(async () =>
      (await requestsReached()) === reachedBefore + 3 ? true : undefined,
    );
    await eventually(async () => ((await callsWaiting(pooled)) === 1 ? true : undefined));
    expect(await requestsReached()).toBe(reachedBefore + 3);

    // released while next still holds the connection the second attempt waits for
    await leaveAndTimeRelease(socket, org, requestId);
    expect(nextDone()).toBe(false);
    await expectChargedNothing(requestId);
    front.release('failover-next');
    const [occupied, followed] = await Promise.all([occupier, next]);
    expect(occupied.data.at(-1)).toBe('[DONE]');
    expect(followed.data.at(-1)).toBe('[DONE]');
    await sleep(200);
    // The second credential's attempt never reached the vendor.
    expect(await requestsReached()).toBe(reachedBefore + 3);
  }, 45_000);

  it('on a connect that hangs: ends at once, charges nothing, and nothing reaches the vendor later', async () => {
    const chosen = [variants[0]!, variants[3]!];
    const orgs = await Promise.all(chosen.map(() => seedWithAllowance()));
    const sockets = await Promise.all(
      chosen.map((variant, index) => sendRequest(hung, orgs[index]!, variant)),
    );
    const requestIds = await Promise.all(orgs.map((org) => heldRequest(org)));
    await sleep(200);
    const releaseMs = await Promise.all(
      chosen.map((_, index) =>
        leaveAndTimeRelease(sockets[index]!, orgs[index]!, requestIds[index]!),
      ),
    );
    for (const ms of releaseMs) expect(ms).toBeLessThan(RELEASED_WITHIN_MS);
    for (const requestId of requestIds) await expectChargedNothing(requestId);

    // The vendor accepts again: whatever connection the gateway still had under way opens,
    // and no request goes on it.
    unaccepting.release();
    // The gateway's two connects open (at their next SYN retry).
    await eventually(
      async () => ((await unaccepting.stats()).accepted >= chosen.length ? true : undefined),
      8_000,
    );
    await sleep(300);
    expect((await unaccepting.stats()).received).toBe(0);
  }, 30_000);
});
