// What docs/operations.md tells an operator to watch and run works on a running gateway: every
// metric README.md and docs/ name is in its `GET /metrics` scrape; every alert is a PromQL
// expression that works on that scrape (counters and histogram buckets read through rate() or
// increase(), gauges never, label names the metric has, label values the gateway writes); and
// every SQL statement of the runbooks runs on the gateway's schema. All are read from the
// docs, so the test follows them.
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCatalogue } from '../src/errors.js';
import { END_REASONS } from '../src/inference/charging-policy.js';
import { GatewayMetrics } from '../src/metrics.js';
import { isolatedContext } from './support/context.js';
import { guides } from './support/guides.js';
import { bearer, postJson } from './support/http.js';
import { metricsUrl, seed, startGateway, type GatewayProcess } from './support/processes.js';

// Its own database: a gateway with SMTP_URL sends every message of its database's outbox.
const { env, db } = isolatedContext('operations-docs', { ownDatabase: true });
let gateway: GatewayProcess;
/** Each metric of the scrape by name, with its type (`# TYPE`). */
let types: Map<string, string>;
/** Each label value the scrape's samples carry, by metric and label: `name\u0000label`. */
let valuesSeen: Map<string, Set<string>>;

beforeAll(async () => {
  gateway = await startGateway({
    ...env,
    // Every metric the gateway can serve: the e-mail outbox's is there only with SMTP_URL
    // (never reached here: nothing is mailed).
    SMTP_URL: 'smtp://127.0.0.1:9',
    EMAIL_FROM: 'gw <no-reply@example.test>',
    PUBLIC_ORIGIN: 'https://gw.example.test',
  });
  // One request served and one refused, so the labelled series have samples to read.
  const org = await seed(env);
  const served = await postJson(
    `${gateway.url}/v1/chat/completions`,
    { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] },
    bearer(org.api_key),
  );
  expect(served.status).toBe(200);
  const scrape = await (await fetch(metricsUrl(gateway))).text();
  types = new Map(
    [...scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1]!, match[2]!]),
  );
  valuesSeen = new Map();
  for (const [, name, labels = ''] of scrape.matchAll(/^([a-z_:][a-z0-9_:]*)\{(.*)\} \S+$/gm)) {
    for (const [, label, value] of labels.matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) {
      const key = `${name!}\u0000${label!}`;
      valuesSeen.set(key, (valuesSeen.get(key) ?? new Set()).add(value!));
    }
  }
});
afterAll(async () => {
  await gateway?.stop();
});

/** A metric name as the docs write one: gw's own, or Node's and the process's (prom-client). */
const METRIC =
  /\b(?:gw|nodejs|process)_[a-z0-9_]*_(?:total|pending|up|waiting|due|seconds|bytes|bucket|sum|count)\b/g;

/** The metric a sample name belongs to: a histogram's `_bucket`, `_sum`, `_count` are its own. */
function metricOf(sample: string): string {
  if (types.has(sample)) return sample;
  const base = sample.replace(/_(bucket|sum|count)$/, '');
  return types.get(base) === 'histogram' ? base : sample;
}

/** The label names the gateway declares for each of its metrics (its registry, src/metrics.ts). */
const declaredLabels = new Map(
  new GatewayMetrics(false).registry
    .getMetricsAsArray()
    .map((metric) => [
      metric.name,
      (metric as unknown as { labelNames: readonly string[] }).labelNames,
    ]),
);
/** The label names a selector of `sample` may use (a histogram's buckets also have `le`). */
function labelsOf(sample: string): readonly string[] {
  const metric = metricOf(sample);
  const declared = declaredLabels.get(metric) ?? [];
  const seen = [...valuesSeen.keys()]
    .filter((key) => key.startsWith(`${metric}\u0000`))
    .map((key) => key.split('\u0000')[1]!);
  return [...new Set([...declared, ...seen, ...(sample.endsWith('_bucket') ? ['le'] : [])])];
}

