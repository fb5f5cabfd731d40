// A vendor's SSE event past MAX_SSE_EVENT_BYTES (decision 354): the gateway stops reading the
// vendor, ends the client's stream with an error event of its protocol, and charges the stream
// as broken (what was relayed). A real gateway with the built-in mock vendors, whose
// `mock:fault=huge_event` sends half a stream and then one 1 MiB text delta.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { bearer, postSse } from './support/http.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('event-size');
let gateway: GatewayProcess;
let org: SeededOrg;

interface ChargedRow {
  status: string;
  end_reason: string | null;
  input_tokens: number;
  output_tokens: number;
}

const chargedRow = (requestId: string): Promise<ChargedRow> =>
  ledgerRow<ChargedRow>(db, requestId, 'status, end_reason, input_tokens, output_tokens');

async function reserved(orgId: string): Promise<string> {
  const wallet = await runCliJson<{ reserved: string }>(['wallet', 'show', '--org-id', orgId], env);
  return wallet.reserved;
}

const PROMPT = 'tell me mock:output_tokens=8 mock:fault=huge_event';

beforeAll(async () => {
  // Above the bound's floor (64 KiB) and far below the mock's 1 MiB event.
  gateway = await startGateway({ ...env, MAX_SSE_EVENT_BYTES: String(256 * 1024) });
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
});

/** The last event's data of a stream the gateway cut short with a `gw_upstream_error`. */
function endsWithUpstreamError(data: readonly string[]): Record<string, unknown> {
  const last = JSON.parse(data.at(-1)!) as { error: Record<string, unknown> };
  expect(last.error).toMatchObject({ code: 'gw_upstream_error' });
  expect(last.error.message).toContain('MAX_SSE_EVENT_BYTES');
  return last;
}

describe('a vendor event larger than MAX_SSE_EVENT_BYTES', () => {
  it('ends a chat stream with an error chunk, no [DONE], and charges what was relayed', async () => {
    const response = await postSse(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        stream: true,
        max_tokens: 50,
        messages: [{ role: 'user', content: PROMPT }],
      },
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(response.data).not.toContain('[DONE]');
    expect(response.raw.length).toBeLessThan(64 * 1024); // the megabyte never reached the client
    // The text relayed before the huge event, then the error.
    expect(response.data.slice(0, -1).some((data) => data.includes('"content"'))).toBe(true);
    endsWithUpstreamError(response.data);
    const row = await chargedRow(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'incomplete', end_reason: 'vendor_event_too_large' });
    expect(row.input_tokens).toBeGreaterThan(0);
    // Half the eight-token stream was relayed: charged as counted, not the held 50.
    expect(row.output_tokens).toBeGreaterThan(0);
    expect(row.output_tokens).toBeLessThan(8);
    expect(await reserved(org.org_id)).toBe('0.000000000000');
  });

  it('ends a chat stream translated from vendor_a the same way', async () => {
    const response = await postSse(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_a/claude-haiku-4-5',
        stream: true,
        max_tokens: 50,
        messages: [{ role: 'user', content: PROMPT }],
      },
      bearer(org.api_key),
    );
    expect(response.data).not.toContain('[DONE]');
    endsWithUpstreamError(response.data);
    const row = await chargedRow(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'incomplete', end_reason: 'vendor_event_too_large' });
    expect(await reserved(org.org_id)).toBe('0.000000000000');
  });

  it('ends a messages stream with `event: error`, no message_stop, charged the same way', async () => {
    const response = await postSse(
      `${gateway.url}/v1/messages`,
      {
        model: 'vendor_a/claude-haiku-4-5',
        stream: true,
        max_tokens: 50,
        messages: [{ role: 'user', content: PROMPT }],
      },
      { 'x-api-key': org.api_key, 'vendor-version': '2023-06-01' },
    );
    expect(response.status).toBe(200);
    expect(response.raw).not.toContain('message_stop');
    expect(response.raw).toMatch(/event: error\ndata: [^\n]+\n\n$/);
    expect(endsWithUpstreamError(response.data)).toMatchObject({ type: 'error' });
    const row = await chargedRow(response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ status: 'incomplete', end_reason: 'vendor_event_too_large' });
    expect(row.output_tokens).toBeGreaterThan(0);
    expect(row.output_tokens).toBeLessThan(8);
    expect(await reserved(org.org_id)).toBe('0.000000000000');
  });
});
