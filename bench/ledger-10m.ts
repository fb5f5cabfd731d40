// The usage ledger at scale: fills its own database with ≥ 10 million usage_records spread
// over six monthly partitions (1,000 organizations, one of them ~30 % of the rows; ~100,000
// product users; 5 connections per org, 20 for the large one), builds the daily rollups from
// them and the running totals with the functions migrations 041 and 042 build them with (the
// wallets' per month, the monthly product-user rollup), then times every query a user waits on — the dashboard's usage API and overview, the
// usage totals, the account rebuilds (wallet, org cap, connection cap, product-user spend), the
// spool's "already recorded?" lookup, retention's month description — for the large org and a
// typical one: the median of warm runs, and each plan with EXPLAIN (ANALYZE, BUFFERS) saved
// under bench/out/ledger-10m/<label>/. Also times the writer's statement on 1,000-row batches.
// A measurement, not a test.
//
//   npm run bench:ledger -- [--rows 10000000] [--reuse] [--runs 5] [--label before] [--insert-only]
//   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gw_bench_ledger)
//
// The fill writes rows in time order (as the writer does), with the table's indexes dropped
// and rebuilt afterwards from their own definitions (a bulk load; the schema after it is what
// the migrations made). --reuse keeps the ledger and only migrates and measures.
import { mkdir, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { ensureDatabase, migrate } from '../src/db/migrate.js';
import { createDbPool, type DbPool } from '../src/db/pool.js';
import { orgOverview } from '../src/admin/overview.js';
import { spendOf } from '../src/oauth/connected-apps.js';
import { readUsageRollups, USAGE_GROUPS } from '../src/ledger/usage-rollups.js';
import { usageTotals } from '../src/ledger/usage-totals.js';
import { PostgresUsageSink } from '../src/ledger/postgres-usage-sink.js';
import type { UsageRecord } from '../src/ledger/usage-record.js';
import { monthlyPeriod } from '../src/periods.js';
import {
  ledgerAmounts,
  ledgerBalanceNano,
  type SpendColumn,
} from '../src/billing/ledger-amounts.js';

const DAY_MS = 24 * 3600 * 1000;
const ORGS = 1000;
const MONTHS = 6;
const BATCH = 500_000;
const INSERT_BATCH = 1000;
const INSERT_RUNS = 20;

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    reuse: { type: 'boolean', default: false },
    runs: { type: 'string', default: '5' },
    label: { type: 'string', default: 'run' },
    // Only the writer's insert cost (repeat it to see this machine's noise).
    'insert-only': { type: 'boolean', default: false },
  },
});
const rows = Number(values.rows);
const runs = Number(values.runs);
const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gw_bench_ledger';
const plansDir = path.join('bench', 'out', 'ledger-10m', values.label!);

const orgName = (n: number): string => `org_${String(n).padStart(4, '0')}`;
/** The large organization (~30 % of the rows) and a typical one (the median's order). */
const TARGETS = [
  { name: 'large', org: orgName(0) },
  { name: 'typical', org: orgName(500) },
];

const log = (text: string): void => console.log(`[${new Date().toISOString()}] ${text}`);

