// A vendor that hangs before answering, or trickles a stream slower than the upstream time-out
// allows between two chunks: the wait is bounded by UPSTREAM_TIMEOUT_MS, the client gets a
// clear answer (504 gw_upstream_timeout, or a stream closed without [DONE]), the hold is
// released, and what was delivered is recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { bearer, postJson, postSse } from './support/http.js';
import {
  runCliJson,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const { env, db } = isolatedContext('stall');
let hanging: GatewayProcess;
let trickling: GatewayProcess;
let patient: GatewayProcess;
let org: SeededOrg;

beforeAll(async () => {
  org = await seed(env);
  hanging = await startGateway({ ...env, UPSTREAM_TIMEOUT_MS: '800' });
  // One token a second: each gap is longer than the 400 ms allowed between chunks.
  trickling = await startGateway({
    ...env,
    UPSTREAM_TIMEOUT_MS: '400',
    MOCK_VENDOR_TOKENS_PER_SECOND: '1',
  });
  patient = await startGateway(env);
});

afterAll(async () => {
  await hanging?.stop();
  await trickling?.stop();
  await patient?.stop();
});

async function walletHeld(): Promise<string> {
  const wallet = await runCliJson<{ reserved: string }>(
    ['wallet', 'show', '--org-id', org.org_id],
    env,
  );
  return wallet.reserved;
}

describe('a vendor that stalls', () => {
  it('hanging before its first byte: 504 gw_upstream_timeout after the time-out, hold released', async () => {
    const started = Date.now();
    const response = await postJson<{ error: { code: string; message: string } }>(
      `${hanging.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'hang mock:latency_ms=10000' }],
      },
      bearer(org.api_key),
    );
    const waited = Date.now() - started;
    expect(response.status).toBe(504);
    expect(response.body.error.code).toBe('gw_upstream_timeout');
    expect(waited).toBeGreaterThanOrEqual(700);
    expect(waited).toBeLessThan(5_000);
    expect(await walletHeld()).toBe('0.000000000000');
  });

  it('trickling a stream: closed without its terminal event, hold released, the partial use recorded', async () => {
    const response = await postSse(
      `${trickling.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        stream: true,
        messages: [{ role: 'user', content: 'trickle mock:output_tokens=20' }],
      },
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(response.data.at(-1)).not.toBe('[DONE]');
    // docs/charging.md: a stream timed out mid-way is closed without its terminal event.
    expect(response.raw).not.toContain('[DONE]');
    expect(response.data.length).toBeGreaterThan(0);
    expect(await walletHeld()).toBe('0.000000000000');
    const requestId = response.headers.get('x-request-id')!;
    const row = await eventually(async () => {
      const { rows } = await db.query<{ status: string; end_reason: string }>(
        'SELECT status, end_reason FROM usage_records WHERE request_id = $1',
        [requestId],
      );
      return rows[0];
    }, 10_000);
    expect(row).toEqual({ status: 'incomplete', end_reason: 'upstream_timeout' });
  });

  // uWS arms a 10 s idle time-out when a paused socket is resumed: a request whose body was
  // read while the caller was being authenticated was cut 10 s later if nothing had been
  // written by then (a vendor thinking long before its first byte, or a slow admission).
  it('slower than 10 s to answer, within the time-out: the client gets the whole answer', async () => {
    const slow = 'think long mock:latency_ms=11500';
    const [json, stream] = await Promise.all([
      postJson<{ choices: unknown[] }>(
        `${patient.url}/v1/chat/completions`,
        { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: slow }] },
        bearer(org.api_key),
      ),
      postSse(
        `${patient.url}/v1/chat/completions`,
        {
          model: 'vendor_b/gpt-4o-mini',
          stream: true,
          messages: [{ role: 'user', content: slow }],
        },
        bearer(org.api_key),
      ),
    ]);
    expect(json.status).toBe(200);
    expect(json.body.choices.length).toBe(1);
    expect(stream.status).toBe(200);
    expect(stream.data.at(-1)).toBe('[DONE]');
  }, 30_000);
});
