// Rebuilds accounts missing from Redis out of Postgres: a first use in a period, or a Redis
// that lost its data. Every load only installs what is not already there, and counts the
// usage settled in Redis that the writer has not put in Postgres yet (UnwrittenUsage), and
// what settles while it runs (account-rebuild.ts).
import type { DbPool } from '../db/pool.js';
import { numericToNano, SETTLEMENT_CURRENCY } from '../money.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import type { UnwrittenUsage } from '../ledger/unwritten-usage.js';
import type { UsageRecord } from '../ledger/usage-record.js';
import { AccountRebuilder, type AccountKind } from './account-rebuild.js';
import type { CapAccount, RequestAccounts, UserAccount } from './budget-store.js';
import type { SpendColumn } from './ledger-amounts.js';
import type { WalletService } from './wallets.js';

/** A period's account stays a week past its end (late settles), then goes. */
const PERIOD_ACCOUNT_GRACE_MS = 7 * 24 * 3600 * 1000;
/**
 * Loaded credits go after this long unless a load comes first; every load of a user's period
 * account loads them again (a merge: what is in Redis stays). Longer than the longest period
 * (31 days) and its grace together, so the credits loaded with a period's account outlive it:
 * a request held on the account never finds them gone, nor a revoked or expired grant's part
 * dropped by a rebuild (docs/decisions.md, 289).
 */
export const CREDITS_TTL_MS = 40 * 24 * 3600 * 1000;
/** The expiry score of a grant that never expires. */
export const NEVER_EXPIRES_MS = 253_402_300_799_000; // 9999-12-31

export type AccountName = AccountKind;

/** The account each ledger column's sum rebuilds. */
const KIND_OF_COLUMN = {
  org_id: 'org_cap',
  app_connection_id: 'conn_cap',
  product_user_id: 'user',
} as const satisfies Record<SpendColumn, AccountKind>;

/** A grant as the ledger has it: what is left on it (decimal text) and when it expires. */
interface ActiveGrant {
  readonly id: string;
  readonly remaining: string;
  readonly expires_at: Date | null;
}

export class AccountLoader {
  private readonly loading = new Map<string, Promise<void>>();

  constructor(
    private readonly db: DbPool,
    private readonly keys: RedisKeys,
    private readonly scripts: RedisScripts,
    private readonly wallets: WalletService,
    private readonly unwritten: UnwrittenUsage,
    /** Shared with the wallet service: one org's rebuilds share their measurements. */
    private readonly rebuilder = new AccountRebuilder({ db, keys, scripts, unwritten }),
  ) {}

  async load(names: readonly AccountName[], accounts: RequestAccounts): Promise<void> {
    const { orgId, appConnectionId, orgCap, connectionCap, user } = accounts;
    for (const name of names) {
      if (name === 'wallet') {
        await this.once(this.keys.wallet(orgId), () => this.wallets.loadIntoRedis(orgId));
      } else if (name === 'org_cap' && orgCap) {
        const key = this.keys.orgCap(orgId, orgCap.period.key);
        await this.once(key, () =>
          this.loadCap(orgId, { column: 'org_id', id: orgId, key }, orgCap),
        );
      } else if (name === 'conn_cap' && connectionCap) {
        const key = this.keys.connectionCap(orgId, appConnectionId, connectionCap.period.key);
        await this.once(key, () =>
          this.loadCap(
            orgId,
            { column: 'app_connection_id', id: appConnectionId, key },
            connectionCap,
          ),
        );
      } else if (name === 'user' && user) {
        await this.once(this.keys.userSpend(orgId, user.productUserId, user.period.key), () =>
          this.loadUser(orgId, user),
        );
      }
    }
  }

  /**
   * One load per account at a time in this instance: the requests that find the same account
   * missing together (a burst on a new period, a Redis that came back empty) wait for one
   * rebuild instead of each summing the ledger.
   */
  private once(accountKey: string, load: () => Promise<void>): Promise<void> {
    const running = this.loading.get(accountKey);
    if (running) return running;
    const loading = load().finally(() => this.loading.delete(accountKey));
    this.loading.set(accountKey, loading);
    return loading;
  }

