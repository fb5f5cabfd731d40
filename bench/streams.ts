// npm run build && node dist/bench/streams.js [--streams 10000] [--workers 2] [--seconds 20]
// Many long-lived streams through one gateway: the mock vendor paced at a realistic token
// rate (each stream lasts --seconds), all streams open at once (ramped over a few seconds).
// Two targets in one run, one after the other over the same mock: the bare passthrough
// (bench/passthrough.ts, uWS in and undici out with no logic: the ceiling, as many processes
// as the gateway has workers) and the gateway. For each: RSS idle → peak and per stream, the
// event-loop delay p99 over the peak (measured inside each process by bench/loop-probe.ts),
// CPU seconds of every process, the time to first byte over the bare mock's, and each error's
// cause. For the gateway it also checks that every completed stream has its usage record.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Agent, request } from 'undici';
import {
  gwCli,
  startGatewayTarget,
  startMock,
  startPassthroughs,
  stopAndClean,
  type Target,
} from './targets.js';

const { values: flags } = parseArgs({
  options: {
    streams: { type: 'string', default: '10000' },
    workers: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '20' },
    'ramp-seconds': { type: 'string', default: '5' },
    /** Which targets to run: both (the ceiling first), or one of them. */
    only: { type: 'string', default: '' },
    /**
     * Before the gateway's phase, one short request per product user: the streams then meet
     * users the gateway knows (steady state) instead of 1,000 first sightings (a cold start).
     */
    'warm-users': { type: 'boolean', default: false },
    /**
     * Characters of context before each stream's question (default none): real prompts carry
     * kilobytes of history or retrieved text, and a stream holds what it cannot let go of.
     */
    'prompt-chars': { type: 'string', default: '0' },
    /** Extra node arguments for the gateway's processes (e.g. --cpu-prof). */
    'gateway-node-args': { type: 'string', default: '' },
  },
});
const streams = Number(flags.streams);
const workers = Number(flags.workers);
const outputTokens = 200;
const tokensPerSecond = Math.max(1, Math.round(outputTokens / Number(flags.seconds)));
const rampMs = Number(flags['ramp-seconds']) * 1000;
/** Words of made-up context, `--prompt-chars` long. */
const context = 'lorem ipsum dolor sit amet, '
  .repeat(Math.ceil(Number(flags['prompt-chars']) / 28))
  .slice(0, Number(flags['prompt-chars']));
/** The streams are spread over this many product users. */
const PRODUCT_USERS = 1000;
const probeDir = mkdtempSync(join(tmpdir(), 'gw-loop-probe-'));
const probeArgs = ['--import', './dist/bench/loop-probe.js'];
process.env.LOOP_PROBE_DIR = probeDir;

interface StreamResult {
  /** undefined: complete (200 and `[DONE]`); else why not. */
  readonly cause: string | undefined;
  readonly ttfbMs: number;
  readonly requestId: string | undefined;
  /** When the stream ended, in ms from the start of the run. */
  readonly endedAtMs?: number;
}

/** The gateway's error code in an error body (`{"error":{"code":…}}`), or '-'. */
function errorCode(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown; type?: unknown } };
    return String(parsed.error?.code ?? parsed.error?.type ?? '-');
  } catch {
    return '-';
  }
}

/**
 * Streams between their first byte and their end, and the most there were at once: on a
 * saturated machine admissions queue, and not every opened stream is relaying at the peak.
 */
const relaying = { now: 0, most: 0 };

async function openStream(
  dispatcher: Agent,
  url: string,
  headers: Record<string, string>,
  user: string,
): Promise<StreamResult> {
  const started = performance.now();
  let ttfbMs = -1;
  let requestId: string | undefined;
  let phase = 'before_headers';
  try {
    const response = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', 'x-gw-external-user-id': user, ...headers },
      body: JSON.stringify({
        model: 'vendor_b/gpt-4o-mini',
        stream: true,
        max_tokens: outputTokens,
        messages: [
          { role: 'user', content: `${context}a long answer mock:output_tokens=${outputTokens}` },
        ],
      }),
      headersTimeout: 300_000,
      bodyTimeout: 300_000,
    });
    requestId = response.headers['x-request-id'] as string | undefined;
    phase = 'mid_body';
    if (response.statusCode !== 200) {
      const body = await response.body.text();
      return { cause: `http_${response.statusCode}:${errorCode(body)}`, ttfbMs, requestId };
    }
    let tail = '';
    try {
      for await (const chunk of response.body) {
        if (ttfbMs < 0) {
          ttfbMs = performance.now() - started;
          relaying.now += 1;
          relaying.most = Math.max(relaying.most, relaying.now);
        }
        tail = (tail + (chunk as Buffer).toString()).slice(-256);
      }
    } finally {
      if (ttfbMs >= 0) relaying.now -= 1;
    }
    if (tail.includes('[DONE]')) return { cause: undefined, ttfbMs, requestId };
    return {
      cause: tail.includes('"error"') ? 'no_done:error_event' : 'no_done',
      ttfbMs,
      requestId,
    };
  } catch (error) {
    const code = (error as { code?: string }).code ?? (error as Error).name;
    const message = (error as Error).message.slice(0, 60);
    return { cause: `socket_${phase}:${code} (${message})`, ttfbMs, requestId };
  }
}

