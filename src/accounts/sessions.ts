// Dashboard sessions: server-side in Redis, found by the SHA-256 of the cookie's random id
// (a Redis dump reveals no usable session), with an idle and an absolute expiry, a CSRF
// token bound to each session, and rotation at login (a new id every time).
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

export interface Session {
  /** The Redis key's hash of the id (never the id itself). */
  readonly handle: string;
  readonly userId: string;
  readonly csrfToken: string;
  readonly createdAtMs: number;
}

const SESSION_ID_LENGTH = 43; // > 256 bits

export class SessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    readonly settings: SessionSettings,
  ) {}

  get cookieName(): string {
    return this.settings.insecureCookies ? 'gw_session' : '__Host-gw_session';
  }

  /** A new session for the user: returns the raw id for the cookie. */
  async create(userId: string): Promise<{ id: string; session: Session }> {
    const id = randomBase62(SESSION_ID_LENGTH);
    const session: Session = {
      handle: sha256Hex(id),
      userId,
      csrfToken: randomBase62(SESSION_ID_LENGTH),
      createdAtMs: Date.now(),
    };
    await this.redis.set(
      this.keys.session(session.handle),
      JSON.stringify({ u: session.userId, c: session.csrfToken, t: session.createdAtMs }),
      'PX',
      Math.min(this.settings.idleMs, this.settings.absoluteMs),
    );
    return { id, session };
  }

  /** The live session of a raw id; refreshes its idle expiry. Null when unknown or expired. */
  async find(id: string): Promise<Session | null> {
    if (!/^[0-9A-Za-z]{43}$/.test(id)) return null;
    const handle = sha256Hex(id);
    const key = this.keys.session(handle);
    const text = await this.redis.get(key);
    if (!text) return null;
    const stored = JSON.parse(text) as { u: string; c: string; t: number };
    const age = Date.now() - stored.t;
    const left = this.settings.absoluteMs - age;
    if (left <= 0) {
      await this.redis.del(key);
      return null;
    }
    await this.redis.pexpire(key, Math.min(this.settings.idleMs, left));
    return { handle, userId: stored.u, csrfToken: stored.c, createdAtMs: stored.t };
  }

  async destroy(handle: string): Promise<void> {
    await this.redis.del(this.keys.session(handle));
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
