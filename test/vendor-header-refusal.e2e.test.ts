// A request whose headers for the vendor undici would refuse (a client's `vendor-version` with
// a byte no header may carry) ends on its own: it costs the vendor's connection pool nothing,
// and the requests after it are served. undici's Pool kept the connection such a request was
// given to marked busy for good, so UPSTREAM_CONNECTIONS of them stopped every later call to
// that vendor, for every organization, until the process restarted (decision 320).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { isolatedContext } from './support/context.js';
import { rawRequest } from './support/raw-http.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';

const { env } = isolatedContext('header-refusal');
let vendor: RunningMockVendors;
let gateway: GatewayProcess;
let org: SeededOrg;

beforeAll(async () => {
  vendor = await startMockVendors({ port: 0 });
  gateway = await startGateway({
    ...env,
    VENDOR_A_BASE_URL: vendor.url,
    VENDOR_A_API_KEY: 'vendor-a-key',
    UPSTREAM_CONNECTIONS: '1',
  });
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop();
  await vendor?.close();
});

const body = JSON.stringify({
  model: 'vendor_a/claude-haiku-4-5',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'hi mock:output_tokens=3' }],
});

/** A messages request on a raw connection, with the `vendor-version` bytes given. */
function messages(version: Buffer): ReturnType<typeof rawRequest> {
  const head = Buffer.concat([
    Buffer.from(
      'POST /v1/messages HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n' +
        `x-api-key: ${org.api_key}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        'connection: close\r\nvendor-version: ',
    ),
    version,
  ]);
  return rawRequest(gateway.port, head, body);
}

describe('a vendor header undici refuses', () => {
  it('is refused to its client alone: the vendor is still served', async () => {
    // The pool has one connection: one such request was enough. uWS passes a DEL byte on (it
    // refuses other control bytes, and drops what follows a non-ASCII one). The client's own
    // header, so its own 400 (it was a 502, "vendor_a could not be reached").
    const refused = await messages(Buffer.from('2023-06-01\x7f', 'latin1'));
    expect(refused.status).toBe(400);
    expect(refused.body).toContain('vendor-version: must be printable ASCII');
    const served = await Promise.race([
      messages(Buffer.from('2023-06-01')).then((answer) => answer.status),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5_000)),
    ]);
    expect(served).toBe(200);
  });
});