interface Run {
  readonly results: StreamResult[];
  /** When the peak began (every stream opened) and ended (the first stream completed). */
  readonly peakStartMs: number;
  readonly peakEndMs: number;
}

/**
 * Opens `count` streams spread evenly over `rampMs`, all held open together. `onPeak` is
 * called once every stream is opened, and again when the first one completes (or all ended).
 */
async function run(
  url: string,
  headers: Record<string, string>,
  count: number,
  onPeak: (edge: 'start' | 'end') => void = () => undefined,
): Promise<Run> {
  const dispatcher = new Agent({ connections: count + 16, pipelining: 0 });
  relaying.now = 0;
  relaying.most = 0;
  const all: Promise<StreamResult>[] = [];
  const gapMs = rampMs / count;
  const started = performance.now();
  let rampDone = false;
  let peakStartMs = 0;
  let peakEndMs = 0;
  const endPeak = (): void => {
    if (!rampDone || peakEndMs > 0) return;
    peakEndMs = performance.now();
    onPeak('end');
  };
  for (let index = 0; index < count; index += 1) {
    const due = started + index * gapMs;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const stream = openStream(
      dispatcher,
      url,
      headers,
      `stream-user-${index % PRODUCT_USERS}`,
    ).then((result) => ({ ...result, endedAtMs: performance.now() - started }));
    void stream.then((result) => {
      if (result.cause === undefined) endPeak();
    });
    all.push(stream);
  }
  rampDone = true;
  peakStartMs = performance.now();
  onPeak('start');
  const results = await Promise.all(all);
  endPeak();
  await dispatcher.close();
  return { results, peakStartMs, peakEndMs };
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

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks
  } catch {
    return 0;
  }
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
const ttfbs = (list: readonly StreamResult[]): number[] =>
  list.filter((r) => r.ttfbMs >= 0).map((r) => r.ttfbMs);
const mb = (bytes: number): number => Math.round(bytes / 1048576);
const round1 = (value: number): number => Math.round(value * 10) / 10;

/**
 * The kernel's count of connections dropped because a listener's accept queue was full
 * (/proc/net/netstat ListenOverflows: machine-wide, so other work on the machine counts too).
 * uSockets listens with a backlog of 512: a process whose loop stalls while thousands of
 * connections arrive overflows it, and the client's request is reset some 30 s later.
 */
function listenOverflows(): number {
  try {
    const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
    const names = lines.find((line) => line.startsWith('TcpExt:'))!.split(/\s+/);
    const values = lines.filter((line) => line.startsWith('TcpExt:'))[1]!.split(/\s+/);
    return Number(values[names.indexOf('ListenOverflows')]);
  } catch {
    return NaN;
  }
}

interface LoopWindow {
  readonly pid: number;
  readonly window_ms: number;
  readonly samples: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
}

/** Reads the probe's window of each process (each writes it once its loop gets to it). */
async function loopWindows(pids: readonly number[]): Promise<Map<number, LoopWindow>> {
  const found = new Map<number, LoopWindow>();
  for (let attempt = 0; attempt < 100 && found.size < pids.length; attempt += 1) {
    for (const pid of pids) {
      if (found.has(pid)) continue;
      try {
        found.set(pid, JSON.parse(readFileSync(join(probeDir, `${pid}.json`), 'utf8')));
        rmSync(join(probeDir, `${pid}.json`));
      } catch {
        // not yet written
      }
    }
    if (found.size < pids.length) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return found;
}

/** Sends every probed process the signal that starts or ends its window. */
function toggleProbes(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGUSR2');
    } catch {
      // gone
    }
  }
}

/**
 * Tallies the target's warnings and errors (pino lines at level 40 and above) by message and
 * error code: the gateway's side of the errors the clients saw.
 */
