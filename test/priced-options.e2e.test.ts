// Request options a vendor bills beyond the catalogue's token rates (a priority or fast tier, a
// pinned geography, per-call searches, audio) are refused before anything is held or sent; their
// default values pass through to the vendor as the client wrote them (decision 332).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import {
  answerJson,
  answerMessagesText,
  closeStub,
  listenLocally,
  stubVendor,
} from './support/stub-vendor.js';

const { env, db } = isolatedContext('priced-options');
let org: SeededOrg;
let gateway: GatewayProcess;
const CHAT_MODEL = 'vendor_b/gpt-4o-mini';
const MESSAGES_MODEL = 'vendor_a/claude-haiku-4-5';
/** Every body each vendor received, in order. */
const received: { vendor_a: Record<string, unknown>[]; vendor_b: Record<string, unknown>[] } = {
  vendor_a: [],
  vendor_b: [],
};

const vendorA = stubVendor((body, response) => {
  received.vendor_a.push(body);
  const usage = { input_tokens: 12, output_tokens: 3 };
  answerMessagesText(body, response, {
    id: 'msg_priced',
    model: 'claude-haiku-4-5',
    text: 'ok',
    usage,
    startUsage: { input_tokens: 12, output_tokens: 1 },
    finalUsage: usage,
  });
});

const vendorB = stubVendor((body, response) => {
  received.vendor_b.push(body);
  answerJson(response, {
    id: 'chatcmpl-priced',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
  });
});

beforeAll(async () => {
  const [urlA, urlB] = await Promise.all([listenLocally(vendorA), listenLocally(vendorB)]);
  [org, gateway] = await Promise.all([
    seed(env),
    startGateway({
      ...env,
      VENDOR_A_BASE_URL: urlA,
      VENDOR_A_API_KEY: 'stub-vendor-key-0123456789abcdef',
      VENDOR_B_BASE_URL: urlB,
      VENDOR_B_API_KEY: 'stub-vendor-key-0123456789abcdef',
    }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
  await Promise.all([closeStub(vendorA), closeStub(vendorB)]);
});

const chat = (extra: Record<string, unknown>): Promise<Response> =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${org.api_key}` },
    body: JSON.stringify({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'hello' }],
      ...extra,
    }),
  });

const messages = (extra: Record<string, unknown>, model = MESSAGES_MODEL): Promise<Response> =>
  fetch(`${gateway.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': org.api_key },
    body: JSON.stringify({
      model,
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hello' }],
      ...extra,
    }),
  });

async function recordCount(): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM usage_records WHERE org_id = $1',
    [org.org_id],
  );
  return rows[0]!.n;
}

const AUDIO = 'audio is billed at audio rates, which gw does not price';

