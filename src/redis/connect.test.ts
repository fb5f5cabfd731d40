// REDIS_CLUSTER_NODES as an operator writes it: host:port lists and the URL form, and the
// configuration errors that name the variable and never echo a password.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { warnOfErrors } from './connect.js';
import { describeTarget, parseClusterNodes, redisTarget } from './target.js';

describe('REDIS_CLUSTER_NODES', () => {
  it('takes host:port items, spaces and a trailing comma allowed', () => {
    expect(parseClusterNodes(' 10.0.0.1:7000, redis-b.internal:7001 ,')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-b.internal', port: 7001 },
      ],
      tls: false,
    });
  });

  it('takes the URL form, with credentials and TLS for every node', () => {
    expect(
      parseClusterNodes('rediss://gw:s%3Acret@a.example:6380,rediss://gw:s%3Acret@b.example:6380'),
    ).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'a.example', port: 6380 },
        { host: 'b.example', port: 6380 },
      ],
      username: 'gw',
      password: 's:cret',
      tls: true,
    });
    expect(parseClusterNodes('redis://:pw@a:1,b:2')).toMatchObject({ password: 'pw', tls: false });
  });

  it('refuses what it cannot use, without repeating a password', () => {
    for (const [text, reason] of [
      ['', 'expected host:port'],
      ['a.example', 'host:port'],
      ['a:0', 'host:port'],
      ['a:70000', 'host:port'],
      ['http://a:1', 'host:port'],
      ['redis://a:1,rediss://b:2', 'mix redis:// and rediss://'],
      ['redis://u:one@a:1,redis://u:two@b:2', 'different credentials'],
    ] as const) {
      expect(() => parseClusterNodes(text), text).toThrow(reason);
    }
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'redis://u:hunter2@a' })).toThrow(
      /REDIS_CLUSTER_NODES: each node must be host:port/,
    );
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'redis://u:hunter2@a' })).not.toThrow(/hunter2/);
  });

  it('replaces REDIS_URL when set; unset or empty, REDIS_URL is used', () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: '127.0.0.1:7001' });
    expect(redisTarget(config)).toMatchObject({ kind: 'cluster', nodes: [{ port: 7001 }] });
    expect(redisTarget(loadConfig({ REDIS_CLUSTER_NODES: '' }))).toEqual({
      kind: 'single',
      url: 'redis://127.0.0.1:6379',
    });
    expect(describeTarget(parseClusterNodes('redis://u:pw@a:1'))).toEqual({
      redis: 'cluster',
      redisSeedNodes: ['a:1'],
    });
  });
});

describe('warnOfErrors', () => {
  it('warns with the error code at most once per interval, counting those it left out', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) });
    const onError = warnOfErrors(logger, 'redis connection error', 60_000);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6390'), {
      code: 'ECONNREFUSED',
    });
    onError(refused);
    onError(refused);
    onError(new Error('Command timed out'));
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      expect.objectContaining({
        msg: 'redis connection error',
        code: 'ECONNREFUSED',
        reason: 'connect ECONNREFUSED 127.0.0.1:6390',
        alsoSinceLast: 0,
      }),
    ]);
    const everyTime = warnOfErrors(logger, 'redis connection error', 0);
    everyTime(refused);
    everyTime(new Error('Command timed out'));
    expect(lines.slice(1).map((line) => JSON.parse(line).reason)).toEqual([
      'connect ECONNREFUSED 127.0.0.1:6390',
      'Command timed out',
    ]);
  });
});
