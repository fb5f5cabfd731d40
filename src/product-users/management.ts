// Writes on product users shared by the management API, the dashboard and the admin CLI: the
// profile upsert (with the allowance anchor rules), credit grants and block/unblock. Every change
// that affects the request path is pushed to the gateway instances' caches; every change a
// webhook event describes writes it in the change's transaction, and every change made by a
// dashboard member or the CLI is audited in it too.
import type { InvalidationPublisher } from '../cache/invalidation.js';
import type { RedisClient } from '../redis/connect.js';
import { recordAudit, type Actor } from '../audit/audit.js';
import { withTransaction, type DbClient, type DbPool } from '../db/pool.js';
import { gwError, type GwError } from '../errors.js';
import { newId } from '../ids.js';
import { monthlyPeriod } from '../periods.js';
import {
  assertAmountInRange,
  formatNano,
  nanoToNumeric,
  numericToNano,
  SETTLEMENT_CURRENCY,
} from '../money.js';
import { CREDITS_TTL_MS, NEVER_EXPIRES_MS } from '../billing/account-rebuild.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts, ScriptKeys } from '../redis/scripts.js';
import { emitEvent } from '../webhooks/outbox.js';
import { emailHash } from './directory.js';
import { PRODUCT_USER_COLUMNS, productUserObject, type ProductUserRow } from './profile.js';

export class ProductUserRuleError extends Error {
  override readonly name = 'ProductUserRuleError';
}

/**
 * A deleted app's product users stay (decision 127): read, updated, their grants replayed or
 * revoked; but it gets no new user and no new grant (decision 361). 409 gw_conflict, as a
 * deleted app's other refusals.
 */
export class AppDeletedError extends Error {
  override readonly name = 'AppDeletedError';
  constructor(what: 'product users' | 'credit grants') {
    super(`the app is deleted: it cannot get new ${what}`);
  }
}

export interface ProfileUpsert {
  readonly orgId: string;
  readonly appId: string;
  readonly externalUserId: string;
  readonly displayName?: string;
  /** undefined: keep the stored e-mail; null: remove it. */
  readonly email?: string | null;
  /** undefined: keep the stored anchor; null: calendar periods. */
  readonly allowanceStartsAt?: Date | null;
}

export interface CreditGrantInput {
  readonly orgId: string;
  readonly productUserId: string;
  readonly amountNano: bigint;
  readonly currency: string;
  readonly expiresAt: Date | null;
  readonly reason: string | null;
  readonly idempotencyKey: string | null;
}

/**
 * Who makes a grant, and its amount and expiry as their audit entry keeps them: the amount as
 * they wrote it (`2.5`, not the stored 2.500000000000); the expiry as the dashboard's body wrote
 * it, or the CLI's --expires-at as the instant it reads (ISO, milliseconds included).
 */
export interface GrantAudit {
  readonly actor: Actor;
  readonly amount: string;
  readonly expiresAt: string | null;
}

export interface CreditGrant {
  grant_id: string;
  product_end_user_id: string;
  amount: string;
  currency: string;
  expires_at: string | null;
  reason: string | null;
  status: string;
  created_at: string;
}

export interface GrantRow {
  id: string;
  product_user_id: string;
  amount: string;
  currency: string;
  expires_at: Date | null;
  reason: string | null;
  status: string;
  created_at: Date;
  org_id: string;
}

export function grantFromRow(row: GrantRow): CreditGrant {
  return {
    grant_id: row.id,
    product_end_user_id: row.product_user_id,
    amount: formatNano(numericToNano(row.amount)),
    currency: row.currency.trim(),
    expires_at: row.expires_at ? row.expires_at.toISOString() : null,
    reason: row.reason,
    status: row.status,
    created_at: row.created_at.toISOString(),
  };
}

/** Refuses a grant that would take the user's live credits in its currency past the limit. */
async function assertCreditsInRange(client: DbClient, input: CreditGrantInput): Promise<void> {
  const { rows } = await client.query<{ remaining: string }>(
    `SELECT COALESCE(sum(g.amount - COALESCE(
              (SELECT sum(c.amount) FROM credit_consumptions c WHERE c.grant_id = g.id), 0)), 0)::text
              AS remaining
       FROM credit_grants g
      WHERE g.product_user_id = $1 AND g.currency = $2 AND g.status = 'active'
        AND (g.expires_at IS NULL OR g.expires_at > now())`,
    [input.productUserId, input.currency],
  );
  assertAmountInRange(
    numericToNano(rows[0]!.remaining) + input.amountNano,
    `the user's credits in ${input.currency}`,
  );
}