describe('options a vendor bills beyond the token rates', () => {
  it('refuses them on /v1/chat/completions for a chat-completions vendor, sending and recording nothing', async () => {
    const sent = received.vendor_b.length;
    const records = await recordCount();
    const cases: [Record<string, unknown>, string][] = [
      [
        { service_tier: 'priority' },
        'service_tier: gw prices the default tier only (auto or default); the vendor bills others at other rates',
      ],
      [
        { service_tier: 'flex' },
        'service_tier: gw prices the default tier only (auto or default); the vendor bills others at other rates',
      ],
      [
        { service_tier: 7 },
        'service_tier: gw prices the default tier only (auto or default); the vendor bills others at other rates',
      ],
      [
        { web_search_options: {} },
        'web_search_options: the vendor bills each search, which gw does not meter',
      ],
      [{ modalities: ['text', 'audio'] }, `modalities: only text output is priced; ${AUDIO}`],
      [{ modalities: 'text' }, `modalities: only text output is priced; ${AUDIO}`],
      [{ audio: { voice: 'alloy', format: 'wav' } }, `audio: ${AUDIO}`],
      [
        {
          messages: [
            { role: 'system', content: 'be brief' },
            {
              role: 'user',
              content: [
                { type: 'text', text: 'what is said here?' },
                { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
              ],
            },
          ],
        },
        `messages.1.content.1: input ${AUDIO}`,
      ],
    ];
    for (const [extra, message] of cases) {
      for (const stream of [false, true]) {
        const refused = await chat({ ...extra, stream });
        expect(refused.status).toBe(400);
        expect(await refused.json()).toEqual({
          error: { code: 'gw_invalid_request', message },
        });
      }
    }
    expect(received.vendor_b.length).toBe(sent);
    expect(await recordCount()).toBe(records);
  });

  it('refuses them on /v1/messages, in the messages error shape, sending and recording nothing', async () => {
    const sent = received.vendor_a.length;
    const records = await recordCount();
    const cases: [Record<string, unknown>, string][] = [
      [
        { speed: 'fast' },
        'speed: gw prices the standard speed only; the vendor bills a faster one at a premium',
      ],
      [
        { inference_geo: 'us' },
        'inference_geo: gw prices global inference only; the vendor bills a pinned geography at a premium',
      ],
    ];
    for (const [extra, message] of cases) {
      const refused = await messages(extra);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message },
      });
    }
    expect(received.vendor_a.length).toBe(sent);
    expect(await recordCount()).toBe(records);
  });

  it('an unknown model is refused as unknown, whatever option it names', async () => {
    const refused = await messages({ speed: 'fast' }, 'vendor_a/no-such-model');
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { error: { message: string } }).error.message).not.toMatch(
      /^speed/,
    );
  });

  it('passes the default values, and null, through to the vendor as written, and charges them', async () => {
    const records = await recordCount();
    const defaults = {
      service_tier: 'default',
      modalities: ['text'],
      web_search_options: null,
      audio: null,
    };
    const answered = await chat(defaults);
    expect(answered.status).toBe(200);
    expect(received.vendor_b.at(-1)).toMatchObject(defaults);
    expect((await chat({ service_tier: 'auto' })).status).toBe(200);
    expect(received.vendor_b.at(-1)).toMatchObject({ service_tier: 'auto' });

    const native = await messages({ speed: 'standard', inference_geo: 'global' });
    expect(native.status).toBe(200);
    await native.text();
    expect(received.vendor_a.at(-1)).toMatchObject({ speed: 'standard', inference_geo: 'global' });

    // A chat request to a messages-protocol model is translated, and the translation carries
    // none of these options: the vendor never sees them, so they cost nothing and pass.
    const translated = await chat({ model: MESSAGES_MODEL, service_tier: 'priority' });
    expect(translated.status).toBe(200);
    expect(received.vendor_a.at(-1)).not.toHaveProperty('service_tier');
    await expect.poll(recordCount, { timeout: 10_000 }).toBe(records + 4);
  });
});

describe('options spelled twice or with escapes (review of decision 332)', () => {
  const raw = (path: string, headers: Record<string, string>, body: string): Promise<Response> =>
    fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });

  // gw reads an inference body as the vendors do (the last value of a repeated name wins, escapes
  // unescaped) and sends the vendor its own serialisation of what it read: no spelling makes the
  // vendor see an option gw did not check.
  it('are read as the vendor reads them, and refused before anything is sent', async () => {
    const sentA = received.vendor_a.length;
    const sentB = received.vendor_b.length;
    const records = await recordCount();
    const bearer = { authorization: `Bearer ${org.api_key}` };
    const chatBodies = [
      `{"model":"${CHAT_MODEL}","service_tier":"default","service_tier":"priority","messages":[{"role":"user","content":"hi"}]}`,
      `{"model":"${CHAT_MODEL}","service\\u005ftier":"priority","messages":[{"role":"user","content":"hi"}]}`,
      `{"model":"${CHAT_MODEL}","service_tier":"pr\\u0069ority","messages":[{"role":"user","content":"hi"}]}`,
      `{"model":"${CHAT_MODEL}","messages":[{"role":"user","content":[{"type":"input\\u005faudio","input_audio":{"data":"UklGRg==","format":"wav"}}]}]}`,
    ];
    for (const body of chatBodies) {
      const refused = await raw('/v1/chat/completions', bearer, body);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
        'gw_invalid_request',
      );
    }
    const messagesBodies = [
      `{"model":"${MESSAGES_MODEL}","max_tokens":50,"speed":"standard","speed":"fast","messages":[{"role":"user","content":"hi"}]}`,
      `{"model":"${MESSAGES_MODEL}","max_tokens":50,"inference\\u005fgeo":"us","messages":[{"role":"user","content":"hi"}]}`,
    ];
    for (const body of messagesBodies) {
      const refused = await raw('/v1/messages', { 'x-api-key': org.api_key }, body);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    }
    // The reverse: a premium value overridden by a later default reaches the vendor as the default.
    const passed = await raw(
      '/v1/chat/completions',
      bearer,
      `{"model":"${CHAT_MODEL}","service_tier":"priority","service_tier":"default","messages":[{"role":"user","content":"hi"}]}`,
    );
    expect(passed.status).toBe(200);
    expect(received.vendor_b.at(-1)).toMatchObject({ service_tier: 'default' });
    expect(received.vendor_a.length).toBe(sentA);
    expect(received.vendor_b.length).toBe(sentB + 1);
    await expect.poll(recordCount, { timeout: 10_000 }).toBe(records + 1);
  });
});
