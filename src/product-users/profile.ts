// The product-user profile of the management API: the user record with its allowance, cap,
// credits and usage, in the spec's exact fields and types.
import type { CreditMode, OverrunPolicy } from '../billing/modes.js';
import { CAP_RULE_COLUMNS, capRuleFromRow, type CapRuleRow } from '../billing/cap-policies.js';
import { monthlyPeriod } from '../periods.js';
import { userAllowancePolicy } from '../billing/user-allowance.js';
import type { DbPool } from '../db/pool.js';
import { formatNano, numericToNano } from '../money.js';
import { usageTotals } from '../ledger/usage-totals.js';
import type { LiveBalanceReader } from './live-balance.js';

/** Grants expiring within this window count in `expiring_soon_amount`. */
export const EXPIRING_SOON_WINDOW_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_CURRENCY = 'USD';

export interface ProductUserRow {
  id: string;
  org_id: string;
  app_id: string;
  external_user_id: string;
  display_name: string;
  email_hash: string | null;
  status: string;
  metadata: Record<string, unknown>;
  allowance_starts_at: Date | null;
  last_app_connection_id: string | null;
}

export const PRODUCT_USER_COLUMNS = `id, org_id, app_id, external_user_id, display_name, email_hash, status,
  metadata, allowance_starts_at, last_app_connection_id`;

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

/**
 * A product user as the profile shows it, without the live parts (allowance, cap, credits,
 * usage): what webhook events about the user carry as `data`.
 */
export function productUserObject(user: ProductUserRow): Record<string, unknown> {
  return {
    product_end_user_id: user.id,
    org_id: user.org_id,
    app_id: user.app_id,
    external_user_id: user.external_user_id,
    display_name: user.display_name,
    email_hash: user.email_hash ?? '',
    status: user.status,
    metadata: user.metadata,
    allowance_starts_at: iso(user.allowance_starts_at),
    last_app_connection_id: user.last_app_connection_id ?? '',
  };
}

export interface CreditsSummary {
  currency: string;
  available_credits: string;
  active_grant_count: number;
  expiring_soon_amount: string;
  spent_this_month: string;
  spent_total: string;
  last_grant_at: string | null;
  last_used_at: string | null;
}

export class ProductUserProfiles {
  constructor(
    private readonly db: DbPool,
    private readonly live: LiveBalanceReader,
  ) {}

  async findUser(
    orgId: string,
    appId: string,
    externalUserId: string,
  ): Promise<ProductUserRow | undefined> {
    const { rows } = await this.db.query<ProductUserRow>(
      `SELECT ${PRODUCT_USER_COLUMNS} FROM product_users
        WHERE org_id = $1 AND app_id = $2 AND external_user_id = $3`,
      [orgId, appId, externalUserId],
    );
    return rows[0];
  }

  /** The full profile object of GET /product-users/by-external-id. */
  async profile(user: ProductUserRow): Promise<Record<string, unknown>> {
    const now = new Date();
    const [credits, usage] = await Promise.all([
      this.credits(user, DEFAULT_CURRENCY, now),
      usageTotals(this.db, 'product_user_id', user.id, now),
    ]);
    const allowanceParts = await this.allowance(user, now, credits);
    return {
      ...productUserObject(user),
      ...allowanceParts,
      credits,
      usage,
    };
  }

  /**
   * A credit grant as the APIs and the CLI answer a grant or a revocation: with its user's
   * credits in its currency after the change (what the profile now shows).
   */
  async withCredits<Grant extends { readonly currency: string }>(
    user: ProductUserRow,
    grant: Grant,
  ): Promise<Grant & { credits: CreditsSummary }> {
    return { ...grant, credits: await this.credits(user, grant.currency) };
  }

