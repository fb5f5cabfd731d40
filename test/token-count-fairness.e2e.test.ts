// The counting threads are shared fairly (decision 351), through a real gateway process
// (dist/) with one counting thread: an organization flooding count_tokens with bodies that are
// slow to count does not hold another organization's inference request behind its backlog, and
// its requests past TOKEN_QUEUE_PER_ORG waiting are answered 429 gw_concurrency_limited at
// once, holding and recording nothing. Asserted by the order answers arrive in, not by times.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countInputTokens } from '../src/tokens/count.js';
import { chatCompletionTexts, messagesTexts } from '../src/tokens/request-texts.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson, type JsonResponse } from './support/http.js';
import {
  metricsUrl,
  runCliJson,
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('count-fairness');
const QUEUE_PER_ORG = 32;
let gateway: SpawnedGateway;
let flooder: SeededOrg;
let neighbour: SeededOrg;

beforeAll(async () => {
  [flooder, neighbour, gateway] = await Promise.all([
    seed(env),
    seed(env),
    startGatewayProcess({
      ...env,
      GATEWAY_WORKERS: '1',
      MOCK_VENDORS: 'true',
      TOKEN_WORKERS: '1',
      TOKEN_QUEUE_PER_ORG: String(QUEUE_PER_ORG),
    }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
});

/** Deterministic pseudo-random text from an alphabet (a small LCG: same text every run). */
function seededText(alphabet: string, length: number, seed: number): string {
  let state = seed;
  let text = '';
  for (let index = 0; index < length; index += 1) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    text += alphabet[state % alphabet.length];
  }
  return text;
}

// 256 random mixed-case words of 128 letters (33 KB): BPE's slowest input within a request's
// budget, tens of ms of a counting thread each, against microseconds to read and parse.
const SLOW_TO_COUNT = Array.from({ length: 256 }, (_, index) =>
  seededText('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ', 128, index + 1),
).join(' ');
const countBody = {
  model: 'vendor_a/claude-haiku-4-5',
  messages: [{ role: 'user', content: SLOW_TO_COUNT }],
};
const floodChat = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 16,
  messages: [{ role: 'user', content: SLOW_TO_COUNT }],
};
// Over 256 characters: counted by the thread too, but fast.
const neighbourChat = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 16,
  messages: [{ role: 'user', content: `${'hello there '.repeat(40)}mock:output_tokens=3` }],
};

type Body = Record<string, unknown>;
const countTokens = (key: string, body: Body = countBody): Promise<JsonResponse> =>
  postJson(`${gateway.url}/v1/messages/count_tokens`, body, bearer(key));
const chat = (key: string, body: Body): Promise<JsonResponse> =>
  postJson(`${gateway.url}/v1/chat/completions`, body, bearer(key));

async function refusedCounts(): Promise<number> {
  const text = await (await fetch(metricsUrl(gateway))).text();
  return Number(/^gw_token_counts_refused_total (\d+)/m.exec(text)?.[1]);
}

const wallet = (orgId: string): Promise<{ balance: string; reserved: string }> =>
  runCliJson(['wallet', 'show', '--org-id', orgId], env);

describe('one organization flooding the token counter', () => {
  it("does not hold another's request behind its backlog, and past its bound is refused 429 with nothing held or recorded", async () => {
    // Keys looked up and the counting thread started before the flood.
    expect((await countTokens(flooder.api_key)).status).toBe(200);
    expect((await chat(neighbour.api_key, neighbourChat)).status).toBe(200);
    const walletBefore = await wallet(flooder.org_id);
    const refusedBefore = await refusedCounts();

    // The order answers arrive in: 'flood 200', 'flood 429', 'chat 429', 'neighbour 200'.
    const arrivals: string[] = [];
    let firstRefusal!: () => void;
    const refusedOnce = new Promise<void>((resolve) => (firstRefusal = resolve));
    const noted = (label: string) => (answer: JsonResponse) => {
      arrivals.push(`${label} ${answer.status}`);
      if (answer.status === 429) firstRefusal();
      return answer;
    };
    const flood = Array.from({ length: 2 * QUEUE_PER_ORG }, () =>
      countTokens(flooder.api_key).then(noted('flood')),
    );
    // Sent last, while the flood keeps the flooder's lane full: refused before any hold. (The
    // client's connections may deliver one before the lane is full: it is then served, and
    // recorded, as any request.)
    const floodChats = [1, 2].map(() => chat(flooder.api_key, floodChat).then(noted('chat')));
    // A refusal means the lane holds QUEUE_PER_ORG counts waiting: the neighbour comes now.
    await refusedOnce;
    const neighbourAnswer = await chat(neighbour.api_key, neighbourChat).then(noted('neighbour'));
    const floodAnswers = await Promise.all(flood);
    const chatAnswers = await Promise.all(floodChats);

    expect(neighbourAnswer.status).toBe(200);
    // Its count waited for the count running and one turn of the flooder's lane, not for the
    // lane: most of the flooder's counts waiting when it was sent end after it (in a single
    // FIFO, none would).
    const endedAfter = arrivals.slice(arrivals.indexOf('neighbour 200') + 1);
    const floodEndedAfter = endedAfter.filter((label) => label === 'flood 200').length;
    expect(floodEndedAfter).toBeGreaterThanOrEqual(QUEUE_PER_ORG / 4);

    // Each flood answer is the count, or the refusal of one past the bound.
    const counted = countInputTokens(messagesTexts(countBody));
    const accepted = floodAnswers.filter((answer) => answer.status === 200);
    const refused = floodAnswers.filter((answer) => answer.status === 429);
    expect(accepted.length + refused.length).toBe(2 * QUEUE_PER_ORG);
    expect(accepted.length).toBeGreaterThan(QUEUE_PER_ORG); // the running one and a full lane
    for (const answer of accepted) expect(answer.body).toEqual({ input_tokens: counted });
    const message = `this organization already has ${QUEUE_PER_ORG} requests waiting for their tokens to be counted on this gateway instance; retry shortly`;
    for (const answer of refused) {
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(answer.body).toEqual({
        type: 'error',
        error: { type: 'rate_limit_error', code: 'gw_concurrency_limited', message },
      });
    }
    const refusedChats = chatAnswers.filter((answer) => answer.status === 429);
    const servedChats = chatAnswers.filter((answer) => answer.status === 200);
    expect(refusedChats.length + servedChats.length).toBe(chatAnswers.length);
    for (const answer of refusedChats) {
      expect(answer.headers.get('retry-after')).toBe('1');
      expect(answer.body).toEqual({ error: { code: 'gw_concurrency_limited', message } });
    }
    expect(await refusedCounts()).toBe(refusedBefore + refused.length + refusedChats.length);

    // The neighbour's request was charged as usual; the refused chats held and recorded nothing.
    const neighbourRequestId = neighbourAnswer.headers.get('x-request-id');
    const row = await ledgerRow<{ input_tokens: number }>(db, neighbourRequestId, 'input_tokens');
    expect(row.input_tokens).toBe(countInputTokens(chatCompletionTexts(neighbourChat)));
    expect(walletBefore.reserved).toBe('0.000000000000');
    if (servedChats.length === 0) expect(await wallet(flooder.org_id)).toEqual(walletBefore);
    for (const answer of servedChats)
      await ledgerRow(db, answer.headers.get('x-request-id'), 'status');
    expect((await wallet(flooder.org_id)).reserved).toBe('0.000000000000');
    const refusedIds = refusedChats.map((answer) => answer.headers.get('x-request-id'));
    const { rows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM usage_records WHERE request_id = ANY($1)',
      [refusedIds],
    );
    expect(rows[0]!.n).toBe(0);
    const { rows: flooderRows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM usage_records WHERE org_id = $1',
      [flooder.org_id],
    );
    expect(flooderRows[0]!.n).toBe(servedChats.length);
  });
});