/** Each row of the Alerts table: its fault and the PromQL expressions (code spans) it gives. */
function alertExpressions(): { fault: string; expression: string }[] {
  const page = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
  const section = page.slice(page.indexOf('\n## Alerts'));
  const rows = section.split('\n').filter((line) => /^\| \S/.test(line));
  return rows.slice(2).flatMap((row) => {
    // Cells split at a `|` Markdown does not escape; `\|` in a cell is PromQL's `|`.
    const [fault = '', alert = ''] = row
      .slice(2)
      .split(/ (?<!\\)\| /)
      .map((cell) => cell.replace(/\\\|/g, '|'));
    return [...alert.matchAll(/`([^`]+)`/g)]
      .map((match) => match[1]!)
      .filter((code) => code.match(METRIC)?.some((name) => name.startsWith('gw_')))
      .filter((code) => !/^SELECT\b/i.test(code))
      .map((expression) => ({ fault: fault.replace(/\*\*/g, ''), expression }));
  });
}

describe('the metrics the docs name', () => {
  it('are all in a running gateway’s /metrics', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const { name, text } of guides()) {
      for (const sample of new Set(text.match(METRIC) ?? [])) {
        if (sample in errorCatalogue) continue;
        checked += 1;
        if (!types.has(metricOf(sample))) problems.push(`${name}: ${sample} is not served`);
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(problems).toEqual([]);
  });

  it('with the labels they write in braces (`gw_emails_total{purpose,result}`)', () => {
    const problems: string[] = [];
    for (const { name, text } of guides()) {
      for (const [, sample, braces] of text.matchAll(/\b((?:gw|nodejs)_[a-z0-9_]+)\{([^}]*)\}/g)) {
        for (const [, label] of braces!.matchAll(/(?:^|,)\s*([a-z_]+)/g)) {
          if (!labelsOf(sample!).includes(label!))
            problems.push(`${name}: ${sample} has no label ${label}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('the labels of the metrics', () => {
  it('are each named, with what bounds them, in docs/operations.md', () => {
    const page = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    const section = page.slice(page.indexOf('## Metrics and per-org money'));
    const paragraph = section.slice(0, section.indexOf('Money in `/metrics`'));
    const named = new Set([...paragraph.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]));
    const declared = new Set([...declaredLabels.values()].flat());
    expect(declared.size).toBeGreaterThan(10);
    expect([...declared].filter((label) => !named.has(label))).toEqual([]);
  });
});

describe('the alerts of docs/operations.md', () => {
  const alerts = alertExpressions();
  const RANGE_FUNCTION = /(?:^|[^a-z_])(rate|irate|increase)\(\s*$/;

  it('read counters and histogram buckets through rate() or increase(), gauges never', () => {
    expect(alerts.length).toBeGreaterThan(20);
    const problems: string[] = [];
    for (const { fault, expression } of alerts) {
      for (const match of expression.matchAll(METRIC)) {
        const sample = match[0];
        const type = types.get(metricOf(sample));
        const before = expression.slice(0, match.index);
        const after = expression.slice(match.index + sample.length).replace(/^\{[^}]*\}/, '');
        const ranged = RANGE_FUNCTION.test(before) && /^\[\d+[smhd]\]/.test(after);
        const isCounter =
          type === 'counter' || (type === 'histogram' && sample.endsWith('_bucket'));
        if (isCounter && !ranged) problems.push(`${fault}: ${sample} (a counter) without rate()`);
        if (type === 'gauge' && RANGE_FUNCTION.test(before))
          problems.push(`${fault}: ${sample} (a gauge) in rate()/increase()`);
        if (type === 'histogram' && !sample.endsWith('_bucket') && !/_(sum|count)$/.test(sample))
          problems.push(`${fault}: ${sample} (a histogram) without _bucket`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('select and group by labels the metrics have, with values the gateway writes', () => {
    const sources = readdirSync(new URL('../src/', import.meta.url), { recursive: true })
      .filter((file) => String(file).endsWith('.ts'))
      .map((file) => readFileSync(new URL(`../src/${String(file)}`, import.meta.url), 'utf8'))
      .join('\n');
    const problems: string[] = [];
    for (const { fault, expression } of alerts) {
      const samples = [...new Set(expression.match(METRIC) ?? [])];
      for (const [, sample, matchers] of expression.matchAll(
        /\b([a-z_:][a-z0-9_:]*)\{([^}]*)\}/g,
      )) {
        if (!samples.includes(sample!)) continue;
        for (const [, label, operator, value] of matchers!.matchAll(
          /([a-z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g,
        )) {
          if (!labelsOf(sample!).includes(label!)) {
            problems.push(`${fault}: ${sample} has no label ${label}`);
            continue;
          }
          const values = operator!.includes('~') ? value!.split('|') : [value!];
          for (const one of values) {
            const known =
              label === 'end_reason'
                ? (END_REASONS as readonly string[]).includes(one)
                : label === 'status'
                  ? /^[1-5]\d\d$/.test(one)
                  : (valuesSeen.get(`${metricOf(sample!)}\u0000${label}`)?.has(one) ?? false) ||
                    sources.includes(`'${one}'`);
            if (!known) problems.push(`${fault}: ${sample}{${label}} is never "${one}"`);
          }
        }
      }
      for (const [, grouping] of expression.matchAll(/\bby \(([^)]*)\)/g)) {
        for (const label of grouping!.split(',').map((one) => one.trim())) {
          for (const sample of samples) {
            if (!labelsOf(sample).includes(label))
              problems.push(`${fault}: by (${label}) but ${sample} has no such label`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('name the end reasons the vendor alerts select (docs/charging.md lists each)', () => {
    const charging = readFileSync(new URL('../docs/charging.md', import.meta.url), 'utf8');
    for (const reason of END_REASONS) expect(charging, reason).toContain(`\`${reason}\``);
  });
});

describe('the SQL of docs/operations.md', () => {
  it('runs on the gateway’s schema (planned, not run: the UPDATE changes nothing)', async () => {
    const page = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    const statements = [
      ...[...page.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1]!),
      ...[...page.matchAll(/`((?:SELECT|UPDATE) [^`]+)`/g)].map((match) => match[1]!),
      // psql -c "…" in the runbooks' shell lines
      ...[...page.matchAll(/-A?t?c "((?:SELECT|UPDATE) [^"]+)"/g)].map((match) => match[1]!),
    ]
      .map((statement) => statement.trim().replace(/;$/, ''))
      // a shell variable of the runbook (`WHERE id = $ID`) stands for a value
      .map((statement) => statement.replace(/\$\{?[A-Z][A-Z_]*\}?/g, '1'));
    expect(statements.length).toBeGreaterThan(6);
    const problems: string[] = [];
    for (const statement of statements) {
      await db.query(`EXPLAIN ${statement}`).catch((error: Error) => {
        problems.push(`${statement}: ${error.message}`);
      });
    }
    expect(problems).toEqual([]);
  });
});
