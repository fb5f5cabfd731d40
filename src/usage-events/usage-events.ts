// The webhook events that spend causes, derived by the usage writer from what it reads anyway:
// the cap marks settle.lua noted as crossed (product_user.allowance_threshold, cap.threshold),
// the wallet balance it left (wallet.low_balance) and the credential failures failover.lua
// noted (provider_credential.*). Written in the writer's batch transaction, so the request
// path gains no round trip and no write. Each event has a dedupe key: a threshold fires once
// per account, period and mark whoever settles and however often an entry is replayed.
import type { DbClient } from '../db/pool.js';
import { capRuleView, CAP_RULE_VIEW_COLUMNS, type RuleRow } from '../admin/cap-rule-views.js';
import { credentialViews } from '../credentials/credential-views.js';
import type { UsageEventWriter } from '../ledger/postgres-usage-sink.js';
import type { UsageNotice } from '../ledger/usage-notices.js';
import type { ThresholdCrossing, UsageRecord } from '../ledger/usage-record.js';
import { formatNano, numericToNano, SETTLEMENT_CURRENCY } from '../money.js';
import { monthlyPeriod } from '../periods.js';
import {
  PRODUCT_USER_COLUMNS,
  productUserObject,
  type ProductUserRow,
} from '../product-users/profile.js';
import { emitEvents, type OutboxEvent } from '../webhooks/outbox.js';

/** How long the writer trusts the low-balance thresholds it read (a change shows within it). */
const THRESHOLD_CACHE_MS = 5_000;
const THRESHOLD_CACHE_MAX_ORGS = 10_000;

type Crossed = { readonly record: UsageRecord; readonly crossing: ThresholdCrossing };

export class UsageEvents implements UsageEventWriter {
  private readonly lowBalance = new Map<
    string,
    { thresholdNano: bigint | null; readAtMs: number }
  >();

  constructor(private readonly nowMs: () => number = Date.now) {}

  /**
   * False only when no event can come of the batch: no mark crossed, no notice, and every
   * wallet charge is of an org whose threshold is known (read less than 5 s ago) and not
   * crossed by it.
   */
  mayHaveEvents(records: readonly UsageRecord[], notices: readonly UsageNotice[]): boolean {
    if (notices.length > 0) return true;
    const now = this.nowMs();
    return records.some((record) => {
      if ((record.thresholdCrossings?.length ?? 0) > 0) return true;
      const after = record.walletBalanceAfterNano;
      if (after === undefined || after === null || record.walletCostNano <= 0n) return false;
      const known = this.lowBalance.get(record.orgId);
      if (!known || known.readAtMs <= now - THRESHOLD_CACHE_MS) return true;
      return crossesDown(after, record.walletCostNano, known.thresholdNano);
    });
  }

  async write(
    client: DbClient,
    records: readonly UsageRecord[],
    notices: readonly UsageNotice[],
  ): Promise<void> {
    const crossed = records.flatMap((record) =>
      (record.thresholdCrossings ?? []).map((crossing) => ({ record, crossing })),
    );
    const events = [
      ...(await this.allowanceEvents(
        client,
        crossed.filter(({ crossing }) => crossing.scope === 'user'),
      )),
      ...(await this.capEvents(
        client,
        crossed.filter(({ crossing }) => crossing.scope !== 'user'),
      )),
      ...(await this.walletEvents(client, records)),
      ...(await this.credentialEvents(client, notices)),
    ];
    await emitEvents(client, events);
  }

  private async allowanceEvents(
    client: DbClient,
    crossed: readonly Crossed[],
  ): Promise<OutboxEvent[]> {
    if (crossed.length === 0) return [];
    const { rows } = await client.query<ProductUserRow>(
      `SELECT ${PRODUCT_USER_COLUMNS} FROM product_users WHERE id = ANY($1::text[])`,
      [crossed.map(({ record }) => record.productUserId ?? '')],
    );
    const users = new Map(rows.map((row) => [row.id, row]));
    return crossed.flatMap(({ record, crossing }) => {
      const user = users.get(record.productUserId ?? '');
      return user ? [allowanceThresholdEvent(user, crossing, record.createdAt)] : [];
    });
  }

