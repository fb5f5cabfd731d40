// Idempotency keys in Postgres (decision 372, migrations 062 and 066): a key a caller (a
// dashboard user, a service key) sends to a route of an organization is claimed before the
// route runs, then completed with the route's answer, released when
// the route refused the request (a 4xx changed nothing), or marked failed when the route broke
// (its effect unknown: never run again under that key). The answer is sealed with the
// credentials master key; without one, an answer holding a secret is not kept at all.
import { SecretBoxError, type SecretBox } from '../credentials/secret-box.js';
import type { DbPool } from '../db/pool.js';
import { sha256Hex } from '../ids.js';
import { isJsonObject } from '../json-shapes.js';
import { openFromText, resealedText, sealToText } from '../credentials/sealed-text.js';

/** How long a key is remembered (Stripe keeps them 24 hours). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * How long a first request may run before its key is taken for abandoned: its instance died
 * (or lost Postgres) between the claim and the answer. Far past what a create takes: a few
 * Postgres statements (each bounded by DATABASE_TIMEOUT_MS, 10 s by default) and Redis calls.
 */
export const IDEMPOTENCY_KEY_ABANDONED_AFTER_MS = 10 * 60 * 1000;

/** One key of one caller in one organization at one route, and the request it came with. */
export interface IdempotentRequest {
  readonly orgId: string;
  /** Whose key it is: `user:<id>` (a dashboard user) or `service_key:<id>`. */
  readonly caller: string;
  /** The declared route, `POST /dashboard/api/orgs/{org_id}/apps`. */
  readonly route: string;
  readonly key: string;
  /** requestFingerprint of the request's path and body. */
  readonly requestHash: string;
}

/** What a claim found. */
export type Claim =
  /** The key is new (or expired): the request runs. */
  | { readonly kind: 'claimed' }
  /** The first request with the key succeeded: its answer. */
  | { readonly kind: 'replay'; readonly status: number; readonly body: unknown }
  /** The first request succeeded, but its answer held a secret and no master key kept it. */
  | { readonly kind: 'unreplayable' }
  /** The first request with the key is still running. */
  | { readonly kind: 'running' }
  /**
   * The first request started `startedAt` and never answered (past the abandoned bound): its
   * instance stopped mid-request, its effect is unknown.
   */
  | { readonly kind: 'abandoned'; readonly startedAt: string }
  /** The first request succeeded, but its answer was sealed under a master key no longer kept. */
  | { readonly kind: 'unopenable' }
  /** The first request with the key failed with an internal error: its effect is unknown. */
  | { readonly kind: 'failed' }
  /** The key came with another request (path or body). */
  | { readonly kind: 'reused' };

/** The claims, completions and expiry of idempotency keys (IdempotencyStore is the one). */
export interface IdempotencyKeys {
  claim(request: IdempotentRequest): Promise<Claim>;
  complete(
    request: IdempotentRequest,
    answer: { readonly status: number; readonly body: unknown; readonly carriesSecret: boolean },
  ): Promise<void>;
  release(request: IdempotentRequest): Promise<void>;
  fail(request: IdempotentRequest): Promise<void>;
}

/**
 * SHA-256 of a request's path and body, its object keys sorted: the same JSON sent with its
 * fields in another order is the same request. No body and `{}` are the same.
 */
export function requestFingerprint(path: string, body: unknown): string {
  // As the body would be written: dates as their strings, undefined members left out.
  const written = JSON.parse(JSON.stringify(body ?? {})) as unknown;
  return sha256Hex(`${path}\n${canonicalJson(written)}`);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isJsonObject(value)) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

interface KeyRow {
  request_hash: string;
  state: 'running' | 'done' | 'failed';
  /** Running past the abandoned bound. */
  abandoned: boolean;
  started_at: string;
  status: number | null;
  answer_sealed: string | null;
  answer_clear: unknown;
}

/** How many times a claim looks again when the row it met went before it was read. */
const CLAIM_ATTEMPTS = 3;

export class IdempotencyStore implements IdempotencyKeys {
  constructor(
    private readonly db: DbPool,
    private readonly box: SecretBox | undefined,
    private readonly ttlMs: number = IDEMPOTENCY_KEY_TTL_MS,
    private readonly abandonedAfterMs: number = IDEMPOTENCY_KEY_ABANDONED_AFTER_MS,
  ) {}

