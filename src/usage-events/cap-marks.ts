// The marks (80 %, 100 %) an org's or connection's cap passes when it is set below what the
// month has already spent. A mark fires on the charge that crosses it (settle.lua), and a cap
// lowered past the spend has no charge to cross it: under a cap that refuses, none ever comes,
// and the org would not hear that its requests are now refused (docs/decisions.md, 307).
// Each event carries the dedupe key a crossing would, so a mark that fired this period does
// not fire again, and a charge crossing it at the same moment makes one event, not two.
import type { DbPool } from '../db/pool.js';
import { withTransaction } from '../db/pool.js';
import {
  CAP_RULE_VIEW_COLUMNS,
  type CapInvalidation,
  type CapTarget,
  type RuleRow,
} from '../admin/caps.js';
import { ledgerAmounts } from '../billing/ledger-amounts.js';
import { UnwrittenUsage } from '../ledger/unwritten-usage.js';
import type { ThresholdCrossing } from '../ledger/usage-record.js';
import { numericToNano } from '../money.js';
import { monthlyPeriod } from '../periods.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { emitEvents } from '../webhooks/outbox.js';
import { capThresholdEvent, eightyPercent } from './usage-events.js';

type CapMarkParts = {
  readonly db: DbPool;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
};

/** `caps` that also fires the marks a cap set has passed (the gateway's and the CLI's). */
export function firingCapMarks(caps: CapInvalidation, parts: CapMarkParts): CapInvalidation {
  return {
    capsChanged: (change) => caps.capsChanged(change),
    capSet: async (orgId, target) => {
      await fireReachedCapMarks(parts, orgId, target);
    },
  };
}

/**
 * Fires the marks of `target`'s active cap that the current month's spend has reached: the
 * live account in Redis, or when it is not there the ledger and the usage not written yet.
 * Product users' caps (allowances) are not handled here. Returns the marks reached.
 */
export async function fireReachedCapMarks(
  parts: CapMarkParts,
  orgId: string,
  target: CapTarget,
  now = new Date(),
): Promise<Array<ThresholdCrossing['threshold']>> {
  if (target.scope === 'product_user') return [];
  const { db, redis, keys } = parts;
  const onOrg = target.scope === 'org';
  const subject = onOrg ? orgId : target.appConnectionId;
  const { rows } = await db.query<RuleRow>(
    `SELECT ${CAP_RULE_VIEW_COLUMNS} FROM cap_rules
      WHERE status = 'active' AND org_id = $1 AND scope = $2
        AND (scope = 'org' OR app_connection_id = $3)`,
    [orgId, target.scope, subject],
  );
  const rule = rows[0];
  if (!rule || rule.amount === null) return [];
  const capNano = numericToNano(rule.amount);
  if (capNano <= 0n) return [];
  const period = monthlyPeriod(now, null);
  const account = onOrg
    ? keys.orgCap(orgId, period.key)
    : keys.connectionCap(orgId, subject, period.key);
  const live = await redis.hget(account, 'spent');
  const spentNano =
    live !== null
      ? BigInt(live)
      : (
          await ledgerAmounts(
            db,
            orgId,
            [{ of: 'spent', column: onOrg ? 'org_id' : 'app_connection_id', id: subject, period }],
            await new UnwrittenUsage(redis, db, keys).forOrg(orgId),
          )
        )[0]!;
  const reached = (
    [
      ['0.8', eightyPercent(capNano)],
      ['1.0', capNano],
    ] as const
  ).filter(([, mark]) => spentNano >= mark);
  if (reached.length === 0) return [];
  const events = reached.map(([threshold]) =>
    capThresholdEvent({
      orgId,
      appConnectionId: onOrg ? null : subject,
      rule,
      crossing: {
        scope: onOrg ? 'org' : 'conn',
        threshold,
        spentAfterNano: spentNano,
        capNano,
        periodKey: period.key,
      },
      occurredAt: now,
    }),
  );
  await withTransaction(db, (client) => emitEvents(client, events));
  return reached.map(([threshold]) => threshold);
}
