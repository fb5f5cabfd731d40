// One autocannon measurement: req/s, p50, p99, and every non-2xx counted as an error.
import autocannon from 'autocannon';

export interface Measurement {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /**
   * Mean time per request by Little's law (connections / throughput): autocannon's latency
   * histogram has whole-millisecond resolution, useless below a millisecond.
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
  let sequence = 0;
  const result = await autocannon({
    url: `${spec.url}/v1/chat/completions`,
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

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
