// A provider that exists only in this test: vendor_c speaks chat completions at its own stub, is
// defined in one call and handed to the gateway beside the registered ones, and its catalogue
// row is the only other thing it needs. Served end to end with its usage in Postgres, with its
// own key and label, and refused on /v1/messages (its protocol has no messages passthrough).
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerHeaders } from '../src/protocols/chat-completions/request.js';
import { chatCompletionsProtocol } from '../src/protocols/wire-protocols.js';
import { defineProvider } from '../src/providers/common/provider.js';
import { isolatedContext } from './support/context.js';
import { bearer, getJson, postJson, postSse } from './support/http.js';
import { createApiKey } from '../src/admin/provisioning.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';

const vendorC = defineProvider({
  id: 'vendor_c',
  protocol: chatCompletionsProtocol,
  headers: (apiKey) => bearerHeaders(apiKey),
});

const { env, db } = isolatedContext('provider-registry');
const MODEL = 'vendor_c/c-small';
const STUB_KEY = 'vendor-c-system-key-0123456789';
let org: SeededOrg;
/**
 * A key for vendor_c's models (the seeded key's policy names the registered providers). Written
 * straight to Postgres: `gw api-key create` refuses a policy naming a provider outside the
 * registry (decision 338), and vendor_c is registered only in this test's gateway.
 */
let apiKey: string;
let gateway: GatewayProcess;
let seen: { path: string | undefined; headers: IncomingMessage['headers']; body: unknown }[] = [];

const completion = {
  id: 'chatcmpl-c',
  object: 'chat.completion',
  created: 1,
  model: 'c-small',
  choices: [{ index: 0, message: { role: 'assistant', content: 'from c' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
};
const chunk = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

const stub = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (part: Buffer) => chunks.push(part));
  request.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean };
    seen.push({ path: request.url, headers: request.headers, body });
    if (body.stream !== true) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(completion));
      return;
    }
    const base = { id: 'chatcmpl-c', object: 'chat.completion.chunk', created: 1, model: 'c' };
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.end(
      chunk({ ...base, choices: [{ index: 0, delta: { content: 'str' } }], usage: null }) +
        chunk({ ...base, choices: [{ index: 0, delta: { content: 'eam' } }], usage: null }) +
        chunk({ ...base, choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } }) +
        'data: [DONE]\n\n',
    );
  });
});

beforeAll(async () => {
  await db.query(
    `INSERT INTO models (id, vendor, upstream_model, input_cost_per_token, output_cost_per_token,
                         input_price_per_token, output_price_per_token, max_output_tokens)
     VALUES ($1, 'vendor_c', 'c-small', 0.000001, 0.000004, 0.000002, 0.000008, 4096)
     ON CONFLICT (id) DO UPDATE SET enabled = true`,
    [MODEL],
  );
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  const { port } = stub.address() as AddressInfo;
  [org, gateway] = await Promise.all([
    seed(env),
    startGateway(env, {
      extraProviders: [
        { provider: vendorC, settings: { baseUrl: `http://127.0.0.1:${port}`, apiKey: STUB_KEY } },
      ],
    }),
  ]);
  ({ rawKey: apiKey } = await createApiKey(
    db,
    { orgId: org.org_id, appId: org.app_id, appConnectionId: org.app_connection_id },
    ['vendor_c/*'],
  ));
});

afterAll(async () => {
  await gateway?.stop();
  await db.query('DELETE FROM models WHERE id = $1', [MODEL]);
  await new Promise((resolve) => stub.close(resolve));
});

interface Row {
  vendor: string;
  status: string;
  input_tokens: number;
  output_tokens: number;
  sell_cost: string;
  served_by_mock: boolean;
}
const ROW_COLUMNS = 'vendor, status, input_tokens, output_tokens, sell_cost::text, served_by_mock';

describe('a provider registered only in a test (vendor_c, chat completions)', () => {
  it('lists its model and serves a JSON completion with its key, billed in Postgres', async () => {
    const models = await getJson<{ data: { id: string }[] }>(
      `${gateway.url}/v1/models`,
      bearer(apiKey),
    );
    expect(models.body.data.map((model) => model.id)).toContain(MODEL);

    seen = [];
    const answer = await postJson<typeof completion>(
      `${gateway.url}/v1/chat/completions`,
      { model: MODEL, messages: [{ role: 'user', content: 'hi' }] },
      bearer(apiKey),
    );
    expect(answer.status).toBe(200);
    expect(answer.body.choices[0]?.message.content).toBe('from c');
    expect(seen).toHaveLength(1);
    expect(seen[0]?.path).toBe('/v1/chat/completions');
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${STUB_KEY}`);
    expect(seen[0]?.body).toMatchObject({ model: 'c-small' });
    const row = await ledgerRow<Row>(db, answer.headers.get('x-request-id'), ROW_COLUMNS);
    // 7 × 0.000002 + 3 × 0.000008
    expect(row).toEqual({
      vendor: 'vendor_c',
      status: 'completed',
      input_tokens: 7,
      output_tokens: 3,
      sell_cost: '0.000038000000',
      served_by_mock: false,
    });
  });

  it('relays a stream, asking its vendor for usage, and settles on it', async () => {
    seen = [];
    const answer = await postSse(
      `${gateway.url}/v1/chat/completions`,
      { model: MODEL, stream: true, messages: [{ role: 'user', content: 'hi' }] },
      bearer(apiKey),
    );
    expect(answer.status).toBe(200);
    expect(answer.data.at(-1)).toBe('[DONE]');
    expect(answer.raw).toContain('"content":"eam"');
    expect(answer.raw).not.toContain('"prompt_tokens"'); // the client did not ask for usage
    expect(seen[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const row = await ledgerRow<Row>(db, answer.headers.get('x-request-id'), ROW_COLUMNS);
    expect(row).toMatchObject({ vendor: 'vendor_c', input_tokens: 5, output_tokens: 2 });
  });

  it('refuses its model on /v1/messages: its protocol has no messages passthrough', async () => {
    const answer = await postJson<{ error: { type: string; message: string } }>(
      `${gateway.url}/v1/messages`,
      { model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': apiKey },
    );
    expect(answer.status).toBe(404);
    expect(answer.body.error.message).toBe(
      `model ${MODEL} is not served on /v1/messages; use /v1/chat/completions`,
    );
  });
});
