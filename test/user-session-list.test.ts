// The list of a dashboard user's sessions in Redis is bounded: a sign-in past the bound ends
// the user's least recently used session (its key and its entry), so neither the list nor
// the sessions a sign-out everywhere must delete grow without limit.
import { describe, expect, it } from 'vitest';
import { MAX_SESSIONS_PER_USER, SessionStore } from '../src/accounts/sessions.js';
import { createRedisKeys } from '../src/redis/keys.js';
import { isolatedContext } from './support/context.js';

const { redis, prefix } = isolatedContext('session-list');
const keys = createRedisKeys(prefix);
const store = new SessionStore(redis, keys, {
  idleMs: 3_600_000,
  absoluteMs: 12 * 3_600_000,
  insecureCookies: true,
});

describe('the session list of a user', () => {
  it(`holds at most ${MAX_SESSIONS_PER_USER} sessions: a sign-in past it ends the least recently used`, async () => {
    const userId = 'usr_sessionlistbound';
    const made: string[] = [];
    // A session's place in the list is its expiry in ms: sessions made in the same ms tie (and
    // either may go first), so each sign-in here waits for the clock's next ms to be ordered.
    const nextMs = async (): Promise<void> => {
      const start = Date.now();
      while (Date.now() === start) await new Promise((resolve) => setImmediate(resolve));
    };
    const signIn = async (): Promise<void> => {
      await nextMs();
      made.push((await store.create(userId, 0)).id);
    };
    for (let i = 0; i < MAX_SESSIONS_PER_USER; i += 1) await signIn();
    expect(await redis.zcard(keys.userSessions(userId))).toBe(MAX_SESSIONS_PER_USER);
    // the first one is used again: the second, third and fourth are the least recently used
    await nextMs();
    expect(await store.find(made[0]!)).not.toBeNull();
    for (let i = 0; i < 3; i += 1) await signIn();
    expect(await redis.zcard(keys.userSessions(userId))).toBe(MAX_SESSIONS_PER_USER);
    expect(await store.find(made[1]!)).toBeNull();
    expect(await store.find(made[2]!)).toBeNull();
    expect(await store.find(made[3]!)).toBeNull();
    expect(await store.find(made[0]!)).not.toBeNull();
    expect(await store.find(made.at(-1)!)).not.toBeNull();
    expect(await store.endAll(userId)).toHaveLength(MAX_SESSIONS_PER_USER);
  });
});
