// npm run build && node dist/bench/redis-cost.js [--runs 5] [--duration 5] [--connections 50]
//   [--orgs 10000] [--cluster]
// What one request costs Redis, read from Redis itself: the gateway's full path under load
// against a Redis of its own (never the shared one: its CPU would count other people's work),
// with INFO cpu (the server process's user+sys time, networking included) and INFO
// commandstats (time inside each command) taken before and after each run. Two scenarios,
// interleaved run by run, each with its own Redis and its own gateway (so the usage writer of
// one, whose reads cover every org's stream, costs nothing in the other's figures): every
// request from one org, and the requests spread round-robin over `--orgs` orgs (an API key
// each). With --cluster, each Redis is a three-master Redis Cluster and the figures are summed
// over its masters. Prints each run and the medians; the requests
// one Redis core can carry follow as 1 s of CPU over the CPU per request.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import {
  createApiKey,
  createApp,
  createAppConnection,
  createOrganization,
} from '../src/admin/provisioning.js';
import { createMoneyLayer } from '../src/billing/compose.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { connectRedis, masters, quitRedis, whenReady } from '../src/redis/connect.js';
import { redisTarget } from '../src/redis/target.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts } from '../src/redis/scripts.js';
import { median } from './measure.js';
import { BENCH_PROMPT, startGatewayTarget, startMock, stopAll, type Target } from './targets.js';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    orgs: { type: 'string', default: '10000' },
    cluster: { type: 'boolean', default: false },
  },
});
const runs = Number(flags.runs);
const durationSeconds = Number(flags.duration);
const connections = Number(flags.connections);
const orgCount = Number(flags.orgs);

// --- a Redis (or a three-master cluster) of this bench's own --------------------------------

const servers: ChildProcess[] = [];
const dir = mkdtempSync(path.join(tmpdir(), 'gw-redis-cost-'));
let nextPort = 21_000 + Math.floor(Math.random() * 800) * 10;

function run(command: string, args: readonly string[]): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore' });
    child.on('exit', resolve);
  });
}

interface RedisEnv {
  readonly REDIS_URL: string;
  readonly REDIS_CLUSTER_NODES: string;
}

