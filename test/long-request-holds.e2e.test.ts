// A request that runs longer than RESERVATION_TTL_MS (a long stream, a vendor that trickles)
// keeps its holds until it settles: the holds' lapse exists for an instance that died, not for
// one still serving the request. Here holds lapse after 1.5 s and the mock vendor streams 4
// tokens a second, so a stream of 16 tokens outlives its first lapse more than twice over.
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

const { env } = isolatedContext('longholds');
let gateway: GatewayProcess;
let org: SeededOrg;
const RESERVATION_TTL_MS = 1_500;

beforeAll(async () => {
  org = await seed(env);
  gateway = await startGateway({
    ...env,
    RESERVATION_TTL_MS: String(RESERVATION_TTL_MS),
    MOCK_VENDOR_TOKENS_PER_SECOND: '4',
  });
});

afterAll(async () => {
  await gateway?.stop();
});

async function wallet(): Promise<{ balance: string; reserved: string }> {
  return runCliJson(['wallet', 'show', '--org-id', org.org_id], env);
}

describe('a request that runs longer than its holds would last', () => {
  it('keeps its wallet hold: a request the wallet cannot cover beside it is refused, however late', async () => {
    // 10,000 output tokens of gpt-4o-mini hold 0.006: the wallet covers one hold, not two.
    await runCliJson(['wallet', 'set', '--org-id', org.org_id, '--amount', '0.010'], env);
    const ask = (content: string, stream: boolean) => ({
      model: 'vendor_b/gpt-4o-mini',
      max_tokens: 10_000,
      stream,
      messages: [{ role: 'user', content }],
    });
    let streamEnded = false;
    const long = postSse(
      `${gateway.url}/v1/chat/completions`,
      ask('a long answer mock:output_tokens=16', true),
      bearer(org.api_key),
    ).finally(() => {
      streamEnded = true;
    });
    // Past the first lapse of its holds (and a renewal's worth more), the stream still runs.
    await new Promise((resolve) => setTimeout(resolve, RESERVATION_TTL_MS * 1.6));
    const second = await postJson<{ error: { code: string } }>(
      `${gateway.url}/v1/chat/completions`,
      ask('another', false),
      bearer(org.api_key),
    );
    expect(streamEnded, 'the stream ended before the second request was answered').toBe(false);
    expect(second.status).toBe(402);
    expect(second.body.error.code).toBe('gw_reservation_insufficient_balance');
    const stream = await long;
    expect(stream.status).toBe(200);
    expect(stream.data.at(-1)).toBe('[DONE]');
    const after = await wallet();
    expect(after.reserved).toBe('0.000000000000');
    expect(after.balance.startsWith('-')).toBe(false);
  }, 30_000);
});
