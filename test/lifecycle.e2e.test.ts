// Process lifecycle: bad config stops boot with a clear message, a port another process holds
// is refused, the gw binary and the native uWS binary. SIGTERM, crashes and a start-up that
// fails halfway: test/shutdown-crashes.e2e.test.ts.
import { spawn } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { us_listen_socket } from 'uWebSockets.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadNativeUws } from '../src/http/uws.js';
import { isolatedContext } from './support/context.js';
import { runCliProcess, seed, startGatewayProcess, type SeededOrg } from './support/processes.js';
import { freePort } from './support/services.js';

const { env } = isolatedContext('life');
const root = fileURLToPath(new URL('../', import.meta.url));
let org: SeededOrg;

beforeAll(async () => {
  org = await seed(env);
});

function runToExit(
  extraEnv: Record<string, string>,
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/src/main.js'], {
      cwd: root,
      env: { ...process.env, ...env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

describe('configuration', () => {
  it('refuses to boot on a bad value and names the variable', async () => {
    const result = await runToExit({ PORT: 'eighty', REDIS_KEY_PREFIX: 'bad prefix!' });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('PORT');
    expect(result.stderr).toContain('REDIS_KEY_PREFIX');
  });

  it('refuses master keys it could not use, naming the variable, never the key (decision 466)', async () => {
    // `openssl rand -hex 32` where the README says -base64: 48 bytes once read as base64.
    const hexKey = 'ab'.repeat(32);
    const goodKey = Buffer.alloc(32, 7).toString('base64');
    const oldKey = Buffer.alloc(32, 9).toString('base64');
    for (const [extraEnv, variable, secret] of [
      [{ CREDENTIALS_MASTER_KEY: hexKey }, 'CREDENTIALS_MASTER_KEY', hexKey],
      [
        { CREDENTIALS_MASTER_KEY: goodKey, CREDENTIALS_PREVIOUS_KEYS: `k0:${hexKey}` },
        'CREDENTIALS_PREVIOUS_KEYS',
        hexKey,
      ],
      // A rotation that kept the id: the old key would take the new one's place under it.
      [
        {
          CREDENTIALS_MASTER_KEY: goodKey,
          CREDENTIALS_MASTER_KEY_ID: 'k1',
          CREDENTIALS_PREVIOUS_KEYS: `k1:${oldKey}`,
        },
        'CREDENTIALS_PREVIOUS_KEYS',
        oldKey,
      ],
    ] as const) {
      const booted = await runToExit({ ...extraEnv, PORT: '0', METRICS_ENABLED: 'false' });
      expect(booted.code, variable).toBe(78);
      expect(booted.stderr).toContain(`${variable}: `);
      expect(booted.stderr + booted.stdout).not.toContain(secret);
      const cli = await runCliProcess(['wallet', 'show', '--org-id', org.org_id], {
        ...env,
        ...extraEnv,
      });
      expect(cli.code, variable).toBe(2);
      const refusal = JSON.parse(cli.stderr) as { error: { code: string; message: string } };
      expect(refusal.error.code).toBe('gw_invalid_config');
      expect(refusal.error.message).toContain(`${variable}: `);
      expect(refusal.error.message).not.toContain(secret);
    }
  }, 90_000); // six processes, each refused at once, on a busy machine

  it('takes a key listed again under its own id, as before decision 466 (upgrade)', async () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const oldKey = Buffer.alloc(32, 9).toString('base64');
    // The same key under the same id replaces nothing: the current one listed among the
    // previous ones, or a previous one listed twice, worked before and must still start.
    for (const previous of [`k1:${key},k0:${oldKey}`, `k0:${oldKey},k0:${oldKey}`]) {
      const cli = await runCliProcess(['wallet', 'show', '--org-id', org.org_id], {
        ...env,
        CREDENTIALS_MASTER_KEY: key,
        CREDENTIALS_MASTER_KEY_ID: 'k1',
        CREDENTIALS_PREVIOUS_KEYS: previous,
      });
      expect(cli.stderr, previous).toBe('');
      expect(cli.code, previous).toBe(0);
    }
  }, 60_000);

  it('warns once at boot that sign-up without SMTP_URL verifies no address (GATEWAY_WORKERS=2)', async () => {
    const gateway = await startGatewayProcess({
      ...env,
      PORT: '0',
      METRICS_ENABLED: 'false',
      GATEWAY_WORKERS: '2',
      DASHBOARD_SIGNUP: 'true',
    });
    try {
      const warnings = gateway
        .output()
        .split('\n')
        .filter((line) => line.includes('no e-mail address is verified'));
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0]!)).toMatchObject({
        level: 40,
        msg: 'DASHBOARD_SIGNUP is on and SMTP_URL is unset: no e-mail address is verified, so anyone may sign up with an address they do not own (set SMTP_URL to verify addresses)',
      });
    } finally {
      await gateway.stop();
    }
  });
});

