// A vendor call that happened is always recorded: Redis becomes unreachable between the
// vendor's answer and settle, the settle is spooled to disk (the client still gets its
// answer), and once Redis is reachable again the spool replays: the usage row lands in
// Postgres once, the wallet is charged once, no hold is left. The same across a gateway
// killed while Redis is down (the next start replays its file, a torn last line and all).
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisKeys } from '../src/redis/keys.js';
import { baseEnv, uniquePrefix, vendorsAt } from './support/env.js';
import { bearer, postJson } from './support/http.js';
import {
  runCliJson,
  seed,
  startGatewayProcess,
  type SpawnedGateway,
  type SeededOrg,
} from './support/processes.js';
import { eventually, testDb } from './support/services.js';
import { spoolDirectory, spoolFiles } from './support/settle-spool.js';

// Spare ports of this branch: a private Redis, and the proxy in front of it that the test cuts.
const REDIS_PORT = 6385;
const PROXY_PORT = 6386;
const prefix = uniquePrefix('spool');
const spoolDir = spoolDirectory(prefix);
const redisDir = mkdtempSync(path.join(tmpdir(), 'gw-spool-redis-'));
const keys = createRedisKeys(prefix);
const db = testDb();
let redisServer: ChildProcess;
let directRedis: Redis;
let vendor: HttpServer;
let gateway: SpawnedGateway | undefined;
let org: SeededOrg;
let env: Record<string, string>;

/** A TCP proxy to the private Redis; cut() drops every connection and refuses new ones. */
class CuttableProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  async open(): Promise<void> {
    const server = createTcpServer((client) => {
      const upstream = connect(REDIS_PORT, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(PROXY_PORT, '127.0.0.1', resolve));
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}
const proxy = new CuttableProxy();
let cutOnVendorCall = false;

/** vendor_b's chat completions; cuts Redis (when asked) as soon as the call arrives. */
function startVendor(): Promise<string> {
  vendor = createHttpServer((request, response) => {
    request.resume();
    request.on('end', () => {
      void (async () => {
        if (cutOnVendorCall) await proxy.cut();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            id: 'chatcmpl-spool',
            object: 'chat.completion',
            created: 1,
            model: 'gpt-4o-mini',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: 'spooled hello' },
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 },
          }),
        );
      })();
    });
  });
  return new Promise((resolve) =>
    vendor.listen(0, '127.0.0.1', () => {
      const address = vendor.address() as { port: number };
      resolve(`http://127.0.0.1:${address.port}`);
    }),
  );
}

const chat = {
  model: 'vendor_b/gpt-4o-mini',
  max_tokens: 600,
  messages: [{ role: 'user', content: 'hi' }],
};
const nano = (decimal: string): bigint => BigInt(decimal.replace('.', '')) / 1000n;
const wallet = () =>
  runCliJson<{ balance: string; reserved: string }>(
    ['wallet', 'show', '--org-id', org.org_id],
    env,
  );
const spooledRequestIds = (): string[] =>
  spoolFiles(spoolDir)
    .flatMap((file) => readFileSync(file, 'utf8').split('\n'))
    .filter((line) => line !== '')
    .map((line) => /\\"request_id\\":\\"([0-9a-f-]+)\\"/.exec(line)?.[1] ?? 'unreadable');

/** The request's row, once; then the wallet charged exactly its cost once and no hold left. */
async function expectRecordedOnce(requestId: string, balanceBeforeNano: bigint): Promise<void> {
  const row = await eventually(async () => {
    const { rows } = await db.query<{ status: string; wallet_cost: string }>(
      'SELECT status, wallet_cost::text FROM usage_records WHERE request_id = $1',
      [requestId],
    );
    return rows[0];
  }, 20_000);
  expect(row.status).toBe('completed');
  expect(nano(row.wallet_cost)).toBeGreaterThan(0n);
  const { rows } = await db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [requestId]);
  expect(rows).toHaveLength(1);
  const after = await eventually(async () => {
    const shown = await wallet();
    return shown.reserved === '0.000000000000' ? shown : undefined;
  });
  expect(nano(after.balance)).toBe(balanceBeforeNano - nano(row.wallet_cost));
  expect(await directRedis.zcard(keys.holdExpiries(keys.wallet(org.org_id)))).toBe(0);
  await eventually(async () => (spooledRequestIds().length === 0 ? true : undefined), 10_000);
}

beforeAll(async () => {
  redisServer = spawn(
    'redis-server',
    ['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore', cwd: redisDir },
  );
  directRedis = new Redis(REDIS_PORT, '127.0.0.1');
  directRedis.on('error', () => undefined); // until the server listens
  await eventually(async () => ((await directRedis.ping()) === 'PONG' ? true : undefined), 10_000);
  await proxy.open();
  const vendorUrl = await startVendor();
  env = {
    ...baseEnv(prefix),
    REDIS_URL: `redis://127.0.0.1:${PROXY_PORT}`,
    REDIS_CLUSTER_NODES: '', // this file's own single Redis, whatever the run's
    ...vendorsAt(vendorUrl),
    SPOOL_DIR: spoolDir,
  };
  gateway = await startGatewayProcess(env);
  org = await seed(env);
});

afterAll(async () => {
  await gateway?.stop('SIGKILL');
  await proxy.cut();
  await new Promise((resolve) => vendor?.close(resolve));
  directRedis?.disconnect();
  redisServer?.kill('SIGKILL');
  await db.end();
});

describe('settle spool', () => {
  it('records and charges once a request whose settle met an unreachable Redis, and answers it', async () => {
    const before = nano((await wallet()).balance);
    cutOnVendorCall = true;
    const answer = await postJson<{ choices: Array<{ message: { content: string } }> }>(
      `${gateway!.url}/v1/chat/completions`,
      chat,
      bearer(org.api_key),
    );
    cutOnVendorCall = false;
    // The vendor answered and its usage is safe on disk: the client gets the answer.
    expect(answer.status).toBe(200);
    expect(answer.body.choices[0]!.message.content).toBe('spooled hello');
    const requestId = answer.headers.get('x-request-id')!;
    expect(spooledRequestIds()).toEqual([requestId]);
    const { rows } = await db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [
      requestId,
    ]);
    expect(rows).toHaveLength(0);

    await proxy.open(); // Redis reachable again: the reconnect replays the spool
    await expectRecordedOnce(requestId, before);
  });

  it('replays at the next start the spool of a gateway killed while Redis was down, past a torn last line', async () => {
    const before = nano((await wallet()).balance);
    cutOnVendorCall = true;
    const answer = await postJson(`${gateway!.url}/v1/chat/completions`, chat, bearer(org.api_key));
    cutOnVendorCall = false;
    expect(answer.status).toBe(200);
    const requestId = answer.headers.get('x-request-id')!;
    expect(spooledRequestIds()).toEqual([requestId]);

    await gateway!.stop('SIGKILL');
    gateway = undefined;
    // A crash in the middle of a later append leaves a torn line at the end of the file.
    appendFileSync(spoolFiles(spoolDir)[0]!, '{"v":1,"fields":["record","{\\"request_id');

    await proxy.open();
    gateway = await startGatewayProcess(env);
    await expectRecordedOnce(requestId, before);
  });
});
