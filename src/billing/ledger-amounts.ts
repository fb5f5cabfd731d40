// What the ledger says accounts hold, read in one snapshot for many accounts at once: an
// account rebuild's measurement serves every rebuild of its org waiting (decision 306), and
// `gw reconcile` checks all of an org's live accounts. A few statements per call, whatever
// the number of accounts: under load each round trip costs a turn of a busy event loop.
import type { DbClient, DbPool } from '../db/pool.js';
import { numericToNano } from '../money.js';
import { sumNano } from '../ledger/unwritten-usage.js';
import type { UsageRecord } from '../ledger/usage-record.js';

/** The usage record's field for each ledger column a spend account sums. */
const RECORD_FIELD = {
  org_id: 'orgId',
  app_connection_id: 'appConnectionId',
  product_user_id: 'productUserId',
} as const;

export type SpendColumn = keyof typeof RECORD_FIELD;

/**
 * An account's figure in the ledger: what `column = id` spent over `period` (sell cost), or
 * the org's wallet balance.
 */
export type LedgerAmount =
  | {
      readonly of: 'spent';
      readonly column: SpendColumn;
      readonly id: string;
      readonly period: { readonly start: Date; readonly end: Date };
    }
  | { readonly of: 'wallet' };

/**
 * A wallet's balance according to Postgres alone: its transactions less what usage took from
 * it, read from the running totals the usage writer keeps per month (migration 041) — the
 * same figure as summing the wallet_cost of every usage row, without reading them.
 */
export async function ledgerBalanceNano(db: Pick<DbPool, 'query'>, orgId: string): Promise<bigint> {
  const { rows } = await db.query<{ funded: string; spent: string }>(
    `SELECT (SELECT COALESCE(sum(amount), 0) FROM wallet_transactions WHERE org_id = $1)::text AS funded,
            (SELECT COALESCE(sum(wallet_cost), 0) FROM usage_wallet_totals WHERE org_id = $1)::text AS spent`,
    [orgId],
  );
  const row = rows[0]!;
  return numericToNano(row.funded) - numericToNano(row.spent);
}

/**
 * The figures of `amounts`, all of org `orgId`, in order: each the ledger's (read through
 * `client`, one snapshot) plus what the org's records in `unwritten`, which the ledger does
 * not have yet, add to it. One statement per spend column named and one for the wallet.
 */
export async function ledgerAmounts(
  client: Pick<DbClient, 'query'>,
  orgId: string,
  amounts: readonly LedgerAmount[],
  unwritten: readonly UsageRecord[],
): Promise<bigint[]> {
  const figures: bigint[] = new Array<bigint>(amounts.length).fill(0n);
  const byColumn = new Map<SpendColumn, number[]>();
  let wallet: bigint | undefined;
  for (const [index, amount] of amounts.entries()) {
    if (amount.of === 'wallet') {
      wallet ??=
        (await ledgerBalanceNano(client, orgId)) -
        sumNano(unwritten, (record) => record.walletCostNano);
      figures[index] = wallet;
    } else {
      byColumn.set(amount.column, [...(byColumn.get(amount.column) ?? []), index]);
    }
  }
  for (const [column, indexes] of byColumn) {
    const spends = indexes.map((index) => amounts[index] as LedgerAmount & { of: 'spent' });
    const sums = await spentInLedger(client, column, spends);
    const pending = unwrittenById(unwritten, column);
    for (const [position, index] of indexes.entries()) {
      const { id, period } = spends[position]!;
      const inPeriod = (pending.get(id) ?? []).filter(
        (record) => record.createdAt >= period.start && record.createdAt < period.end,
      );
      figures[index] = sums[position]! + sumNano(inPeriod, (record) => record.sellCostNano);
    }
  }
  return figures;
}

/** What each `column = id` spent over its period in the ledger, in one statement. */
async function spentInLedger(
  client: Pick<DbClient, 'query'>,
  column: SpendColumn,
  spends: ReadonlyArray<{ readonly id: string; readonly period: { start: Date; end: Date } }>,
): Promise<bigint[]> {
  const { rows } = await client.query<{ spent: string }>(
    `SELECT (SELECT COALESCE(sum(u.sell_cost), 0) FROM usage_records u
              WHERE u.${column} = t.id AND u.created_at >= t.start_at AND u.created_at < t.end_at
            )::text AS spent
       FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) WITH ORDINALITY
            AS t(id, start_at, end_at, ord)
      ORDER BY t.ord`,
    [
      spends.map((spend) => spend.id),
      spends.map((spend) => spend.period.start),
      spends.map((spend) => spend.period.end),
    ],
  );
  return rows.map((row) => numericToNano(row.spent));
}

/** The records of `unwritten` by the id they carry in `column`'s field. */
function unwrittenById(
  unwritten: readonly UsageRecord[],
  column: SpendColumn,
): Map<string, UsageRecord[]> {
  const field = RECORD_FIELD[column];
  const byId = new Map<string, UsageRecord[]>();
  for (const record of unwritten) {
    const id = record[field];
    if (id === null) continue;
    const records = byId.get(id);
    if (records) records.push(record);
    else byId.set(id, [record]);
  }
  return byId;
}

/** A credit grant as the ledger has it, less what unwritten usage drew on it. */
export interface LedgerGrant {
  readonly id: string;
  readonly remainingNano: bigint;
  /** null: never expires. */
  readonly expiresAt: Date | null;
}

/**
 * The active grants in `currency` of each of `productUserIds` (read through `client`, one
 * snapshot), each less what the records in `unwritten`, which the ledger does not have yet,
 * drew on it: in one statement, whatever the number of users.
 */
export async function ledgerGrants(
  client: Pick<DbClient, 'query'>,
  currency: string,
  productUserIds: readonly string[],
  unwritten: readonly UsageRecord[],
): Promise<Map<string, LedgerGrant[]>> {
  const { rows } = await client.query<{
    product_user_id: string;
    id: string;
    remaining: string;
    expires_at: Date | null;
  }>(
    `SELECT g.product_user_id, g.id, (g.amount - COALESCE(sum(c.amount), 0))::text AS remaining,
            g.expires_at
       FROM credit_grants g LEFT JOIN credit_consumptions c ON c.grant_id = g.id
      WHERE g.product_user_id = ANY($1::text[]) AND g.currency = $2 AND g.status = 'active'
        AND (g.expires_at IS NULL OR g.expires_at > now())
      GROUP BY g.id`,
    [productUserIds, currency],
  );
  const drawn = new Map<string, bigint>();
  for (const record of unwritten) {
    for (const { grantId, amountNano } of record.creditConsumption ?? []) {
      drawn.set(grantId, (drawn.get(grantId) ?? 0n) + amountNano);
    }
  }
  const byUser = new Map<string, LedgerGrant[]>();
  for (const row of rows) {
    const grant = {
      id: row.id,
      remainingNano: numericToNano(row.remaining) - (drawn.get(row.id) ?? 0n),
      expiresAt: row.expires_at,
    };
    const grants = byUser.get(row.product_user_id);
    if (grants) grants.push(grant);
    else byUser.set(row.product_user_id, [grant]);
  }
  return byUser;
}
