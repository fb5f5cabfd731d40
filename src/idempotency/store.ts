// Idempotency keys in Postgres (decision 372, migrations 062, 066 and 068): a key a caller (a
// dashboard user, a service key) sends to a route of an organization is claimed before the
// route runs, then completed with the route's answer, or released when the route refused the
// request or broke: freed when nothing of it committed (a refusal commits nothing, decisions 390
// and 393), marked failed otherwise (never run again under that key). The answer is sealed
// with the credentials master key; without one, an answer holding a secret is not kept at all.
// A claim is a lease (decision 388): its request renews it while it runs, and every
// transaction the request commits marks the key as having taken effect, in that transaction,
// only while the request still holds it. A key whose lease lapsed with nothing committed (its
// gateway died) is taken over by the next request with it; one that took effect is never run
// again.
import { randomUUID } from 'node:crypto';
import { SecretBoxError, type SecretBox } from '../credentials/secret-box.js';
import type { CommitFence } from '../db/commit-fence.js';
import type { DbClient, DbPool } from '../db/pool.js';
import { gwError, isGwError } from '../errors.js';
import { sha256Hex } from '../ids.js';
import { isJsonObject } from '../json-shapes.js';
import { openFromText, resealedText, sealToText } from '../credentials/sealed-text.js';

/** How long a key is remembered (Stripe keeps them 24 hours). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * How long a claim stands unless its request renews it (by Postgres's clock), by default
 * (IDEMPOTENCY_KEY_LEASE_MS): a key whose request died (its gateway killed, its host gone) is
 * free again this long after its last renewal at most.
 */
export const IDEMPOTENCY_KEY_LEASE_MS = 10_000;

/** A running request renews its lease this often, in lease terms: a few renewals may be slow or lost. */
const RENEWALS_PER_LEASE = 4;

/**
 * The last resort: a request renews its lease for at most this long after its claim, so a
 * request hung for good frees its key (and can no longer commit: the commit fence). Far past
 * what a create takes: a few Postgres statements (each bounded by DATABASE_TIMEOUT_MS, 10 s by
 * default), Redis calls, a vendor's key check. Also the bound of a key claimed before leases
 * (migration 068): running for this long, then reported as never answered.
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

/** A key its request holds: the claim's random id. */
export interface HeldKey extends IdempotentRequest {
  readonly claimId: string;
}

/** What a claim found. */
export type Claim =
  /** The key is new (expired, or its holder's lease lapsed with nothing done): the request runs. */
  | { readonly kind: 'claimed'; readonly held: HeldKey }
  /** The first request with the key succeeded: its answer. */
  | { readonly kind: 'replay'; readonly status: number; readonly body: unknown }
  /** The first request succeeded, but its answer held a secret and no master key kept it. */
  | { readonly kind: 'unreplayable' }
  /** The first request with the key is still running; `committed`: its change has committed. */
  | { readonly kind: 'running'; readonly committed: boolean }
  /**
   * The first request started `startedAt` and has not answered: its lease lapsed after it
   * committed its change (`committed`; its gateway stopped, or cannot reach Postgres, and may
   * still record its answer), or, claimed before leases, it ran past the abandoned bound (its
   * effect unknown). `effectRef`: what it committed, when its route names it, as for `failed`:
   * the route may finish it (decision 576).
   */
  | {
      readonly kind: 'abandoned';
      readonly startedAt: string;
      readonly effect: 'committed' | 'unknown';
      readonly effectRef?: string;
    }
  /** The first request succeeded, but its answer was sealed under a master key no longer kept. */
  | { readonly kind: 'unopenable' }
  /**
   * The first request with the key broke (or refused) without an answer to keep after its
   * change committed (`committed`), or, claimed before leases, failed (its effect unknown).
   * `effectRef`: what it committed, as its route named it (the commit fence's `effectRef`),
   * when its route names one: the route may finish it (decision 542).
   */
  | {
      readonly kind: 'failed';
      readonly effect: 'committed' | 'unknown';
      readonly effectRef?: string;
    }
  /** The key came with another request (path or body). */
  | { readonly kind: 'reused' };

/**
 * The claims, leases, completions and expiry of idempotency keys (IdempotencyStore is the one).
 * Everything after the claim acts only while the request still holds its key.
 */
