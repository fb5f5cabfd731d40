// Redis and Postgres refusing work for a while rather than being unreachable: a Redis full
// under `maxmemory` (noeviction, the policy money data wants), a replica left read-only or cut
// from its master by a failover, one with too few replicas to write, one busy with a long
// script; a Postgres primary demoted to a read-only standby. Each is a dependency unavailable
// (503 `gw_unavailable`, Retry-After: the client retries, the usage writer retries instead of
// setting records aside), not a bug (500). The errors are the ones ioredis and pg really throw,
// from a private redis-server (the shared one is never filled up or demoted) and the test
// database.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDbPool } from '../src/db/pool.js';
import { isDependencyUnavailable } from '../src/errors.js';
import { TEST_DATABASE_URL } from './support/env.js';
import { freePort } from './support/services.js';

const dir = mkdtempSync(path.join(tmpdir(), 'gw-dependency-refusals-'));
const db = createDbPool(TEST_DATABASE_URL, 2);
let server: ChildProcess;
let redis: Redis;
let other: Redis;
/** Connected before a script runs (SCRIPT KILL is all a busy Redis takes). */
let killer: Redis;

const killServer = (): void => {
  try {
    server?.kill('SIGKILL');
  } catch {
    // gone already
  }
};
process.once('exit', killServer);

beforeAll(async () => {
  const port = await freePort();
  server = spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const options = { port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => 50 };
  redis = new Redis(options);
  other = new Redis(options);
  killer = new Redis(options);
  for (const client of [redis, other, killer]) client.on('error', () => undefined);
  // Up once it answers (the server takes a moment to listen).
  for (let attempt = 0; ; attempt += 1) {
    const up = await Promise.all([redis.ping(), other.ping(), killer.ping()]).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (attempt > 100) throw new Error('the private redis-server did not come up');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});

afterAll(async () => {
  for (const client of [redis, other, killer]) client?.disconnect();
  killServer();
  rmSync(dir, { recursive: true, force: true });
  await db.end();
});

/** What `run` was refused with. */
async function refusal(run: () => Promise<unknown>): Promise<Error> {
  const error = await run().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

describe('a Redis that refuses work for a while is a dependency unavailable', () => {
  it('full under maxmemory with noeviction (OOM)', async () => {
    await redis.config('SET', 'maxmemory-policy', 'noeviction');
    await redis.config('SET', 'maxmemory', '1');
    try {
      const error = await refusal(() => other.set('k', 'v'));
      expect(error.message).toMatch(/^OOM /);
      expect(isDependencyUnavailable(error)).toBe(true);
    } finally {
      await redis.config('SET', 'maxmemory', '0');
    }
  });

  it('with too few replicas to write (NOREPLICAS)', async () => {
    await redis.config('SET', 'min-replicas-to-write', '1');
    try {
      const error = await refusal(() => other.set('k', 'v'));
      expect(error.message).toMatch(/^NOREPLICAS /);
      expect(isDependencyUnavailable(error)).toBe(true);
    } finally {
      await redis.config('SET', 'min-replicas-to-write', '0');
    }
  });

  it('busy with a long script (BUSY)', async () => {
    await redis.config('SET', 'busy-reply-threshold', '100');
    // Runs until killed: every other client is answered BUSY meanwhile.
    const looping = redis.eval('while true do end', 0).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 300));
    try {
      const error = await refusal(() => other.get('k'));
      expect(error.message).toMatch(/^BUSY /);
      expect(isDependencyUnavailable(error)).toBe(true);
    } finally {
      await killer.script('KILL');
      await looping;
    }
  });

  it('a replica left read-only, then cut from its master (READONLY, MASTERDOWN)', async () => {
    // A master nothing listens on: the link stays down.
    await redis.replicaof('127.0.0.1', String(await freePort()));
    await redis.config('SET', 'replica-serve-stale-data', 'no');
    try {
      const readOnly = await refusal(() => other.set('k', 'v'));
      expect(readOnly.message).toMatch(/^READONLY /);
      expect(isDependencyUnavailable(readOnly)).toBe(true);
      const masterDown = await refusal(() => other.get('k'));
      expect(masterDown.message).toMatch(/^MASTERDOWN /);
      expect(isDependencyUnavailable(masterDown)).toBe(true);
    } finally {
      await redis.replicaof('NO', 'ONE');
    }
  });

  it('but not a command it refuses as wrong (a bug, never retried away)', async () => {
    await other.set('a-string', 'v');
    const wrongType = await refusal(() => other.hget('a-string', 'f'));
    expect(wrongType.message).toMatch(/^WRONGTYPE /);
    expect(isDependencyUnavailable(wrongType)).toBe(false);
  });
});

describe('a Postgres that refuses work for a while is a dependency unavailable', () => {
  it('a primary demoted to a read-only standby (25006)', async () => {
    const client = await db.connect();
    try {
      await client.query('BEGIN READ ONLY');
      const error = await refusal(() => client.query('CREATE TEMP TABLE refused (x int)'));
      expect((error as Error & { code?: string }).code).toBe('25006');
      expect(isDependencyUnavailable(error)).toBe(true);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it('but not a statement it refuses as wrong', async () => {
    const error = await refusal(() => db.query('SELECT 1/0'));
    expect((error as Error & { code?: string }).code).toBe('22012');
    expect(isDependencyUnavailable(error)).toBe(false);
  });
});
