// Starts the bench's targets as child processes (each on its own event loop): the mock
// vendor, the bare passthrough and the gateway; seeds the gateway's organization.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connectRedis, unlinkMatching, type RedisClient } from '../src/redis/connect.js';
import { redisTarget } from '../src/redis/target.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const execFileAsync = promisify(execFile);

export interface Target {
  readonly name: string;
  readonly url: string;
  readonly child: ChildProcess;
  /** The Redis key prefix the target writes under (deleted once it has exited). */
  readonly redisKeyPrefix?: string;
}

/** Spawns a node script and resolves once `ready` finds what it needs in its stdout. */
function spawnUntil(
  args: string[],
  env: Record<string, string>,
  ready: (output: string) => string | undefined,
  onOutput?: (chunk: string) => void,
  cwd: string = root,
): Promise<{ child: ChildProcess; value: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const timer = setTimeout(
      () => reject(new Error(`${args.join(' ')} did not start:\n${output}`)),
      // Generous: on a machine shared with other work, a gateway's start has taken 30 s.
      120_000,
    );
    let started = false;
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString();
      onOutput?.(text);
      // Once started, the output is read and dropped (as a log shipper would): the request
      // log must cost the gateway its writes, not the load generator a growing string.
      if (started) return;
      output += text;
      const value = ready(output);
      if (value !== undefined) {
        started = true;
        clearTimeout(timer);
        resolve({ child, value });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) =>
      reject(new Error(`${args.join(' ')} exited with ${code}:\n${output}`)),
    );
  });
}

const jsonPort = (output: string): string | undefined => /"port":(\d+)/.exec(output)?.[1];

export async function startMock(
  extraArgs: readonly string[] = [],
  nodeArgs: readonly string[] = [],
): Promise<Target> {
  const { child, value } = await spawnUntil(
    [...nodeArgs, 'bin/gw.js', 'mock-vendors', '--port', '0', ...extraArgs],
    {},
    jsonPort,
  );
  return { name: 'mock', url: `http://127.0.0.1:${value}`, child };
}

export async function startPassthrough(
  upstreamUrl: string,
  nodeArgs: readonly string[] = [],
  { port = 0, connections = 256 }: { port?: number; connections?: number } = {},
): Promise<Target> {
  const { child, value } = await spawnUntil(
    [...nodeArgs, 'dist/bench/passthrough.js'],
    { UPSTREAM_URL: upstreamUrl, PORT: String(port), UPSTREAM_CONNECTIONS: String(connections) },
    jsonPort,
  );
  return { name: 'passthrough', url: `http://127.0.0.1:${value}`, child };
}

/**
 * `count` passthrough processes accepting on one port (uWS sets SO_REUSEPORT on Linux), as
 * the gateway's workers do: the ceiling for a gateway of `count` workers.
 */
export async function startPassthroughs(
  upstreamUrl: string,
  count: number,
  nodeArgs: readonly string[] = [],
  connections = 256,
): Promise<Target[]> {
  const port = count > 1 ? await freePort() : 0;
  const all: Target[] = [];
  for (let index = 0; index < count; index += 1)
    all.push(await startPassthrough(upstreamUrl, nodeArgs, { port, connections }));
  return all;
}

export interface GatewayTarget extends Target {
  readonly env: Record<string, string>;
}

/** A free TCP port on loopback (for a gateway whose workers must share one fixed port). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The gateway's full path. With `workers` > 1 it runs GATEWAY_WORKERS processes on one port,
 * over the same Redis keys and database as `sharing` (so the same seeded keys work).
 */