export interface IdempotencyKeys {
  /** How often a running request renews its lease (a fraction of the lease). */
  readonly renewEveryMs: number;
  claim(request: IdempotentRequest): Promise<Claim>;
  /** Extends the lease; false once the key is no longer held (taken over, or past the bound). */
  renew(held: HeldKey): Promise<boolean>;
  /**
   * The commit fence, run in each transaction of the request before its COMMIT: marks the key
   * as having taken effect, or rejects (409 gw_conflict) when the request no longer holds it.
   * `effectRef`: what this transaction commits, as the route names it, kept with the mark.
   */
  fence(client: DbClient, held: HeldKey, effectRef?: string): Promise<void>;
  complete(
    held: HeldKey,
    answer: { readonly status: number; readonly body: unknown; readonly carriesSecret: boolean },
  ): Promise<void>;
  /**
   * The request ended without an answer to keep (refused, or broke): its key is freed if
   * nothing of it committed, else marked failed.
   */
  release(held: HeldKey): Promise<void>;
  /**
   * Keeps the answer a retry made for a first request that committed `effectRef` and then
   * failed before answering (decision 542), or stopped, its lease lapsed (576), while the key
   * is still that request's and it still has not answered: false when it is not (another retry
   * or the request itself kept its answer first, its lease was renewed, or the key expired).
   */
  completeUnanswered(
    request: IdempotentRequest,
    effectRef: string,
    answer: { readonly status: number; readonly body: unknown; readonly carriesSecret: boolean },
  ): Promise<boolean>;
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
  /** Running, its lease lapsed (claimed before leases: past the abandoned bound). */
  lapsed: boolean;
  /**
   * A transaction of its request committed. Only a leased claim's own: a claim from before
   * leases leaves what an earlier claim of the key wrote.
   */
  took_effect: boolean;
  /** Claimed before leases (or by a gateway from before them): its effect is unknown. */
  unleased: boolean;
  started_at: string;
  status: number | null;
  /** What its request committed, as its route named it (only the row's own claim's). */
  effect_ref: string | null;
  answer_sealed: string | null;
  answer_clear: unknown;
  /** answer_clear as the JSON text first sent (its keys in their order), when it is that. */
  answer_clear_text: string | null;
}

/** A request's answer, kept: $6 its status, $7 sealed, $8 in the clear (keptAnswer). */
const KEPT_ANSWER = `state = 'done', status = $6, answer_sealed = $7,
              answer_clear = $8::text::jsonb, answer_clear_text = $8::text`;

/** How many times a claim looks again when the row it met went before it was read. */
const CLAIM_ATTEMPTS = 3;

/**
 * A claim of this version, with its lease: not one from before leases (no claim id, migration
 * 068), nor one a gateway of the previous version made during a rolling update by taking over
 * a key past its expiry — that version sets `created_at` and leaves the earlier claim's id and
 * lease, which ended before it (decision 390). Those keep the old rule: running for the
 * abandoned bound, then never answered, never taken over.
 */
const LEASED = `idempotency_keys.claim_id IS NOT NULL
          AND idempotency_keys.lease_expires_at >= idempotency_keys.created_at`;

/** The row of a key its request still holds: $1 to $5 are org, caller, route, key, claim id. */
const HELD_ROW = `org_id = $1 AND caller = $2 AND route = $3 AND key = $4 AND claim_id = $5
          AND state = 'running'`;

/**
 * Renews `held`'s lease every `keys.renewEveryMs` until stopped (call the function
 * it returns) or the key is no longer held. A renewal that fails (Postgres unreachable) is
 * tried again at the next turn: if the lease lapses meanwhile, the commit fence keeps the
 * request from committing anything once a retry took the key over.
 */
export function keepLease(keys: IdempotencyKeys, held: HeldKey): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const next = (): void => {
    timer = setTimeout(() => {
      keys.renew(held).then(
        (holds) => {
          if (holds && !stopped) next();
        },
        () => {
          if (!stopped) next();
        },
      );
    }, keys.renewEveryMs);
    timer.unref();
  };
  next();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * The commit fence of a request holding `held` (src/db/commit-fence.ts): each transaction of
 * it marks the key as having taken effect, in that transaction, and commits only while the
 * request still holds the key; one whose work returned a refusal is rolled back, unmarked (a
 * refusal changes nothing, so a key whose request died after one stays free: decision 393).
 * `effectOf`: the route's name for what a transaction commits, from what its work returned
 * (undefined for a transaction it does not name), kept with the mark (decision 542).
 */
export function commitFenceOf(
  keys: IdempotencyKeys,
  held: HeldKey,
  effectOf?: (committed: unknown) => string | undefined,
): CommitFence {
  return async (client, result) => {
    if (isGwError(result)) return false;
    await keys.fence(client, held, effectOf?.(result));
    return true;
  };
}

export class IdempotencyStore implements IdempotencyKeys {
  readonly renewEveryMs: number;
  private readonly ttlMs = IDEMPOTENCY_KEY_TTL_MS;
  private readonly abandonedAfterMs = IDEMPOTENCY_KEY_ABANDONED_AFTER_MS;

