// npm run bench [-- --runs 3 --duration 5 --connections 50,1 --scenario stream --record]
// Measures, in one run on loopback, the mock vendor alone, the bare uWS→undici passthrough
// (the ceiling), the design floor (the passthrough plus the design's two Redis round trips and
// its ledger, bench/design-floor.ts) and the gateway's full path, and prints medians with
// ratios to the ceiling.
import { appendFileSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { measure, median, type LoadSpec, type Measurement } from './measure.js';
import { renderTable, type Row } from './report.js';
import {
  BENCH_PROMPT,
  gwCli,
  productUserHeaders,
  startDesignFloor,
  startGatewayTarget,
  startMock,
  startPassthrough,
  stopAndClean,
  type Target,
} from './targets.js';
import { GcTrace } from './gc-trace.js';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50,1' },
    scenario: { type: 'string' },
    record: { type: 'boolean', default: false },
  },
});
const runs = Number(flags.runs);
const durationSeconds = Number(flags.duration);
const connectionCounts = flags.connections.split(',').map(Number);

interface Scenario {
  readonly name: string;
  readonly body: Record<string, unknown>;
  /** Targets to measure besides the ceiling. */
  readonly targets: ReadonlyArray<'mock' | 'floor' | 'gateway' | 'gateway2'>;
  readonly distinctUsers: number;
  /** Which seeded organization's key the gateway is called with. */
  readonly org: 'plain' | 'byok';
}

const allScenarios: Scenario[] = [
  {
    name: 'json',
    body: BENCH_PROMPT,
    targets: ['mock', 'floor', 'gateway'],
    distinctUsers: 8,
    org: 'plain',
  },
  {
    name: 'stream',
    body: { ...BENCH_PROMPT, stream: true },
    targets: ['mock', 'gateway'],
    distinctUsers: 8,
    org: 'plain',
  },
  {
    name: 'json-10k-capped-users',
    body: BENCH_PROMPT,
    targets: ['gateway'],
    distinctUsers: 10_000,
    org: 'plain',
  },
  // Every core: the same gateway as GATEWAY_WORKERS=2 processes on one port, beside one.
  {
    name: 'json-workers',
    body: BENCH_PROMPT,
    targets: ['gateway', 'gateway2'],
    distinctUsers: 8,
    org: 'plain',
  },
  // BYOK: a primary credential rate-limited on every other call, failing over to a backup.
  {
    name: 'json-byok-failover',
    body: BENCH_PROMPT,
    targets: ['gateway'],
    distinctUsers: 8,
    org: 'byok',
  },
];
// An exact name picks that scenario alone (`json`); otherwise every name containing it.
const scenarios = allScenarios.some((scenario) => scenario.name === flags.scenario)
  ? allScenarios.filter((scenario) => scenario.name === flags.scenario)
  : allScenarios.filter((scenario) => !flags.scenario || scenario.name.includes(flags.scenario));