/** A Redis (or a three-master cluster) of its own; returns the gateway's settings for it. */
async function startRedis(): Promise<RedisEnv> {
  const ports = flags.cluster ? [nextPort, nextPort + 1, nextPort + 2] : [nextPort];
  nextPort += 5;
  for (const port of ports) {
    const clusterArgs = flags.cluster
      ? ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`]
      : [];
    servers.push(
      spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'].concat(
          ['--dir', dir],
          clusterArgs,
        ),
        { stdio: 'ignore' },
      ),
    );
  }
  for (const port of ports) {
    for (let attempt = 0; (await run('redis-cli', ['-p', String(port), 'ping'])) !== 0; attempt++) {
      if (attempt > 100) throw new Error(`redis-server on ${port} did not start`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const nodes = ports.map((port) => `127.0.0.1:${port}`);
  if (!flags.cluster) return { REDIS_URL: `redis://${nodes[0]}`, REDIS_CLUSTER_NODES: '' };
  const code = await run('redis-cli', [
    '--cluster',
    'create',
    ...nodes,
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  if (code !== 0) throw new Error('redis-cli --cluster create failed');
  await new Promise((resolve) => setTimeout(resolve, 2000)); // the cluster agrees on its slots
  return { REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: nodes.join(',') };
}

// --- what Redis says it spent ----------------------------------------------------------------

interface RedisSpend {
  readonly cpuUs: number;
  /** usec and calls per command (cmdstat_evalsha → evalsha). */
  readonly commands: Map<string, { calls: number; usec: number }>;
}

async function spend(redisEnv: RedisEnv): Promise<RedisSpend> {
  const redis = connectRedis(redisTarget(redisEnv), { maxRetriesPerRequest: 2 });
  try {
    await whenReady(redis);
    let cpuUs = 0;
    const commands = new Map<string, { calls: number; usec: number }>();
    for (const node of masters(redis)) {
      const info = await node.info('everything');
      const field = (name: string): number =>
        Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
      cpuUs += (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
      for (const match of info.matchAll(/^cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/gm)) {
        const entry = commands.get(match[1]!) ?? { calls: 0, usec: 0 };
        entry.calls += Number(match[2]);
        entry.usec += Number(match[3]);
        commands.set(match[1]!, entry);
      }
    }
    return { cpuUs, commands };
  } finally {
    await quitRedis(redis);
  }
}

// --- the orgs ----------------------------------------------------------------------------------

async function provision(
  db: DbPool,
  redisEnv: RedisEnv,
  gatewayPrefix: string,
  count: number,
): Promise<string[]> {
  const redis = connectRedis(redisTarget(redisEnv), { maxRetriesPerRequest: 2 });
  const keys = createRedisKeys(gatewayPrefix);
  const { wallets } = createMoneyLayer({
    db,
    redis,
    keys,
    scripts: defineScripts(redis),
    reservationTtlMs: 600_000,
  });
  const apiKeys: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next += 1;
      const orgId = await createOrganization(db, 'redis-cost bench org');
      await wallets.topUp(orgId, 10n ** 15n);
      const appId = await createApp(db, orgId, 'bench app');
      const appConnectionId = await createAppConnection(db, orgId, appId, 'bench connection');
      apiKeys.push((await createApiKey(db, { orgId, appId, appConnectionId })).rawKey);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await quitRedis(redis);
  return apiKeys;
}

interface Load {
  readonly requests: number;
  readonly errors: number;
  readonly requestsPerSecond: number;
}

async function load(
  url: string,
  apiKeys: readonly string[],
  options: { amount?: number },
): Promise<Load> {
  let sequence = 0;
  const result = await autocannon({
    url: `${url}/v1/chat/completions`,
    method: 'POST',
    connections,
    ...(options.amount !== undefined ? { amount: options.amount } : { duration: durationSeconds }),
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(BENCH_PROMPT),
    requests: [
      {
        setupRequest: (request) => {
          const key = apiKeys[sequence % apiKeys.length]!;
          sequence += 1;
          return { ...request, headers: { ...request.headers, authorization: `Bearer ${key}` } };
        },
      },
    ],
  });
  return {
    requests: result.requests.total,
    errors: result.non2xx + result.errors + result.timeouts,
    requestsPerSecond: result.requests.average,
  };
}

// --- the run -----------------------------------------------------------------------------------

const targets: Target[] = [];
interface Row {
  readonly scenario: string;
  readonly run: number;
  readonly rps: number;
  readonly errors: number;
  readonly cpuUsPerRequest: number;
  readonly commandUsPerRequest: number;
  readonly scriptUsPerRequest: number;
  readonly writerUsPerRequest: number;
}
const rows: Row[] = [];

try {
  process.env.BENCH_DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/gw_bench';
  process.env.BENCH_REQUEST_LOG_SAMPLE_RATE ??= '0';
  const mock = await startMock();
  targets.push(mock);
  const db = createDbPool(process.env.BENCH_DATABASE_URL, 8);
  const scenarios = [];
  for (const [name, count] of [
    ['one org', 1],
    [`${orgCount} orgs`, orgCount],
  ] as const) {
    const redisEnv = await startRedis();
    process.env.BENCH_REDIS_URL = redisEnv.REDIS_URL;
    process.env.BENCH_REDIS_CLUSTER_NODES = redisEnv.REDIS_CLUSTER_NODES;
    const gateway = await startGatewayTarget(mock.url);
    targets.push(gateway);
    const provisionStarted = Date.now();
    const keys = await provision(db, redisEnv, gateway.env.REDIS_KEY_PREFIX!, count);
    console.error(`${name}: provisioned in ${Date.now() - provisionStarted} ms`);
    scenarios.push({ name, keys, redisEnv, url: gateway.url });
  }
  await db.end();
  // Warm-up: every key once (its auth cache, its accounts loaded from Postgres), then load.
  for (const scenario of scenarios) {
    await load(scenario.url, scenario.keys, { amount: Math.max(scenario.keys.length, 2000) });
  }
  for (let index = 1; index <= runs; index += 1) {
    for (const scenario of scenarios) {
      const before = await spend(scenario.redisEnv);
      const result = await load(scenario.url, scenario.keys, {});
      const after = await spend(scenario.redisEnv);
      const perRequest = (us: number): number => us / Math.max(1, result.requests);
      const usecOf = (filter: (name: string) => boolean): number => {
        let total = 0;
        for (const [name, entry] of after.commands) {
          if (filter(name)) total += entry.usec - (before.commands.get(name)?.usec ?? 0);
        }
        return total;
      };
      const row: Row = {
        scenario: scenario.name,
        run: index,
        rps: result.requestsPerSecond,
        errors: result.errors,
        cpuUsPerRequest: perRequest(after.cpuUs - before.cpuUs),
        commandUsPerRequest: perRequest(usecOf(() => true)),
        scriptUsPerRequest: perRequest(usecOf((name) => name.startsWith('eval'))),
        writerUsPerRequest: perRequest(
          usecOf((name) => ['xreadgroup', 'xack', 'xdel', 'xautoclaim', 'smembers'].includes(name)),
        ),
      };
      rows.push(row);
      console.error(JSON.stringify(row));
    }
  }
} finally {
  stopAll(targets);
  for (const server of servers) server.kill('SIGKILL');
}

const fmt = (value: number): string => value.toFixed(1);
const spread = (values: readonly number[]): string =>
  `${fmt(Math.min(...values))}–${fmt(Math.max(...values))}`;
console.log(
  `\nRedis cost per request (${flags.cluster ? 'three-master cluster, summed' : 'single Redis'}; ` +
    `${runs} runs × ${durationSeconds} s at ${connections} connections; medians, range in brackets)\n`,
);
console.log(
  '| scenario | req/s | Redis CPU µs/req | one core carries req/s | in commands µs/req | scripts µs/req | writer µs/req | errors |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const scenario of [...new Set(rows.map((row) => row.scenario))]) {
  const of = rows.filter((row) => row.scenario === scenario);
  const pick = (field: keyof Row): number[] => of.map((row) => Number(row[field]));
  const cpu = median(pick('cpuUsPerRequest'));
  console.log(
    `| ${scenario} | ${fmt(median(pick('rps')))} (${spread(pick('rps'))}) | ${fmt(cpu)} (${spread(pick('cpuUsPerRequest'))}) | ` +
      `${Math.round(1e6 / cpu)} | ${fmt(median(pick('commandUsPerRequest')))} | ${fmt(median(pick('scriptUsPerRequest')))} | ` +
      `${fmt(median(pick('writerUsPerRequest')))} | ${pick('errors').reduce((a, b) => a + b, 0)} |`,
  );
}
process.exit(0);