  /**
   * Rebuilds the spend account `key` of `column = id` over `period`: the ledger's sum in the
   * rebuild's snapshot, plus the usage not written to it, plus what settles until the install.
   */
  private async loadSpent(
    orgId: string,
    column: SpendColumn,
    id: string,
    key: string,
    period: CapAccount['period'],
  ): Promise<void> {
    await this.rebuilder.rebuild({
      kind: KIND_OF_COLUMN[column],
      orgId,
      key,
      field: 'spent',
      expireAtMs: period.end.getTime() + PERIOD_ACCOUNT_GRACE_MS,
      amount: { of: 'spent', column, id, period },
    });
  }

  /** A cap's account: what the org (or one of its connections) spent in the cap's period. */
  private loadCap(
    orgId: string,
    scope: { column: 'org_id' | 'app_connection_id'; id: string; key: string },
    cap: CapAccount,
  ): Promise<void> {
    return this.loadSpent(orgId, scope.column, scope.id, scope.key, cap.period);
  }

  private async loadUser(orgId: string, user: UserAccount): Promise<void> {
    // The credits first: once the account is there, no request loads them again until they
    // go, so they must have been loaded (their expiry pushed past the account's) before it.
    await this.installCredits(orgId, user.productUserId, SETTLEMENT_CURRENCY);
    await this.loadSpent(
      orgId,
      'product_user_id',
      user.productUserId,
      this.keys.userSpend(orgId, user.productUserId, user.period.key),
      user.period,
    );
  }

  /**
   * Loads a user's live credits in one currency (those in the settlement currency come with
   * the user's account; the profile asks for others), unless another load is running.
   */
  async loadCredits(orgId: string, productUserId: string, currency: string): Promise<void> {
    await this.once(this.keys.userCredits(orgId, productUserId, currency), () =>
      this.installCredits(orgId, productUserId, currency),
    );
  }

  /**
   * Merges the user's active grants in `currency`, less what unwritten usage took, into Redis.
   * A user with no active grant (most users, at first sight) costs one query and no read of
   * the org's stream: no unwritten record can have drawn on a grant that does not exist, and a
   * grant added meanwhile goes to Redis itself (credits-change.lua).
   */
  private async installCredits(
    orgId: string,
    productUserId: string,
    currency: string,
  ): Promise<void> {
    let rows = await this.activeGrants(productUserId, currency);
    let unwritten: readonly UsageRecord[] = [];
    if (rows.length > 0) {
      // The stream first, then the grants again: a record the writer moves in between is
      // counted in both (taken twice from its grant), never in neither.
      unwritten = await this.unwritten.forOrg(orgId, productUserId);
      rows = await this.activeGrants(productUserId, currency);
    }
    // What grants paid for usage that is not in the ledger yet is not left on them either.
    const unwrittenConsumption = new Map<string, bigint>();
    for (const record of unwritten) {
      for (const { grantId, amountNano } of record.creditConsumption ?? []) {
        unwrittenConsumption.set(grantId, (unwrittenConsumption.get(grantId) ?? 0n) + amountNano);
      }
    }
    const triples = rows.flatMap((row) => [
      row.id,
      (numericToNano(row.remaining) - (unwrittenConsumption.get(row.id) ?? 0n)).toString(),
      String(row.expires_at ? row.expires_at.getTime() : NEVER_EXPIRES_MS),
    ]);
    await this.scripts.creditsLoad(
      {
        user_credits: this.keys.userCredits(orgId, productUserId, currency),
        user_grants: this.keys.userGrants(orgId, productUserId, currency),
      },
      { ttl_ms: String(CREDITS_TTL_MS) },
      triples,
    );
  }

  /** The user's active grants in `currency` and what is left on each, per the ledger. */
  private async activeGrants(productUserId: string, currency: string): Promise<ActiveGrant[]> {
    const { rows } = await this.db.query<ActiveGrant>(
      `SELECT g.id, (g.amount - COALESCE(sum(c.amount), 0))::text AS remaining, g.expires_at
         FROM credit_grants g LEFT JOIN credit_consumptions c ON c.grant_id = g.id
        WHERE g.product_user_id = $1 AND g.currency = $2 AND g.status = 'active'
          AND (g.expires_at IS NULL OR g.expires_at > now())
        GROUP BY g.id`,
      [productUserId, currency],
    );
    return rows;
  }
}