  /** The credits object (also the body of the credit summary route). */
  async credits(user: ProductUserRow, currency: string, now = new Date()): Promise<CreditsSummary> {
    const { rows: grants } = await this.db.query<{
      id: string;
      currency: string;
      expires_at: Date | null;
      created_at: Date;
      status: string;
    }>(
      'SELECT id, currency, expires_at, created_at, status FROM credit_grants WHERE product_user_id = $1',
      [user.id],
    );
    const { rows: spendRows } = await this.db.query<{
      month: string;
      total: string;
      last_used: Date | null;
    }>(
      `SELECT COALESCE(sum(c.amount) FILTER (WHERE c.created_at >= $2), 0)::text AS month,
              COALESCE(sum(c.amount), 0)::text AS total, max(c.created_at) AS last_used
         FROM credit_consumptions c JOIN credit_grants g ON g.id = c.grant_id
        WHERE g.product_user_id = $1 AND g.currency = $3`,
      [user.id, monthlyPeriod(now, null).start, currency],
    );
    const inCurrency = grants.filter((grant) => grant.currency.trim() === currency);
    const live = inCurrency.some((grant) => grant.status === 'active')
      ? await this.live.read(user.org_id, this.userAccount(user, now, null, 'enforce'), currency)
      : undefined;
    let available = 0n;
    let expiringSoon = 0n;
    let activeCount = 0;
    for (const grant of inCurrency) {
      if (grant.status !== 'active') continue;
      if (grant.expires_at && grant.expires_at.getTime() <= now.getTime()) continue;
      const remaining = live?.grantRemainingNano.get(grant.id) ?? 0n;
      if (remaining <= 0n) continue;
      available += remaining;
      activeCount += 1;
      if (
        grant.expires_at &&
        grant.expires_at.getTime() - now.getTime() <= EXPIRING_SOON_WINDOW_MS
      ) {
        expiringSoon += remaining;
      }
    }
    const lastGrant = inCurrency.reduce<Date | null>(
      (latest, grant) => (!latest || grant.created_at > latest ? grant.created_at : latest),
      null,
    );
    const spend = spendRows[0]!;
    return {
      currency,
      available_credits: formatNano(available),
      active_grant_count: activeCount,
      expiring_soon_amount: formatNano(expiringSoon),
      spent_this_month: formatNano(numericToNano(spend.month)),
      spent_total: formatNano(numericToNano(spend.total)),
      last_grant_at: iso(lastGrant),
      last_used_at: iso(spend.last_used),
    };
  }

  private userAccount(
    user: ProductUserRow,
    now: Date,
    capNano: bigint | null,
    creditMode: CreditMode,
  ) {
    return {
      productUserId: user.id,
      capNano,
      creditMode,
      period: monthlyPeriod(now, user.allowance_starts_at),
    };
  }

  /**
   * `allowance` and `cap` when a cap applies to the user; otherwise no allowance (the spec's
   * "may be present") and `cap: null` (the spec lists cap without it: decision 279).
   */
  private async allowance(
    user: ProductUserRow,
    now: Date,
    defaultCredits: CreditsSummary,
  ): Promise<Record<string, unknown>> {
    const { rows: directRows } = await this.db.query<CapRuleRow>(
      `SELECT ${CAP_RULE_COLUMNS}
         FROM cap_rules WHERE scope = 'product_user' AND product_user_id = $1 AND status = 'active'`,
      [user.id],
    );
    const connectionId = user.last_app_connection_id;
    const { rows: connectionRows } = connectionId
      ? await this.db.query<
          CapRuleRow & {
            connection_credit_mode: CreditMode;
            connection_overrun_policy: OverrunPolicy;
          }
        >(
          `SELECT r.id, r.amount::text, r.per_user_amount::text, r.currency, r.credit_mode,
                  r.overrun_policy, r.updated_at, c.credit_mode AS connection_credit_mode,
                  c.overrun_policy AS connection_overrun_policy
             FROM app_connections c
             LEFT JOIN cap_rules r ON r.app_connection_id = c.id AND r.scope = 'app_connection' AND r.status = 'active'
            WHERE c.id = $1`,
          [connectionId],
        )
      : { rows: [] };
    const connection = connectionRows[0];
    const policy = userAllowancePolicy(
      {
        creditMode: connection?.connection_credit_mode ?? 'enforce',
        overrunPolicy: connection?.connection_overrun_policy ?? 'limit_output',
      },
      capRuleFromRow(directRows[0]),
      connection?.id ? capRuleFromRow(connection) : null,
    );
    if (policy.capNano === null || !policy.capRule) return { cap: null };

    const account = this.userAccount(user, now, policy.capNano, policy.creditMode);
    const currency = policy.capRule.currency;
    const [live, credits] = await Promise.all([
      this.live.read(user.org_id, account, currency),
      currency === defaultCredits.currency ? defaultCredits : this.credits(user, currency, now),
    ]);
    const spent = live.spentThisPeriodNano;
    const remainingBase = policy.capNano > spent ? policy.capNano - spent : 0n;
    const availableCredits = numericToNano(credits.available_credits);
    return {
      allowance: {
        app_connection_id: connectionId ?? '',
        cap_source: 'product_end_user',
        cap_rule_id: policy.capRule.id,
        credit_mode: policy.creditMode,
        overrun_policy: policy.overrunPolicy,
        currency,
        period: 'monthly',
        period_start: account.period.start.toISOString(),
        period_end: account.period.end.toISOString(),
        cap_amount: formatNano(policy.capNano),
        spent_this_period: formatNano(spent),
        remaining_base_allowance: formatNano(remainingBase),
        available_credits: formatNano(availableCredits),
        available_allowance: formatNano(remainingBase + availableCredits),
      },
      cap: {
        source: 'product_end_user',
        cap_rule_id: policy.capRule.id,
        amount: formatNano(policy.capNano),
        currency,
        period: 'monthly',
        spent_this_period: formatNano(spent),
        reset_at: account.period.end.toISOString(),
        status: 'active',
        updated_at: policy.capRule.updatedAt.toISOString(),
      },
    };
  }
}
