// Setting spending caps (admin CLI now, the dashboard later). One active rule per scope
// target; setting again updates it. Gateway instances drop their cached rules at once.
import type { RedisClient } from '../redis/connect.js';
import { apiKeySharedCache } from '../auth/api-key-store.js';
import type { CreditMode, OverrunPolicy } from '../billing/modes.js';
import { CAPS_INVALIDATION_MESSAGE } from '../billing/cap-policies.js';
import type { DbPool } from '../db/pool.js';
import { newId } from '../ids.js';
import {
  assertAmountInRange,
  formatNano,
  nanoToNumeric,
  numericToNano,
  SETTLEMENT_CURRENCY,
} from '../money.js';
import type { RedisKeys } from '../redis/keys.js';

export type CapTarget =
  | { readonly scope: 'org'; readonly orgId: string }
  | { readonly scope: 'app_connection'; readonly appConnectionId: string }
  | { readonly scope: 'product_user'; readonly productUserId: string };

export interface CapSettings {
  readonly amountNano: bigint;
  readonly currency: string;
  readonly perUserAmountNano?: bigint;
  readonly creditMode?: CreditMode;
  readonly overrunPolicy?: OverrunPolicy;
  readonly requiresProductUser?: boolean;
}

export class CapTargetError extends Error {
  override readonly name = 'CapTargetError';
}

export interface RuleRow {
  id: string;
  scope: string;
  org_id: string;
  app_connection_id: string | null;
  product_user_id: string | null;
  amount: string;
  per_user_amount: string | null;
  currency: string;
  period: string;
  credit_mode: string | null;
  overrun_policy: string | null;
  updated_at: Date;
}

/** The columns capRuleView reads. */
export const CAP_RULE_VIEW_COLUMNS = `id, scope, org_id, app_connection_id, product_user_id,
  amount::text, per_user_amount::text, currency, period, credit_mode, overrun_policy, updated_at`;

const conflictTarget: Record<CapTarget['scope'], string> = {
  org: `(org_id) WHERE scope = 'org' AND status = 'active'`,
  app_connection: `(app_connection_id) WHERE scope = 'app_connection' AND status = 'active'`,
  product_user: `(product_user_id) WHERE scope = 'product_user' AND status = 'active'`,
};

export async function setCap(
  db: DbPool,
  redis: RedisClient,
  keys: RedisKeys,
  target: CapTarget,
  settings: CapSettings,
): Promise<Record<string, unknown>> {
  // A cap limits what costs add up to, and every cost is in the settlement currency.
  if (settings.currency !== SETTLEMENT_CURRENCY) {
    throw new CapTargetError(
      `caps are in ${SETTLEMENT_CURRENCY}, the currency costs are charged in (got ${settings.currency})`,
    );
  }
  assertAmountInRange(settings.amountNano, 'the cap');
  if (settings.perUserAmountNano !== undefined) {
    assertAmountInRange(settings.perUserAmountNano, 'the per-user cap');
  }
  const orgId = await owningOrg(db, target);
  const connectionId = target.scope === 'app_connection' ? target.appConnectionId : null;
  const userId = target.scope === 'product_user' ? target.productUserId : null;
  const onUser = target.scope === 'product_user';
  const { rows } = await db.query<RuleRow>(
    `INSERT INTO cap_rules (id, org_id, scope, app_connection_id, product_user_id, amount,
                           per_user_amount, currency, credit_mode, overrun_policy)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT ${conflictTarget[target.scope]} DO UPDATE SET
       amount = EXCLUDED.amount,
       per_user_amount = COALESCE(EXCLUDED.per_user_amount, cap_rules.per_user_amount),
       currency = EXCLUDED.currency,
       credit_mode = COALESCE(EXCLUDED.credit_mode, cap_rules.credit_mode),
       overrun_policy = COALESCE(EXCLUDED.overrun_policy, cap_rules.overrun_policy),
       updated_at = now()
     RETURNING ${CAP_RULE_VIEW_COLUMNS}`,
    [
      newId('cap'),
      orgId,
      target.scope,
      connectionId,
      userId,
      nanoToNumeric(settings.amountNano),
      settings.perUserAmountNano === undefined ? null : nanoToNumeric(settings.perUserAmountNano),
      settings.currency,
      onUser ? (settings.creditMode ?? null) : null,
      onUser ? (settings.overrunPolicy ?? null) : null,
    ],
  );
  if (connectionId) {
    await db.query(
      `UPDATE app_connections SET
         credit_mode = COALESCE($2, credit_mode),
         overrun_policy = COALESCE($3, overrun_policy),
         requires_product_user = COALESCE($4, requires_product_user),
         updated_at = now()
       WHERE id = $1`,
      [
        connectionId,
        settings.creditMode ?? null,
        settings.overrunPolicy ?? null,
        settings.requiresProductUser ?? null,
      ],
    );
  }
  // Rules and connection settings are cached on every instance: drop them now (the shared
  // Redis copies first, so no instance refills its cache from a stale one).
  await apiKeySharedCache(redis, keys).invalidate(await connectionKeyHashes(db, connectionId));
  await redis.publish(keys.invalidationChannel(), CAPS_INVALIDATION_MESSAGE);
  await redis.publish(keys.invalidationChannel(), 'apikey:*');
  return capRuleView(rows[0]!);
}

/** A cap rule as the CLI and the webhook events show it. */
export function capRuleView(rule: RuleRow): Record<string, unknown> {
  return {
    cap_rule_id: rule.id,
    scope: rule.scope,
    org_id: rule.org_id,
    app_connection_id: rule.app_connection_id,
    product_end_user_id: rule.product_user_id,
    amount: formatNano(numericToNano(rule.amount)),
    per_user_amount:
      rule.per_user_amount === null ? null : formatNano(numericToNano(rule.per_user_amount)),
    currency: rule.currency.trim(),
    period: rule.period,
    credit_mode: rule.credit_mode,
    overrun_policy: rule.overrun_policy,
    status: 'active',
    updated_at: rule.updated_at.toISOString(),
  };
}

async function owningOrg(db: DbPool, target: CapTarget): Promise<string> {
  const [sql, id] =
    target.scope === 'org'
      ? ['SELECT id AS org_id FROM organizations WHERE id = $1', target.orgId]
      : target.scope === 'app_connection'
        ? ['SELECT org_id FROM app_connections WHERE id = $1', target.appConnectionId]
        : ['SELECT org_id FROM product_users WHERE id = $1', target.productUserId];
  const { rows } = await db.query<{ org_id: string }>(sql, [id]);
  if (!rows[0]) throw new CapTargetError(`no ${target.scope.replace('_', ' ')} ${id}`);
  return rows[0].org_id;
}

/** Hashes of a connection's API keys (their cached identities carry its settings). */
async function connectionKeyHashes(db: DbPool, connectionId: string | null): Promise<string[]> {
  if (!connectionId) return [];
  const { rows } = await db.query<{ key_hash: string }>(
    'SELECT key_hash FROM api_keys WHERE app_connection_id = $1',
    [connectionId],
  );
  return rows.map((row) => row.key_hash);
}
