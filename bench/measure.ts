// One measurement: req/s, p50, p99, mean, and every non-2xx counted as an error. Many
// connections: autocannon. One connection: a sequential keep-alive client timed with
// performance.now(), because autocannon's latencies have whole-millisecond resolution and the
// 1-connection target is about fractions of a millisecond.
import autocannon from 'autocannon';
import { Client } from 'undici';

export interface Measurement {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /**
   * Mean time per request: measured per request at one connection; by Little's law
   * (connections / throughput) under autocannon, whose histogram has whole-millisecond
   * resolution.
   */
  readonly meanMs: number;
  readonly errors: number;
}

export interface LoadSpec {
  readonly url: string;
  readonly connections: number;
  readonly durationSeconds: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Send exactly this many requests instead of running for a duration (warm-ups). */
  readonly amount?: number;
  /** Rewrites headers per request (e.g. a different product user each time). */
  readonly headersFor?: (sequence: number) => Record<string, string>;
}

export async function measure(spec: LoadSpec): Promise<Measurement> {
  return spec.connections === 1 ? measureSequential(spec) : measureWithAutocannon(spec);
}

const PATH = '/v1/chat/completions';

async function measureWithAutocannon(spec: LoadSpec): Promise<Measurement> {
  let sequence = 0;
  const result = await autocannon({
    url: `${spec.url}${PATH}`,
    method: 'POST',
    connections: spec.connections,
    ...(spec.amount !== undefined ? { amount: spec.amount } : { duration: spec.durationSeconds }),
    headers: { 'content-type': 'application/json', ...spec.headers },
    body: spec.body,
    ...(spec.headersFor && {
      requests: [
        {
          setupRequest: (request) => {
            sequence += 1;
            return { ...request, headers: { ...request.headers, ...spec.headersFor!(sequence) } };
          },
        },
      ],
    }),
  });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    meanMs: (spec.connections * 1000) / result.requests.average,
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

/** One request at a time on one keep-alive connection, each timed to the microsecond. */
async function measureSequential(spec: LoadSpec): Promise<Measurement> {
  const client = new Client(new URL(spec.url).origin, { pipelining: 1, keepAliveTimeout: 30_000 });
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + spec.durationSeconds * 1000;
  const more = (): boolean =>
    spec.amount !== undefined
      ? latencies.length + errors < spec.amount
      : performance.now() < deadline;
  for (let sequence = 1; more(); sequence += 1) {
    const headers = {
      'content-type': 'application/json',
      ...spec.headers,
      ...spec.headersFor?.(sequence),
    };
    const requestStarted = performance.now();
    try {
      const response = await client.request({
        method: 'POST',
        path: PATH,
        headers,
        body: spec.body,
      });
      for await (const chunk of response.body) void chunk; // the whole answer, to its last byte
      if (response.statusCode >= 300) errors += 1;
      else latencies.push(performance.now() - requestStarted);
    } catch {
      errors += 1;
    }
  }
  const elapsedSeconds = (performance.now() - started) / 1000;
  await client.close();
  latencies.sort((a, b) => a - b);
  const quantile = (q: number): number =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return {
    requestsPerSecond: latencies.length / elapsedSeconds,
    p50Ms: quantile(0.5),
    p99Ms: quantile(0.99),
    meanMs: latencies.reduce((sum, value) => sum + value, 0) / latencies.length,
    errors,
  };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