/** Whether a replayed request asks for the grant the key first created. */
function sameGrant(row: GrantRow, input: CreditGrantInput): boolean {
  return (
    numericToNano(row.amount) === input.amountNano &&
    row.currency.trim() === input.currency &&
    row.reason === input.reason &&
    (row.expires_at?.getTime() ?? null) === (input.expiresAt?.getTime() ?? null)
  );
}

export class ProductUserManagement {
  constructor(
    private readonly db: DbPool,
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly scripts: RedisScripts,
    /** Drops this instance's cached copy of a changed user at once, the others' over pub/sub. */
    private readonly invalidations: InvalidationPublisher,
  ) {}

  /** Creates or updates a user; `created` tells which. Throws ProductUserRuleError on a bad anchor. */
  async upsert(input: ProfileUpsert): Promise<{ user: ProductUserRow; created: boolean }> {
    const rows = await withTransaction(this.db, async (client) => {
      // Two PUTs that create the same user would both find no row to lock, and the second's
      // ON CONFLICT update would skip the anchor rules: the user's key is locked first.
      await client.query(
        'SELECT pg_advisory_xact_lock(hashtextextended(concat_ws(chr(10), $1::text, $2::text, $3::text), 0))',
        [input.orgId, input.appId, input.externalUserId],
      );
      const { rows: existing } = await client.query<{
        id: string;
        allowance_starts_at: Date | null;
        allowance_anchor_floor: Date | null;
      }>(
        `SELECT id, allowance_starts_at, allowance_anchor_floor FROM product_users
          WHERE org_id = $1 AND app_id = $2 AND external_user_id = $3 FOR UPDATE`,
        [input.orgId, input.appId, input.externalUserId],
      );
      const stored = existing[0];
      if (!stored) {
        // Shared with the app's deletion (FOR UPDATE there): a user created by a PUT that
        // started before the app was deleted is the app's like any other.
        const { rows: app } = await client.query<{ status: string }>(
          'SELECT status FROM apps WHERE id = $1 FOR SHARE',
          [input.appId],
        );
        if (app[0]?.status === 'deleted') throw new AppDeletedError('product users');
      }
      // The floor is the latest anchor ever stored: setting null in between does not lower it.
      const floor = stored?.allowance_anchor_floor;
      const anchor = input.allowanceStartsAt;
      if (anchor) {
        if (anchor.getTime() > Date.now()) {
          throw new ProductUserRuleError('allowance_starts_at cannot be in the future');
        }
        if (floor && anchor.getTime() < floor.getTime()) {
          throw new ProductUserRuleError(
            `allowance_starts_at cannot be older than the stored anchor (${floor.toISOString()}, the latest one set)`,
          );
        }
      }
      const keepAnchor = anchor === undefined;
      const keepEmail = input.email === undefined;
      const upserted = await client.query<ProductUserRow & { inserted: boolean }>(
        `INSERT INTO product_users (id, org_id, app_id, external_user_id, display_name, email_hash,
                                    allowance_starts_at, allowance_anchor_floor)
         VALUES ($1, $2, $3, $4, COALESCE($5, ''), $6, $7, $7)
         ON CONFLICT (org_id, app_id, external_user_id) DO UPDATE SET
           display_name = COALESCE($5, product_users.display_name),
           email_hash = CASE WHEN $9 THEN product_users.email_hash ELSE $6 END,
           allowance_starts_at = CASE WHEN $8 THEN product_users.allowance_starts_at ELSE $7 END,
           allowance_anchor_floor = GREATEST(product_users.allowance_anchor_floor, $7),
           updated_at = now()
         RETURNING id, org_id, app_id, external_user_id, display_name, email_hash, status, metadata,
                   allowance_starts_at, last_app_connection_id, (xmax = 0) AS inserted`,
        [
          newId('pu'),
          input.orgId,
          input.appId,
          input.externalUserId,
          input.displayName ?? null,
          typeof input.email === 'string' ? emailHash(input.email) : null,
          anchor ?? null,
          keepAnchor,
          keepEmail,
        ],
      );
      const { inserted, ...user } = upserted.rows[0]!;
      if (stored && !keepAnchor) await this.dropPeriodAccount(user, stored.allowance_starts_at);
      if (inserted) {
        await emitEvent(client, user.org_id, 'product_user.created', productUserObject(user));
      }
      return upserted.rows;
    });
    const { inserted, ...user } = rows[0]!;
    await this.announce(user.org_id, user.app_id, user.external_user_id);
    return { user, created: inserted };
  }

