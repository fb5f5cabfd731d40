// A rolling deploy under streaming load: SIGTERM with streams in flight. New connections are
// refused at once; streams that end within SHUTDOWN_GRACE_MS complete and are settled
// `completed`; the ones that outlast it are cut at the grace — the client gets the protocol's
// error event and the end of its stream, the vendor call is abandoned, the hold released, and
// the request is settled `incomplete` / `gateway_shutdown`, charged for what it was relayed —
// and every usage record is in Postgres before the process exits 0.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisKeys } from '../src/redis/keys.js';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { isolatedContext } from './support/context.js';
import { vendorsAt } from './support/env.js';
import { bearer, postJson } from './support/http.js';
import { runCliJson, seed, startGatewayProcess, type SeededOrg } from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db, redis, prefix } = isolatedContext('drain');
const keys = createRedisKeys(prefix);
const GRACE_MS = 6000;
/**
 * The external vendor's pace: an 80-token answer takes 4 s (in flight at the signal, ended
 * within the grace, with room for a loaded machine on both sides), a 400-token one 20 s.
 */
const TOKENS_PER_SECOND = 20;
let org: SeededOrg;
let vendor: RunningMockVendors;

// vendor_b/gpt-4o-mini sells at $0.15 / M input and $0.60 / M output tokens.
const INPUT_NANO_PER_TOKEN = 150n;
const OUTPUT_NANO_PER_TOKEN = 600n;

beforeAll(async () => {
  // The vendor is its own server, as in production: it does not go away with the gateway.
  [org, vendor] = await Promise.all([
    seed(env),
    startMockVendors({ host: '127.0.0.1', port: 0, tokensPerSecond: TOKENS_PER_SECOND }),
  ]);
});

afterAll(async () => {
  await vendor?.close();
});

interface StreamRead {
  readonly status: number;
  readonly requestId: string;
  /** Each event's data, in order. */
  readonly data: string[];
  /** Each event's `event:` name ('' when it has none). */
  readonly names: string[];
  /** True when the body ended cleanly; false when the connection was cut. */
  readonly endedCleanly: boolean;
  /** When the client saw its stream end, ms since the epoch. */
  readonly endedAtMs: number;
}

