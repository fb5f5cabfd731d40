// Postgres connections cut off without a reset (a partition, a primary replaced under its
// address): no answer ever comes on them, and nothing tells the client. The usage writer gives
// up on its batch after USAGE_WRITE_TIMEOUT_MS and writes it again on a new connection, so the
// ledger stalls for that long, not until TCP gives up (about 15 minutes with a statement in
// flight, never for an idle pooled connection).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { relayedTestDatabase, type FreezableRelay } from './support/freezable-relay.js';
import { bearer, postJson } from './support/http.js';
import {
  metricsUrl,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { eventually } from './support/services.js';

const WRITE_TIMEOUT_MS = 2_000;
const { env, db } = isolatedContext('pgstrand');
let relay: FreezableRelay;
let gateway: GatewayProcess;
let org: SeededOrg;

beforeAll(async () => {
  org = await seed(env);
  const relayed = await relayedTestDatabase();
  relay = relayed.relay;
  gateway = await startGateway({
    ...env,
    DATABASE_URL: relayed.url,
    DATABASE_TIMEOUT_MS: '1000',
    USAGE_WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS),
    METRICS_PORT: '0',
  });
});

afterAll(async () => {
  await gateway?.stop();
  await relay?.close();
});

const chat = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'hello' }],
  user: 'known-customer',
};

const landed = async (requestId: string | null): Promise<boolean> =>
  (await db.query('SELECT 1 FROM usage_records WHERE request_id = $1::uuid', [requestId])).rows
    .length === 1;

describe('Postgres connections cut off without a reset', () => {
  it('the usage writer writes its batch again on a new connection within its bound', async () => {
    const first = await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(org.api_key));
    expect(first.status).toBe(200);
    await eventually(async () =>
      (await landed(first.headers.get('x-request-id'))) ? true : undefined,
    );

    // Every connection open now (the writer's pooled ones among them) goes silent for good.
    relay.strandOpen();
    const started = Date.now();
    const second = await postJson(`${gateway.url}/v1/chat/completions`, chat, bearer(org.api_key));
    expect(second.status).toBe(200);
    await eventually(
      async () => ((await landed(second.headers.get('x-request-id'))) ? true : undefined),
      30_000,
      100,
    );
    // The statement's bound, its read grace (2 s), the retry's back-off: not TCP's minutes.
    expect(Date.now() - started).toBeLessThan(WRITE_TIMEOUT_MS + 10_000);
    // It got there by giving up on the stranded connection, as the scrape counts.
    const scrape = await fetch(metricsUrl(gateway)).then((response) => response.text());
    expect(Number(/^gw_usage_write_failures_total (\d+)/m.exec(scrape)?.[1])).toBeGreaterThan(0);
  });
});