  async setStatus(
    orgId: string,
    appId: string,
    externalUserId: string,
    status: 'active' | 'blocked',
    /** Audited as `product_user.block` or `.unblock`, even when the status was already so. */
    actor: Actor,
  ): Promise<boolean> {
    const changed = await withTransaction(this.db, async (client) => {
      const { rows: before } = await client.query<{ status: string }>(
        `SELECT status FROM product_users
          WHERE org_id = $1 AND app_id = $2 AND external_user_id = $3 FOR UPDATE`,
        [orgId, appId, externalUserId],
      );
      if (!before[0]) return false;
      const { rows: after } = await client.query<ProductUserRow>(
        `UPDATE product_users SET status = $4, updated_at = now()
          WHERE org_id = $1 AND app_id = $2 AND external_user_id = $3
          RETURNING ${PRODUCT_USER_COLUMNS}`,
        [orgId, appId, externalUserId, status],
      );
      await recordAudit(client, {
        orgId,
        userId: actor.userId,
        action: status === 'blocked' ? 'product_user.block' : 'product_user.unblock',
        objectType: 'product_user',
        objectId: after[0]!.id,
      });
      if (before[0].status !== status) {
        await emitEvent(
          client,
          orgId,
          status === 'blocked' ? 'product_user.blocked' : 'product_user.unblocked',
          productUserObject(after[0]!),
        );
      }
      return true;
    });
    if (!changed) return false;
    await this.announce(orgId, appId, externalUserId);
    return true;
  }

  /**
   * Grants credits once per idempotency key; `created` is false for a replay. A key reused
   * with different grant fields grants nothing and answers `keyReused` (Stripe's rule). What
   * the user has left in the grant's currency may not pass MAX_AMOUNT_NANO (AmountRangeError,
   * nothing granted; a replay is not a new grant and is not checked): the user's row is locked
   * while it is summed, so concurrent grants cannot pass it together. A user of a deleted app
   * gets no new grant (AppDeletedError; a replay still answers the first grant).
   */
  async grantCredits(
    input: CreditGrantInput,
    /** Audits the grant as `credit_grant.create` (the service-key API's grants are not). */
    audit?: GrantAudit,
  ): Promise<{ grant: CreditGrant; created: boolean } | { keyReused: true }> {
    const inserted = await withTransaction(this.db, async (client) => {
      const { rows: owner } = await client.query<{ app_status: string }>(
        `SELECT a.status AS app_status FROM product_users u JOIN apps a ON a.id = u.app_id
          WHERE u.id = $1 FOR UPDATE OF u FOR SHARE OF a`,
        [input.productUserId],
      );
      const replay =
        input.idempotencyKey !== null &&
        (
          await client.query(
            'SELECT 1 FROM credit_grants WHERE product_user_id = $1 AND idempotency_key = $2',
            [input.productUserId, input.idempotencyKey],
          )
        ).rowCount !== 0;
      if (!replay && owner[0]?.app_status === 'deleted') throw new AppDeletedError('credit grants');
      if (!replay) await assertCreditsInRange(client, input);
      const result = await client.query<GrantRow>(
        `INSERT INTO credit_grants (id, org_id, product_user_id, amount, currency, reason, idempotency_key, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (product_user_id, idempotency_key) DO NOTHING
       RETURNING id, product_user_id, amount::text, currency, expires_at, reason, status, created_at, org_id`,
        [
          newId('grant'),
          input.orgId,
          input.productUserId,
          nanoToNumeric(input.amountNano),
          input.currency,
          input.reason,
          input.idempotencyKey,
          input.expiresAt,
        ],
      );
      const grant = result.rows[0];
      if (grant) {
        if (audit) {
          await recordAudit(client, {
            orgId: input.orgId,
            userId: audit.actor.userId,
            action: 'credit_grant.create',
            objectType: 'credit_grant',
            objectId: grant.id,
            details: {
              product_end_user_id: input.productUserId,
              amount: audit.amount,
              currency: input.currency,
              expires_at: audit.expiresAt,
              reason: input.reason,
            },
          });
        }
        await emitEvent(client, grant.org_id, 'credit_grant.created', grantFromRow(grant));
      }
      return result;
    });
    const row = inserted.rows[0];
    if (!row) {
      const { rows } = await this.db.query<GrantRow>(
        `SELECT id, product_user_id, amount::text, currency, expires_at, reason, status, created_at, org_id
           FROM credit_grants WHERE product_user_id = $1 AND idempotency_key = $2`,
        [input.productUserId, input.idempotencyKey],
      );
      const first = rows[0]!;
      if (!sameGrant(first, input)) return { keyReused: true };
      // The first may have failed after its commit, before Redis had the grant (its caller
      // then got an error and sent it again): the replay makes sure the grant is live. Not
      // once it has expired: a load leaves it out, so credits loaded without its field may
      // have spent it before, and a request admitted before its expiry would draw on it whole
      // (decision 530); nothing admitted now can use it.
      const expired = first.expires_at !== null && first.expires_at.getTime() <= Date.now();
      if (first.status === 'active' && !expired) {
        await this.addLive(first, input.amountNano, 'add_missing');
      }
      return { grant: grantFromRow(first), created: false };
    }
    await this.addLive(row, input.amountNano, 'add');
    return { grant: grantFromRow(row), created: true };
  }

