// Dashboard sessions: server-side in Redis, found by the SHA-256 of the cookie's random id
// (a Redis dump reveals no usable session), with an idle and an absolute expiry, a CSRF
// token bound to each session, and rotation at login (a new id every time). Each user's
// sessions are also listed in a sorted set (handle → when it expires unused), so all of them
// can be ended at once; its expired entries are pruned whenever a session is made or ended.
// Ending them all is not atomic across Redis Cluster slots: what makes it final is the user's
// session epoch (src/accounts/user-sessions.ts), which every session carries.
import { timingSafeEqual } from 'node:crypto';
import type { RedisClient } from '../redis/connect.js';
import { randomBase62, sha256Hex } from '../ids.js';
import type { RedisKeys } from '../redis/keys.js';

export interface SessionSettings {
  readonly idleMs: number;
  readonly absoluteMs: number;
  /** Plain-HTTP localhost development: no `Secure`, no `__Host-` prefix. */
  readonly insecureCookies: boolean;
}

/** The sessions' settings from the gateway's configuration (the gateway's and the CLI's). */
export function sessionSettingsOf(config: {
  readonly DASHBOARD_SESSION_IDLE_MS: number;
  readonly DASHBOARD_SESSION_MAX_MS: number;
  readonly DASHBOARD_INSECURE_COOKIES: boolean;
}): SessionSettings {
  return {
    idleMs: config.DASHBOARD_SESSION_IDLE_MS,
    absoluteMs: config.DASHBOARD_SESSION_MAX_MS,
    insecureCookies: config.DASHBOARD_INSECURE_COOKIES,
  };
}

export interface Session {
  /** The Redis key's hash of the id (never the id itself). */
  readonly handle: string;
  readonly userId: string;
  readonly csrfToken: string;
  readonly createdAtMs: number;
  /** The user's session epoch when it was made: a session of an earlier epoch is refused. */
  readonly epoch: number;
}

/** A session as Redis holds it (`e` is absent from sessions made before epochs: 0). */
interface StoredSession {
  readonly u: string;
  readonly c: string;
  readonly t: number;
  readonly e?: number;
}

const SESSION_ID_LENGTH = 43; // > 256 bits

/**
 * Live sessions one user may have: a sign-in past it ends their least recently used ones, so
 * neither the user's list nor what ending them all deletes grows without bound.
 */
export const MAX_SESSIONS_PER_USER = 100;

