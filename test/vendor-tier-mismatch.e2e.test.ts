// A vendor that says it served a call at a tier gw does not price (a priority or flex tier, a
// fast speed, inference pinned to the US), usually because the vendor account defaults to it:
// the call is charged at the catalogue's standard rates as before, counted in
// gw_vendor_tier_mismatches_total and logged once with who served it (decision 342). The
// built-in mock vendors name the tier a `mock:service_tier=…` (`mock:speed=…`,
// `mock:inference_geo=…`) directive asks for, in JSON answers and in streams.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countInputTokens } from '../src/tokens/count.js';
import { chatCompletionTexts, messagesTexts } from '../src/tokens/request-texts.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson, postSse } from './support/http.js';
import {
  metricsUrl,
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('vendor-tiers');
let gateway: GatewayProcess;
let org: SeededOrg;

const CHAT_MODEL = 'vendor_b/gpt-4o-mini';
const MESSAGES_MODEL = 'vendor_a/claude-haiku-4-5';
/** The catalogue's standard rates (seeded), nano-units per token: sell and vendor alike. */
const RATES_NANO = {
  [CHAT_MODEL]: { input: 150n, output: 600n },
  [MESSAGES_MODEL]: { input: 1_000n, output: 5_000n },
} as const;
const OUTPUT_TOKENS = 3;
/** Words of the prompt that must never reach the log. */
const PROMPT = 'tiers prompt words';

beforeAll(async () => {
  [gateway, org] = await Promise.all([startGateway(env), seed(env)]);
});

afterAll(async () => {
  await gateway?.stop();
});

type Labels = { provider: string; route?: 'system' | 'byok'; field: string; tier: string };

/** gw_vendor_tier_mismatches_total's samples, keyed `provider/route/field/tier`. */
async function mismatches(): Promise<Map<string, number>> {
  const text = await (await fetch(metricsUrl(gateway))).text();
  const counts = new Map<string, number>();
  for (const match of text.matchAll(
    /^gw_vendor_tier_mismatches_total\{provider="([^"]*)",route="([^"]*)",field="([^"]*)",tier="([^"]*)"\} (\S+)$/gm,
  )) {
    counts.set(`${match[1]}/${match[2]}/${match[3]}/${match[4]}`, Number(match[5]));
  }
  return counts;
}

/** How the counter moved while `send` ran: the series that changed, by how much. */
async function countedWhile(send: () => Promise<void>): Promise<Record<string, number>> {
  const before = await mismatches();
  await send();
  const after = await mismatches();
  const moved: Record<string, number> = {};
  for (const [series, value] of after) {
    const delta = value - (before.get(series) ?? 0);
    if (delta !== 0) moved[series] = delta;
  }
  return moved;
}

/** A series' key; the system route unless `route` says otherwise. */
const series = ({ provider, route = 'system', field, tier }: Labels): string =>
  `${provider}/${route}/${field}/${tier}`;

interface ChargedRow {
  status: string;
  input_tokens: number;
  output_tokens: number;
  sell_cost: string;
  vendor_cost: string;
  wallet_cost: string;
}

/** The request's ledger row, checked to be charged at the catalogue's standard rates. */
async function expectStandardCharge(
  requestId: string | null,
  model: keyof typeof RATES_NANO,
  inputTokens: number,
): Promise<void> {
  const row = await ledgerRow<ChargedRow>(
    db,
    requestId,
    'status, input_tokens, output_tokens, sell_cost::text, vendor_cost::text, wallet_cost::text',
  );
  const rates = RATES_NANO[model];
  const nano = BigInt(inputTokens) * rates.input + BigInt(OUTPUT_TOKENS) * rates.output;
  const amount = `0.${nano.toString().padStart(9, '0')}000`;
  expect(row).toEqual({
    status: 'completed',
    input_tokens: inputTokens,
    output_tokens: OUTPUT_TOKENS,
    sell_cost: amount,
    vendor_cost: amount,
    wallet_cost: amount,
  });
}

/** The warning the gateway logged for a request (undefined: none). */
function tierWarning(requestId: string | null): Record<string, unknown> | undefined {
  const line = gateway
    .output()
    .split('\n')
    .find((text) => text.includes(`"requestId":"${requestId}"`) && text.includes('tier gw does'));
  return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
}

const chatBody = (directives: string, extra: Record<string, unknown> = {}) => ({
  model: CHAT_MODEL,
  messages: [
    { role: 'user', content: `${PROMPT} mock:output_tokens=${OUTPUT_TOKENS} ${directives}` },
  ],
  ...extra,
});

const messagesBody = (directives: string, extra: Record<string, unknown> = {}) => ({
  model: MESSAGES_MODEL,
  max_tokens: 50,
  messages: [
    { role: 'user', content: `${PROMPT} mock:output_tokens=${OUTPUT_TOKENS} ${directives}` },
  ],
  ...extra,
});

const chatInput = (body: ReturnType<typeof chatBody>): number =>
  countInputTokens(chatCompletionTexts(body));
const messagesInput = (body: ReturnType<typeof messagesBody>): number =>
  countInputTokens(messagesTexts(body));

describe('vendor_b (chat completions) served at another tier', () => {
  it('counts and logs a JSON answer naming one, and charges it at the standard rates', async () => {
    const body = chatBody('mock:service_tier=priority');
    let requestId: string | null = null;
    const moved = await countedWhile(async () => {
      const response = await postJson(
        `${gateway.url}/v1/chat/completions`,
        body,
        bearer(org.api_key),
      );
      expect(response.status).toBe(200);
      expect(response.body.service_tier).toBe('priority'); // relayed as the vendor wrote it
      requestId = response.headers.get('x-request-id');
    });
    expect(moved).toEqual({
      [series({ provider: 'vendor_b', field: 'service_tier', tier: 'priority' })]: 1,
    });
    await expectStandardCharge(requestId, CHAT_MODEL, chatInput(body));
    const warning = tierWarning(requestId);
    expect(warning).toMatchObject({
      level: 40,
      orgId: org.org_id,
      model: CHAT_MODEL,
      provider: 'vendor_b',
      route: 'system',
      credentialId: null,
      reported: { service_tier: 'priority' },
    });
    expect(JSON.stringify(warning)).not.toContain(PROMPT);
  });

  it('counts a stream whose usage chunk names one, an unknown tier as other', async () => {
    const body = chatBody('mock:service_tier=turbo', { stream: true });
    let requestId: string | null = null;
    const moved = await countedWhile(async () => {
      const response = await postSse(
        `${gateway.url}/v1/chat/completions`,
        body,
        bearer(org.api_key),
      );
      expect(response.status).toBe(200);
      expect(response.data.at(-1)).toBe('[DONE]');
      requestId = response.headers.get('x-request-id');
    });
    expect(moved).toEqual({
      [series({ provider: 'vendor_b', field: 'service_tier', tier: 'other' })]: 1,
    });
    await expectStandardCharge(requestId, CHAT_MODEL, chatInput(body));
    expect(tierWarning(requestId)).toMatchObject({ reported: { service_tier: 'turbo' } });
  });

  it('counts a stream cut before its usage chunk, from the chunks that named the tier', async () => {
    // Decision 354: the usage chunk never came; every chunk before it named the tier.
    const body = chatBody('mock:service_tier=flex mock:fault=cut_stream', { stream: true });
    let requestId: string | null = null;
    const moved = await countedWhile(async () => {
      const response = await postSse(
        `${gateway.url}/v1/chat/completions`,
        body,
        bearer(org.api_key),
      );
      expect(response.status).toBe(200);
      expect(response.data).not.toContain('[DONE]');
      requestId = response.headers.get('x-request-id');
    });
    expect(moved).toEqual({
      [series({ provider: 'vendor_b', field: 'service_tier', tier: 'flex' })]: 1,
    });
    expect(tierWarning(requestId)).toMatchObject({ reported: { service_tier: 'flex' } });
  });

  it('names the BYOK credential that served it (its id, never its secret)', async () => {
    const byokOrg = await seed(env);
    const secret = 'sk-tiers-byok-secret-0123456789';
    const credential = await runCliJson<{ id: string }>(
      [
        'credentials',
        'add',
        '--org-id',
        byokOrg.org_id,
        '--provider',
        'vendor_b',
        '--name',
        'tiers',
        '--secret-stdin',
        '--app-connection-id',
        byokOrg.app_connection_id,
      ],
      env,
      { stdin: secret },
    );
    let requestId: string | null = null;
    const moved = await countedWhile(async () => {
      const response = await postJson(
        `${gateway.url}/v1/chat/completions`,
        chatBody('mock:service_tier=flex'),
        bearer(byokOrg.api_key),
      );
      expect(response.status).toBe(200);
      requestId = response.headers.get('x-request-id');
    });
    // apart from the system route's: the org's own account, which the operator does not pay
    expect(moved).toEqual({
      [series({ provider: 'vendor_b', route: 'byok', field: 'service_tier', tier: 'flex' })]: 1,
    });
    const warning = tierWarning(requestId);
    expect(warning).toMatchObject({
      route: 'byok',
      credentialId: credential.id,
      reported: { service_tier: 'flex' },
    });
    expect(JSON.stringify(warning)).not.toContain(secret);
    expect(gateway.output()).not.toContain(secret);
  });

  it('logs calls served alike (one org, route and tier) once a minute, each counted', async () => {
    // A BYOK account whose default is another tier would otherwise log every call it serves,
    // at warn, whatever REQUEST_LOG_SAMPLE_RATE says (decision 346).
    const busyOrg = await seed(env);
    const requestIds: (string | null)[] = [];
    const moved = await countedWhile(async () => {
      for (let call = 0; call < 3; call += 1) {
        const response = await postJson(
          `${gateway.url}/v1/chat/completions`,
          chatBody('mock:service_tier=scale'),
          bearer(busyOrg.api_key),
        );
        expect(response.status).toBe(200);
        requestIds.push(response.headers.get('x-request-id'));
      }
    });
    expect(moved).toEqual({
      [series({ provider: 'vendor_b', field: 'service_tier', tier: 'scale' })]: 3,
    });
    expect(requestIds.map((requestId) => tierWarning(requestId) !== undefined)).toEqual([
      true,
      false,
      false,
    ]);
    expect(tierWarning(requestIds[0]!)).toMatchObject({
      orgId: busyOrg.org_id,
      reported: { service_tier: 'scale' },
    });
    // another org served at that tier is its own line
    const response = await postJson(
      `${gateway.url}/v1/chat/completions`,
      chatBody('mock:service_tier=scale'),
      bearer(org.api_key),
    );
    expect(tierWarning(response.headers.get('x-request-id'))).toMatchObject({ orgId: org.org_id });
  });

  it('counts nothing for an answer at the default tier, in JSON or a stream', async () => {
    const moved = await countedWhile(async () => {
      for (const stream of [false, true]) {
        for (const directives of ['', 'mock:service_tier=default']) {
          const send = stream ? postSse : postJson;
          const response = await send(
            `${gateway.url}/v1/chat/completions`,
            chatBody(directives, { stream }),
            bearer(org.api_key),
          );
          expect(response.status).toBe(200);
          expect(tierWarning(response.headers.get('x-request-id'))).toBeUndefined();
        }
      }
    });
    expect(moved).toEqual({});
  });
});

describe('vendor_a (messages) served at another tier, speed or geography', () => {
  const messages = (body: unknown, stream: boolean) =>
    (stream ? postSse : postJson)(`${gateway.url}/v1/messages`, body, {
      'x-api-key': org.api_key,
    });

  it('counts each field of a JSON answer’s usage, logs the call once, charges it as standard', async () => {
    const body = messagesBody('mock:service_tier=priority mock:inference_geo=us mock:speed=fast');
    let requestId: string | null = null;
    const moved = await countedWhile(async () => {
      const response = await messages(body, false);
      expect(response.status).toBe(200);
      requestId = response.headers.get('x-request-id');
    });
    expect(moved).toEqual({
      [series({ provider: 'vendor_a', field: 'service_tier', tier: 'priority' })]: 1,
      [series({ provider: 'vendor_a', field: 'speed', tier: 'fast' })]: 1,
      [series({ provider: 'vendor_a', field: 'inference_geo', tier: 'us' })]: 1,
    });
    await expectStandardCharge(requestId, MESSAGES_MODEL, messagesInput(body));
    expect(tierWarning(requestId)).toMatchObject({
      provider: 'vendor_a',
      model: MESSAGES_MODEL,
      route: 'system',
      credentialId: null,
      reported: { service_tier: 'priority', speed: 'fast', inference_geo: 'us' },
    });
    const warnings = gateway
      .output()
      .split('\n')
      .filter((line) => line.includes(`"requestId":"${requestId}"`) && line.includes('tier gw'));
    expect(warnings).toHaveLength(1);
  });

  it('counts what a stream’s message_start names', async () => {
    const body = messagesBody('mock:inference_geo=us', { stream: true });
    let requestId: string | null = null;
    const moved = await countedWhile(async () => {
      const response = await postSse(`${gateway.url}/v1/messages`, body, {
        'x-api-key': org.api_key,
      });
      expect(response.status).toBe(200);
      expect(response.raw).toContain('event: message_stop');
      requestId = response.headers.get('x-request-id');
    });
    expect(moved).toEqual({
      [series({ provider: 'vendor_a', field: 'inference_geo', tier: 'us' })]: 1,
    });
    await expectStandardCharge(requestId, MESSAGES_MODEL, messagesInput(body));
    expect(tierWarning(requestId)).toMatchObject({ reported: { inference_geo: 'us' } });
  });

  it('counts a vendor_a stream a chat client asked for (translated), as the vendor named it', async () => {
    const body = {
      ...chatBody('mock:service_tier=batch', { stream: true }),
      model: MESSAGES_MODEL,
      max_tokens: 50,
    };
    const moved = await countedWhile(async () => {
      const response = await postSse(
        `${gateway.url}/v1/chat/completions`,
        body,
        bearer(org.api_key),
      );
      expect(response.status).toBe(200);
      expect(response.data.at(-1)).toBe('[DONE]');
    });
    expect(moved).toEqual({
      [series({ provider: 'vendor_a', field: 'service_tier', tier: 'batch' })]: 1,
    });
  });

  it('counts nothing for the standard tier, global or unpinnable geography, standard speed', async () => {
    const moved = await countedWhile(async () => {
      for (const stream of [false, true]) {
        for (const directives of [
          '',
          'mock:inference_geo=global mock:speed=standard',
          'mock:service_tier=standard mock:inference_geo=not_available',
        ]) {
          const response = await messages(messagesBody(directives, { stream }), stream);
          expect(response.status).toBe(200);
          expect(tierWarning(response.headers.get('x-request-id'))).toBeUndefined();
        }
      }
    });
    expect(moved).toEqual({});
  });
});
