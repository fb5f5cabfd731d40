// The bench's table: medians per target, each as a ratio of the passthrough ceiling; the
// gateway's rows also as a ratio of the design floor, with the bytes a request left behind.
import type { Measurement } from './measure.js';

export interface Row {
  readonly scenario: string;
  readonly connections: number;
  readonly target: string;
  readonly median: Measurement;
  readonly ceiling: Measurement | undefined;
  /** The gateway's rows: the design floor of the same run, when the scenario has one. */
  readonly floor?: Measurement | undefined;
  /** The gateway's rows: bytes its main thread's scavenges promoted per request (median). */
  readonly promotedBytesPerRequest?: number;
}

const fixed = (value: number, digits: number): string => value.toFixed(digits);

export function renderTable(rows: readonly Row[]): string {
  const header =
    '| scenario | conns | target | req/s | p50 ms | p99 ms | mean ms | errors | req/s vs ceiling | p50 − ceiling ms | mean − ceiling ms | req/s vs floor | promoted KB/req |';
  const lines = [header, '|---|---|---|---|---|---|---|---|---|---|---|---|---|'];
  for (const row of rows) {
    const ratio = row.ceiling
      ? `${fixed((row.median.requestsPerSecond / row.ceiling.requestsPerSecond) * 100, 0)}%`
      : '—';
    const p50Delta = row.ceiling ? fixed(row.median.p50Ms - row.ceiling.p50Ms, 3) : '—';
    const meanDelta = row.ceiling ? fixed(row.median.meanMs - row.ceiling.meanMs, 3) : '—';
    const floorRatio = row.floor
      ? fixed(row.median.requestsPerSecond / row.floor.requestsPerSecond, 2)
      : '—';
    const promoted =
      row.promotedBytesPerRequest === undefined
        ? '—'
        : fixed(row.promotedBytesPerRequest / 1024, 2);
    lines.push(
      `| ${row.scenario} | ${row.connections} | ${row.target} | ${fixed(row.median.requestsPerSecond, 0)} | ${fixed(row.median.p50Ms, 3)} | ${fixed(row.median.p99Ms, 3)} | ${fixed(row.median.meanMs, 3)} | ${row.median.errors} | ${ratio} | ${p50Delta} | ${meanDelta} | ${floorRatio} | ${promoted} |`,
    );
  }
  return lines.join('\n');
}