// Per row i, deterministic draws from hashes of i: the org (30 % the large one, the others
// with a square-law skew), its connection, app and key, a product user (15 % none; the large
// org's 30,000 skewed, 70 each for the others), model, route, status, tokens, costs in whole
// nano-units (as the gateway writes them).
const FILL = `
INSERT INTO usage_records (request_id, created_at, org_id, app_id, app_connection_id, api_key_id,
  product_user_id, model, vendor, route, stream, status, upstream_status, input_tokens,
  output_tokens, total_tokens, currency, sell_cost, vendor_cost, wallet_cost, reserved_amount,
  latency_ms)
SELECT gen_random_uuid(), ts, 'org_' || o, 'app_' || o || '_' || (c % 2),
       'conn_' || o || '_' || c, 'key_' || o || '_' || c || '_' || (h3 % 3),
       CASE WHEN u4 < 0.15 THEN NULL
            WHEN o = '0000' THEN 'pu_' || o || '_' || floor(30000 * power((u4 - 0.15) / 0.85, 2))::int
            ELSE 'pu_' || o || '_' || floor(70 * (u4 - 0.15) / 0.85)::int END,
       model, split_part(model, '/', 1), CASE WHEN h6 % 10 = 0 THEN 'byok' ELSE 'system' END,
       h6 % 2 = 0,
       CASE WHEN h7 % 100 < 95 THEN 'completed' WHEN h7 % 100 < 97 THEN 'incomplete'
            WHEN h7 % 100 < 99 THEN 'upstream_error' ELSE 'client_aborted' END,
       CASE WHEN h7 % 100 BETWEEN 97 AND 98 THEN 502 ELSE 200 END,
       inp, outp, inp + outp, 'USD', sell, round(sell * 0.8, 9),
       CASE WHEN h6 % 10 = 0 THEN 0 ELSE sell END, round(sell * 1.5, 9), 200 + h3 % 20000
  FROM (SELECT i, ts, o, c, h3, u4, h6, h7, model, inp, outp,
               (inp * 3 + outp * 15) * 0.000000001 * (CASE WHEN model LIKE '%mini' THEN 50 ELSE 1000 END) AS sell
          FROM (SELECT i, ts, o,
                       abs(hashint8extended(i, 2)) % (CASE WHEN o = '0000' THEN 20 ELSE 5 END) AS c,
                       abs(hashint8extended(i, 3)) AS h3,
                       (abs(hashint8extended(i, 4)) % 1000000) / 1000000.0 AS u4,
                       abs(hashint8extended(i, 6)) AS h6, abs(hashint8extended(i, 7)) AS h7,
                       CASE WHEN abs(hashint8extended(i, 5)) % 100 < 50 THEN 'vendor_b/gpt-4o-mini'
                            WHEN abs(hashint8extended(i, 5)) % 100 < 75 THEN 'vendor_a/claude-haiku-4-5'
                            WHEN abs(hashint8extended(i, 5)) % 100 < 90 THEN 'vendor_b/gpt-4o'
                            ELSE 'vendor_a/claude-sonnet-4-5' END AS model,
                       50 + abs(hashint8extended(i, 8)) % 4000 AS inp,
                       10 + abs(hashint8extended(i, 9)) % 1000 AS outp
                  FROM (SELECT i, $4::timestamptz + ($5::timestamptz - $4::timestamptz) * (i::float8 / $3) AS ts,
                               lpad((CASE WHEN u1 < 0.3 THEN 0
                                          ELSE 1 + floor(${ORGS - 1} * power((u1 - 0.3) / 0.7, 2)) END)::int::text, 4, '0') AS o
                          FROM (SELECT i, (abs(hashint8extended(i, 1)) % 1000000) / 1000000.0 AS u1
                                  FROM generate_series($1::bigint, $2::bigint) AS i) s) t) r) q`;

/** The rollups of one month of usage_records, as migration 014 builds them. */
const ROLLUPS = [
  `INSERT INTO usage_rollups_daily
   SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, model, app_connection_id, currency,
          count(*), sum(input_tokens), sum(output_tokens), sum(total_tokens),
          sum((sell_cost * 1000000000)::bigint), sum((wallet_cost * 1000000000)::bigint)
     FROM usage_records WHERE created_at >= $1 AND created_at < $2
    GROUP BY 1, 2, 3, 4, 5`,
  `INSERT INTO usage_rollups_daily_product_users
   SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, COALESCE(product_user_id, ''), currency,
          count(*), sum(input_tokens), sum(output_tokens), sum(total_tokens),
          sum((sell_cost * 1000000000)::bigint), sum((wallet_cost * 1000000000)::bigint)
     FROM usage_records WHERE created_at >= $1 AND created_at < $2
    GROUP BY 1, 2, 3, 4`,
];

/** The running totals, built as migrations 041 and 042 build them (and `gw usage rebuild-totals`). */
const REBUILD_TOTALS =
  'SELECT gw_rebuild_usage_wallet_totals(), gw_rebuild_usage_rollups_monthly_product_users()';

