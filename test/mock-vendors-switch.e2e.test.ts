// The built-in mock is a development tool, never billed traffic: with one vendor configured,
// the other vendor's models are not routable, unless MOCK_VENDORS asks for the mock; records
// the mock served say so. The "real" vendor_b here is a separate mock vendor process on its
// own port: to the gateway it is a configured vendor like any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockVendors, type RunningMockVendors } from '../src/mock-vendors/server.js';
import { isolatedContext } from './support/context.js';
import { bearer, getJson, postJson } from './support/http.js';
import {
  runCli,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('mock-switch');
let configuredVendor: RunningMockVendors;
let strict: GatewayProcess;
let mocking: GatewayProcess;
let org: SeededOrg;

const chat = (model: string) => ({
  model,
  max_tokens: 8,
  messages: [{ role: 'user', content: 'hi mock:output_tokens=2' }],
});

beforeAll(async () => {
  configuredVendor = await startMockVendors({ port: 0 });
  const vendorB = { VENDOR_B_BASE_URL: configuredVendor.url, VENDOR_B_API_KEY: 'vendor-b-key' };
  [strict, mocking] = await Promise.all([
    startGateway({ ...env, ...vendorB }),
    startGateway({ ...env, ...vendorB, MOCK_VENDORS: 'true' }),
  ]);
  org = await seed(env);
});

afterAll(async () => {
  await Promise.all([strict?.stop(), mocking?.stop()]);
  await configuredVendor?.close();
});

const servedByMock = async (requestId: string): Promise<boolean> =>
  (await ledgerRow<{ served_by_mock: boolean }>(db, requestId, 'served_by_mock')).served_by_mock;

describe('a vendor base URL without its key', () => {
  it('is warned of at boot, naming the variable to set', async () => {
    const keyless = await startGateway({ ...env, VENDOR_B_BASE_URL: configuredVendor.url });
    try {
      const warning = keyless
        .output()
        .split('\n')
        .find((line) => line.includes('set without its API key'));
      expect(JSON.parse(warning ?? '{}')).toMatchObject({ level: 40, unset: ['VENDOR_B_API_KEY'] });
      expect(strict.output()).not.toContain('set without its API key');
    } finally {
      await keyless.stop();
    }
  });
});

describe('one vendor configured, no mock switch', () => {
  it('answers gw_unsupported_model for the unconfigured vendor and does not list its models', async () => {
    const response = await postJson<{ error: { code: string } }>(
      `${strict.url}/v1/chat/completions`,
      chat('vendor_a/claude-haiku-4-5'),
      bearer(org.api_key),
    );
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('gw_unsupported_model');
    const models = await getJson<{ data: Array<{ id: string }> }>(
      `${strict.url}/v1/models`,
      bearer(org.api_key),
    );
    const ids = models.body.data.map((entry) => entry.id);
    expect(ids).toContain('vendor_b/gpt-4o-mini');
    expect(ids.some((id) => id.startsWith('vendor_a/'))).toBe(false);
    expect(strict.output()).not.toContain('development only, never real traffic');
  });

  it('refuses a BYOK credential for the unconfigured vendor (nothing would route it)', async () => {
    const result = await runCli(
      [
        'credentials',
        'add',
        '--org-id',
        org.org_id,
        '--provider',
        'vendor_a',
        '--name',
        'unroutable',
        '--secret-stdin',
        '--app-connection-id',
        org.app_connection_id,
      ],
      { ...env, VENDOR_B_BASE_URL: configuredVendor.url },
      { stdin: 'mock-key-for-vendor-a' },
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('vendor_a is not configured on this gateway');
  });

  it('serves the configured vendor, recorded as real traffic', async () => {
    const response = await postJson(
      `${strict.url}/v1/chat/completions`,
      chat('vendor_b/gpt-4o-mini'),
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    expect(await servedByMock(response.headers.get('x-request-id')!)).toBe(false);
  });
});

describe('MOCK_VENDORS=true beside a configured vendor', () => {
  it('serves the unconfigured vendor from the mock, with a warning at boot and records that say so', async () => {
    expect(mocking.output()).toContain('development only, never real traffic');
    const mocked = await postJson(
      `${mocking.url}/v1/chat/completions`,
      chat('vendor_a/claude-haiku-4-5'),
      bearer(org.api_key),
    );
    expect(mocked.status).toBe(200);
    expect(await servedByMock(mocked.headers.get('x-request-id')!)).toBe(true);
    const real = await postJson(
      `${mocking.url}/v1/chat/completions`,
      chat('vendor_b/gpt-4o-mini'),
      bearer(org.api_key),
    );
    expect(real.status).toBe(200);
    expect(await servedByMock(real.headers.get('x-request-id')!)).toBe(false);
  });
});
