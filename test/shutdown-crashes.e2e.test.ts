// Shutdown and crashes: SIGTERM at each stage of start-up ends the process cleanly, an
// in-flight stream finishes on SIGTERM, a killed instance loses no usage record, and a start-up
// that fails halfway closes what it opened. Split from lifecycle.e2e.test.ts so that the Redis
// Cluster project runs these (they touch Redis and the ledger) without the configuration and
// port checks, which are the same on either Redis.
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { createRedisKeys } from '../src/redis/keys.js';
import { isolatedContext } from './support/context.js';
import { bearer, postJson, postSse } from './support/http.js';
import { seed, startGateway, startGatewayProcess, type SeededOrg } from './support/processes.js';
import { eventually } from './support/services.js';

const { prefix, env, db, redis } = isolatedContext('shutdown-crashes');
const keys = createRedisKeys(prefix);
const root = fileURLToPath(new URL('../', import.meta.url));
let org: SeededOrg;

beforeAll(async () => {
  org = await seed(env);
});

describe('shutdown and crashes', () => {
  it('a SIGTERM before the gateway has loaded ends the process at once, exit 0, nothing started', async () => {
    const holdGatewayImport = fileURLToPath(
      new URL('./support/hold-gateway-import.mjs', import.meta.url),
    );
    const child = spawn(process.execPath, ['--import', holdGatewayImport, 'dist/src/main.js'], {
      cwd: root,
      env: {
        ...process.env,
        ...env,
        PORT: '0',
        GATEWAY_WORKERS: '1',
        METRICS_ENABLED: 'false',
        // The default cost: the suite's cheaper one is warned of at boot (decision 573).
        PASSWORD_SCRYPT_N: '32768',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<[number | null, string | null]>((resolve) =>
      child.once('exit', (code, signal) => resolve([code, signal])),
    );
    // src/gateway.ts is being imported (and never will be): nothing has started
    await new Promise<void>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('holding the gateway import')) resolve();
      });
    });
    child.kill('SIGTERM');
    expect(await exited).toEqual([0, null]);
    expect(stdout).toBe('');
  }, 60_000);

  it('a SIGTERM while starting stops the gateway once it has started, exit 0, not killed halfway', async () => {
    const child = spawn(process.execPath, ['dist/src/main.js'], {
      cwd: root,
      env: { ...process.env, ...env, PORT: '0', GATEWAY_WORKERS: '1', METRICS_ENABLED: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // the first thing start-up logs (its Redis), long before it listens
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('"msg":"redis"')) resolve();
      });
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('"msg":"gw listening"');
    expect(output).toContain('"signal":"SIGTERM","msg":"shutting down"');
  }, 60_000);

  it('on SIGTERM lets an in-flight stream finish, then exits 0', async () => {
    const gateway = await startGatewayProcess(env);
    const streaming = postSse(
      `${gateway.url}/v1/chat/completions`,
      {
        model: 'vendor_b/gpt-4o-mini',
        stream: true,
        messages: [{ role: 'user', content: 'slow one mock:latency_ms=600 mock:output_tokens=3' }],
      },
      bearer(org.api_key),
    );
    // Admitted (its hold is in Redis) before the signal, however loaded the machine is.
    await eventually(async () =>
      (await redis.hlen(keys.inFlight(org.org_id))) === 1 ? true : undefined,
    );
    const exited = gateway.stop('SIGTERM');
    const response = await streaming;
    expect(response.status).toBe(200);
    expect(response.data.at(-1)).toBe('[DONE]');
    expect(await exited).toBe(0);
    const requestId = response.headers.get('x-request-id')!;
    const { rows } = await db.query('SELECT status FROM usage_records WHERE request_id = $1', [
      requestId,
    ]);
    expect(rows).toEqual([{ status: 'completed' }]);
  });

  it('a gateway killed right after answering loses no usage record', async () => {
    const doomed = await startGatewayProcess({
      ...env,
      USAGE_FLUSH_INTERVAL_MS: '5000',
      USAGE_CLAIM_IDLE_MS: '500',
    });
    const requestIds: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      const response = await postJson(
        `${doomed.url}/v1/chat/completions`,
        { model: 'vendor_b/gpt-4o-mini', messages: [{ role: 'user', content: `crash ${index}` }] },
        bearer(org.api_key),
      );
      expect(response.status).toBe(200);
      requestIds.push(response.headers.get('x-request-id')!);
    }
    await doomed.stop('SIGKILL');
    const survivor = await startGatewayProcess({ ...env, USAGE_CLAIM_IDLE_MS: '500' });
    try {
      const rows = await eventually(async () => {
        const { rows: found } = await db.query(
          'SELECT request_id FROM usage_records WHERE request_id = ANY($1::uuid[])',
          [requestIds],
        );
        return found.length === requestIds.length ? found : undefined;
      }, 10_000);
      expect(rows).toHaveLength(5);
    } finally {
      await survivor.stop();
    }
    // two gateway processes started in turn: more than the default on a loaded machine
  }, 90_000);
});

describe('start-up that fails halfway', () => {
  it('closes every connection, thread and timer it had opened, and reports the cause', async () => {
    // The metrics listener is the last thing start-up opens: take its port first.
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const takenPort = (squatter.address() as AddressInfo).port;
    const before = openResources();
    try {
      await expect(
        startGateway({ ...env, PORT: '0', METRICS_ENABLED: 'true', METRICS_PORT: `${takenPort}` }),
      ).rejects.toThrow(`could not listen on 127.0.0.1:${takenPort}`);
      // Postgres pool, both Redis connections, the writer thread, token workers, the mock
      // vendors, the public listener and the catalog timer are all gone again.
      const leftOver = await eventually(async () => {
        const extra = resourcesBeyond(before);
        return Object.keys(extra).length === 0 ? extra : undefined;
      }, 10_000).catch(() => resourcesBeyond(before));
      expect(leftOver).toEqual({});
    } finally {
      squatter.close();
    }
  });
});

/** The handles open now beyond those of `baseline`, by kind. */
function resourcesBeyond(baseline: Record<string, number>): Record<string, number> {
  const extra: Record<string, number> = {};
  for (const [kind, count] of Object.entries(openResources())) {
    if (count > (baseline[kind] ?? 0)) extra[kind] = count - (baseline[kind] ?? 0);
  }
  return extra;
}

/** This process's handles by kind, e.g. { TCPSocketWrap: 3, Timeout: 1 }. */
function openResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}
