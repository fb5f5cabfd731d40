// The error catalogue page lists every code with the status the gateway really answers, and
// the alerts in docs/operations.md name only metrics the gateway really serves.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorCatalogue } from '../src/errors.js';
import { GatewayMetrics } from '../src/metrics.js';

describe('docs/errors.md', () => {
  const page = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
  it.each(Object.entries(errorCatalogue))('lists %s with its status', (code, { status }) => {
    expect(page).toContain(`| ${status} | \`${code}\` |`);
  });
});

describe('/openapi.json', () => {
  it('lists the routes and, for each, the error codes with the statuses the gateway answers', async () => {
    const { buildOpenApiDocument } = await import('../src/openapi/document.js');
    const { routeDeclarations } = await import('../src/routes/index.js');
    const document = buildOpenApiDocument(routeDeclarations) as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/v1/chat/completions',
        '/v1/messages',
        '/v1/messages/count_tokens',
        '/v1/models',
        '/inference-keys/usage',
        '/product-users/by-external-id',
        '/product-users/by-external-id/credit-summary',
        '/product-users/by-external-id/credit-grants',
      ]),
    );
    const chat = document.paths['/v1/chat/completions']!.post!.responses;
    for (const code of [
      'gw_malformed_or_missing_key',
      'gw_unknown_key',
      'gw_key_inactive',
      'gw_model_not_allowed',
      'gw_unsupported_model',
    ] as const) {
      expect(chat[String(errorCatalogue[code].status)]!.description).toContain(code);
    }
  });
});

describe('docs/operations.md alerts', () => {
  const page = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
  const alerts = page.slice(page.indexOf('\n## Alerts'));
  // Every metric the gateway registers (with every probe, as src/main.ts builds it).
  const probe = () => Promise.resolve(0);
  const registered = new GatewayMetrics(false, probe, {
    dependencies: () => Promise.resolve({}),
    usageRecordsAwaitingNewerWriter: probe,
    webhookDeliveriesDue: probe,
    upstreamWaiting: () => 0,
    tokenCountsWaiting: () => 0,
  }).registry
    .getMetricsAsArray()
    .map((metric) => metric.name);

  it('has an alert for every fault issue 16 lists', () => {
    expect(alerts.length).toBeGreaterThan(100);
    for (const fault of [
      'Postgres down',
      'Redis down or restarted',
      'A vendor hanging or trickling',
      'SIGTERM drain exceeding the grace',
      'Reconcile drift',
      'Dead letters',
      'Webhook backlog',
      'Redis Cluster shard away',
    ]) {
      expect(alerts).toContain(`**${fault}**`);
    }
  });

  it('names only metrics that exist (and error codes that exist)', () => {
    const named = new Set(alerts.match(/\bgw_[a-z0-9_]+/g) ?? []);
    expect(named.size).toBeGreaterThan(8);
    for (const name of named) {
      if (name in errorCatalogue) continue;
      expect(registered, name).toContain(name.replace(/_(bucket|sum|count)$/, ''));
    }
  });
});
