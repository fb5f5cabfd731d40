import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { DependencyUnavailableError, reachable } from './dependency-wait.js';

/** The error Postgres itself answers with (what pg throws for an ErrorResponse). */
function serverRefusal(code: string): Error {
  const error = new pg.DatabaseError('password authentication failed', 0, 'error');
  error.code = code;
  return error;
}

/** A socket's error (what Node throws when the connection breaks). */
function socketError(code: string): Error {
  return Object.assign(new Error(`write ${code}`), { code });
}

describe('reachable: which failures a wait may retry', () => {
  it('rethrows the server refusing us as it is (a wrong password: no wait helps)', async () => {
    const refusal = serverRefusal('28P01');
    await expect(reachable(Promise.reject(refusal), 1_000, 'Postgres')).rejects.toBe(refusal);
  });

  it.each(['57P03', '53300', '08006'])(
    'takes the server starting, full or failing (%s) for unreachable',
    async (code) => {
      const failure = reachable(Promise.reject(serverRefusal(code)), 1_000, 'Postgres');
      await expect(failure).rejects.toBeInstanceOf(DependencyUnavailableError);
    },
  );

  it.each(['EPIPE', 'EPERM', 'ECONNREFUSED', 'ECONNRESET'])(
    'takes a socket error (%s) for unreachable, even one of five capitals like a SQLSTATE',
    async (code) => {
      const failure = reachable(Promise.reject(socketError(code)), 1_000, 'Postgres');
      await expect(failure).rejects.toBeInstanceOf(DependencyUnavailableError);
      await expect(failure).rejects.toThrow(`Postgres is unreachable: write ${code}`);
    },
  );
});