describe('a port another process holds', () => {
  it.each(['1', '2'])(
    'stops the start (GATEWAY_WORKERS=%s) and names METRICS_PORT rather than serving without metrics',
    async (workers) => {
      const holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      const taken = (holder.address() as AddressInfo).port;
      try {
        const result = await runToExit({
          METRICS_PORT: String(taken),
          GATEWAY_WORKERS: workers,
          PORT: workers === '1' ? '0' : String(await freePort()),
        });
        expect(result.code).toBe(1);
        expect(result.stdout).toContain(
          `could not listen on 127.0.0.1:${taken} (METRICS_HOST:METRICS_PORT)`,
        );
        expect(result.stdout).not.toContain('listening');
      } finally {
        await new Promise((resolve) => holder.close(resolve));
      }
    },
    90_000, // a single process fails only after the rest of its start-up, slow on a busy machine
  );
});

describe('a public port another gateway holds', () => {
  /** What another gateway's worker does: binds the port with SO_REUSEPORT (uWS's default). */
  async function holdShared(): Promise<{ port: number; release(): void }> {
    const uws = loadNativeUws();
    const port = await freePort();
    const socket = await new Promise<us_listen_socket | false>((resolve) =>
      uws.App().listen('127.0.0.1', port, resolve),
    );
    if (!socket) throw new Error(`could not hold port ${port}`);
    return { port, release: () => uws.us_listen_socket_close(socket) };
  }

  it.each(['1', '2'])(
    'stops the start (GATEWAY_WORKERS=%s) and names PORT, rather than the kernel splitting connections between them',
    async (workers) => {
      const holder = await holdShared();
      try {
        const result = await runToExit({
          HOST: '127.0.0.1',
          PORT: String(holder.port),
          GATEWAY_WORKERS: workers,
          METRICS_ENABLED: 'false',
        });
        expect(result.code).toBe(1);
        expect(result.stdout).toContain(`could not listen on 127.0.0.1:${holder.port} (HOST:PORT)`);
        expect(result.stdout).not.toContain('listening');
      } finally {
        holder.release();
      }
    },
    90_000, // a single process fails only after the rest of its start-up, slow on a busy machine
  );

  it('shares the port when told to (LISTEN_REUSE_PORT=true: a new gateway beside the old one)', async () => {
    const holder = await holdShared();
    try {
      const gateway = await startGatewayProcess({
        ...env,
        HOST: '127.0.0.1',
        PORT: String(holder.port),
        GATEWAY_WORKERS: '1',
        METRICS_ENABLED: 'false',
        LISTEN_REUSE_PORT: 'true',
      });
      expect(gateway.port).toBe(holder.port);
      expect(await gateway.stop()).toBe(0);
    } finally {
      holder.release();
    }
  }, 90_000);
});

describe('a restart on the same PORT', () => {
  /** Requests over a kept-alive connection the gateway closes as it stops (its side: TIME_WAIT). */
  async function keepAliveRequests(port: number): Promise<void> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    for (let index = 0; index < 3; index += 1) {
      socket.write(`GET /healthz HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
      await new Promise((resolve) => socket.once('data', resolve));
    }
    // Left open: the stopping gateway closes it first.
    socket.on('error', () => undefined);
  }

  it.each(['1', '2'])(
    'starts at once after the old gateway stopped (GATEWAY_WORKERS=%s), whatever its closed connections left',
    async (workers) => {
      const port = await freePort();
      const settings = {
        ...env,
        HOST: '127.0.0.1',
        PORT: String(port),
        GATEWAY_WORKERS: workers,
        METRICS_ENABLED: 'false',
      };
      const old = await startGatewayProcess(settings);
      await keepAliveRequests(port);
      expect(await old.stop()).toBe(0);
      const next = await startGatewayProcess(settings);
      try {
        expect(next.port).toBe(port);
        expect((await fetch(`${next.url}/healthz`)).status).toBe(200);
      } finally {
        expect(await next.stop()).toBe(0);
      }
    },
    120_000,
  );
});

describe('the gw binary', () => {
  it('runs a command as its own process and exits with its code', async () => {
    const done = await runCliProcess(['wallet', 'show', '--org-id', org.org_id], env);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ org_id: org.org_id });
    const refused = await runCliProcess(['wallet', 'show'], env);
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stderr).error.message).toContain('--org-id');
  });
});

describe('uWebSockets.js', () => {
  it('refuses to run on the slow pure-JS fallback', async () => {
    const result = await runToExit({ UWS_USE_FALLBACK: '1' });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('only the slow JS fallback is available');
    expect(result.stdout).not.toContain('gw listening');
  });
});
