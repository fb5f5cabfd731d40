// Usage retention: drops whole months of usage_records (one partition each) that are older
// than a cutoff. The ledger stays exact: in the same transaction, what the dropped rows took
// from each wallet is recorded as one 'usage_archived' wallet transaction and taken off the
// wallets' running totals, so every wallet's balance (top-ups − usage) is what it was. The
// rollups the dashboard plots are kept.
// The current and previous months are never dropped: allowance periods anchored mid-month and
// the account rebuilds read them, and a request admitted before the month turned is written
// into the previous month after it (a record is dated at its admission: decision 402).
import type { DbClient, DbPool } from '../db/pool.js';
import { withTransaction } from '../db/pool.js';

export interface UsagePartition {
  readonly name: string;
  /** 'YYYY-MM'. */
  readonly month: string;
}

export interface PrunedMonth extends UsagePartition {
  readonly rows: number;
  readonly orgs: number;
  /** Sum of wallet_cost archived, 12-digit decimal. */
  readonly wallet_cost: string;
}

export class RetentionError extends Error {
  override readonly name = 'RetentionError';
}

const PARTITION_NAME = /^usage_records_(\d{4})_(\d{2})$/;

/** The monthly partitions of usage_records, oldest first. */
export async function usagePartitions(db: DbPool | DbClient): Promise<UsagePartition[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid
       JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname = 'usage_records'`,
  );
  return rows
    .flatMap(({ name }) => {
      const match = PARTITION_NAME.exec(name);
      return match ? [{ name, month: `${match[1]}-${match[2]}` }] : [];
    })
    .sort((a, b) => a.month.localeCompare(b.month));
}

/** The first month that may not be dropped at `now`: the previous month. */
export function earliestKeptMonth(now: Date): string {
  const previous = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
  return previous.toISOString().slice(0, 7);
}

/**
 * The months before `before` ('YYYY-MM'), with what they hold; with `apply`, drops them, each
 * in its own transaction with its wallet archive rows.
 */
export async function pruneUsage(
  db: DbPool,
  options: { before: string; apply: boolean; now?: Date },
): Promise<PrunedMonth[]> {
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(options.before)) {
    throw new RetentionError('--before must be a month, YYYY-MM');
  }
  const kept = earliestKeptMonth(options.now ?? new Date());
  if (options.before > kept) {
    throw new RetentionError(
      `--before ${options.before} would drop the current or previous month; the latest allowed is ${kept}`,
    );
  }
  const months = (await usagePartitions(db)).filter(({ month }) => month < options.before);
  const pruned: PrunedMonth[] = [];
  for (const partition of months) {
    pruned.push(
      options.apply
        ? await withTransaction(db, (client) => dropMonth(client, partition))
        : await describeMonth(db, partition),
    );
  }
  return pruned;
}

async function describeMonth(
  db: DbPool | DbClient,
  partition: UsagePartition,
): Promise<PrunedMonth> {
  const { rows } = await db.query<{ rows: string; orgs: string; wallet_cost: string }>(
    `SELECT count(*)::text AS rows, count(DISTINCT org_id)::text AS orgs,
            COALESCE(sum(wallet_cost), 0)::numeric(30, 12)::text AS wallet_cost
       FROM ${quoted(partition.name)}`,
  );
  const row = rows[0]!;
  return {
    ...partition,
    rows: Number(row.rows),
    orgs: Number(row.orgs),
    wallet_cost: row.wallet_cost,
  };
}

async function dropMonth(client: DbClient, partition: UsagePartition): Promise<PrunedMonth> {
  // No writer may add rows to the month while its sums are archived (a late one waits; one
  // that already holds usage_records may deadlock with the DETACH below: Postgres then aborts
  // one of the two, and a prune that fails changed nothing). Readers of other months go on
  // until the DETACH, which holds usage_records exclusively for the moment until the commit.
  await client.query('SELECT gw_lock_usage_wallet_totals()'); // not during a rebuild of them
  await client.query(`LOCK TABLE ${quoted(partition.name)} IN SHARE MODE`);
  const described = await describeMonth(client, partition);
  // One read of the month: what it took from each wallet is archived, and taken off the
  // wallets' running totals (usage_wallet_totals, per UTC month: a month's row reaches zero
  // and goes, unless the partition shares that UTC month with a neighbour, which only a server
  // outside UTC makes).
  await client.query(
    `WITH dropped AS (
       SELECT org_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month,
              count(*) AS records, sum(wallet_cost) AS wallet_cost
         FROM ${quoted(partition.name)} GROUP BY 1, 2),
     archived AS (
       INSERT INTO wallet_transactions (org_id, kind, amount)
       SELECT d.org_id, 'usage_archived', -sum(d.wallet_cost)
         FROM dropped d JOIN wallets w ON w.org_id = d.org_id
        GROUP BY d.org_id HAVING sum(d.wallet_cost) <> 0)
     UPDATE usage_wallet_totals t
        SET records = t.records - d.records, wallet_cost = t.wallet_cost - d.wallet_cost
       FROM dropped d
      WHERE t.org_id = d.org_id AND t.month = d.month`,
  );
  await client.query('DELETE FROM usage_wallet_totals WHERE records = 0');
  await client.query(`ALTER TABLE usage_records DETACH PARTITION ${quoted(partition.name)}`);
  await client.query(`DROP TABLE ${quoted(partition.name)}`);
  return described;
}

/** A partition name is only ever one PARTITION_NAME matched: quoting is belt and braces. */
function quoted(name: string): string {
  if (!PARTITION_NAME.test(name)) throw new RetentionError(`not a usage partition: ${name}`);
  return `"${name}"`;
}
