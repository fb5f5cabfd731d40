// Postgres stopped under load: inference for known keys and users goes on, the usage records
// wait in Redis, /readyz and /metrics say what is degraded, and once Postgres is back every
// record lands and the live wallet equals the ledger. Runs on a private Postgres cluster (the
// shared one is never stopped). GW_FAULT_SECONDS sets the outage (CI: 8 s; bench/RESULTS.md
// records a 30 s run).
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, uniquePrefix } from './support/env.js';
import { bearer, postJson } from './support/http.js';
import {
  metricsUrl,
  runCliJson,
  seed,
  startGatewayProcess,
  type SeededOrg,
  type SpawnedGateway,
} from './support/processes.js';
import { deletePrefix, eventually, testRedis } from './support/services.js';

const OUTAGE_MS = Number(process.env.GW_FAULT_SECONDS ?? '8') * 1000;
const PG_BIN = (() => {
  const versions = execFileSync('ls', ['/usr/lib/postgresql']).toString().trim().split('\n');
  return `/usr/lib/postgresql/${versions.at(-1)}/bin`;
})();
const PG_PORT = 15_400 + Math.floor(Math.random() * 500);
const dataDir = mkdtempSync(path.join(tmpdir(), 'gw-pg-'));
const prefix = uniquePrefix('pgout');
const env = {
  ...baseEnv(prefix),
  DATABASE_URL: `postgres://postgres@127.0.0.1:${PG_PORT}/gw_outage`,
  METRICS_PORT: '0',
};
const redis = testRedis();
let gateway: SpawnedGateway;
let org: SeededOrg;

/** Runs a Postgres tool as the postgres user (initdb and the server refuse root). */
function asPostgres(tool: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const command = asRoot ? 'runuser' : `${PG_BIN}/${tool}`;
  const argv = asRoot ? ['-u', 'postgres', '--', `${PG_BIN}/${tool}`, ...args] : args;
  const result = spawnSync(command, argv, { stdio: 'pipe' });
  if (result.status !== 0) {
    throw new Error(`${tool} failed: ${result.stderr.toString()}${result.stdout.toString()}`);
  }
}

function startPostgres(): void {
  asPostgres('pg_ctl', [
    '-D',
    dataDir,
    '-w',
    '-l',
    path.join(dataDir, 'server.log'),
    '-o',
    `-p ${PG_PORT} -k ${dataDir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    'start',
  ]);
}

function stopPostgres(): void {
  asPostgres('pg_ctl', ['-D', dataDir, '-w', '-m', 'fast', 'stop']);
}

const chat = (user: string) => ({
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'still here?' }],
  user,
});

beforeAll(async () => {
  if (process.getuid?.() === 0) {
    chownSync(dataDir, ...postgresIds());
    chmodSync(dataDir, 0o700);
  }
  asPostgres('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  startPostgres();
  gateway = await startGatewayProcess(env);
  org = await seed(env);
}, 60_000);

afterAll(async () => {
  await gateway?.stop('SIGKILL');
  try {
    stopPostgres();
  } catch {
    // already stopped
  }
  rmSync(dataDir, { recursive: true, force: true });
  // Its own Postgres is gone with its data dir: its Redis keys go too.
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

function postgresIds(): [number, number] {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return [uid, gid];
}

describe('Postgres stopped under load', () => {
  it('serves known keys and users throughout, then writes every record once it is back', async () => {
    const users = ['alice', 'bob', 'carol', 'dave'];
    const requestIds: string[] = [];
    // Known: the key and every user have been seen before the outage.
    for (const user of users) {
      const response = await postJson(
        `${gateway.url}/v1/chat/completions`,
        chat(user),
        bearer(org.api_key),
      );
      expect(response.status).toBe(200);
      requestIds.push(response.headers.get('x-request-id')!);
    }

    stopPostgres();
    const outageEnds = Date.now() + OUTAGE_MS;
    const statuses = new Map<number, number>();
    const refusals = new Set<string>();
    let readyDuring: { status: number; body: Record<string, unknown> } | undefined;
    while (Date.now() < outageEnds) {
      const answers = await Promise.all(
        users.map((user) =>
          postJson(`${gateway.url}/v1/chat/completions`, chat(user), bearer(org.api_key)),
        ),
      );
      for (const answer of answers) {
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status !== 200) refusals.add(JSON.stringify(answer.body));
        if (answer.status === 200) requestIds.push(answer.headers.get('x-request-id')!);
      }
      if (!readyDuring) {
        const ready = await fetch(`${gateway.url}/readyz`);
        readyDuring = {
          status: ready.status,
          body: (await ready.json()) as Record<string, unknown>,
        };
      }
    }
    const metricsDuring = await fetch(metricsUrl(gateway)).then((response) => response.text());
    startPostgres();

    // Every request during the outage was served.
    expect([...refusals]).toEqual([]);
    expect([...statuses.keys()]).toEqual([200]);
    expect(statuses.get(200)).toBeGreaterThan(users.length * 3);
    // Still ready (it serves), and says what is degraded.
    expect(readyDuring).toEqual({
      status: 200,
      body: { status: 'degraded', draining: false, checks: { redis: true, postgres: false } },
    });
    const pending = Number(/^gw_usage_records_pending (\d+)/m.exec(metricsDuring)?.[1]);
    expect(pending).toBeGreaterThan(0);
    // What the "Postgres down" alert reads (docs/operations.md).
    expect(metricsDuring).toMatch(/^gw_dependency_up\{dependency="postgres"\} 0$/m);
    expect(metricsDuring).toMatch(/^gw_dependency_up\{dependency="redis"\} 1$/m);

    // Once Postgres is back: every record lands, once.
    const { Client } = (await import('pg')).default;
    const written = await eventually(async () => {
      const client = new Client({ connectionString: env.DATABASE_URL });
      try {
        await client.connect();
        const { rows } = await client.query<{ request_id: string }>(
          'SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])',
          [requestIds],
        );
        return rows.length === requestIds.length ? rows : undefined;
      } catch {
        return undefined;
      } finally {
        await client.end().catch(() => undefined);
      }
    }, 30_000);
    expect(new Set(written.map((row) => row.request_id)).size).toBe(requestIds.length);
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    // The figures of this fault, for bench/RESULTS.md.
    console.info(
      `postgres outage ${OUTAGE_MS / 1000} s: ${statuses.get(200)} requests served during it, ` +
        `0 refused, ${pending} records waiting in Redis at its end, ` +
        `${requestIds.length}/${requestIds.length} records in Postgres after, 0 lost`,
    );

    // And the live accounts agree with the ledger to the nano-unit.
    const report = await runCliJson<{ consistent: number; drifted: number; orgs: unknown[] }>(
      ['reconcile', '--org-id', org.org_id],
      env,
    );
    expect(report).toMatchObject({ consistent: 1, drifted: 0, orgs: [] });
    // The writer deletes each entry right after its row commits: the stream empties.
    const left = await eventually(async () => {
      const length = await redis.xlen(`${prefix}:{o:${org.org_id}}:usage`);
      return length === 0 ? length : undefined;
    }, 10_000);
    expect(left).toBe(0);
  }, 120_000);
});