function tallyLogWarnings(target: Target): Map<string, number> {
  const tally = new Map<string, number>();
  let partial = '';
  target.child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      const failedRequest = line.includes('"msg":"request"') && !line.includes('"status":200');
      if (!failedRequest && !line.includes('"level":4') && !line.includes('"level":5')) continue;
      try {
        const entry = JSON.parse(line) as {
          msg?: string;
          err?: { code?: string; type?: string };
          cause?: string;
          status?: number;
          code?: string;
        };
        const key = [
          entry.msg,
          entry.status,
          entry.code ?? entry.err?.code ?? entry.err?.type,
          entry.cause,
        ]
          .filter(Boolean)
          .join(' · ');
        tally.set(key, (tally.get(key) ?? 0) + 1);
      } catch {
        // not a log line
      }
    }
  });
  return tally;
}

interface Phase {
  readonly name: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  /** The target's processes (RSS and loop measured over them). */
  readonly pids: readonly number[];
}

/** One target under the full load: every figure the report gives for it. */
async function measurePhase(phase: Phase, mockPid: number, baselineTtfbP50: number) {
  const idleRss = rssBytes(phase.pids);
  const probed = [...phase.pids, mockPid];
  const cpuPids = [...phase.pids, mockPid, process.pid];
  const cpuBefore = cpuPids.map(cpuSeconds);
  const overflowsBefore = listenOverflows();
  let peakRss = 0;
  let mockPeakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssBytes(phase.pids));
    mockPeakRss = Math.max(mockPeakRss, rssBytes([mockPid]));
  }, 500);
  const ownLoop = monitorEventLoopDelay({ resolution: 10 });
  ownLoop.enable();
  const started = performance.now();
  const outcome = await run(phase.url, phase.headers, streams, (edge) => {
    toggleProbes(probed);
    if (edge === 'start') ownLoop.reset();
    else ownLoop.disable();
  });
  const wallSeconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const cpu = cpuPids.map((pid, index) => cpuSeconds(pid) - cpuBefore[index]!);
  const overflows = listenOverflows() - overflowsBefore;
  const windows = await loopWindows(probed);
  const targetLoops = phase.pids.map((pid) => windows.get(pid)).filter((w) => w !== undefined);
  const worst = (key: 'p99_ms' | 'max_ms', list: readonly LoopWindow[]): number =>
    list.reduce((most, w) => Math.max(most, w[key]), 0);

  const { results } = outcome;
  const causes = new Map<string, number>();
  const endedAt = new Map<string, number[]>();
  for (const result of results) {
    if (result.cause === undefined) continue;
    causes.set(result.cause, (causes.get(result.cause) ?? 0) + 1);
    endedAt.set(result.cause, [...(endedAt.get(result.cause) ?? []), result.endedAtMs ?? NaN]);
  }
  // When each cause struck (s from the start: first, median, last): the ramp, or later.
  const errorTimes = Object.fromEntries(
    [...endedAt].map(([cause, times]) => [
      cause,
      [0, 50, 100].map((p) => round1(percentile(times, p) / 1000)),
    ]),
  );
  const completed = results.filter((result) => result.cause === undefined).length;
  const ttfb = ttfbs(results);
  const targetCpu = cpu.slice(0, phase.pids.length).reduce((sum, value) => sum + value, 0);
  const events = completed * outputTokens;
  return {
    results,
    report: {
      target: phase.name,
      processes: phase.pids.length,
      completed,
      errors: streams - completed,
      errors_by_cause: Object.fromEntries([...causes].sort((a, b) => b[1] - a[1])),
      errors_ended_at_s: errorTimes,
      kernel_listen_overflows: overflows,
      rss_idle_mb: mb(idleRss),
      rss_peak_mb: mb(peakRss),
      rss_per_stream_kb: Math.round((peakRss - idleRss) / streams / 1024),
      peak_window_s: round1((outcome.peakEndMs - outcome.peakStartMs) / 1000),
      relaying_at_once_max: relaying.most,
      event_loop_delay_p99_peak_ms: worst('p99_ms', targetLoops),
      event_loop_delay_max_peak_ms: worst('max_ms', targetLoops),
      event_loop_per_process: targetLoops,
      ttfb_p50_ms: Math.round(percentile(ttfb, 50)),
      ttfb_p99_ms: Math.round(percentile(ttfb, 99)),
      added_ttfb_p50_ms: Math.round(percentile(ttfb, 50) - baselineTtfbP50),
      wall_s: round1(wallSeconds),
      cpu_s: {
        target: round1(targetCpu),
        mock: round1(cpu[phase.pids.length]!),
        load_generator: round1(cpu[phase.pids.length + 1]!),
      },
      target_cpu_us_per_event: events > 0 ? round1((targetCpu * 1e6) / events) : null,
      mock_loop_p99_peak_ms: windows.get(mockPid)?.p99_ms ?? null,
      mock_rss_peak_mb: mb(mockPeakRss),
      load_generator_loop_p99_peak_ms: round1(ownLoop.percentile(99) / 1e6),
    },
  };
}

