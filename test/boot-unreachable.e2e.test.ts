// The gateway's boot with Postgres or Redis away (decision 426): each attempt to reach one
// waits at most its time-out (DATABASE_TIMEOUT_MS, REDIS_TIMEOUT_MS), failed attempts are
// logged and tried again with backoff, and after six time-outs in all the process exits 1 with
// a message naming the dependency, so an orchestrator restarts it. Before, a Postgres that
// accepted connections and never answered held the boot for ever (SIGTERM included). A real
// process: its exit code and its log are what an operator sees.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from './support/env.js';
import { startFreezableRelay, type FreezableRelay } from './support/freezable-relay.js';
import { startGatewayProcess } from './support/processes.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const { env } = isolatedContext('boot-unreachable');
const relays: FreezableRelay[] = [];
const servers: net.Server[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  // A boot that did not end as a test expected is not left running.
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(relays.map((relay) => relay.close()));
  for (const server of servers) server.close();
});

/** A relay in front of `target` that forwards nothing: connections open, no answer comes. */
async function hungRelay(target: URL, defaultPort: number): Promise<number> {
  const relay = await startFreezableRelay({
    host: target.hostname,
    port: Number(target.port || defaultPort),
  });
  relay.freeze();
  relays.push(relay);
  return relay.port;
}

/**
 * A TCP server whose first connection is accepted and never answered (a Postgres that hangs),
 * and whose later ones are piped to the test database: Postgres comes back during the boot.
 */
async function postgresBackOnSecondConnection(): Promise<{ port: number; accepted(): number }> {
  const target = new URL(TEST_DATABASE_URL);
  let accepted = 0;
  const sockets: net.Socket[] = [];
  const server = net.createServer((client) => {
    accepted += 1;
    sockets.push(client);
    client.on('error', () => undefined);
    if (accepted === 1) return; // silent
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  server.on('close', () => sockets.forEach((socket) => socket.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { port: (server.address() as net.AddressInfo).port, accepted: () => accepted };
}

/**
 * Runs a one-process gateway expected to fail to start: its exit code and its JSON log lines,
 * read once its output has closed (an exit can come before the last lines are read).
 */
async function failedBoot(
  settings: Record<string, string>,
  onOutput: (output: string, child: ChildProcess) => void = () => undefined,
): Promise<{ code: number | null; output: string; lines: Array<Record<string, unknown>> }> {
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: root,
    env: { ...process.env, ...env, GATEWAY_WORKERS: '1', LOG_LEVEL: 'info', ...settings },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  const read = (chunk: Buffer): void => {
    output += chunk.toString();
    onOutput(output, child);
  };
  child.stdout.on('data', read);
  child.stderr.on('data', read);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, output, lines: logLines(output) };
}

/** The JSON log lines of a gateway's output. */
function logLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const RETRY_LINE = 'Postgres (DATABASE_URL) is not reachable yet: trying again';

let hungDatabaseUrl: string;
let hungRedisUrl: string;

beforeAll(async () => {
  const database = new URL(TEST_DATABASE_URL);
  database.port = String(await hungRelay(database, 5432));
  database.password = 'a-secret-password';
  hungDatabaseUrl = database.href;
  hungRedisUrl = `redis://127.0.0.1:${await hungRelay(new URL(TEST_REDIS_URL), 6379)}`;
});

describe('the boot with a dependency away', () => {
  it('tries a Postgres that hangs again, then exits 1 naming it', async () => {
    // 500 ms: two attempts (the second after a pause of 1 s), the boot given up within 3 s
    const { code, output, lines } = await failedBoot({
      DATABASE_URL: hungDatabaseUrl,
      DATABASE_TIMEOUT_MS: '500',
    });
    expect(code).toBe(1);
    const retries = lines.filter((line) => line.msg === RETRY_LINE);
    expect(retries[0]).toMatchObject({
      level: 40,
      attempt: 1,
      retryInMs: 1000,
      reason: 'Postgres (DATABASE_URL) did not answer within 500 ms',
    });
    const fatal = lines.find((line) => line.msg === 'gw failed to start');
    expect((fatal?.err as { message: string }).message).toMatch(
      new RegExp(
        `^Postgres \\(DATABASE_URL\\) did not answer within 500 ms \\(gave up after ${retries.length + 1} attempts in [\\d.]+ s\\)$`,
      ),
    );
    expect(output).not.toContain('a-secret-password');
  });

  it('stops at once, exit 0, when SIGTERM comes while it waits for Postgres', async () => {
    let signalled = false;
    const { code, lines } = await failedBoot(
      // A boot that went on waiting would give up after six time-outs of 1 s: exit 1, "gw
      // failed to start", not the exit 0 of a stop.
      { DATABASE_URL: hungDatabaseUrl, DATABASE_TIMEOUT_MS: '1000' },
      (output, child) => {
        if (!signalled && output.includes(RETRY_LINE)) {
          signalled = true;
          child.kill('SIGTERM');
        }
      },
    );
    expect(signalled).toBe(true);
    expect(code).toBe(0);
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'stopped before it started',
        signal: 'SIGTERM',
        reason: 'stopped while waiting for Postgres (DATABASE_URL)',
      }),
    );
    expect(lines.filter((line) => line.msg === 'gw failed to start')).toEqual([]);
  });

  it('starts once Postgres answers on a later attempt', async () => {
    const postgres = await postgresBackOnSecondConnection();
    const database = new URL(TEST_DATABASE_URL);
    database.port = String(postgres.port);
    const gateway = await startGatewayProcess({
      ...env,
      GATEWAY_WORKERS: '1',
      DATABASE_URL: database.href,
      DATABASE_TIMEOUT_MS: '1000',
    });
    try {
      const retry = logLines(gateway.output()).find((line) => line.msg === RETRY_LINE);
      expect(retry).toMatchObject({ attempt: 1, retryInMs: 1000 });
      const ready = await fetch(`${gateway.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready' });
      expect(postgres.accepted()).toBeGreaterThan(1);
    } finally {
      expect(await gateway.stop()).toBe(0);
    }
  });

  it('does not retry a Postgres that refuses the login, and says why', async () => {
    const database = new URL(TEST_DATABASE_URL);
    database.username = 'gw_no_such_role';
    const { code, lines } = await failedBoot({
      DATABASE_URL: database.href,
      DATABASE_TIMEOUT_MS: '1000',
    });
    expect(code).toBe(1);
    expect(lines.filter((line) => /trying again/.test(String(line.msg)))).toEqual([]);
    const fatal = lines.find((line) => line.msg === 'gw failed to start');
    expect((fatal?.err as { message: string }).message).toBe(
      'role "gw_no_such_role" does not exist',
    );
  });

  it('tries a Redis that hangs again, then exits 1 naming it', async () => {
    const { code, lines } = await failedBoot({ REDIS_URL: hungRedisUrl, REDIS_TIMEOUT_MS: '500' });
    expect(code).toBe(1);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        attempt: 1,
        msg: 'Redis (REDIS_URL) is not reachable yet: trying again',
      }),
    );
    const fatal = lines.find((line) => line.msg === 'gw failed to start');
    expect((fatal?.err as { message: string }).message).toMatch(
      /^Redis \(REDIS_URL\) (did not answer within \d+ ms|is unreachable: Command timed out) \(gave up after \d+ attempts in [\d.]+ s\)$/,
    );
  });
});