  private async capEvents(client: DbClient, crossed: readonly Crossed[]): Promise<OutboxEvent[]> {
    if (crossed.length === 0) return [];
    const { rows } = await client.query<RuleRow>(
      `SELECT ${CAP_RULE_VIEW_COLUMNS} FROM cap_rules
        WHERE status = 'active' AND ((scope = 'org' AND org_id = ANY($1::text[]))
           OR (scope = 'app_connection' AND app_connection_id = ANY($2::text[])))`,
      [
        crossed.map(({ record }) => record.orgId),
        crossed.map(({ record }) => record.appConnectionId),
      ],
    );
    const rules = new Map(
      rows.map((row) => [
        row.scope === 'org' ? `org:${row.org_id}` : `conn:${row.app_connection_id}`,
        row,
      ]),
    );
    return crossed.map(({ record, crossing }) =>
      capThresholdEvent({
        orgId: record.orgId,
        appConnectionId: record.appConnectionId,
        rule: rules.get(
          `${crossing.scope}:${crossing.scope === 'org' ? record.orgId : record.appConnectionId}`,
        ),
        crossing,
        occurredAt: record.createdAt,
      }),
    );
  }

  /** A charge that took the wallet from at or above the org's threshold to below it. */
  private async walletEvents(
    client: DbClient,
    records: readonly UsageRecord[],
  ): Promise<OutboxEvent[]> {
    const charged = records.filter(
      (record) =>
        record.walletBalanceAfterNano !== undefined &&
        record.walletBalanceAfterNano !== null &&
        record.walletCostNano > 0n,
    );
    if (charged.length === 0) return [];
    const thresholds = await this.lowBalanceThresholds(
      client,
      charged.map((record) => record.orgId),
    );
    return charged.flatMap((record) => {
      const threshold = thresholds.get(record.orgId) ?? null;
      const after = record.walletBalanceAfterNano!;
      if (!crossesDown(after, record.walletCostNano, threshold)) return [];
      return [
        {
          orgId: record.orgId,
          type: 'wallet.low_balance',
          occurredAt: record.createdAt,
          dedupeKey: `wallet.low_balance:${record.requestId}`,
          data: {
            org_id: record.orgId,
            balance: formatNano(after),
            currency: SETTLEMENT_CURRENCY,
            low_balance_threshold: formatNano(threshold!),
          },
        },
      ];
    });
  }

  private async credentialEvents(
    client: DbClient,
    notices: readonly UsageNotice[],
  ): Promise<OutboxEvent[]> {
    if (notices.length === 0) return [];
    const views = await credentialViews(
      client,
      notices.map((notice) => notice.credentialId),
    );
    return notices.flatMap((notice) => {
      const view = views.get(notice.credentialId);
      if (!view || view.org_id !== notice.orgId) return [];
      return [
        {
          orgId: notice.orgId,
          type: notice.type,
          occurredAt: new Date(notice.atMs),
          dedupeKey: `${notice.type}:${notice.credentialId}:${notice.requestId}`,
          data: {
            ...view,
            upstream_status: notice.upstreamStatus,
            cooldown_until: new Date(notice.cooldownUntilMs).toISOString(),
          },
        },
      ];
    });
  }

  /** Each org's wallet.low_balance threshold (null: none), read at most every few seconds. */
  private async lowBalanceThresholds(
    client: DbClient,
    orgIds: readonly string[],
  ): Promise<Map<string, bigint | null>> {
    const now = this.nowMs();
    const stale = [...new Set(orgIds)].filter(
      (orgId) => (this.lowBalance.get(orgId)?.readAtMs ?? -Infinity) <= now - THRESHOLD_CACHE_MS,
    );
    if (stale.length > 0) {
      const { rows } = await client.query<{ org_id: string; threshold: string | null }>(
        'SELECT org_id, low_balance_threshold::text AS threshold FROM wallets WHERE org_id = ANY($1::text[])',
        [stale],
      );
      if (this.lowBalance.size > THRESHOLD_CACHE_MAX_ORGS) this.lowBalance.clear();
      const found = new Map(rows.map((row) => [row.org_id, row.threshold]));
      for (const orgId of stale) {
        const text = found.get(orgId) ?? null;
        this.lowBalance.set(orgId, {
          thresholdNano: text === null ? null : numericToNano(text),
          readAtMs: now,
        });
      }
    }
    return new Map(orgIds.map((orgId) => [orgId, this.lowBalance.get(orgId)!.thresholdNano]));
  }
}

