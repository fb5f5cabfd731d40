// Every connection gw opens to Postgres asks TCP to probe a silent peer (decision 407): an idle
// pooled connection, or one waiting on a statement gw does not bound, learns within about 20 s
// that a server vanished without a reset, instead of never. Read from the kernel's own table of
// TCP sockets (/proc/net/tcp: a socket's timer 2 is its keepalive timer), for the connection
// each kind of pool holds idle after a query, against the real Postgres.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createDbPool, TCP_KEEPALIVE_IDLE_MS, type DbClient } from '../src/db/pool.js';
import { TEST_DATABASE_URL } from './support/env.js';

/** The kernel's timer of the TCP socket at local port `port`: its kind and ms until it fires. */
function timerOf(port: number): { kind: number; inMs: number } | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (!fields[1]?.endsWith(`:${hexPort}`) || fields[3] !== '01') continue; // 01: ESTABLISHED
      const [kind, when] = fields[5]!.split(':');
      // `when` counts jiffies; USER_HZ is 100 on Linux (10 ms each).
      return { kind: Number.parseInt(kind!, 16), inMs: Number.parseInt(when!, 16) * 10 };
    }
  }
  return undefined;
}

const localPort = (client: DbClient): number =>
  (client as unknown as { connection: { stream: { localPort: number } } }).connection.stream
    .localPort;

describe('Postgres connections', () => {
  it.each([
    ['the request pool (bounded)', 5_000],
    ['the CLI and migrations (unbounded)', undefined],
  ])('of %s keep TCP keepalive on while idle', async (_name, timeoutMs) => {
    const pool = createDbPool(TEST_DATABASE_URL, 1, timeoutMs);
    try {
      const client = await pool.connect();
      await client.query('SELECT 1');
      const port = localPort(client);
      client.release();
      const timer = timerOf(port);
      expect(timer?.kind).toBe(2); // the keepalive timer (0: none)
      expect(timer!.inMs).toBeLessThanOrEqual(TCP_KEEPALIVE_IDLE_MS);
    } finally {
      await pool.end();
    }
  });
});
