// npm run build && node dist/bench/streams.js [--streams 10000] [--workers 2] [--seconds 20]
// Many long-lived streams through one gateway: the mock vendor paced at a realistic token
// rate (each stream lasts --seconds), all streams open at once (ramped over a few seconds).
// Reports the gateway's RSS (all its processes) and RSS per stream at the peak, its event-loop
// delay p99, the time to first byte added over the bare mock, errors, and checks that every
// stream completed and has its usage record in Postgres.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Agent, request } from 'undici';
import {
  gwCli,
  startGatewayTarget,
  startMock,
  stopAndClean,
  type GatewayTarget,
  type Target,
} from './targets.js';

const { values: flags } = parseArgs({
  options: {
    streams: { type: 'string', default: '10000' },
    workers: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '20' },
    'ramp-seconds': { type: 'string', default: '5' },
  },
});
const streams = Number(flags.streams);
const workers = Number(flags.workers);
const outputTokens = 200;
const tokensPerSecond = Math.max(1, Math.round(outputTokens / Number(flags.seconds)));
const rampMs = Number(flags['ramp-seconds']) * 1000;

interface StreamResult {
  readonly ok: boolean;
  readonly ttfbMs: number;
  readonly requestId: string | undefined;
}

async function openStream(
  dispatcher: Agent,
  url: string,
  headers: Record<string, string>,
  user: string,
): Promise<StreamResult> {
  const started = performance.now();
  try {
    const response = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', 'x-gw-external-user-id': user, ...headers },
      body: JSON.stringify({
        model: 'vendor_b/gpt-4o-mini',
        stream: true,
        max_tokens: outputTokens,
        messages: [{ role: 'user', content: `a long answer mock:output_tokens=${outputTokens}` }],
      }),
      headersTimeout: 300_000,
      bodyTimeout: 300_000,
    });
    let ttfbMs = -1;
    let tail = '';
    for await (const chunk of response.body) {
      if (ttfbMs < 0) ttfbMs = performance.now() - started;
      tail = (tail + (chunk as Buffer).toString()).slice(-64);
    }
    const requestId = response.headers['x-request-id'] as string | undefined;
    return { ok: response.statusCode === 200 && tail.includes('[DONE]'), ttfbMs, requestId };
  } catch {
    return { ok: false, ttfbMs: -1, requestId: undefined };
  }
}

/** Opens `count` streams spread evenly over `rampMs`, all held open together. */
async function run(
  url: string,
  headers: Record<string, string>,
  count: number,
): Promise<StreamResult[]> {
  const dispatcher = new Agent({ connections: count + 16, pipelining: 0 });
  const all: Promise<StreamResult>[] = [];
  const gapMs = rampMs / count;
  const started = performance.now();
  for (let index = 0; index < count; index += 1) {
    const due = started + index * gapMs;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    all.push(openStream(dispatcher, url, headers, `stream-user-${index % 1000}`));
  }
  const results = await Promise.all(all);
  await dispatcher.close();
  return results;
}

function rssBytes(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      total += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    } catch {
      // gone
    }
  }
  return total;
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

async function eventLoopP99Ms(gateway: GatewayTarget): Promise<number> {
  const metrics = await fetch(`http://127.0.0.1:${gateway.env.METRICS_PORT}/metrics`).then((r) =>
    r.text(),
  );
  return Number(/^nodejs_eventloop_lag_p99_seconds (\S+)/m.exec(metrics)?.[1]) * 1000;
}

async function main(): Promise<void> {
  const mock = await startMock(['--tokens-per-second', String(tokensPerSecond)]);
  const gateway = await startGatewayTarget(mock.url, [], { workers, metrics: true });
  const targets: Target[] = [mock, gateway];
  try {
    const org = await gwCli<{ org_id: string; api_key: string }>(
      ['seed', '--json', '--wallet', '1000000'],
      gateway.env,
    );
    const headers = { authorization: `Bearer ${org.api_key}` };
    // Baseline: the bare mock's time to first byte for a sample of streams.
    const baseline = await run(mock.url, { authorization: 'Bearer mock-bench-key' }, 200);
    const pids = [gateway.child.pid!, ...childrenOf(gateway.child.pid!)];
    const idleRss = rssBytes(pids);
    let peakRss = 0;
    let peakLoopMs = 0;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, rssBytes(pids));
      eventLoopP99Ms(gateway).then(
        (ms) => (peakLoopMs = Math.max(peakLoopMs, ms)),
        () => undefined,
      );
    }, 1000);
    const results = await run(gateway.url, headers, streams);
    clearInterval(sampler);

    const completed = results.filter((result) => result.ok).length;
    const ids = results.flatMap((result) => (result.requestId ? [result.requestId] : []));
    const db = new pg.Client({ connectionString: gateway.env.DATABASE_URL });
    await db.connect();
    let recorded = 0;
    for (let attempt = 0; attempt < 120 && recorded < ids.length; attempt += 1) {
      const { rows } = await db.query<{ n: string }>(
        "SELECT count(*)::text AS n FROM usage_records WHERE request_id = ANY($1::uuid[]) AND status = 'completed'",
        [ids],
      );
      recorded = Number(rows[0]!.n);
      if (recorded < ids.length) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    await db.end();
    const ttfb = (list: StreamResult[]) => list.filter((r) => r.ttfbMs >= 0).map((r) => r.ttfbMs);
    const report = {
      streams,
      gateway_processes: pids.length,
      seconds_per_stream: Number(flags.seconds),
      completed,
      errors: streams - completed,
      recorded_in_postgres: recorded,
      rss_idle_mb: Math.round(idleRss / 1048576),
      rss_peak_mb: Math.round(peakRss / 1048576),
      rss_per_stream_kb: Math.round((peakRss - idleRss) / streams / 1024),
      event_loop_delay_p99_peak_ms: Math.round(peakLoopMs * 10) / 10,
      ttfb_mock_p50_ms: Math.round(percentile(ttfb(baseline), 50)),
      ttfb_gateway_p50_ms: Math.round(percentile(ttfb(results), 50)),
      ttfb_gateway_p99_ms: Math.round(percentile(ttfb(results), 99)),
      added_ttfb_p50_ms: Math.round(percentile(ttfb(results), 50) - percentile(ttfb(baseline), 50)),
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await stopAndClean(targets);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`streams bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