export async function startGatewayTarget(
  upstreamUrl: string,
  nodeArgs: readonly string[] = [],
  {
    workers = 1,
    sharing,
    metrics = false,
    onOutput,
    checkout = root,
    name,
    extraEnv = {},
  }: {
    workers?: number;
    sharing?: GatewayTarget;
    metrics?: boolean;
    /** Hears the gateway's stdout, from its start (e.g. V8's GC trace). */
    onOutput?: (chunk: string) => void;
    /** The checkout whose build (`dist/`) runs: another worktree's, for an A/B of two builds. */
    checkout?: string;
    /** The target's name in reports (by default `gateway`, or `gateway ×N`). */
    name?: string;
    /** Settings over the bench's (e.g. REQUEST_LOG_SAMPLE_RATE for one gateway of an A/B). */
    extraEnv?: Record<string, string>;
  } = {},
): Promise<GatewayTarget> {
  const env = {
    PORT: workers > 1 ? String(await freePort()) : '0',
    GATEWAY_WORKERS: String(workers),
    METRICS_ENABLED: String(metrics),
    METRICS_PORT: metrics ? String(await freePort()) : '0',
    HOST: '127.0.0.1',
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gw_bench',
    REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    // A Redis Cluster instead (host:port,…): the gateway, the floor and the cleanup use it.
    REDIS_CLUSTER_NODES: process.env.BENCH_REDIS_CLUSTER_NODES ?? '',
    REDIS_KEY_PREFIX: sharing?.env.REDIS_KEY_PREFIX ?? `gwbench-${randomBytes(4).toString('hex')}`,
    VENDOR_A_BASE_URL: upstreamUrl,
    VENDOR_B_BASE_URL: upstreamUrl,
    VENDOR_A_API_KEY: 'mock-bench-key',
    VENDOR_B_API_KEY: 'mock-bench-key',
    LOG_LEVEL: 'info',
    // The request log's cost: BENCH_REQUEST_LOG_SAMPLE_RATE=0 measures without its lines.
    REQUEST_LOG_SAMPLE_RATE: process.env.BENCH_REQUEST_LOG_SAMPLE_RATE ?? '1',
    // A bench-only master key for the BYOK scenario's credentials.
    CREDENTIALS_MASTER_KEY: Buffer.alloc(32, 42).toString('base64'),
    // The webhook dispatcher's cost: BENCH_WEBHOOK_DELIVERY_CONCURRENCY=0 measures without it.
    WEBHOOK_DELIVERY_CONCURRENCY: process.env.BENCH_WEBHOOK_DELIVERY_CONCURRENCY ?? '4',
    // Load shedding (decision 335): BENCH_SHED_LOOP_DELAY_MS=500 measures with it.
    SHED_LOOP_DELAY_MS: process.env.BENCH_SHED_LOOP_DELAY_MS ?? '0',
    ...extraEnv,
  };
  const { child, value } = await spawnUntil(
    [...nodeArgs, 'dist/src/main.js'],
    env,
    (output) =>
      workers > 1
        ? /"port":(\d+)[^\n]*"msg":"gw workers listening"/.exec(output)?.[1]
        : /"port":(\d+)[^\n]*"msg":"gw listening"/.exec(output)?.[1],
    onOutput,
    checkout,
  );
  return {
    name: name ?? (workers > 1 ? `gateway ×${workers}` : 'gateway'),
    url: `http://127.0.0.1:${value}`,
    child,
    env,
    // The prefix is deleted by the target that made it.
    ...(sharing === undefined && { redisKeyPrefix: env.REDIS_KEY_PREFIX }),
  };
}

/** The design floor (bench/design-floor.ts), on the gateway's Redis and Postgres. */
export async function startDesignFloor(
  upstreamUrl: string,
  gateway: GatewayTarget,
): Promise<Target> {
  const redisKeyPrefix = `${gateway.env.REDIS_KEY_PREFIX!}-floor`;
  const { child, value } = await spawnUntil(
    ['dist/bench/design-floor.js'],
    {
      UPSTREAM_URL: upstreamUrl,
      REDIS_URL: gateway.env.REDIS_URL!,
      REDIS_CLUSTER_NODES: gateway.env.REDIS_CLUSTER_NODES!,
      DATABASE_URL: gateway.env.DATABASE_URL!,
      REDIS_KEY_PREFIX: redisKeyPrefix,
      PORT: '0',
    },
    jsonPort,
  );
  return { name: 'floor', url: `http://127.0.0.1:${value}`, child, redisKeyPrefix };
}

/** Runs a `gw` command and parses its JSON output; `stdin` is piped to it (a secret, say). */
export async function gwCli<T>(
  args: string[],
  env: Record<string, string>,
  stdin = '',
): Promise<T> {
  const running = execFileAsync(process.execPath, ['bin/gw.js', ...args], {
    cwd: root,
    env: { ...process.env, ...env },
  });
  running.child.stdin?.end(stdin);
  const { stdout } = await running;
  return JSON.parse(stdout) as T;
}

export function stopAll(targets: readonly Target[]): void {
  for (const target of targets) target.child.kill('SIGTERM');
}

/**
 * Stops the targets; once those that write to Redis have exited (the gateway's usage written
 * to Postgres), deletes their keys: every bench run has its own key prefix, and nothing else
 * would ever remove them.
 */
export async function stopAndClean(targets: readonly Target[]): Promise<void> {
  const keyed = targets.filter((target) => target.redisKeyPrefix !== undefined);
  const exited = keyed.map(({ child }) =>
    child.exitCode === null && child.signalCode === null
      ? new Promise((resolve) => child.once('exit', resolve))
      : undefined,
  );
  stopAll(targets);
  await Promise.all(exited);
  const redis = benchRedis();
  try {
    for (const target of keyed) await deleteKeysUnder(redis, target.redisKeyPrefix!);
  } finally {
    redis.disconnect();
  }
}

/** A client on the benches' Redis (BENCH_REDIS_URL, or BENCH_REDIS_CLUSTER_NODES). */
export function benchRedis(): RedisClient {
  return connectRedis(
    redisTarget({
      REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_CLUSTER_NODES: process.env.BENCH_REDIS_CLUSTER_NODES,
    }),
    { maxRetriesPerRequest: 2 },
  );
}

/** Deletes every Redis key under a key prefix (on every master of a cluster). */
export async function deleteKeysUnder(redis: RedisClient, prefix: string): Promise<void> {
  await unlinkMatching(redis, `${prefix}:*`);
}

/** The chat request every bench scenario sends (with `stream: true` for streaming). */
export const BENCH_PROMPT = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'Say hello in a few words.' }],
};

/** Per-request headers that spread the gateway's requests over `distinct` product users. */
export function productUserHeaders(distinct: number): (sequence: number) => Record<string, string> {
  return (sequence) => ({ 'x-gw-external-user-id': `bench-user-${sequence % distinct}` });
}
