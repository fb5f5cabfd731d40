// What a connection dropped by the silence watch (src/redis/silent-connections.ts) does to the
// commands it had written: Redis that only hung (SIGSTOP) still holds them in the old socket
// and runs them when it resumes, and ioredis writes them again on the new connection
// (autoResendUnfulfilledCommands). Each runs twice: only commands that are safe to run twice
// may ever wait on the gateway's client. A private redis-server (the shared one is never
// stopped).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisClient } from '../src/redis/connect.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { defineScripts, preloadScripts } from '../src/redis/scripts.js';
import { replaceSilentConnections, type SilenceWatch } from '../src/redis/silent-connections.js';

const BOUND_MS = 300;
const port = 16_500 + Math.floor(Math.random() * 400);
const dir = mkdtempSync(path.join(tmpdir(), 'gw-redis-resend-'));
const keys = createRedisKeys('resend');
let server: ChildProcess;
let stopped = false;
let direct: Redis;
let client: RedisClient;
let watch: SilenceWatch;
const replaced: number[] = [];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function stop(): void {
  process.kill(server.pid!, 'SIGSTOP');
  stopped = true;
}
function resume(): void {
  if (stopped) process.kill(server.pid!, 'SIGCONT');
  stopped = false;
}
const killServer = (): void => {
  try {
    resume();
    server?.kill('SIGKILL');
  } catch {
    // gone already
  }
};
process.once('exit', killServer);

beforeAll(async () => {
  server = spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  direct = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null });
  direct.on('error', () => undefined);
  await direct.ping();
  // The gateway's client, as src/composition/redis.ts builds it.
  client = connectRedis(
    { kind: 'single', url: `redis://127.0.0.1:${port}` },
    { maxRetriesPerRequest: 2, commandTimeoutMs: BOUND_MS },
  );
  client.on('error', () => undefined);
  watch = replaceSilentConnections(client, BOUND_MS, (_connection, silentForMs) =>
    replaced.push(silentForMs),
  );
  await preloadScripts(client);
});

afterAll(async () => {
  watch?.stop();
  client?.disconnect();
  direct?.disconnect();
  killServer();
  rmSync(dir, { recursive: true, force: true });
});

/** Stops Redis across `run`, long enough for the watch to drop the connection, then resumes. */
async function acrossAHang(run: () => Promise<unknown>): Promise<unknown> {
  stop();
  const outcome = run().then(
    (value) => value,
    (error: Error) => error.message,
  );
  await sleep(BOUND_MS * 20); // past twice the bound: the watch drops the connection (ioredis destroys it 2 s later)
  expect(replaced.length).toBeGreaterThan(0);
  resume();
  await sleep(BOUND_MS * 10); // reconnected, everything kept sent again
  return outcome;
}

describe('commands written again after the silence watch dropped their connection', () => {
  it('a wallet top-up (wallet-topup-apply of its mark) is added to the live balance once', async () => {
    const scripts = defineScripts(client);
    const topUp = {
      wallet: keys.wallet('org-topup'),
      pending: keys.walletPendingTopUps('org-topup'),
    };
    await direct.hset(topUp.wallet, 'balance', '1000', 'reserved', '0', 'gen', 'g1');
    // The top-up's transaction marked it owed to this wallet before its commit (decision 521).
    await direct.hset(topUp.pending, '1', 'g1');
    const outcome = await acrossAHang(() =>
      scripts.walletTopUpApply(topUp, { transaction_id: '1', amount_nano: '500' }),
    );
    expect(outcome).toBe('Command timed out'); // the admin got a 503; Postgres has the top-up
    // Postgres recorded one top-up of 500: the live balance must be 1,500, the mark gone.
    expect(await direct.hget(topUp.wallet, 'balance')).toBe('1500');
    expect(await direct.hlen(topUp.pending)).toBe(0);
  });
});