async function countRecorded(databaseUrl: string, ids: readonly string[]): Promise<number> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  let recorded = 0;
  try {
    for (let attempt = 0; attempt < 120 && recorded < ids.length; attempt += 1) {
      const { rows } = await db.query<{ n: string }>(
        "SELECT count(*)::text AS n FROM usage_records WHERE request_id = ANY($1::uuid[]) AND status = 'completed'",
        [ids],
      );
      recorded = Number(rows[0]!.n);
      if (recorded < ids.length) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await db.end();
  }
  return recorded;
}

/** One short JSON request per product user the streams use, 50 at a time. */
async function warmUsers(url: string, apiKey: string): Promise<void> {
  const dispatcher = new Agent({ connections: 50 });
  const users = Array.from({ length: PRODUCT_USERS }, (_, index) => `stream-user-${index}`);
  const worker = async (): Promise<void> => {
    for (let user = users.pop(); user !== undefined; user = users.pop()) {
      const response = await request(`${url}/v1/chat/completions`, {
        method: 'POST',
        dispatcher,
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${apiKey}`,
          'x-gw-external-user-id': user,
        },
        body: JSON.stringify({
          model: 'vendor_b/gpt-4o-mini',
          max_tokens: 1,
          messages: [{ role: 'user', content: 'hi mock:output_tokens=1' }],
        }),
      });
      await response.body.dump();
    }
  };
  await Promise.all(Array.from({ length: 50 }, worker));
  await dispatcher.close();
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const mock = await startMock(['--tokens-per-second', String(tokensPerSecond)], probeArgs);
  const targets: Target[] = [mock];
  const reports: unknown[] = [];
  try {
    const mockAuth = { authorization: 'Bearer mock-bench-key' };
    // Baseline: the bare mock's time to first byte for a sample of streams.
    const baseline = await run(mock.url, mockAuth, 200);
    const baselineTtfbP50 = percentile(ttfbs(baseline.results), 50);
    reports.push({
      streams,
      seconds_per_stream: Number(flags.seconds),
      prompt_chars: context.length,
      tokens_per_second: tokensPerSecond,
      events_per_second_at_peak: streams * tokensPerSecond,
      ttfb_mock_alone_p50_ms: Math.round(baselineTtfbP50),
      loop_delay_note:
        'monitorEventLoopDelay at 10 ms resolution, as /metrics reads it: an idle loop reads about 10 ms',
    });

    if (flags.only !== 'gateway') {
      const ceiling = await startPassthroughs(mock.url, workers, probeArgs, 8192);
      targets.push(...ceiling);
      const phase = {
        name: `passthrough ×${workers} (ceiling)`,
        url: ceiling[0]!.url,
        headers: mockAuth,
        pids: ceiling.map((target) => target.child.pid!),
      };
      const { report } = await measurePhase(phase, mock.child.pid!, baselineTtfbP50);
      reports.push(report);
      process.stderr.write(`${JSON.stringify(report)}\n`);
      for (const target of ceiling) target.child.kill('SIGTERM');
      await pause(3000);
    }

    if (flags.only !== 'ceiling') {
      const nodeArgs = [...probeArgs, ...flags['gateway-node-args'].split(' ').filter(Boolean)];
      const gateway = await startGatewayTarget(mock.url, nodeArgs, { workers });
      targets.push(gateway);
      const warnings = tallyLogWarnings(gateway);
      const org = await gwCli<{ org_id: string; api_key: string }>(
        ['seed', '--json', '--wallet', '1000000'],
        gateway.env,
      );
      if (flags['warm-users']) await warmUsers(gateway.url, org.api_key);
      const pids = [gateway.child.pid!, ...childrenOf(gateway.child.pid!)];
      const phase = {
        name: `gateway ×${workers}`,
        url: gateway.url,
        headers: { authorization: `Bearer ${org.api_key}` },
        pids,
      };
      const { results, report } = await measurePhase(phase, mock.child.pid!, baselineTtfbP50);
      const ids = results.flatMap((r) =>
        r.cause === undefined && r.requestId ? [r.requestId] : [],
      );
      reports.push({
        ...report,
        product_users_known_before: flags['warm-users'],
        completed_with_request_id: ids.length,
        recorded_in_postgres: await countRecorded(gateway.env.DATABASE_URL!, ids),
        gateway_warnings: Object.fromEntries(warnings),
      });
    }
    process.stdout.write(`${JSON.stringify(reports, null, 2)}\n`);
  } finally {
    await stopAndClean(targets);
    rmSync(probeDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`streams bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