  /** Puts a grant in the user's live credits (credits-change.lua's `add` or `add_missing`). */
  private async addLive(
    row: GrantRow,
    amountNano: bigint,
    action: 'add' | 'add_missing',
  ): Promise<void> {
    await this.scripts.creditsChange(this.creditKeys(row, null), {
      action,
      grant_id: row.id,
      amount_nano: amountNano.toString(),
      expires_at_ms: String(row.expires_at ? row.expires_at.getTime() : NEVER_EXPIRES_MS),
      ttl_ms: '',
      keep_held: '',
    });
  }

  /**
   * Revokes a grant: what is left of it can no longer be spent by a new request. What the
   * user's requests in flight hold stays on it until they settle, for what the base allowance
   * and the live credits cannot pay (docs/charging.md, "Credits revoked in flight").
   * Audited as `credit_grant.revoke`. A refusal when there is no active grant `grantId` in
   * the organization `orgId` (null: in any organization, for the operator's CLI): 409
   * `gw_conflict` revoked already, 404 `gw_not_found` no such grant there; the dashboard and
   * the CLI answer it as it is (decision 588).
   */
  async revokeGrant(
    grantId: string,
    actor: Actor,
    orgId: string | null,
  ): Promise<CreditGrant | GwError> {
    const rows = await withTransaction(this.db, async (client) => {
      const result = await client.query<GrantRow & { allowance_starts_at: Date | null }>(
        `UPDATE credit_grants g SET status = 'revoked', revoked_at = now()
           FROM product_users u
          WHERE g.id = $1 AND g.status = 'active' AND ($2::text IS NULL OR g.org_id = $2)
            AND u.id = g.product_user_id
          RETURNING g.id, g.product_user_id, g.amount::text, g.currency, g.expires_at, g.reason,
                    g.status, g.created_at, g.org_id, u.allowance_starts_at`,
        [grantId, orgId],
      );
      const revoked = result.rows[0];
      if (revoked) {
        await recordAudit(client, {
          orgId: revoked.org_id,
          userId: actor.userId,
          action: 'credit_grant.revoke',
          objectType: 'credit_grant',
          objectId: revoked.id,
        });
        await emitEvent(client, revoked.org_id, 'credit_grant.revoked', grantFromRow(revoked));
        // Taken out of the live credits before the commit (decision 537): a Redis that fails
        // here fails the revocation, nothing recorded, and the grant is active in both. After
        // the commit, a failure left it revoked in the ledger and spendable in Redis, where no
        // load takes a grant away, for as long as nobody sent the revocation again.
        await this.removeLive(revoked);
      }
      return result.rows;
    });
    const row = rows[0];
    if (!row) {
      // Revoked already: maybe by a revocation of an earlier version that failed after its
      // commit, before Redis had it (decision 499). Applied in Redis once, so this changes
      // nothing when it did run (decision 448); still answered as not revoked now.
      const { rows: earlier } = await this.db.query<
        GrantRow & { allowance_starts_at: Date | null }
      >(
        `SELECT g.id, g.product_user_id, g.amount::text, g.currency, g.expires_at, g.reason,
                g.status, g.created_at, g.org_id, u.allowance_starts_at
           FROM credit_grants g JOIN product_users u ON u.id = g.product_user_id
          WHERE g.id = $1 AND g.status = 'revoked' AND ($2::text IS NULL OR g.org_id = $2)`,
        [grantId, orgId],
      );
      if (!earlier[0]) return gwError('gw_not_found', `no credit grant ${grantId}`);
      await this.removeLive(earlier[0]);
      return gwError('gw_conflict', 'this credit grant is already revoked');
    }
    const { allowance_starts_at: _anchor, ...grant } = row;
    return grantFromRow(grant);
  }