export class SessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    readonly settings: SessionSettings,
  ) {}

  get cookieName(): string {
    return this.settings.insecureCookies ? 'gw_session' : '__Host-gw_session';
  }

  /**
   * A new session for the user, of the session epoch read with their password hash: returns
   * the raw id for the cookie. Listed under the user before it exists, so no session escapes
   * endAll.
   */
  async create(userId: string, epoch: number): Promise<{ id: string; session: Session }> {
    const id = randomBase62(SESSION_ID_LENGTH);
    const session: Session = {
      handle: sha256Hex(id),
      userId,
      csrfToken: randomBase62(SESSION_ID_LENGTH),
      createdAtMs: Date.now(),
      epoch,
    };
    const ttlMs = Math.min(this.settings.idleMs, this.settings.absoluteMs);
    const index = this.keys.userSessions(userId);
    const listed = await this.redis
      .multi()
      .zremrangebyscore(index, '-inf', session.createdAtMs)
      .zadd(index, session.createdAtMs + ttlMs, session.handle)
      // No session of the user outlives the newest one's absolute expiry.
      .pexpire(index, this.settings.absoluteMs)
      .zcard(index)
      .exec();
    const excess = Number(listed?.[3]?.[1] ?? 0) - MAX_SESSIONS_PER_USER;
    if (excess > 0) await this.endLeastRecentlyUsed(userId, excess);
    const stored: StoredSession = {
      u: session.userId,
      c: session.csrfToken,
      t: session.createdAtMs,
      e: epoch,
    };
    await this.redis.set(this.keys.session(session.handle), JSON.stringify(stored), 'PX', ttlMs);
    return { id, session };
  }

  /** The live session of a raw id; refreshes its idle expiry. Null when unknown or expired. */
  async find(id: string): Promise<Session | null> {
    if (!/^[0-9A-Za-z]{43}$/.test(id)) return null;
    const handle = sha256Hex(id);
    const key = this.keys.session(handle);
    const text = await this.redis.get(key);
    if (!text) return null;
    const stored = JSON.parse(text) as StoredSession;
    const session: Session = {
      handle,
      userId: stored.u,
      csrfToken: stored.c,
      createdAtMs: stored.t,
      epoch: stored.e ?? 0,
    };
    const now = Date.now();
    const left = this.settings.absoluteMs - (now - stored.t);
    if (left <= 0) {
      await this.destroy(session);
      return null;
    }
    const ttlMs = Math.min(this.settings.idleMs, left);
    // Two keys, two slots: one command each (the index's entry only if it is still there).
    await Promise.all([
      this.redis.pexpire(key, ttlMs),
      this.redis.zadd(this.keys.userSessions(stored.u), 'XX', now + ttlMs, handle),
    ]);
    return session;
  }

  async destroy(session: Pick<Session, 'handle' | 'userId'>): Promise<void> {
    await Promise.all([
      this.redis.del(this.keys.session(session.handle)),
      this.redis.zrem(this.keys.userSessions(session.userId), session.handle),
    ]);
  }

  /**
   * Ends every listed session of the user (on every instance at once: they live in Redis
   * only). Answers the handles of the live sessions it ended.
   */
  async endAll(userId: string): Promise<string[]> {
    const index = this.keys.userSessions(userId);
    const results = await this.redis
      .multi()
      .zremrangebyscore(index, '-inf', Date.now())
      .zrange(index, 0, -1)
      .exec();
    const handles = (results?.[1]?.[1] ?? []) as string[];
    // Only these: a session made meanwhile (a sign-in with the new password) stays listed.
    await this.endListed(index, handles);
    return handles;
  }

  /** Ends the user's `count` least recently used sessions (the lowest idle expiries). */
  private async endLeastRecentlyUsed(userId: string, count: number): Promise<void> {
    const index = this.keys.userSessions(userId);
    await this.endListed(index, await this.redis.zrange(index, 0, count - 1));
  }

  /** Deletes these sessions, then their entries in the user's list `index`. */
  private async endListed(index: string, handles: readonly string[]): Promise<void> {
    if (handles.length === 0) return;
    // One DEL per session: their keys hash to any slot of a cluster.
    await Promise.all(handles.map((handle) => this.redis.del(this.keys.session(handle))));
    await this.redis.zrem(index, ...handles);
  }

  /** The Set-Cookie value that carries a new session id to the browser. */
  cookie(id: string): string {
    const maxAgeS = Math.floor(this.settings.absoluteMs / 1000);
    return `${this.cookieName}=${id}; Path=/; HttpOnly; SameSite=Lax${this.secureAttribute()}; Max-Age=${maxAgeS}`;
  }

  /** The Set-Cookie value that removes the session cookie. */
  clearingCookie(): string {
    return `${this.cookieName}=; Path=/; HttpOnly; SameSite=Lax${this.secureAttribute()}; Max-Age=0`;
  }

  /** The session id in a Cookie header, if any. */
  idFromCookieHeader(header: string | undefined): string | undefined {
    if (!header) return undefined;
    for (const part of header.split(';')) {
      const separator = part.indexOf('=');
      if (separator < 0) continue;
      if (part.slice(0, separator).trim() === this.cookieName)
        return part.slice(separator + 1).trim();
    }
    return undefined;
  }

  private secureAttribute(): string {
    return this.settings.insecureCookies ? '' : '; Secure';
  }
}

/** Constant-time comparison of a presented CSRF token with the session's. */
export function csrfTokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