  async claim(request: IdempotentRequest): Promise<Claim> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
      // A key past its expiry is a new key: its row is taken over in the same statement.
      const { rowCount } = await this.db.query(
        `INSERT INTO idempotency_keys (org_id, caller, route, key, request_hash, state, expires_at)
         VALUES ($1, $6, $2, $3, $4, 'running', now() + $5 * interval '1 millisecond')
         ON CONFLICT (org_id, caller, route, key) DO UPDATE
            SET request_hash = EXCLUDED.request_hash, state = 'running', status = NULL,
                answer_sealed = NULL, answer_clear = NULL, created_at = now(),
                expires_at = EXCLUDED.expires_at
          WHERE idempotency_keys.expires_at <= now()`,
        [
          request.orgId,
          request.route,
          request.key,
          request.requestHash,
          this.ttlMs,
          request.caller,
        ],
      );
      if (rowCount === 1) return { kind: 'claimed' };
      const { rows } = await this.db.query<KeyRow>(
        `SELECT request_hash, state, status, answer_sealed, answer_clear,
                to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started_at,
                state = 'running' AND created_at <= now() - $5 * interval '1 millisecond'
                  AS abandoned
           FROM idempotency_keys
          WHERE org_id = $1 AND caller = $4 AND route = $2 AND key = $3 AND expires_at > now()`,
        [request.orgId, request.route, request.key, request.caller, this.abandonedAfterMs],
      );
      const row = rows[0];
      if (!row) continue; // released (or expired) in between: claim again
      return this.found(row, request);
    }
    // Claimed and released over and over by others: as good as running.
    return { kind: 'running' };
  }

  private found(row: KeyRow, request: IdempotentRequest): Claim {
    if (row.request_hash !== request.requestHash) return { kind: 'reused' };
    if (row.abandoned) return { kind: 'abandoned', startedAt: row.started_at };
    if (row.state === 'running') return { kind: 'running' };
    if (row.state === 'failed') return { kind: 'failed' };
    if (row.answer_sealed !== null) {
      if (!this.box) return { kind: 'unreplayable' };
      let opened: string;
      try {
        opened = openFromText(this.box, row.answer_sealed);
      } catch (error) {
        // Sealed under a master key dropped since (a rotation without `gw credentials
        // rewrap`, or its previous key removed too soon): answered, never a 500 on each retry.
        if (error instanceof SecretBoxError) return { kind: 'unopenable' };
        throw error;
      }
      return { kind: 'replay', status: row.status!, body: JSON.parse(opened) as unknown };
    }
    if (row.answer_clear !== null) {
      return { kind: 'replay', status: row.status!, body: row.answer_clear };
    }
    return { kind: 'unreplayable' };
  }

  async complete(
    request: IdempotentRequest,
    answer: { readonly status: number; readonly body: unknown; readonly carriesSecret: boolean },
  ): Promise<void> {
    const json = JSON.stringify(answer.body ?? null);
    const sealed = this.box ? sealToText(this.box, json) : null;
    // Without a master key an answer holding a secret is not kept: never in the clear.
    const clear = sealed === null && !answer.carriesSecret ? json : null;
    await this.db.query(
      `UPDATE idempotency_keys
          SET state = 'done', status = $5, answer_sealed = $6, answer_clear = $7::jsonb
        WHERE org_id = $1 AND caller = $8 AND route = $2 AND key = $3 AND request_hash = $4
          AND state = 'running'`,
      [
        request.orgId,
        request.route,
        request.key,
        request.requestHash,
        answer.status,
        sealed,
        clear,
        request.caller,
      ],
    );
  }

  async release(request: IdempotentRequest): Promise<void> {
    await this.db.query(
      `DELETE FROM idempotency_keys
        WHERE org_id = $1 AND caller = $5 AND route = $2 AND key = $3 AND request_hash = $4
          AND state = 'running'`,
      [request.orgId, request.route, request.key, request.requestHash, request.caller],
    );
  }

  async fail(request: IdempotentRequest): Promise<void> {
    await this.db.query(
      `UPDATE idempotency_keys SET state = 'failed'
        WHERE org_id = $1 AND caller = $5 AND route = $2 AND key = $3 AND request_hash = $4
          AND state = 'running'`,
      [request.orgId, request.route, request.key, request.requestHash, request.caller],
    );
  }
}

/** Deletes up to `batch` keys past their expiry; resolves with how many went. */
export async function deleteExpiredIdempotencyKeys(db: DbPool, batch = 1000): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE ctid IN (
       SELECT ctid FROM idempotency_keys WHERE expires_at <= now()
        ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`,
    [batch],
  );
  return rowCount ?? 0;
}

/**
 * Re-seals the stored answers sealed under an earlier master key with the current one (`gw
 * credentials rewrap`, after a rotation): a replay still opens once the previous key is
 * dropped. Resolves with how many were re-sealed.
 */
export async function rewrapIdempotentAnswers(
  db: DbPool,
  box: SecretBox,
  orgId?: string,
): Promise<number> {
  const { rows } = await db.query<{
    org_id: string;
    caller: string;
    route: string;
    key: string;
    answer_sealed: string;
  }>(
    `SELECT org_id, caller, route, key, answer_sealed FROM idempotency_keys
      WHERE answer_sealed IS NOT NULL AND split_part(answer_sealed, ':', 1) <> $2
        AND ($1::text IS NULL OR org_id = $1)`,
    [orgId ?? null, box.currentKeyId],
  );
  let changed = 0;
  for (const row of rows) {
    const { rowCount } = await db.query(
      `UPDATE idempotency_keys SET answer_sealed = $5
        WHERE org_id = $1 AND caller = $2 AND route = $3 AND key = $4 AND answer_sealed = $6`,
      [
        row.org_id,
        row.caller,
        row.route,
        row.key,
        resealedText(box, row.answer_sealed),
        row.answer_sealed,
      ],
    );
    changed += rowCount ?? 0;
  }
  return changed;
}
