// Measures the dashboard's usage query on an organization with a million usage rows.
// Fills usage_records for one org with generate_series through the usage sink's own
// statement (so the rollups are built exactly as the writer builds them), then times
// readUsageRollups for every grouping over 30 and 366 days. A measurement, not a test.
//
//   npm run build && node dist/bench/usage-rollups.js [--rows 1000000] [--days 90]
//   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gw_bench_usage)
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { ensureDatabase, migrate } from '../src/db/migrate.js';
import { createDbPool } from '../src/db/pool.js';
import { readUsageRollups, USAGE_GROUPS, withRollups } from '../src/ledger/usage-rollups.js';

const DAY_MS = 24 * 3600 * 1000;
const ORG = 'org_bench_usage';
const BATCH = 100_000;
const RUNS = 30;

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    days: { type: 'string', default: '90' },
  },
});
const rows = Number(values.rows);
const days = Number(values.days);
const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gw_bench_usage';

// Rows spread evenly over `days` ending now; 2,000 product users (1 in 10 requests has none),
// 8 models, 5 connections; costs that are not round.
const FILL = withRollups(`INSERT INTO usage_records (request_id, created_at, org_id, app_id,
    app_connection_id, api_key_id, product_user_id, model, vendor, route, stream, status,
    upstream_status, input_tokens, output_tokens, total_tokens, currency, sell_cost,
    vendor_cost, wallet_cost, reserved_amount, latency_ms)
  SELECT gen_random_uuid(), $3::timestamptz - (i % $4) * interval '1 day' - (i % 86400) * interval '1 second',
         '${ORG}', 'app_bench', 'conn_bench_' || (i / 11 % 5), 'key_bench',
         CASE WHEN i % 10 = 0 THEN NULL ELSE 'pu_bench_' || (i * 7919 % 2000) END,
         'vendor_b/model-' || (i / 3 % 8), 'vendor_b', 'system', false, 'completed', 200,
         100 + i % 50, 20 + i % 30, 120 + i % 50 + i % 30, 'USD',
         (i % 1000) * 0.000001234, (i % 1000) * 0.000001, 0, (i % 1000) * 0.000002, 5
    FROM generate_series($1::bigint, $2::bigint) AS i
  ON CONFLICT (request_id, created_at) DO NOTHING`);

async function main(): Promise<void> {
  await ensureDatabase(url);
  const db = createDbPool(url, 2);
  await migrate(db);
  for (const table of [
    'usage_records',
    'usage_rollups_daily',
    'usage_rollups_daily_product_users',
  ]) {
    await db.query(`DELETE FROM ${table} WHERE org_id = $1`, [ORG]);
  }
  const now = new Date();
  for (let day = 0; day <= days + 31; day += 28) {
    const month = new Date(now.getTime() - day * DAY_MS).toISOString().slice(0, 7);
    await db.query('SELECT gw_ensure_usage_partition($1::date)', [`${month}-01`]);
  }
  const fillStart = performance.now();
  for (let first = 1; first <= rows; first += BATCH) {
    await db.query(FILL, [first, Math.min(first + BATCH - 1, rows), now.toISOString(), days]);
  }
  const fillMs = performance.now() - fillStart;
  // What autovacuum does in a running system: the fill's upserts leave dead row versions.
  for (const table of [
    'usage_records',
    'usage_rollups_daily',
    'usage_rollups_daily_product_users',
  ]) {
    await db.query(`VACUUM ANALYZE ${table}`);
  }
  const counts = await db.query<{ records: string; by_model: string; by_user: string }>(
    `SELECT (SELECT count(*) FROM usage_records WHERE org_id = $1) AS records,
            (SELECT count(*) FROM usage_rollups_daily WHERE org_id = $1) AS by_model,
            (SELECT count(*) FROM usage_rollups_daily_product_users WHERE org_id = $1) AS by_user`,
    [ORG],
  );
  const { records, by_model: byModel, by_user: byUser } = counts.rows[0]!;
  console.log(
    `${records} usage rows (filled with rollups in ${(fillMs / 1000).toFixed(1)} s); rollup rows: ${byModel} by day/model/connection, ${byUser} by day/product user`,
  );
  console.log('| group_by | range | groups | median ms | p95 ms | max ms |');
  console.log('|---|---|---|---|---|---|');
  const to = new Date(Math.floor(now.getTime() / DAY_MS + 1) * DAY_MS);
  for (const rangeDays of [30, 366]) {
    for (const groupBy of USAGE_GROUPS) {
      const query = {
        orgId: ORG,
        groupBy,
        from: new Date(to.getTime() - rangeDays * DAY_MS),
        to,
        limit: groupBy === 'day' ? 1000 : 100,
      };
      for (let warm = 0; warm < 3; warm += 1) await readUsageRollups(db, query);
      const times: number[] = [];
      let groups = 0;
      for (let run = 0; run < RUNS; run += 1) {
        const start = performance.now();
        groups = (await readUsageRollups(db, query)).length;
        times.push(performance.now() - start);
      }
      times.sort((a, b) => a - b);
      const at = (q: number): string =>
        times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(2);
      console.log(
        `| ${groupBy} | ${rangeDays} d | ${groups} | ${at(0.5)} | ${at(0.95)} | ${times.at(-1)!.toFixed(2)} |`,
      );
    }
  }
  await db.end();
}

await main();
