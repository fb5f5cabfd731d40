// Rebuilds accounts missing from Redis out of Postgres: a first use in a period, or a Redis
// that lost its data. Every load only installs what is not already there, and counts the
// usage settled in Redis that the writer has not put in Postgres yet (UnwrittenUsage), and
// what settles while it runs (account-rebuild.ts).
import type { DbPool } from '../db/pool.js';
import { SETTLEMENT_CURRENCY } from '../money.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisScripts } from '../redis/scripts.js';
import type { UnwrittenUsage } from '../ledger/unwritten-usage.js';
import {
  AccountRebuilder,
  type AccountKind,
  type CreditsTarget,
  type RebuildTarget,
} from './account-rebuild.js';
import type { CapAccount, RequestAccounts, UserAccount } from './budget-store.js';
import type { SpendColumn } from './ledger-amounts.js';
import type { WalletService } from './wallets.js';

/** A period's account stays a week past its end (late settles), then goes. */
const PERIOD_ACCOUNT_GRACE_MS = 7 * 24 * 3600 * 1000;
export type AccountName = AccountKind;

/** The account each ledger column's sum rebuilds. */
const KIND_OF_COLUMN = {
  org_id: 'org_cap',
  app_connection_id: 'conn_cap',
  product_user_id: 'user',
} as const satisfies Record<SpendColumn, AccountKind>;

export class AccountLoader {
  private readonly loading = new Map<string, Promise<void>>();

  constructor(
    db: DbPool,
    private readonly keys: RedisKeys,
    scripts: RedisScripts,
    private readonly wallets: WalletService,
    unwritten: UnwrittenUsage,
    /** Shared with the wallet service: one org's rebuilds share their measurements. */
    private readonly rebuilder = new AccountRebuilder({ db, keys, scripts, unwritten }),
  ) {}

  /**
   * Adds to the org's live wallet the top-ups it is still owed (a top-up whose Redis step
   * failed after its commit: decision 521); true when it added something. A failure here is
   * no answer to the request that asked (it is refused for the balance it found): false.
   */
  async applyOwedChanges(orgId: string): Promise<boolean> {
    return this.wallets.applyOwedChanges(orgId).catch(() => false);
  }

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

  /** A cap's account: what the org (or one of its connections) spent in the cap's period. */
  private async loadCap(
    orgId: string,
    scope: { column: 'org_id' | 'app_connection_id'; id: string; key: string },
    cap: CapAccount,
  ): Promise<void> {
    await this.rebuilder.rebuild(
      spentAccount(orgId, scope.column, scope.id, scope.key, cap.period),
    );
  }

  /** A user's period account, and with it the user's credits in the settlement currency. */
  private async loadUser(orgId: string, user: UserAccount): Promise<void> {
    const { productUserId, period } = user;
    const key = this.keys.userSpend(orgId, productUserId, period.key);
    const credits = this.creditsTarget(orgId, productUserId, SETTLEMENT_CURRENCY);
    // The credits come with the account (one script), or alone if the account is there and
    // they are not.
    await this.rebuilder.rebuild(
      spentAccount(orgId, 'product_user_id', productUserId, key, period, credits),
    );
  }

  /**
   * Loads a user's live credits in one currency (those in the settlement currency come with
   * the user's account; the profile asks for others), unless another load is running.
   */
  async loadCredits(orgId: string, productUserId: string, currency: string): Promise<void> {
    const credits = this.creditsTarget(orgId, productUserId, currency);
    await this.once(credits.keys.user_credits, () => this.rebuilder.loadCredits(credits));
  }

  private creditsTarget(orgId: string, productUserId: string, currency: string): CreditsTarget {
    return {
      orgId,
      productUserId,
      currency,
      keys: {
        user_credits: this.keys.userCredits(orgId, productUserId, currency),
        user_grants: this.keys.userGrants(orgId, productUserId, currency),
      },
    };
  }
}

/**
 * The spend account `key` of `column = id` over `period`: rebuilt as the ledger's sum in the
 * rebuild's snapshot, plus the usage not written to it, plus what settles until the install.
 */
function spentAccount(
  orgId: string,
  column: SpendColumn,
  id: string,
  key: string,
  period: CapAccount['period'],
  /** A user's account: its credits, installed with it. */
  credits?: CreditsTarget,
): RebuildTarget {
  return {
    kind: KIND_OF_COLUMN[column],
    orgId,
    key,
    field: 'spent',
    expireAtMs: period.end.getTime() + PERIOD_ACCOUNT_GRACE_MS,
    amount: { of: 'spent', column, id, period },
    credits,
  };
}
