// /metrics is never served on the public port: it has its own listener, on loopback unless
// configured otherwise (METRICS_HOST, METRICS_PORT). What it serves is bounded: no tenant id
// is ever a label, and the money it counts is exact to the nano-unit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson } from './support/http.js';
import {
  metricsUrl,
  seed,
  startGateway,
  type GatewayProcess,
  type SeededOrg,
} from './support/processes.js';
import { ledgerRow } from './support/records.js';

const { env, db } = isolatedContext('metrics-port');
let gateway: GatewayProcess;
let org: SeededOrg;

beforeAll(async () => {
  [gateway, org] = await Promise.all([startGateway(env), seed(env)]);
});
afterAll(async () => {
  await gateway?.stop();
});

describe('/metrics on its own listener', () => {
  it('answers 404 on the public port', async () => {
    const response = await fetch(`${gateway.url}/metrics`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
      'gw_route_not_found',
    );
  });

  it('serves Prometheus text on the metrics listener, and nothing else there', async () => {
    const response = await fetch(metricsUrl(gateway));
    expect(response.status).toBe(200);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.text()).toContain('process_cpu_seconds_total');
    const other = await fetch(metricsUrl(gateway).replace('/metrics', '/v1/models'));
    expect(other.status).toBe(404);
  });

  it('binds the metrics listener to loopback by default', () => {
    const config = loadConfig({});
    expect(config.METRICS_HOST).toBe('127.0.0.1');
    expect(config.METRICS_PORT).toBe(9464);
  });
});

/** Every sample of a scrape: its metric name, labels and value. */
function samples(
  text: string,
): Array<{ name: string; labels: Record<string, string>; value: string }> {
  const parsed = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!;
    }
    parsed.push({ name: match[1]!, labels, value: match[3]! });
  }
  return parsed;
}

const valueOf = (
  scrape: ReturnType<typeof samples>,
  name: string,
  labels: Record<string, string> = {},
): string | undefined =>
  scrape.find(
    (sample) =>
      sample.name === name &&
      Object.entries(labels).every(([label, value]) => sample.labels[label] === value),
  )?.value;

describe('what /metrics says about money and the services', () => {
  it('counts settled requests by end reason and their cost exactly, in nano-units', async () => {
    const scrapeBefore = samples(await (await fetch(metricsUrl(gateway))).text());
    const sellBefore = BigInt(
      valueOf(scrapeBefore, 'gw_settled_sell_cost_nano_total', { route: 'system' }) ?? '0',
    );
    const response = await postJson(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        messages: [{ role: 'user', content: 'metrics mock:output_tokens=7' }],
      },
      bearer(org.api_key),
    );
    expect(response.status).toBe(200);
    const row = await ledgerRow<{ sell_cost: string; vendor_cost: string }>(
      db,
      response.headers.get('x-request-id'),
      'sell_cost::text, vendor_cost::text',
    );
    const scrape = samples(await (await fetch(metricsUrl(gateway))).text());
    expect(
      Number(
        valueOf(scrape, 'gw_settled_requests_total', {
          vendor: 'vendor_b',
          end_reason: 'completed',
        }),
      ),
    ).toBeGreaterThanOrEqual(1);
    // The counter moved by exactly the record's cost (12-digit decimals in Postgres).
    const sellAfter = BigInt(
      valueOf(scrape, 'gw_settled_sell_cost_nano_total', { currency: 'USD', route: 'system' })!,
    );
    expect(sellAfter - sellBefore).toBe(toNano(row.sell_cost));
    expect(toNano(row.sell_cost)).toBeGreaterThan(0n);
    expect(
      BigInt(
        valueOf(scrape, 'gw_settled_vendor_cost_nano_total', { currency: 'USD', route: 'system' })!,
      ),
    ).toBeGreaterThanOrEqual(toNano(row.vendor_cost));
    // The services as /readyz sees them, and the backlogs.
    expect(valueOf(scrape, 'gw_dependency_up', { dependency: 'redis' })).toBe('1');
    expect(valueOf(scrape, 'gw_dependency_up', { dependency: 'postgres' })).toBe('1');
    expect(valueOf(scrape, 'gw_usage_records_pending')).toMatch(/^\d+$/);
    expect(valueOf(scrape, 'gw_webhook_deliveries_due')).toMatch(/^\d+$/);
  });

  it('counts error answers by route and catalogue code, apart from statuses', async () => {
    const errors = async (route: string, code: string): Promise<number> =>
      Number(
        valueOf(samples(await (await fetch(metricsUrl(gateway))).text()), 'gw_http_errors_total', {
          route,
          code,
        }) ?? '0',
      );
    const route = '/v1/chat/completions';
    const before = await errors(route, 'gw_unknown_key');
    const unknownKey = await postJson(
      `${gateway.url}${route}`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      bearer(`gw_${'x'.repeat(43)}`),
    );
    expect(unknownKey.status).toBe(401);
    expect(await errors(route, 'gw_unknown_key')).toBe(before + 1);
    // an answer that is no error counts nothing there
    const invalidBefore = await errors(route, 'gw_invalid_request');
    const served = await postJson(
      `${gateway.url}${route}`,
      { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      bearer(org.api_key),
    );
    expect(served.status).toBe(200);
    expect(await errors(route, 'gw_invalid_request')).toBe(invalidBefore);
    expect(await errors(route, 'gw_unknown_key')).toBe(before + 1);
    // a path no route serves (the public port's /metrics, above) counts as route "unmatched"
    expect(await errors('unmatched', 'gw_route_not_found')).toBeGreaterThanOrEqual(1);
  });

  it('never labels a series with an org, app, user, key or request', async () => {
    const scrape = samples(await (await fetch(metricsUrl(gateway))).text());
    expect(scrape.length).toBeGreaterThan(20);
    const tenantIds = [org.org_id, org.app_id, org.app_connection_id, org.api_key];
    for (const sample of scrape) {
      for (const [label, value] of Object.entries(sample.labels)) {
        expect(label, sample.name).not.toMatch(
          /org|app|user|key|credential|connection|client|request|model|tenant/i,
        );
        for (const id of tenantIds) expect(value, `${sample.name}{${label}}`).not.toContain(id);
      }
    }
  });
});

/** A 12-digit decimal amount in nano-units (its last 3 digits are always 0). */
function toNano(decimal: string): bigint {
  const [whole, fraction = ''] = decimal.split('.');
  return BigInt(whole! + fraction.padEnd(9, '0').slice(0, 9));
}
