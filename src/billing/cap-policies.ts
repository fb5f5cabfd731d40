// Cap rules as the request path needs them: cached per org, connection and product user
// (absent rules too: most users have none),
// dropped on every instance when an admin changes a cap (Redis pub/sub message 'caps'), and
// when the pub/sub connection comes back (a message may have been missed). The TTL is only a
// last resort: with tens of thousands of active users, a short one sends a share of all
// requests to Postgres.
import type { CreditMode, OverrunPolicy } from './modes.js';
import type { CacheInvalidation, InvalidatedCache } from '../cache/invalidation.js';
import { LocalCache } from '../cache/local-cache.js';
import type { DbPool } from '../db/pool.js';
import { numericToNano } from '../money.js';

export interface CapRule {
  readonly id: string;
  /** null only on an app_connection rule that sets only the per-user default. */
  readonly amountNano: bigint | null;
  /** On an app_connection rule: the default cap of each of its product users. */
  readonly perUserAmountNano: bigint | null;
  readonly currency: string;
  /** On a product_user rule: overrides of the connection's settings (null: inherit). */
  readonly creditMode: CreditMode | null;
  readonly overrunPolicy: OverrunPolicy | null;
  readonly updatedAt: Date;
}

/** A cap_rules row as selected with CAP_RULE_COLUMNS. */
export interface CapRuleRow {
  id: string;
  amount: string | null;
  per_user_amount: string | null;
  currency: string;
  credit_mode: CreditMode | null;
  overrun_policy: OverrunPolicy | null;
  updated_at: Date;
}

export const CAP_RULE_COLUMNS = `id, amount::text, per_user_amount::text, currency, credit_mode,
  overrun_policy, updated_at`;

export function capRuleFromRow(row: CapRuleRow | undefined): CapRule | null {
  if (!row) return null;
  return {
    id: row.id,
    amountNano: row.amount === null ? null : numericToNano(row.amount),
    perUserAmountNano: row.per_user_amount === null ? null : numericToNano(row.per_user_amount),
    currency: row.currency.trim(),
    creditMode: row.credit_mode,
    overrunPolicy: row.overrun_policy,
    updatedAt: row.updated_at,
  };
}

type Scope = 'org' | 'app_connection' | 'product_user';
/** The cap_rules column that names a rule's target, by scope. */
export const capRuleTargetColumn: Readonly<Record<Scope, string>> = {
  org: 'org_id',
  app_connection: 'app_connection_id',
  product_user: 'product_user_id',
};

export class CapPolicyStore implements InvalidatedCache {
  private readonly cache: LocalCache<CapRule>;

  constructor(
    private readonly db: DbPool,
    ttlMs = 300_000,
    maxEntries = 200_000,
    maxBytes = 64 * 1024 * 1024,
  ) {
    // "No rule" is the common answer and as stable as a rule: cached as long.
    this.cache = new LocalCache({ ttlMs, negativeTtlMs: ttlMs, maxEntries, maxBytes });
  }

  orgCap(orgId: string): Promise<CapRule | null> {
    return this.lookup('org', orgId);
  }

  connectionCap(appConnectionId: string): Promise<CapRule | null> {
    return this.lookup('app_connection', appConnectionId);
  }

  productUserCap(productUserId: string): Promise<CapRule | null> {
    return this.lookup('product_user', productUserId);
  }

  handleInvalidation(invalidation: CacheInvalidation): void {
    if (invalidation.kind === 'caps') this.cache.invalidateAll();
  }

  /** Forgets everything cached (invalidations may have been missed). */
  clearLocalCache(): void {
    this.cache.invalidateAll();
  }

  private async lookup(scope: Scope, id: string): Promise<CapRule | null> {
    const rule = await this.cache.get(`${scope}:${id}`, async () => {
      const { rows } = await this.db.query<CapRuleRow>(
        `SELECT ${CAP_RULE_COLUMNS}
           FROM cap_rules WHERE scope = $1 AND ${capRuleTargetColumn[scope]} = $2 AND status = 'active'`,
        [scope, id],
      );
      return capRuleFromRow(rows[0]) ?? undefined;
    });
    return rule ?? null;
  }
}
