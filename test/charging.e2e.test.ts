// What each way a request can end costs, end to end: a real gateway with the built-in mock
// vendors (their fault directives drive the endings), real Redis and Postgres. The rules are
// the charging policy's (src/inference/charging-policy.ts, docs/charging.md).
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countInputTokens } from '../src/tokens/count.js';
import { chatCompletionTexts } from '../src/tokens/request-texts.js';
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
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('charging');
let gateway: GatewayProcess;
let org: SeededOrg;

const MODEL = 'vendor_b/gpt-4o-mini';
// vendor_b/gpt-4o-mini sells at $0.15 / M input and $0.60 / M output tokens.
const INPUT_NANO_PER_TOKEN = 150n;
const OUTPUT_NANO_PER_TOKEN = 600n;

interface ChargedRow {
  status: string;
  end_reason: string | null;
  served_by_mock: boolean;
  upstream_status: number | null;
  input_tokens: number;
  output_tokens: number;
  sell_cost: string;
}

const CHARGED_COLUMNS =
  'status, end_reason, served_by_mock, upstream_status, input_tokens, output_tokens, sell_cost::text';

const chargedRow = (requestId: string): Promise<ChargedRow> =>
  ledgerRow<ChargedRow>(db, requestId, CHARGED_COLUMNS);

const toNano = (text: string): bigint => BigInt(text.replace('.', '').slice(0, -3));

/** What the gateway's /metrics counts of chat completions whose client went away first. */
async function abortedChatRequests(): Promise<number> {
  const metrics = await (await fetch(metricsUrl(gateway))).text();
  const counted =
    /gw_http_requests_total\{route="\/v1\/chat\/completions",status="499"\} (\d+)/.exec(metrics);
  return Number(counted?.[1] ?? 0);
}

async function wallet(orgId: string): Promise<{ balance: string; reserved: string }> {
  return runCliJson(['wallet', 'show', '--org-id', orgId], env);
}

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  max_tokens: 50,
  messages: [{ role: 'user', content }],
  ...extra,
});

beforeAll(async () => {
  gateway = await startGateway(env);
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
});