/** Whether a charge of `cost` that left `after` took the balance from ≥ threshold to below it. */
function crossesDown(after: bigint, cost: bigint, threshold: bigint | null): boolean {
  return threshold !== null && after < threshold && after + cost >= threshold;
}

/** The period whose key (its start, epoch ms) is given, for a user's anchor. */
function periodOf(periodKey: string, anchor: Date | null): { start: Date; end: Date } {
  const start = new Date(Number(periodKey));
  return { start, end: monthlyPeriod(start, anchor).end };
}

/** 80 % of a cap, rounded up to a whole nano-unit: the mark settle.lua notes a crossing of. */
export function eightyPercent(capNano: bigint): bigint {
  return (capNano * 4n + 4n) / 5n;
}

/**
 * The `cap.threshold` event of an org's or connection's mark: from a charge that crossed it
 * (its usage record) or from a cap set past it (cap-marks.ts). One dedupe key per subject,
 * period and mark, whichever fires it.
 */
export function capThresholdEvent(input: {
  readonly orgId: string;
  /** The connection the charge went through (the subject of a `conn` crossing). */
  readonly appConnectionId: string | null;
  /** The active rule, if it still is: else the cap as the crossing saw it. */
  readonly rule: RuleRow | undefined;
  readonly crossing: ThresholdCrossing;
  readonly occurredAt: Date;
}): OutboxEvent {
  const { orgId, appConnectionId, rule, crossing } = input;
  const onOrg = crossing.scope === 'org';
  const subject = onOrg ? orgId : (appConnectionId ?? '');
  const period = periodOf(crossing.periodKey, null);
  const scope = onOrg ? 'org' : 'app_connection';
  // A rule removed since the charge: the cap as the charge saw it.
  const cap = rule
    ? capRuleView(rule)
    : {
        cap_rule_id: null,
        scope,
        org_id: orgId,
        app_connection_id: onOrg ? null : appConnectionId,
        product_end_user_id: null,
        amount: formatNano(crossing.capNano),
        currency: SETTLEMENT_CURRENCY,
        period: 'monthly',
      };
  return {
    orgId,
    type: 'cap.threshold',
    occurredAt: input.occurredAt,
    dedupeKey: `cap.threshold:${scope}:${subject}:${crossing.periodKey}:${crossing.threshold}`,
    data: {
      ...cap,
      // The amount whose mark was reached (the rule may have changed since).
      amount: formatNano(crossing.capNano),
      threshold: Number(crossing.threshold),
      spent_this_period: formatNano(crossing.spentAfterNano),
      period_start: period.start.toISOString(),
      period_end: period.end.toISOString(),
    },
  };
}

/**
 * The `product_user.allowance_threshold` event of a user's mark: from a charge that crossed
 * it or from a cap set past it (cap-marks.ts). One dedupe key per user, period and mark.
 */
export function allowanceThresholdEvent(
  user: ProductUserRow,
  crossing: ThresholdCrossing,
  occurredAt: Date,
): OutboxEvent {
  const period = periodOf(crossing.periodKey, user.allowance_starts_at);
  const remaining = crossing.capNano - crossing.spentAfterNano;
  return {
    orgId: user.org_id,
    type: 'product_user.allowance_threshold',
    occurredAt,
    dedupeKey: `product_user.allowance_threshold:${user.id}:${crossing.periodKey}:${crossing.threshold}`,
    data: {
      ...productUserObject(user),
      threshold: Number(crossing.threshold),
      allowance: {
        currency: SETTLEMENT_CURRENCY,
        period: 'monthly',
        period_start: period.start.toISOString(),
        period_end: period.end.toISOString(),
        cap_amount: formatNano(crossing.capNano),
        spent_this_period: formatNano(crossing.spentAfterNano),
        remaining_base_allowance: formatNano(remaining > 0n ? remaining : 0n),
      },
    },
  };
}
