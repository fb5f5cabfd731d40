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

  it('counts a Redis Cluster shard that is away as unavailable', () => {
    // What ioredis' Cluster throws for a key whose master is down (after its redirections),
    // and what a cluster answers while it is down or moving a slot.
    const away = new Error(
      'Too many Cluster redirections. Last error: Error: Connection is closed.',
    );
    const down = Object.assign(new Error('CLUSTERDOWN The cluster is down'), {
      name: 'ReplyError',
    });
    const moving = Object.assign(new Error('TRYAGAIN Multiple keys request during rehashing'), {
      name: 'ReplyError',
    });
    for (const error of [away, down, moving]) expect(isDependencyUnavailable(error)).toBe(true);
    const crossSlot = Object.assign(
      new Error("CROSSSLOT Keys in request don't hash to the same slot"),
      { name: 'ReplyError' },
    );
    expect(isDependencyUnavailable(crossSlot)).toBe(false); // a bug, never retried away
  });

  it('counts a Redis loading its data after a restart as unavailable', () => {
    // What a Redis answers every command while it reads its AOF or RDB back (the others, OOM,
    // READONLY, MASTERDOWN, NOREPLICAS and BUSY, are produced by a real server in
    // test/dependency-refusals.test.ts).
    const loading = Object.assign(new Error('LOADING Redis is loading the dataset in memory'), {
      name: 'ReplyError',
    });
    expect(isDependencyUnavailable(loading)).toBe(true);
    const busyKey = Object.assign(new Error('BUSYKEY Target key name already exists.'), {
      name: 'ReplyError',
    });
    expect(isDependencyUnavailable(busyKey)).toBe(false); // a RESTORE onto a key: a bug
  });
});
