// The marks (80 %, 100 %) a cap passes when it is set below what its period has already spent:
// an org's or a connection's cap, or a product user's own. A mark fires on the charge that
// crosses it (settle.lua), and a cap lowered past the spend has no charge to cross it: under a
// cap that refuses, none ever comes, and the org would not hear that those requests are now
// refused (docs/decisions.md, 307). Each event carries the dedupe key a crossing would, so a
// mark that fired this period does not fire again, and a charge crossing it at the same
// moment makes one event, not two.
import type { DbClient, DbPool } from '../db/pool.js';
import { CAP_RULE_VIEW_COLUMNS, type RuleRow } from '../admin/cap-rule-views.js';
import type { CapAgainstSpend, CapInvalidation, CapTarget } from '../admin/caps.js';
import { ledgerAmounts, type SpendColumn } from '../billing/ledger-amounts.js';
import { UnwrittenUsage } from '../ledger/unwritten-usage.js';
import type { ThresholdCrossing } from '../ledger/usage-record.js';
import { numericToNano } from '../money.js';
import { monthlyPeriod, type Period } from '../periods.js';
import { PRODUCT_USER_COLUMNS, type ProductUserRow } from '../product-users/profile.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { emitEvents } from '../webhooks/outbox.js';
import { allowanceThresholdEvent, capThresholdEvent, eightyPercent } from './usage-events.js';

type CapMarkParts = {
  readonly db: DbPool;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
};

/** `caps` that also fires the marks a cap set has passed (the gateway's and the CLI's). */
export function firingCapMarks(caps: CapInvalidation, parts: CapMarkParts): CapInvalidation {
  return {
    capsChanged: (change) => caps.capsChanged(change),
    capSet: (client, orgId, target) => fireReachedCapMarks(parts, client, orgId, target),
  };
}

/**
 * Fires, on `client` (the cap's own transaction), the marks of `target`'s active cap that the
 * period's spend has reached (the calendar month for an org or a connection, the user's own
 * period for a product user): the live account in Redis, or when it is not there the ledger
 * and the usage not written yet. A connection's per-user amount, which sets many users'
 * allowances at once, fires nothing here. Returns the cap and the spend it was held against,
 * undefined when the level has no amount capped.
 */
export async function fireReachedCapMarks(
  parts: CapMarkParts,
  client: DbClient,
  orgId: string,
  target: CapTarget,
  now = new Date(),
): Promise<CapAgainstSpend | undefined> {
  const { db, redis, keys } = parts;
  const level = await levelOf(client, keys, orgId, target, now);
  if (!level) return undefined;
  const { rows } = await client.query<RuleRow>(
    `SELECT ${CAP_RULE_VIEW_COLUMNS} FROM cap_rules
      WHERE status = 'active' AND org_id = $1 AND scope = $2
        AND CASE scope WHEN 'org' THEN true
                       WHEN 'app_connection' THEN app_connection_id = $3
                       ELSE product_user_id = $3 END`,
    [orgId, target.scope, level.id],
  );
  const rule = rows[0];
  if (!rule || rule.amount === null) return undefined;
  const capNano = numericToNano(rule.amount);
  const live = await redis.hget(level.account, 'spent');
  const spentNano =
    live !== null
      ? BigInt(live)
      : (
          await ledgerAmounts(
            client,
            orgId,
            [{ of: 'spent', column: level.column, id: level.id, period: level.period }],
            await new UnwrittenUsage(redis, db, keys).forOrg(orgId),
          )
        )[0]!;
  const reached = (
    [
      ['0.8', eightyPercent(capNano)],
      ['1.0', capNano],
    ] as const
  ).filter(([, mark]) => capNano > 0n && spentNano >= mark);
  const enforced = level.user === undefined || (await userCapEnforced(client, rule, level.user));
  if (reached.length === 0) return { capNano, spentNano, enforced };
  const events = reached.map(([threshold]) => {
    const crossing: ThresholdCrossing = {
      scope: level.scope,
      threshold,
      spentAfterNano: spentNano,
      capNano,
      periodKey: level.period.key,
    };
    return level.user
      ? allowanceThresholdEvent(level.user, crossing, now)
      : capThresholdEvent({
          orgId,
          appConnectionId: level.scope === 'conn' ? level.id : null,
          rule,
          crossing,
          occurredAt: now,
        });
  });
  await emitEvents(client, events);
  return { capNano, spentNano, enforced };
}

/**
 * Whether a product user's cap refuses their requests: its own credit mode, else their
 * connection's (the last one they came through, as their profile reads it), is enforce
 * (track_only and disabled refuse nothing: lua/reserve.lua).
 */
async function userCapEnforced(
  client: Pick<DbPool, 'query'>,
  rule: RuleRow,
  user: ProductUserRow,
): Promise<boolean> {
  if (rule.credit_mode !== null) return rule.credit_mode === 'enforce';
  if (user.last_app_connection_id === null) return true;
  const { rows } = await client.query<{ credit_mode: string }>(
    'SELECT credit_mode FROM app_connections WHERE id = $1',
    [user.last_app_connection_id],
  );
  return (rows[0]?.credit_mode ?? 'enforce') === 'enforce';
}

/** Where a cap's spend is kept: its account, period and ledger column (and its user). */
interface CapLevel {
  readonly scope: ThresholdCrossing['scope'];
  readonly id: string;
  readonly column: SpendColumn;
  readonly period: Period;
  readonly account: string;
  readonly user?: ProductUserRow;
}

async function levelOf(
  db: Pick<DbPool, 'query'>,
  keys: RedisKeys,
  orgId: string,
  target: CapTarget,
  now: Date,
): Promise<CapLevel | undefined> {
  if (target.scope === 'org') {
    const period = monthlyPeriod(now, null);
    const account = keys.orgCap(orgId, period.key);
    return { scope: 'org', id: orgId, column: 'org_id', period, account };
  }
  if (target.scope === 'app_connection') {
    const id = target.appConnectionId;
    const period = monthlyPeriod(now, null);
    const account = keys.connectionCap(orgId, id, period.key);
    return { scope: 'conn', id, column: 'app_connection_id', period, account };
  }
  const { rows } = await db.query<ProductUserRow>(
    `SELECT ${PRODUCT_USER_COLUMNS} FROM product_users WHERE id = $1 AND org_id = $2`,
    [target.productUserId, orgId],
  );
  const user = rows[0];
  if (!user) return undefined;
  const period = monthlyPeriod(now, user.allowance_starts_at);
  const account = keys.userSpend(orgId, user.id, period.key);
  return { scope: 'user', id: user.id, column: 'product_user_id', period, account, user };
}