function monthStart(now: Date, back: number): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1));
}

async function fill(db: DbPool, now: Date): Promise<void> {
  const first = monthStart(now, MONTHS - 1);
  const client = await db.connect();
  try {
    await client.query(`SET work_mem = '256MB'`);
    await client.query(`SET maintenance_work_mem = '1GB'`);
    await client.query(`SET synchronous_commit = off`);
    await client.query(
      `TRUNCATE usage_records, usage_rollups_daily, usage_rollups_daily_product_users,
                usage_rollups_monthly_product_users, usage_wallet_totals,
                wallet_transactions, wallets, product_users, apps, organizations CASCADE`,
    );
    for (let back = MONTHS - 1; back >= -1; back -= 1) {
      await client.query('SELECT gw_ensure_usage_partition($1::date)', [monthStart(now, back)]);
    }
    // The indexes of usage_records as the migrations made them, rebuilt after the load.
    const { rows: indexes } = await client.query<{ name: string; def: string }>(
      `SELECT c.relname AS name, pg_get_indexdef(c.oid) AS def FROM pg_index i
         JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'usage_records'::regclass AND NOT i.indisprimary`,
    );
    const { rows: keys } = await client.query<{ name: string; def: string }>(
      `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE conrelid = 'usage_records'::regclass AND contype = 'p'`,
    );
    for (const index of indexes) await client.query(`DROP INDEX ${index.name}`);
    for (const key of keys) {
      await client.query(`ALTER TABLE usage_records DROP CONSTRAINT ${key.name}`);
    }
    const started = performance.now();
    for (let from = 1; from <= rows; from += BATCH) {
      const to = Math.min(from + BATCH - 1, rows);
      await client.query(FILL, [from, to, rows, first, now]);
      log(`filled ${to} / ${rows} rows (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
    for (const key of keys) {
      const t = performance.now();
      await client.query(`ALTER TABLE usage_records ADD CONSTRAINT ${key.name} ${key.def}`);
      log(`rebuilt ${key.name} in ${((performance.now() - t) / 1000).toFixed(0)} s`);
    }
    for (const index of indexes) {
      const t = performance.now();
      // pg_get_indexdef gives a partitioned index as ON ONLY (the parent alone, invalid).
      await client.query(index.def.replace(' ON ONLY ', ' ON '));
      log(`rebuilt ${index.name} in ${((performance.now() - t) / 1000).toFixed(0)} s`);
    }
    for (let back = MONTHS - 1; back >= 0; back -= 1) {
      for (const sql of ROLLUPS) {
        await client.query(sql, [monthStart(now, back), monthStart(now, back - 1)]);
      }
    }
    log('rollups built');
    const totalsStarted = performance.now();
    await client.query(REBUILD_TOTALS);
    log(`running totals built in ${((performance.now() - totalsStarted) / 1000).toFixed(0)} s`);
    // The entities the overview joins, and one top-up per wallet.
    await client.query(
      `INSERT INTO organizations (id, name)
       SELECT 'org_' || lpad(n::text, 4, '0'), 'Org ' || n FROM generate_series(0, ${ORGS - 1}) n`,
    );
    await client.query(
      `INSERT INTO apps (id, org_id, name)
       SELECT 'app_' || lpad(n::text, 4, '0') || '_' || a, 'org_' || lpad(n::text, 4, '0'), 'App ' || a
         FROM generate_series(0, ${ORGS - 1}) n, generate_series(0, 1) a`,
    );
    await client.query(
      `INSERT INTO product_users (id, org_id, app_id, external_user_id, display_name)
       SELECT 'pu_' || o || '_' || u, 'org_' || o, 'app_' || o || '_' || (u % 2), 'ext-' || u, 'User ' || u
         FROM (SELECT lpad(n::text, 4, '0') AS o, CASE WHEN n = 0 THEN 30000 ELSE 70 END AS users
                 FROM generate_series(0, ${ORGS - 1}) n) orgs, generate_series(0, users - 1) u`,
    );
    await client.query(`INSERT INTO wallets (org_id) SELECT id FROM organizations`);
    await client.query(
      `INSERT INTO wallet_transactions (org_id, kind, amount)
       SELECT org_id, 'topup', 1000000 FROM wallets`,
    );
    // What autovacuum does in a running system: statistics, and the visibility map that
    // index-only scans read.
    for (const table of [
      'usage_records',
      'usage_rollups_daily',
      'usage_rollups_daily_product_users',
      'usage_rollups_monthly_product_users',
      'usage_wallet_totals',
      'product_users',
    ]) {
      const t = performance.now();
      await client.query(`VACUUM (ANALYZE) ${table}`);
      log(`vacuum analyze ${table} in ${((performance.now() - t) / 1000).toFixed(0)} s`);
    }
  } finally {
    client.release();
  }
}

interface Statement {
  readonly sql: string;
  readonly params: unknown[];
}

/** The statements `call` sends, without running them (the functions fail on the empty answer). */
async function captured(call: (db: DbPool) => Promise<unknown>): Promise<Statement[]> {
  const statements: Statement[] = [];
  const fake = {
    query: (sql: string, params: unknown[] = []) => {
      statements.push({ sql, params });
      return Promise.resolve({ rows: [], rowCount: 0 });
    },
  } as unknown as DbPool;
  await call(fake).catch(() => undefined);
  return statements;
}

interface Case {
  readonly name: string;
  /** Where the statement lives. */
  readonly source: string;
  readonly statement: Statement;
}

async function cases(db: DbPool, org: string, now: Date): Promise<Case[]> {
  const period = monthlyPeriod(now, null);
  const conn = `conn_${org.slice(4)}_0`;
  const user = `pu_${org.slice(4)}_0`;
  const key = `key_${org.slice(4)}_0_0`;
  // What an account rebuild (and gw reconcile) sends for one account of each kind.
  const spent = async (column: SpendColumn, id: string): Promise<Statement> =>
    (
      await captured((fake) => ledgerAmounts(fake, org, [{ of: 'spent', column, id, period }], []))
    )[0]!;
  const [walletBalance] = await captured((fake) => ledgerBalanceNano(fake, org));
  const out: Case[] = [
    {
      name: 'wallet ledger balance',
      source: 'src/billing/ledger-amounts.ts ledgerBalanceNano',
      statement: walletBalance!,
    },
    {
      name: 'org cap rebuild (month)',
      source: 'src/billing/ledger-amounts.ts',
      statement: await spent('org_id', org),
    },
    {
      name: 'connection cap rebuild (month)',
      source: 'src/billing/ledger-amounts.ts',
      statement: await spent('app_connection_id', conn),
    },
    {
      name: 'product-user spend rebuild (month)',
      source: 'src/billing/ledger-amounts.ts',
      statement: await spent('product_user_id', user),
    },
  ];
  const [userTotals] = await captured((fake) => usageTotals(fake, 'product_user_id', user, now));
  out.push({
    name: 'product-user usage totals',
    source: 'src/ledger/usage-totals.ts (product-user profile)',
    statement: userTotals!,
  });
  const [keyTotals] = await captured((fake) => usageTotals(fake, 'api_key_id', key, now));
  out.push({
    name: 'API key usage totals',
    source: 'src/ledger/usage-totals.ts (GET /inference-keys/usage)',
    statement: keyTotals!,
  });
  const to = new Date(Math.floor(now.getTime() / DAY_MS + 1) * DAY_MS);
  for (const days of [30, 366]) {
    for (const groupBy of USAGE_GROUPS) {
      const [statement] = await captured((fake) =>
        readUsageRollups(fake, {
          orgId: org,
          groupBy,
          from: new Date(to.getTime() - days * DAY_MS),
          to,
          limit: groupBy === 'day' ? 1000 : 100,
        }),
      );
      out.push({
        name: `dashboard usage by ${groupBy}, ${days} d`,
        source: 'src/ledger/usage-rollups.ts (dashboard usage API and CSV)',
        statement: statement!,
      });
    }
  }
  const overview = await captured((fake) =>
    orgOverview(fake, { liveBalance: () => Promise.reject(new Error('not measured')) }, org, now),
  );
  ['totals', 'top models', 'top product users'].forEach((part, index) =>
    out.push({
      name: `org overview ${part}`,
      source: 'src/admin/overview.ts',
      statement: overview[index]!,
    }),
  );
  const [connectedAppsSpend] = await captured((fake) =>
    spendOf(
      fake,
      org,
      [0, 1, 2, 3, 4].map((c) => `conn_${org.slice(4)}_${c}`),
    ),
  );
  out.push({
    name: 'connected apps spend',
    source: 'src/oauth/connected-apps.ts spendOf',
    statement: connectedAppsSpend!,
  });
  const { rows: recent } = await db.query<{ request_id: string }>(
    `SELECT request_id::text FROM usage_records WHERE org_id = $1 AND created_at >= $2
      ORDER BY created_at DESC LIMIT 50`,
    [org, period.start],
  );
  const ids = [...recent.map((row) => row.request_id), ...recent.map(() => randomUUID())];
  out.push({
    name: 'recorded? (100 request ids)',
    source: 'src/ledger/recorded-usage.ts (spool replay), unwritten-usage.ts',
    statement: {
      sql: `SELECT request_id::text FROM usage_records WHERE request_id = ANY($1::uuid[])
       UNION SELECT request_id FROM usage_dead_letters WHERE request_id = ANY($2::text[])`,
      params: [ids, ids],
    },
  });
  return out;
}

function median(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Key lines of a plan: its node lines (scans, sorts, aggregates) and the execution time. */
function keyLines(plan: string[]): string {
  return plan
    .filter((line) => /Scan|Sort|Aggregate|Execution Time/.test(line))
    .slice(0, 8)
    .map((line) => line.trim().replace(/\s+/g, ' '))
    .join(' / ');
}

async function measure(db: DbPool, statement: Statement): Promise<{ ms: number; plan: string[] }> {
  await db.query(statement.sql, statement.params); // warm
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const start = performance.now();
    await db.query(statement.sql, statement.params);
    times.push(performance.now() - start);
  }
  const { rows: plan } = await db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, BUFFERS) ${statement.sql}`,
    statement.params,
  );
  return { ms: median(times), plan: plan.map((row) => row['QUERY PLAN']) };
}

function record(i: number, now: Date): UsageRecord {
  const org = orgName(i % 3 === 0 ? 0 : 1 + (i % (ORGS - 1)));
  const c = i % 5;
  return {
    requestId: randomUUID(),
    createdAt: new Date(now.getTime() - (i % 1000)),
    orgId: org,
    appId: `app_${org.slice(4)}_${c % 2}`,
    appConnectionId: `conn_${org.slice(4)}_${c}`,
    apiKeyId: `key_${org.slice(4)}_${c}_0`,
    productUserId: i % 7 === 0 ? null : `pu_${org.slice(4)}_${i % 70}`,
    model: 'vendor_b/gpt-4o-mini',
    vendor: 'vendor_b',
    route: 'system',
    credentialId: null,
    stream: true,
    status: 'completed',
    upstreamStatus: 200,
    inputTokens: 100 + (i % 900),
    outputTokens: 20 + (i % 400),
    currency: 'USD',
    sellCostNano: BigInt(1000 + i),
    vendorCostNano: BigInt(800 + i),
    walletCostNano: BigInt(1000 + i),
    reservedNano: BigInt(3000 + i),
    latencyMs: 900,
  };
}

/**
 * The writer's statement (records, rollups, running totals) on 1,000-row batches, taken back
 * after: the rows and their daily rollup sums off, the running totals built again from them.
 */
async function insertCost(db: DbPool, now: Date): Promise<{ ms: number; rowsPerSecond: number }> {
  const sink = new PostgresUsageSink(db);
  const times: number[] = [];
  const written: string[] = [];
  for (let run = 0; run <= INSERT_RUNS; run += 1) {
    const batch = Array.from({ length: INSERT_BATCH }, (_, i) =>
      record(run * INSERT_BATCH + i, now),
    );
    const start = performance.now();
    await sink.write(batch);
    if (run > 0) times.push(performance.now() - start); // the first one warms the caches
    written.push(...batch.map((r) => r.requestId));
  }
  // Leave the ledger as it was: the bench's rows out, their rollup sums back off.
  await db.query(
    `WITH gone AS (DELETE FROM usage_records WHERE request_id = ANY($1::uuid[])
                   RETURNING org_id, created_at, model, app_connection_id, product_user_id, currency,
                             input_tokens, output_tokens, total_tokens, sell_cost, wallet_cost),
          by_model AS (
            UPDATE usage_rollups_daily r SET requests = r.requests - g.n,
                   input_tokens = r.input_tokens - g.i, output_tokens = r.output_tokens - g.o,
                   total_tokens = r.total_tokens - g.t, sell_cost_nano = r.sell_cost_nano - g.s,
                   wallet_cost_nano = r.wallet_cost_nano - g.w
              FROM (SELECT org_id, (created_at AT TIME ZONE 'UTC')::date AS day, model, app_connection_id,
                           currency, count(*) AS n, sum(input_tokens) AS i, sum(output_tokens) AS o,
                           sum(total_tokens) AS t, sum((sell_cost * 1000000000)::bigint) AS s,
                           sum((wallet_cost * 1000000000)::bigint) AS w
                      FROM gone GROUP BY 1, 2, 3, 4, 5) g
             WHERE (r.org_id, r.day, r.model, r.app_connection_id, r.currency)
                 = (g.org_id, g.day, g.model, g.app_connection_id, g.currency))
     UPDATE usage_rollups_daily_product_users r SET requests = r.requests - g.n,
            input_tokens = r.input_tokens - g.i, output_tokens = r.output_tokens - g.o,
            total_tokens = r.total_tokens - g.t, sell_cost_nano = r.sell_cost_nano - g.s,
            wallet_cost_nano = r.wallet_cost_nano - g.w
       FROM (SELECT org_id, (created_at AT TIME ZONE 'UTC')::date AS day,
                    COALESCE(product_user_id, '') AS product_user_id, currency, count(*) AS n,
                    sum(input_tokens) AS i, sum(output_tokens) AS o, sum(total_tokens) AS t,
                    sum((sell_cost * 1000000000)::bigint) AS s, sum((wallet_cost * 1000000000)::bigint) AS w
               FROM gone GROUP BY 1, 2, 3, 4) g
      WHERE (r.org_id, r.day, r.product_user_id, r.currency)
          = (g.org_id, g.day, g.product_user_id, g.currency)`,
    [written],
  );
  // A rollup row always counts a request (decision 262 relies on it): the ones the bench made
  // go again.
  await db.query('DELETE FROM usage_rollups_daily WHERE requests = 0');
  await db.query('DELETE FROM usage_rollups_daily_product_users WHERE requests = 0');
  await db.query(REBUILD_TOTALS);
  // The rows the rebuild deleted, made free for the next one (as autovacuum would).
  await db.query('VACUUM usage_wallet_totals, usage_rollups_monthly_product_users');
  const ms = median(times);
  return { ms, rowsPerSecond: Math.round((INSERT_BATCH / ms) * 1000) };
}

async function main(): Promise<void> {
  await ensureDatabase(url);
  const db = createDbPool(url, 4);
  const now = new Date();
  const migrateStart = performance.now();
  const applied = await migrate(db);
  log(
    `migrated (${applied.join(', ') || 'nothing new'}) in ${((performance.now() - migrateStart) / 1000).toFixed(1)} s`,
  );
  if (!values.reuse) {
    const started = performance.now();
    await fill(db, now);
    log(`ledger filled in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  const { rows: sizes } = await db.query<{ rows: string; heap: string; indexes: string }>(
    `SELECT (SELECT count(*) FROM usage_records)::text AS rows,
            pg_size_pretty(sum(pg_table_size(inhrelid))) AS heap,
            pg_size_pretty(sum(pg_indexes_size(inhrelid))) AS indexes
       FROM pg_inherits WHERE inhparent = 'usage_records'::regclass`,
  );
  const { rows: indexList } = await db.query<{ name: string; def: string }>(
    `SELECT c.relname AS name, pg_get_indexdef(c.oid) AS def FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'usage_records'::regclass
      ORDER BY 1`,
  );
  log(
    `usage_records: ${sizes[0]!.rows} rows, heap ${sizes[0]!.heap}, indexes ${sizes[0]!.indexes}`,
  );
  for (const index of indexList) log(`  ${index.def}`);
  if (values['insert-only']) {
    const insert = await insertCost(db, now);
    log(
      `writer statement, ${INSERT_BATCH}-row batch: median ${insert.ms.toFixed(1)} ms (${insert.rowsPerSecond} rows/s)`,
    );
    await db.end();
    return;
  }
  await mkdir(plansDir, { recursive: true });
  const results: Array<{ org: string; name: string; source: string; ms: number; plan: string }> =
    [];
  for (const target of TARGETS) {
    const { rows: share } = await db.query<{ rows: string }>(
      'SELECT count(*)::text AS rows FROM usage_records WHERE org_id = $1',
      [target.org],
    );
    log(`${target.name} org ${target.org}: ${share[0]!.rows} rows`);
    for (const item of await cases(db, target.org, now)) {
      const { ms, plan } = await measure(db, item.statement);
      const file = `${target.name}-${item.name.replace(/[^a-z0-9]+/gi, '-').replace(/-$/, '')}.txt`;
      await writeFile(
        path.join(plansDir, file),
        `-- ${item.name} (${item.source}), ${target.org}\n${item.statement.sql}\n-- params: ${JSON.stringify(item.statement.params).slice(0, 300)}\n\n${plan.join('\n')}\n`,
      );
      results.push({
        org: target.name,
        name: item.name,
        source: item.source,
        ms,
        plan: keyLines(plan),
      });
      log(`${target.name} | ${item.name} | ${ms.toFixed(2)} ms | ${keyLines(plan)}`);
    }
  }
  // Retention: what `gw usage prune` reads to describe (and archive) the oldest month.
  const { rows: oldest } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'usage_records'::regclass AND c.relname ~ '^usage_records_\\d{4}_\\d{2}$'
      ORDER BY 1 LIMIT 1`,
  );
  const describe = {
    sql: `SELECT count(*)::text AS rows, count(DISTINCT org_id)::text AS orgs,
            COALESCE(sum(wallet_cost), 0)::numeric(30, 12)::text AS wallet_cost
       FROM "${oldest[0]!.name}"`,
    params: [],
  };
  const retention = await measure(db, describe);
  await writeFile(
    path.join(plansDir, 'retention-describe-month.txt'),
    `${describe.sql}\n\n${retention.plan.join('\n')}\n`,
  );
  log(
    `retention describe ${oldest[0]!.name} | ${retention.ms.toFixed(0)} ms | ${keyLines(retention.plan)}`,
  );
  const insert = await insertCost(db, now);
  log(
    `writer statement, ${INSERT_BATCH}-row batch: median ${insert.ms.toFixed(1)} ms (${insert.rowsPerSecond} rows/s)`,
  );
  console.log('\n| org | query | source | median ms | plan |');
  console.log('|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.org} | ${r.name} | ${r.source} | ${r.ms.toFixed(2)} | ${r.plan} |`);
  }
  console.log(
    `| all | retention describe month | src/ledger/retention.ts | ${retention.ms.toFixed(0)} | ${keyLines(retention.plan)} |`,
  );
  console.log(
    `| all | writer insert, ${INSERT_BATCH} rows | src/ledger/postgres-usage-sink.ts | ${insert.ms.toFixed(1)} | ${insert.rowsPerSecond} rows/s |`,
  );
  await db.end();
}

await main();
