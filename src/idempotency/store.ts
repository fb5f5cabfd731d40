// Idempotency keys in Postgres (decision 372, migration 062): a key an organization sends to a
// route is claimed before the route runs, then completed with the route's answer, released when
// the route refused the request (a 4xx changed nothing), or marked failed when the route broke
// (its effect unknown: never run again under that key). The answer is sealed with the
// credentials master key; without one, an answer holding a secret is not kept at all.
import type { SecretBox } from '../credentials/secret-box.js';
import type { DbPool } from '../db/pool.js';
import { sha256Hex } from '../ids.js';
import { isJsonObject } from '../json-shapes.js';
import { openFromText, sealToText } from '../credentials/sealed-text.js';

/** How long a key is remembered (Stripe keeps them 24 hours). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/** One key of one organization at one route, and the request it came with. */
export interface IdempotentRequest {
  readonly orgId: string;
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
  ) {}

  async claim(request: IdempotentRequest): Promise<Claim> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
      // A key past its expiry is a new key: its row is taken over in the same statement.
      const { rowCount } = await this.db.query(
        `INSERT INTO idempotency_keys (org_id, route, key, request_hash, state, expires_at)
         VALUES ($1, $2, $3, $4, 'running', now() + $5 * interval '1 millisecond')
         ON CONFLICT (org_id, route, key) DO UPDATE
            SET request_hash = EXCLUDED.request_hash, state = 'running', status = NULL,
                answer_sealed = NULL, answer_clear = NULL, created_at = now(),
                expires_at = EXCLUDED.expires_at
          WHERE idempotency_keys.expires_at <= now()`,
        [request.orgId, request.route, request.key, request.requestHash, this.ttlMs],
      );
      if (rowCount === 1) return { kind: 'claimed' };
      const { rows } = await this.db.query<KeyRow>(
        `SELECT request_hash, state, status, answer_sealed, answer_clear FROM idempotency_keys
          WHERE org_id = $1 AND route = $2 AND key = $3 AND expires_at > now()`,
        [request.orgId, request.route, request.key],
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
    if (row.state === 'running') return { kind: 'running' };
    if (row.state === 'failed') return { kind: 'failed' };
    if (row.answer_sealed !== null) {
      if (!this.box) return { kind: 'unreplayable' };
      const body = JSON.parse(openFromText(this.box, row.answer_sealed)) as unknown;
      return { kind: 'replay', status: row.status!, body };
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
        WHERE org_id = $1 AND route = $2 AND key = $3 AND request_hash = $4 AND state = 'running'`,
      [
        request.orgId,
        request.route,
        request.key,
        request.requestHash,
        answer.status,
        sealed,
        clear,
      ],
    );
  }

  async release(request: IdempotentRequest): Promise<void> {
    await this.db.query(
      `DELETE FROM idempotency_keys
        WHERE org_id = $1 AND route = $2 AND key = $3 AND request_hash = $4 AND state = 'running'`,
      [request.orgId, request.route, request.key, request.requestHash],
    );
  }

  async fail(request: IdempotentRequest): Promise<void> {
    await this.db.query(
      `UPDATE idempotency_keys SET state = 'failed'
        WHERE org_id = $1 AND route = $2 AND key = $3 AND request_hash = $4 AND state = 'running'`,
      [request.orgId, request.route, request.key, request.requestHash],
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
