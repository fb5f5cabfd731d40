// The bench's table: medians per target, each as a ratio of the passthrough ceiling.
import type { Measurement } from './measure.js';

export interface Row {
  readonly scenario: string;
  readonly connections: number;
  readonly target: string;
  readonly median: Measurement;
  readonly ceiling: Measurement | undefined;
}

const fixed = (value: number, digits: number): string => value.toFixed(digits);

export function renderTable(rows: readonly Row[]): string {
  const header =
    '| scenario | conns | target | req/s | p50 ms | p99 ms | mean ms | errors | req/s vs ceiling | p50 − ceiling ms | mean − ceiling ms |';
  const lines = [header, '|---|---|---|---|---|---|---|---|---|---|---|'];
  for (const row of rows) {
    const ratio = row.ceiling
      ? `${fixed((row.median.requestsPerSecond / row.ceiling.requestsPerSecond) * 100, 0)}%`
      : '—';
    const p50Delta = row.ceiling ? fixed(row.median.p50Ms - row.ceiling.p50Ms, 3) : '—';
    const meanDelta = row.ceiling ? fixed(row.median.meanMs - row.ceiling.meanMs, 3) : '—';
    lines.push(
      `| ${row.scenario} | ${row.connections} | ${row.target} | ${fixed(row.median.requestsPerSecond, 0)} | ${fixed(row.median.p50Ms, 3)} | ${fixed(row.median.p99Ms, 3)} | ${fixed(row.median.meanMs, 3)} | ${row.median.errors} | ${ratio} | ${p50Delta} | ${meanDelta} |`,
    );
  }
  return lines.join('\n');
}