async function main(): Promise<void> {
  const mock = await startMock();
  const passthrough = await startPassthrough(mock.url);
  // The gateway runs under V8's GC trace: its table rows say what a request leaves behind.
  const gcTrace = new GcTrace();
  const gateway = await startGatewayTarget(mock.url, ['--trace-gc-nvp'], {
    onOutput: gcTrace.hear,
  });
  const floor = await startDesignFloor(mock.url, gateway);
  // The two-worker gateway runs only when a scenario measures it (it takes both cores).
  const gateway2 = scenarios.some((scenario) => scenario.targets.includes('gateway2'))
    ? await startGatewayTarget(mock.url, [], { workers: 2, sharing: gateway })
    : undefined;
  const targets: Target[] = [mock, passthrough, floor, gateway, ...(gateway2 ? [gateway2] : [])];
  const byName = { mock, floor, gateway, gateway2: gateway2! };
  try {
    const org = await gwCli<{ api_key: string; app_connection_id: string }>(
      ['seed', '--json', '--wallet', '1000000'],
      gateway.env,
    );
    // Every product user has a cap (the connection's per-user default) and a connection cap.
    await gwCli(
      [
        'cap',
        'set',
        '--scope',
        'app_connection',
        '--app-connection-id',
        org.app_connection_id,
        '--amount',
        '1000000',
        '--per-user-amount',
        '100',
      ],
      gateway.env,
    );
    const byokOrg = await gwCli<{ org_id: string; api_key: string; app_connection_id: string }>(
      ['seed', '--json', '--wallet', '1000000'],
      gateway.env,
    );
    for (const [name, secret, priority] of [
      ['flaky primary', 'mock-flaky-bench', '1'],
      ['backup', 'mock-ok-bench', '2'],
    ] as const) {
      await gwCli(
        [
          'credentials',
          'add',
          '--org-id',
          byokOrg.org_id,
          '--provider',
          'vendor_b',
          '--name',
          name,
          '--secret-stdin',
          '--priority',
          priority,
          '--app-connection-id',
          byokOrg.app_connection_id,
        ],
        gateway.env,
        `${secret}\n`,
      );
    }
    const vendorHeaders = { authorization: 'Bearer mock-bench-key' };
    const gatewayHeaders = (scenario: Scenario) => ({
      authorization: `Bearer ${scenario.org === 'byok' ? byokOrg.api_key : org.api_key}`,
    });

    const rows: Row[] = [];
    for (const scenario of scenarios) {
      for (const connections of connectionCounts) {
        const spec = (target: Target): LoadSpec => ({
          url: target.url,
          connections,
          durationSeconds,
          body: JSON.stringify(scenario.body),
          headers:
            target === gateway || target === gateway2 ? gatewayHeaders(scenario) : vendorHeaders,
          // Every target gets the same per-request product-user header (the others ignore
          // it): rewriting each request costs the load generator, which shares the cores, so
          // the ratios compare targets under the same load.
          headersFor: productUserHeaders(scenario.distinctUsers),
        });
        const measured = [passthrough, ...scenario.targets.map((name) => byName[name])];
        const samples = new Map<Target, Measurement[]>(measured.map((target) => [target, []]));
        const promotedPerRequest: number[] = [];
        for (const target of measured) {
          // Warm-up; for the gateway at least one request per product user, so the run
          // measures the steady state rather than first sight of each user.
          const users = target === gateway || target === gateway2 ? scenario.distinctUsers : 0;
          await measure(
            users > 100
              ? { ...spec(target), amount: users }
              : { ...spec(target), durationSeconds: 1 },
          );
        }
        for (let run = 0; run < runs; run += 1) {
          // Interleaved, so drift on a shared machine hits every target alike.
          for (const target of measured) {
            const from = gcTrace.events.length;
            gcTrace.recording = target === gateway;
            const measurement = await measure(spec(target));
            gcTrace.recording = false;
            samples.get(target)!.push(measurement);
            if (target === gateway) {
              const requests = measurement.requestsPerSecond * durationSeconds;
              promotedPerRequest.push(gcTrace.mainPromotedBytes(from) / requests);
            }
          }
        }
        const medianOf = (target: Target): Measurement => {
          const list = samples.get(target)!;
          return {
            requestsPerSecond: median(list.map((m) => m.requestsPerSecond)),
            p50Ms: median(list.map((m) => m.p50Ms)),
            p99Ms: median(list.map((m) => m.p99Ms)),
            meanMs: median(list.map((m) => m.meanMs)),
            errors: list.reduce((sum, m) => sum + m.errors, 0),
          };
        };
        const ceiling = medianOf(passthrough);
        const designFloor = scenario.targets.includes('floor') ? medianOf(floor) : undefined;
        for (const target of measured) {
          rows.push({
            scenario: scenario.name,
            connections,
            target: target.name,
            median: medianOf(target),
            ceiling: target === passthrough ? undefined : ceiling,
            ...(target === gateway && {
              floor: designFloor,
              promotedBytesPerRequest: median(promotedPerRequest),
            }),
          });
        }
        process.stderr.write(`measured ${scenario.name} @ ${connections} connections\n`);
      }
    }
    const table = renderTable(rows);
    process.stdout.write(`${table}\n`);
    if (flags.record) record(table);
  } finally {
    await stopAndClean(targets);
  }
}

function record(table: string): void {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim();
  const entry = [
    '',
    `## ${new Date().toISOString().slice(0, 10)} — ${cpus().length} cores (${cpu}), Node ${process.version}`,
    '',
    `Command: \`${command}\` (medians of ${runs} runs × ${durationSeconds} s, interleaved; non-2xx counted as errors)`,
    '',
    table,
    '',
  ].join('\n');
  const path = new URL('../../bench/RESULTS.md', import.meta.url);
  let existing = '';
  try {
    existing = readFileSync(path, 'utf8');
  } catch {
    existing =
      '# Bench results\n\nRatios are against the bare uWS→undici passthrough measured in the same run.\n';
    appendFileSync(path, existing);
  }
  appendFileSync(path, entry);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