  /** Takes a revoked grant out of the user's live credits, keeping what is held on it. */
  private async removeLive(row: GrantRow & { allowance_starts_at: Date | null }): Promise<void> {
    const { allowance_starts_at: anchor, ...grant } = row;
    // This clock only names the user's period accounts to look at (the one it is in, and the
    // ones before and after it, decision 565); the script judges no hold by it (the holds are
    // stamped by the gateways' clocks, decision 562). Read through Date.now, the clock the
    // revocation tests skew (test/allowance.race.test.ts).
    const now = new Date(Date.now());
    await this.scripts.creditsChange(this.creditKeys(grant, { now, anchor }), {
      action: 'remove',
      grant_id: grant.id,
      amount_nano: '',
      expires_at_ms: '',
      ttl_ms: String(CREDITS_TTL_MS),
      // Only credits in the settlement currency pay costs, so only they can be held.
      keep_held: grant.currency.trim() === SETTLEMENT_CURRENCY ? '1' : '0',
    });
  }

  /**
   * The live credits of the grant's user in the grant's currency, and the user's spend
   * accounts of the period current `at.now` (under the user's anchor), of the period before
   * it, where a request admitted before the period turned holds until it settles, and of the
   * period after it, where the gateways hold once it turned by their clocks if `at.now` is
   * behind them (decision 565) (null: not read, keys of the same slot).
   */
  private creditKeys(
    row: GrantRow,
    at: { now: Date; anchor: Date | null } | null,
  ): ScriptKeys<'creditsChange'> {
    const currency = row.currency.trim();
    const spendOf = (periodKey: string) =>
      this.keys.userSpend(row.org_id, row.product_user_id, periodKey);
    const current = at ? monthlyPeriod(at.now, at.anchor) : null;
    const before = current
      ? monthlyPeriod(new Date(current.start.getTime() - 1), at!.anchor)
      : null;
    const after = current ? monthlyPeriod(current.end, at!.anchor) : null;
    const spend = spendOf(current?.key ?? 'unused');
    const previous = spendOf(before?.key ?? 'unused');
    const next = spendOf(after?.key ?? 'unused');
    return {
      user_credits: this.keys.userCredits(row.org_id, row.product_user_id, currency),
      user_grants: this.keys.userGrants(row.org_id, row.product_user_id, currency),
      user_spend: spend,
      user_spend_expiries: this.keys.holdExpiries(spend),
      previous_spend: previous,
      previous_spend_expiries: this.keys.holdExpiries(previous),
      draining_for: this.keys.userDrainingFor(row.org_id, row.product_user_id, currency),
      next_spend: next,
      next_spend_expiries: this.keys.holdExpiries(next),
    };
  }

  /**
   * After an anchor change, drops the user's spend account of the period the new anchor makes
   * current (when that is another period), so its first use rebuilds it from the ledger. An
   * account of that period left from an earlier use of the same anchor (calendar periods
   * restored, say) was not charged meanwhile and would forget what the user spent under the
   * other anchor. Run before the change commits: until then no request uses that period.
   */
  private async dropPeriodAccount(
    user: ProductUserRow,
    previousAnchor: Date | null,
  ): Promise<void> {
    const now = new Date();
    const current = monthlyPeriod(now, user.allowance_starts_at);
    if (current.key === monthlyPeriod(now, previousAnchor).key) return;
    const account = this.keys.userSpend(user.org_id, user.id, current.key);
    await this.redis.del(account, this.keys.holdExpiries(account));
  }

  /** Tells every gateway instance, this one first, to forget its cached copy of this user. */
  private async announce(orgId: string, appId: string, externalUserId: string): Promise<void> {
    await this.invalidations.publish({ kind: 'product-user', orgId, appId, externalUserId });
  }
}
