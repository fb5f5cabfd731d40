// Authorization codes (RFC 6749 section 4.1.2): random, single use, short-lived, bound to the
// client, the redirect URI, the PKCE challenge, the user and the paying organization (and the
// id of the app connection its exchange makes, and the spending cap the user gave it). They live in Redis only, under the SHA-256 of
// the code (a dump of Redis yields no usable code), expire by Redis key expiry, and are taken
// with one atomic script that leaves a marker behind, so a replayed code is recognised.
import { randomBase62, sha256Hex } from '../ids.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import type { RedisClient } from '../redis/connect.js';

/** What an approval granted, as the code carries it to the token exchange. */
export interface CodeGrant {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly codeChallenge: string;
  readonly userId: string;
  readonly orgId: string;
  readonly connectionId: string;
  /**
   * The monthly spending cap the user set on the consent page, in nano-units: the connection's
   * app-connection cap from its first request. null: none.
   */
  readonly capAmountNano: bigint | null;
}

export type TakenCode =
  | { readonly kind: 'taken'; readonly grant: CodeGrant }
  /** Presented before: the connection its first exchange made (if it made one). */
  | { readonly kind: 'used'; readonly connectionId: string }
  /** Never issued, or expired unused. */
  | { readonly kind: 'unknown' };

export interface CodeSettings {
  /** How long a code may wait for its exchange (RFC 6749 recommends at most 10 minutes). */
  readonly ttlMs: number;
  /** How long a used code is remembered, so its replay revokes what it made. */
  readonly replayWindowMs: number;
}

/** A used code is remembered this long: its replay within it revokes what it made. */
export const CODE_REPLAY_WINDOW_MS = 3_600_000;

/** The used-code marker of a code presented more than once (lua/oauth-take-code.lua). */
const REPLAYED_MARKER = 'replayed:';

/** 43 base62 characters: > 256 bits. */
const CODE_LENGTH = 43;
const CODE_FORMAT = /^[0-9A-Za-z]{43}$/;

interface StoredGrant {
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  user_id: string;
  org_id: string;
  connection_id: string;
  /** Nano-units as decimal text (JSON has no bigint); absent on codes of earlier versions. */
  cap_amount_nano?: string | null;
}

export class AuthorizationCodes {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly scripts: Pick<RedisScripts, 'oauthTakeCode'>,
    readonly settings: CodeSettings,
  ) {}

  /** A new code for the grant; it expires after `ttlMs`. */
  async issue(grant: CodeGrant): Promise<string> {
    const code = randomBase62(CODE_LENGTH);
    const stored: StoredGrant = {
      client_id: grant.clientId,
      redirect_uri: grant.redirectUri,
      code_challenge: grant.codeChallenge,
      user_id: grant.userId,
      org_id: grant.orgId,
      connection_id: grant.connectionId,
      cap_amount_nano: grant.capAmountNano === null ? null : grant.capAmountNano.toString(),
    };
    await this.redis.set(
      this.keys.oauthCode(sha256Hex(code)),
      JSON.stringify(stored),
      'PX',
      this.settings.ttlMs,
    );
    return code;
  }

  /** Takes a code: its grant the first time, and never again. */
  async take(code: string): Promise<TakenCode> {
    if (!CODE_FORMAT.test(code)) return { kind: 'unknown' };
    const hash = sha256Hex(code);
    const answer = (await this.scripts.oauthTakeCode(
      { code: this.keys.oauthCode(hash), used: this.keys.oauthCodeUsed(hash) },
      { used_ttl_ms: this.settings.replayWindowMs },
    )) as [string, string?];
    const [status, value] = answer;
    if (status === 'taken' && value !== undefined) {
      const stored = JSON.parse(value) as StoredGrant;
      return {
        kind: 'taken',
        grant: {
          clientId: stored.client_id,
          redirectUri: stored.redirect_uri,
          codeChallenge: stored.code_challenge,
          userId: stored.user_id,
          orgId: stored.org_id,
          connectionId: stored.connection_id,
          capAmountNano: stored.cap_amount_nano == null ? null : BigInt(stored.cap_amount_nano),
        },
      };
    }
    if (status === 'used' && value !== undefined) return { kind: 'used', connectionId: value };
    return { kind: 'unknown' };
  }

  /**
   * Whether a code taken once has been presented again since: an exchange checks it once its
   * connection is committed, since a replay that came first found nothing to revoke yet.
   */
  async presentedAgain(code: string): Promise<boolean> {
    const marker = await this.redis.get(this.keys.oauthCodeUsed(sha256Hex(code)));
    return marker?.startsWith(REPLAYED_MARKER) === true;
  }
}
