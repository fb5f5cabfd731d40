// Which thrown errors mean "a dependency is unreachable" (503 gw_unavailable, retry) rather
// than a bug (500): the error objects are the ones pg and ioredis really throw.
import { describe, expect, it } from 'vitest';
import { isDependencyUnavailable } from './errors.js';

describe('isDependencyUnavailable', () => {
  it('counts a Postgres that refuses new connections (53300 too_many_connections) as unavailable', () => {
    // What pg throws when the server's max_connections is reached.
    const refused = Object.assign(new Error('sorry, too many clients already'), {
      code: '53300',
      severity: 'FATAL',
    });
    expect(isDependencyUnavailable(refused)).toBe(true);
  });

  it('does not count a query error as unavailable', () => {
    const badInput = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
      code: '22021',
    });
    expect(isDependencyUnavailable(badInput)).toBe(false);
  });
});
