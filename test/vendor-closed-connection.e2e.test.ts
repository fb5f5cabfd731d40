// A vendor that closes a new connection before the gateway's request reached it: under a
// stalled event loop the gateway reads a new connection's connect event seconds late, and a
// vendor that closes connections idle since their accept (uWS after 10 s) has closed it by
// then. The request goes on another connection instead of becoming a 502; a request the
// vendor did receive is never sent again (decision 251). Each case has its own vendor front
// (test/support/closing-vendor-front.mjs, on its own thread, so it acts while this process's
// loop is blocked) and its own gateway, so no kept-alive connection of another case is reused.
import dc from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { startClosingFront, type ClosingFront } from './support/closing-vendor.js';
import { isolatedContext } from './support/context.js';
import { bearer, postSse } from './support/http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('vendor-closed');
let vendor: RunningMockVendors;
let org: SeededOrg;
const stops: (() => Promise<unknown>)[] = [];

async function startFront(options: {
  mode: 'close_new' | 'take_and_close';
  closeFirst?: number;
}): Promise<ClosingFront> {
  const front = await startClosingFront({ ...options, upstreamPort: vendor.port });
  stops.push(() => front.stop());
  return front;
}

async function gatewayBehind(front: ClosingFront): Promise<GatewayProcess> {
  const gateway = await startGateway({
    ...env,
    VENDOR_B_BASE_URL: front.url,
    VENDOR_B_API_KEY: 'vendor-b-key',
  });
  stops.push(() => gateway.stop());
  return gateway;
}

/**
 * Blocks this process's event loop once the gateway has started its next connection to
 * `front`, until the front has closed it (5 s at most): the connection is accepted and closed
 * while the gateway cannot read its connect event — the stall 10,000 streams cause.
 */
function stallAfterNextConnect(front: ClosingFront): void {
  const channel = dc.channel('undici:client:beforeConnect');
  const onConnect = (message: unknown): void => {
    const { connectParams } = message as { connectParams: { port: string } };
    if (Number(connectParams.port) !== front.port) return;
    channel.unsubscribe(onConnect);
    const closedBefore = Atomics.load(front.closed, 0);
    // After the connect call (undici makes it on the next tick), before its event is read.
    setImmediate(() => Atomics.wait(front.closed, 0, closedBefore, 5_000));
  };
  channel.subscribe(onConnect);
}

const streamed = {
  model: 'vendor_b/gpt-4o-mini',
  stream: true,
  messages: [{ role: 'user', content: 'hi mock:output_tokens=3' }],
};

beforeAll(async () => {
  vendor = await startMockVendors({ port: 0 });
  org = await seed(env);
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await vendor?.close();
});

describe('a vendor closing a new connection before the request reached it', () => {
  it('sends the request on a new connection: the stream completes, the vendor got it once', async () => {
    const front = await startFront({ mode: 'close_new', closeFirst: 1 });
    const gateway = await gatewayBehind(front);
    stallAfterNextConnect(front);
    const response = await postSse(
      `${gateway.url}/v1/chat/completions`,
      streamed,
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(response.data.at(-1)).toBe('[DONE]');
    expect(await front.stats()).toEqual({ accepted: 2, closedUnread: 1, requests: 1 });
    const row = await ledgerRow<{ status: string; end_reason: string }>(
      db,
      response.headers.get('x-request-id'),
      'status, end_reason',
    );
    expect(row).toEqual({ status: 'completed', end_reason: 'completed' });
  });
});

describe('a vendor closing the connection after it read the request', () => {
  it('answers 502 gw_upstream_error and never sends the request again', async () => {
    const front = await startFront({ mode: 'take_and_close' });
    const gateway = await gatewayBehind(front);
    const response = await postSse(
      `${gateway.url}/v1/chat/completions`,
      streamed,
      bearer(org.api_key),
    );
    expect(response.status).toBe(502);
    expect(JSON.parse(response.raw)).toMatchObject({ error: { code: 'gw_upstream_error' } });
    // Long enough for a second attempt to have arrived, had there been one.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await front.stats()).toEqual({ accepted: 1, closedUnread: 0, requests: 1 });
    const row = await ledgerRow<{ status: string; end_reason: string }>(
      db,
      response.headers.get('x-request-id'),
      'status, end_reason',
    );
    expect(row).toEqual({ status: 'upstream_error', end_reason: 'network_error' });
  });
});
