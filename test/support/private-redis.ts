// A redis-server of a test's own, on a free port, with no persistence: for the tests that stop
// Redis (or cut it off) under a component, which the shared Redis must never be. kill() is a
// SIGKILL (the data is gone: nothing is saved); start() starts it again, empty, on the same
// port. Killed when the test process exits, whatever the test did.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { eventually, freePort } from './services.js';

export interface PrivateRedis {
  readonly port: number;
  /** Starts the server and resolves once it answers PING. */
  start(): Promise<void>;
  kill(): void;
  /** Kills it and removes its directory. */
  close(): void;
}

export async function privateRedis(label: string): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), `gw-${label}-redis-`));
  let server: ChildProcess | undefined;
  const kill = (): void => {
    server?.kill('SIGKILL');
    server = undefined;
  };
  process.once('exit', kill);
  return {
    port,
    async start() {
      server = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          dir,
        ],
        { stdio: 'ignore' },
      );
      const probe = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        maxRetriesPerRequest: 0,
      });
      probe.on('error', () => undefined);
      try {
        await eventually(() => probe.ping().catch(() => undefined), 10_000);
      } finally {
        probe.disconnect();
      }
    },
    kill,
    close() {
      kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