  constructor(
    private readonly db: DbPool,
    private readonly box: SecretBox | undefined,
    private readonly leaseMs: number = IDEMPOTENCY_KEY_LEASE_MS,
  ) {
    this.renewEveryMs = Math.floor(leaseMs / RENEWALS_PER_LEASE);
  }

  async claim(request: IdempotentRequest): Promise<Claim> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt += 1) {
      const held: HeldKey = { ...request, claimId: randomUUID() };
      // A key past its expiry is a new key, and one whose holder's lease lapsed before it
      // committed anything is free (the same request only): its row is taken over in the same
      // statement. The row lock orders this after a holder's commit in progress, whose fence
      // has marked the key as having taken effect.
      const { rowCount } = await this.db.query(
        `INSERT INTO idempotency_keys (org_id, caller, route, key, request_hash, state, expires_at,
                                       claim_id, lease_expires_at)
         VALUES ($1, $6, $2, $3, $4, 'running', now() + $5 * interval '1 millisecond',
                 $7, now() + $8 * interval '1 millisecond')
         ON CONFLICT (org_id, caller, route, key) DO UPDATE
            SET request_hash = EXCLUDED.request_hash, state = 'running', status = NULL,
                answer_sealed = NULL, answer_clear = NULL, answer_clear_text = NULL,
                created_at = now(), expires_at = EXCLUDED.expires_at, claim_id = EXCLUDED.claim_id,
                lease_expires_at = EXCLUDED.lease_expires_at, took_effect = false,
                effect_ref = NULL, effect_claim_id = NULL
          WHERE idempotency_keys.expires_at <= now()
             OR (idempotency_keys.state = 'running' AND ${LEASED}
                 AND NOT idempotency_keys.took_effect
                 AND idempotency_keys.lease_expires_at <= now()
                 AND idempotency_keys.request_hash = EXCLUDED.request_hash)`,
        [
          request.orgId,
          request.route,
          request.key,
          request.requestHash,
          this.ttlMs,
          request.caller,
          held.claimId,
          this.leaseMs,
        ],
      );
      if (rowCount === 1) return { kind: 'claimed', held };
      const { rows } = await this.db.query<KeyRow>(
        `SELECT request_hash, state, status, answer_sealed, answer_clear,
                CASE WHEN effect_claim_id = claim_id THEN effect_ref END AS effect_ref,
                CASE WHEN answer_clear_text::jsonb = answer_clear THEN answer_clear_text END
                  AS answer_clear_text,
                to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started_at,
                took_effect, NOT coalesce(${LEASED}, false) AS unleased,
                state = 'running'
                  AND CASE WHEN ${LEASED} THEN lease_expires_at
                           ELSE created_at + $5 * interval '1 millisecond' END <= now() AS lapsed
           FROM idempotency_keys
          WHERE org_id = $1 AND caller = $4 AND route = $2 AND key = $3 AND expires_at > now()`,
        [request.orgId, request.route, request.key, request.caller, this.abandonedAfterMs],
      );
      const row = rows[0];
      // Released, expired, or its lease lapsed with nothing done, in between: claim again.
      const free = row?.lapsed && !row.took_effect && !row.unleased;
      if (!row || (free && row.request_hash === request.requestHash)) continue;
      return this.found(row, request);
    }
    // Claimed and released over and over by others: as good as running.
    return { kind: 'running', committed: false };
  }

  private found(row: KeyRow, request: IdempotentRequest): Claim {
    if (row.request_hash !== request.requestHash) return { kind: 'reused' };
    // What the key's mark tells of its request (decision 393's table): a leased claim is marked
    // in every transaction it commits, and in none it refused; a claim from before leases
    // wrote no mark of its own.
    const committed = !row.unleased && row.took_effect;
    const effect = committed ? 'committed' : 'unknown';
    // A leased claim lapsed with nothing committed was taken over (or was reused, above).
    if (row.lapsed) {
      const abandoned = { kind: 'abandoned', startedAt: row.started_at, effect } as const;
      return committed && row.effect_ref !== null
        ? { ...abandoned, effectRef: row.effect_ref }
        : abandoned;
    }
    if (row.state === 'running') return { kind: 'running', committed };
    if (row.state === 'failed') {
      return committed && row.effect_ref !== null
        ? { kind: 'failed', effect, effectRef: row.effect_ref }
        : { kind: 'failed', effect };
    }
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
      // The text keeps the first answer's field order (jsonb sorts them): a byte-identical replay.
      const body =
        row.answer_clear_text !== null
          ? (JSON.parse(row.answer_clear_text) as unknown)
          : row.answer_clear;
      return { kind: 'replay', status: row.status!, body };
    }
    return { kind: 'unreplayable' };
  }

  async renew(held: HeldKey): Promise<boolean> {
    // Past the last-resort bound (by Postgres's clock) the lease is left to lapse.
    return this.onHeldRow(
      this.db,
      held,
      `UPDATE idempotency_keys SET lease_expires_at = now() + $6 * interval '1 millisecond'
        WHERE ${HELD_ROW} AND created_at > now() - $7 * interval '1 millisecond'`,
      [this.leaseMs, this.abandonedAfterMs],
    );
  }

  async fence(client: DbClient, held: HeldKey, effectRef?: string): Promise<void> {
    const holds = await this.onHeldRow(
      client,
      held,
      effectRef === undefined
        ? `UPDATE idempotency_keys SET took_effect = true WHERE ${HELD_ROW}`
        : `UPDATE idempotency_keys
              SET took_effect = true, effect_ref = $6, effect_claim_id = claim_id
            WHERE ${HELD_ROW}`,
      effectRef === undefined ? [] : [effectRef],
    );
    if (!holds) {
      throw gwError(
        'gw_conflict',
        'this request ran past its hold on its Idempotency-Key and a retry with the key took it over: this request changed nothing; send it again with the same key for the answer',
        { headers: { 'retry-after': '1' } },
      );
    }
  }

  async complete(
    held: HeldKey,
    answer: { readonly status: number; readonly body: unknown; readonly carriesSecret: boolean },
  ): Promise<void> {
    await this.onHeldRow(
      this.db,
      held,
      `UPDATE idempotency_keys SET ${KEPT_ANSWER} WHERE ${HELD_ROW}`,
      this.keptAnswer(answer),
    );
  }

  async completeUnanswered(
    request: IdempotentRequest,
    effectRef: string,
    answer: { readonly status: number; readonly body: unknown; readonly carriesSecret: boolean },
  ): Promise<boolean> {
    // Running: only with its lease lapsed (a request renewing it may still keep its own).
    const { rowCount } = await this.db.query(
      `UPDATE idempotency_keys SET ${KEPT_ANSWER}
        WHERE org_id = $1 AND caller = $2 AND route = $3 AND key = $4 AND request_hash = $5
          AND (state = 'failed' OR (state = 'running' AND lease_expires_at <= now()))
          AND took_effect AND ${LEASED}
          AND effect_claim_id = claim_id AND effect_ref = $9 AND expires_at > now()`,
      [
        request.orgId,
        request.caller,
        request.route,
        request.key,
        request.requestHash,
        ...this.keptAnswer(answer),
        effectRef,
      ],
    );
    return rowCount === 1;
  }

  /** $6 to $8 of KEPT_ANSWER: the status, the answer sealed, or in the clear. */
  private keptAnswer(answer: {
    readonly status: number;
    readonly body: unknown;
    readonly carriesSecret: boolean;
  }): [number, string | null, string | null] {
    const json = JSON.stringify(answer.body ?? null);
    const sealed = this.box ? sealToText(this.box, json) : null;
    // Without a master key an answer holding a secret is not kept: never in the clear.
    const clear = sealed === null && !answer.carriesSecret ? json : null;
    return [answer.status, sealed, clear];
  }

  async release(held: HeldKey): Promise<void> {
    // Nothing of it committed (every transaction of its request that commits marks the key in
    // it; a refused one rolls back): it changed nothing, and its key is free again. The row
    // lock orders this after a commit in progress, which it then sees as having taken effect.
    const freed = await this.onHeldRow(
      this.db,
      held,
      `DELETE FROM idempotency_keys WHERE ${HELD_ROW} AND NOT took_effect`,
    );
    if (freed) return;
    await this.onHeldRow(
      this.db,
      held,
      `UPDATE idempotency_keys SET state = 'failed' WHERE ${HELD_ROW}`,
    );
  }

  /**
   * Whether the key has no row: no request holds it, and none that used it committed anything
   * (release frees a key only then, after any commit of its request in progress). For a caller
   * whose runs under the key all ended to tell "not made" from "unknown" (decision 571).
   */
  async free(request: IdempotentRequest): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'SELECT 1 FROM idempotency_keys WHERE org_id = $1 AND caller = $2 AND route = $3 AND key = $4',
      [request.orgId, request.caller, request.route, request.key],
    );
    return rowCount === 0;
  }

  /** Runs `statement` on the key's row if its request still holds it; true if it did. */
  private async onHeldRow(
    on: DbPool | DbClient,
    held: HeldKey,
    statement: string,
    extraParams: readonly unknown[] = [],
  ): Promise<boolean> {
    const { rowCount } = await on.query(statement, [
      held.orgId,
      held.caller,
      held.route,
      held.key,
      held.claimId,
      ...extraParams,
    ]);
    return rowCount === 1;
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