/** Streams a request, resolving once its first event arrived, then again at its end. */
async function startStream(
  path: string,
  body: unknown,
): Promise<{ firstEvent: Promise<void>; done: Promise<StreamRead> }> {
  const response = await fetch(`http://127.0.0.1:${gatewayPort}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(org.api_key) },
    body: JSON.stringify(body),
  });
  let sawFirst!: () => void;
  const firstEvent = new Promise<void>((resolve) => (sawFirst = resolve));
  const done = (async (): Promise<StreamRead> => {
    let raw = '';
    let endedCleanly = true;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body!) {
        raw += decoder.decode(chunk as Uint8Array, { stream: true });
        if (raw.includes('\n\n')) sawFirst();
      }
    } catch {
      endedCleanly = false;
    }
    sawFirst();
    const blocks = raw.split('\n\n').filter((block) => block.trim() !== '');
    const field = (block: string, name: string): string =>
      block
        .split('\n')
        .filter((line) => line.startsWith(`${name}:`))
        .map((line) => line.slice(name.length + 1).trimStart())
        .join('\n');
    return {
      status: response.status,
      requestId: response.headers.get('x-request-id') ?? '',
      data: blocks.map((block) => field(block, 'data')),
      names: blocks.map((block) => field(block, 'event')),
      endedCleanly,
      endedAtMs: Date.now(),
    };
  })();
  return { firstEvent, done };
}

let gatewayPort = 0;

const chatStream = (outputTokens: number, index: number) => ({
  model: 'vendor_b/gpt-4o-mini',
  stream: true,
  max_tokens: 1000,
  messages: [{ role: 'user', content: `drain ${index} mock:output_tokens=${outputTokens}` }],
});

/** Content deltas a chat-completions client received (the mock sends one token per delta). */
function contentDeltas(data: readonly string[]): number {
  let count = 0;
  for (const event of data) {
    if (event === '[DONE]') continue;
    const parsed = JSON.parse(event) as { choices?: Array<{ delta?: { content?: string } }> };
    if (parsed.choices?.[0]?.delta?.content) count += 1;
  }
  return count;
}

async function wallet(): Promise<{ balance: string; reserved: string }> {
  return runCliJson(['wallet', 'show', '--org-id', org.org_id], env);
}

/** A 12-digit decimal amount in nano-units (its last 3 digits are always 0). */
const toNano = (decimal: string): bigint => {
  const [whole, fraction = ''] = decimal.split('.');
  return BigInt(whole! + fraction.padEnd(9, '0').slice(0, 9));
};

interface LedgerRow {
  request_id: string;
  status: string;
  end_reason: string;
  input_tokens: number;
  output_tokens: number;
  sell_cost: string;
  wallet_cost: string;
}

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('SIGTERM under streaming load', () => {
  it('finishes what ends within the grace, cuts and settles the rest as partial, loses nothing', async () => {
    const gateway = await startGatewayProcess({
      ...env,
      ...vendorsAt(vendor.url),
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
    });
    gatewayPort = gateway.port;
    const before = await wallet();

    // A JSON request whose vendor has not answered by the end of the grace.
    const waiting = postJson<{ error: { code: string } }>(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'drain json mock:latency_ms=30000' }],
      },
      bearer(org.api_key),
    );
    // Admitted (its hold placed) and waiting on its vendor before the streams start.
    const holds = keys.holdExpiries(keys.wallet(org.org_id));
    await eventually(async () => ((await redis.zcard(holds)) === 1 ? true : undefined));
    const long = await Promise.all(
      [3, 4].map((index) => startStream('/v1/chat/completions', chatStream(400, index))),
    );
    const messages = await startStream('/v1/messages', {
      model: 'vendor_a/claude-haiku-4-5',
      stream: true,
      max_tokens: 1000,
      messages: [{ role: 'user', content: 'drain messages mock:output_tokens=400' }],
    });
    // the short ones last: the signal must come while they are still in flight
    const short = await Promise.all(
      [0, 1, 2].map((index) => startStream('/v1/chat/completions', chatStream(80, index))),
    );
    await Promise.all([...short, ...long, messages].map((stream) => stream.firstEvent));
    // All seven are in flight when the signal comes (the short ones need up to 4 s more).
    expect(await redis.zcard(holds)).toBe(7);

    const signalledAtMs = Date.now();
    const exited = gateway.stop('SIGTERM');
    // at once: well within the grace, with room for a loaded machine to close the listener
    await eventually(
      async () => ((await refusesConnections(gateway.port)) ? true : undefined),
      3_000,
      20,
    );

    const shortReads = await Promise.all(short.map((stream) => stream.done));
    const longReads = await Promise.all(long.map((stream) => stream.done));
    const messagesRead = await messages.done;
    const waitingAnswer = await waiting;
    const code = await exited;
    const exitedAfterMs = Date.now() - signalledAtMs;
    expect(code).toBe(0);
    // Cut at the grace, not run to their end (20 s), and the process gone soon after (the
    // cut's settles and the writer's final drain; generous for a loaded machine).
    expect(exitedAfterMs).toBeLessThan(15_000);

    // Every record is in Postgres when the process has exited (no other instance serves this
    // test's prefix: this one wrote them, the cut ones by its writer's final drain).
    const reads = [...shortReads, ...longReads, messagesRead];
    const waitingId = waitingAnswer.headers.get('x-request-id')!;
    const { rows } = await db.query<LedgerRow>(
      `SELECT request_id, status, end_reason, input_tokens, output_tokens,
              sell_cost::text, wallet_cost::text
         FROM usage_records WHERE request_id = ANY($1::uuid[])`,
      [[...reads.map((read) => read.requestId), waitingId]],
    );
    expect(rows).toHaveLength(reads.length + 1);
    const rowOf = (read: StreamRead): LedgerRow =>
      rows.find((row) => row.request_id === read.requestId)!;

    for (const read of shortReads) {
      expect(read.status).toBe(200);
      expect(read.data.at(-1)).toBe('[DONE]');
      expect(rowOf(read)).toMatchObject({
        status: 'completed',
        end_reason: 'completed',
        output_tokens: 80,
      });
    }

    for (const read of longReads) {
      expect(read.status).toBe(200);
      // The client's stream ended at the cut, after the protocol's error event, never [DONE].
      expect(read.endedCleanly).toBe(true);
      expect(read.endedAtMs - signalledAtMs).toBeGreaterThanOrEqual(GRACE_MS - 50);
      expect(read.endedAtMs - signalledAtMs).toBeLessThan(GRACE_MS + 5_000);
      expect(read.data).not.toContain('[DONE]');
      expect(JSON.parse(read.data.at(-1)!)).toMatchObject({ error: { code: 'gw_unavailable' } });
      const received = contentDeltas(read.data.slice(0, -1));
      expect(received).toBeGreaterThan(0);
      expect(received).toBeLessThan(400);
      const row = rowOf(read);
      // Charged for what it was relayed: the estimated input and the tokens it received.
      expect(row).toMatchObject({
        status: 'incomplete',
        end_reason: 'gateway_shutdown',
        output_tokens: received,
      });
      expect(toNano(row.sell_cost)).toBe(
        BigInt(row.input_tokens) * INPUT_NANO_PER_TOKEN + BigInt(received) * OUTPUT_NANO_PER_TOKEN,
      );
    }

    expect(messagesRead.status).toBe(200);
    expect(messagesRead.names).not.toContain('message_stop');
    expect(messagesRead.names.at(-1)).toBe('error');
    expect(JSON.parse(messagesRead.data.at(-1)!)).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', code: 'gw_unavailable' },
    });
    const messagesRow = rowOf(messagesRead);
    expect(messagesRow).toMatchObject({ status: 'incomplete', end_reason: 'gateway_shutdown' });
    const textDeltas = messagesRead.names.filter((name) => name === 'content_block_delta').length;
    expect(messagesRow.output_tokens).toBe(textDeltas);

    // Cut before its answer: 503 for a retry elsewhere, nothing charged.
    expect(waitingAnswer.status).toBe(503);
    expect(waitingAnswer.headers.get('retry-after')).toBe('1');
    expect(waitingAnswer.body.error.code).toBe('gw_unavailable');
    expect(rows.find((row) => row.request_id === waitingId)).toMatchObject({
      status: 'incomplete',
      end_reason: 'gateway_shutdown',
      input_tokens: 0,
      output_tokens: 0,
      wallet_cost: '0.000000000000',
    });

    // The wallet paid exactly what the records say, and no hold is left behind.
    const after = await wallet();
    const charged = rows.reduce((sum, row) => sum + toNano(row.wallet_cost), 0n);
    expect(toNano(before.balance) - toNano(after.balance)).toBe(charged);
    expect(after.reserved).toBe('0.000000000000');
    expect(await redis.zcard(holds)).toBe(0);
    expect(gateway.output()).toContain('shutdown grace elapsed: cutting the requests in flight');
  }, 60_000);
});