describe('the offline default (no vendor configured)', () => {
  it('warns at boot that the mock serves, and its records say so', async () => {
    expect(gateway.output()).toContain('development only, never real traffic');
    const response = await postJson(
      `${gateway.url}/v1/chat/completions`,
      chat('hello mock:output_tokens=3'),
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    const row = await chargedRow(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({
      status: 'completed',
      end_reason: 'completed',
      served_by_mock: true,
      output_tokens: 3,
    });
  });
});

describe('a client gone before the vendor call', () => {
  it('is charged nothing, and its record says why it ended', async () => {
    const quiet = await seed(env);
    const body = JSON.stringify(chat('never sent to the vendor mock:output_tokens=3'));
    // Admission is held still on a row lock: this transaction inserts the product user the
    // request names, so the gateway's own insert (a CTE that also queues its webhook event)
    // waits for it. The client leaves meanwhile.
    const lock = await db.connect();
    try {
      await lock.query('BEGIN');
      await lock.query(
        `INSERT INTO product_users (id, org_id, app_id, external_user_id)
         VALUES ('pu_charging_lock', $1, $2, 'held-user')`,
        [quiet.org_id, quiet.app_id],
      );
      const socket = connect(gateway.port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n` +
          `authorization: Bearer ${quiet.api_key}\r\nx-gw-external-user-id: held-user\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await eventually(async () => {
        const { rows } = await db.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'
              AND query LIKE '%INSERT INTO product_users%'`,
        );
        return rows[0]!.waiting > 0 ? true : undefined;
      });
      const abortedBefore = await abortedChatRequests();
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.destroy();
      await closed;
      // The lock holds until the gateway has noticed the client left: it counts the request
      // as answered 499 on /metrics then.
      await eventually(async () =>
        (await abortedChatRequests()) > abortedBefore ? true : undefined,
      );
    } finally {
      await lock.query('ROLLBACK');
      lock.release();
    }
    const row = await eventually(async () => {
      const { rows } = await db.query<ChargedRow>(
        `SELECT ${CHARGED_COLUMNS} FROM usage_records WHERE org_id = $1`,
        [quiet.org_id],
      );
      return rows[0];
    });
    expect(row).toEqual({
      status: 'client_aborted',
      end_reason: 'client_gone_before_dispatch',
      served_by_mock: true,
      upstream_status: null,
      input_tokens: 0,
      output_tokens: 0,
      sell_cost: '0.000000000000',
    });
    expect(await wallet(quiet.org_id)).toEqual(
      expect.objectContaining({ balance: '100.000000000000', reserved: '0.000000000000' }),
    );
  });
});

describe('invalid JSON from the vendor', () => {
  it('answers 502 and charges the input the vendor read, no output (not the held maximum)', async () => {
    const body = chat('answer me mock:fault=invalid_json');
    const before = await wallet(org.org_id);
    const response = await postJson<{ error: { code: string } }>(
      `${gateway.url}/v1/chat/completions`,
      body,
      bearer(org.api_key),
    );
    expect(response.status).toBe(502);
    expect(response.body.error.code).toBe('gw_upstream_error');
    const inputTokens = countInputTokens(chatCompletionTexts(body));
    const row = await chargedRow(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({
      status: 'incomplete',
      end_reason: 'vendor_invalid_json',
      upstream_status: 200,
      input_tokens: inputTokens,
      output_tokens: 0,
    });
    const after = await wallet(org.org_id);
    expect(toNano(before.balance) - toNano(after.balance)).toBe(
      BigInt(inputTokens) * INPUT_NANO_PER_TOKEN,
    );
    expect(after.reserved).toBe('0.000000000000');
  });
});

describe('a vendor error event inside a stream', () => {
  it('ends the stream without its terminal event and charges what was relayed', async () => {
    const response = await postSse(
      `${gateway.url}/v1/chat/completions`,
      chat('stream then fail mock:output_tokens=6 mock:fault=error_event', { stream: true }),
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(response.data).not.toContain('[DONE]');
    expect(response.data.some((data) => data.startsWith('{"error"'))).toBe(true);
    const row = await chargedRow(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'incomplete', end_reason: 'vendor_error_event' });
    // Half the six-token stream was relayed before the error: charged as counted.
    expect(row.output_tokens).toBeGreaterThan(0);
    expect(row.output_tokens).toBeLessThan(6);
  });
});

describe('JSON nesting', () => {
  const nested = (depth: number): unknown => {
    let value: unknown = 'leaf';
    for (let level = 0; level < depth; level += 1) value = [value];
    return value;
  };

  it('refuses a body nested 10,000 deep with a 400, before any hold', async () => {
    // Written as text: this test's own JSON.stringify could not serialise it either.
    const deep = `${'['.repeat(10_000)}"leaf"${']'.repeat(10_000)}`;
    const response = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/chat/completions`,
      JSON.stringify(chat('deep', { extra: 'DEEP' })).replace('"DEEP"', deep),
      bearer(org.api_key),
    );
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('gw_invalid_request');
    expect(response.body.error.message).toContain('deeper than 400 levels');
    expect((await wallet(org.org_id)).reserved).toBe('0.000000000000');
  });

  it('serves a body exactly 400 levels deep', async () => {
    // The body object is level 1; the extra field adds 399 more.
    const response = await postJson(
      `${gateway.url}/v1/chat/completions`,
      chat('deep enough mock:output_tokens=2', { extra: nested(399) }),
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
  });
});

describe('n > 1', () => {
  it('holds for every choice: a wallet that covers one choice but not three is refused', async () => {
    // One choice of 1,000 output tokens holds ~$0.0006; three hold ~$0.0018.
    const poor = await seed(env, ['--wallet', '0.001']);
    const response = await postJson<{ error: { code: string } }>(
      `${gateway.url}/v1/chat/completions`,
      chat('three please mock:output_tokens=400', { n: 3, max_tokens: 1000 }),
      bearer(poor.api_key),
    );
    expect(response.status).toBe(402);
    expect(response.body.error.code).toBe('gw_reservation_insufficient_balance');
    expect(await wallet(poor.org_id)).toEqual(
      expect.objectContaining({ balance: '0.001000000000', reserved: '0.000000000000' }),
    );
  });

  it('charges every choice the vendor reports', async () => {
    const body = chat('two please mock:output_tokens=5', { n: 2 });
    const response = await postJson<{ choices: unknown[] }>(
      `${gateway.url}/v1/chat/completions`,
      body,
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(response.body.choices).toHaveLength(2);
    const inputTokens = countInputTokens(chatCompletionTexts(body));
    const row = await chargedRow(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'completed', output_tokens: 10 });
    expect(toNano(row.sell_cost)).toBe(
      BigInt(inputTokens) * INPUT_NANO_PER_TOKEN + 10n * OUTPUT_NANO_PER_TOKEN,
    );
  });

  it('refuses n above 128, and n > 1 on a model that serves one choice', async () => {
    const tooMany = await postJson<{ error: { code: string } }>(
      `${gateway.url}/v1/chat/completions`,
      chat('many', { n: 129 }),
      bearer(org.api_key),
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.code).toBe('gw_invalid_request');
    const oneChoice = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/chat/completions`,
      { ...chat('two', { n: 2 }), model: 'vendor_a/claude-haiku-4-5' },
      bearer(org.api_key),
    );
    expect(oneChoice.status).toBe(400);
    expect(oneChoice.body.error.message).toContain('one choice');
  });

  it('refuses, before any hold, a tool the messages protocol would have to invent a schema for', async () => {
    const before = await db.query(
      'SELECT count(*)::int AS n FROM usage_records WHERE org_id = $1',
      [org.org_id],
    );
    const answer = await postJson<{ error: { code: string; message: string } }>(
      `${gateway.url}/v1/chat/completions`,
      { ...chat('tool', { tools: [{ type: '-5' }] }), model: 'vendor_a/claude-haiku-4-5' },
      bearer(org.api_key),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({
      code: 'gw_invalid_request',
      message: 'tools.0: model vendor_a/claude-haiku-4-5 takes function tools with a name only',
    });
    const after = await db.query('SELECT count(*)::int AS n FROM usage_records WHERE org_id = $1', [
      org.org_id,
    ]);
    expect(after.rows).toEqual(before.rows);
  });
});
