// Migration 048 (prompt-cache rates) reached main in two versions: first with cache-write and
// cache-read rates only, the vendor's rates written into the vendor_a and vendor_b rows and
// NULL meaning the input's rate; then, edited in place, with one-hour write rates and NULL
// meaning the vendor's multiple. A database records a migration by its name only, so one that
// ran the first version never runs the second. Both must end with the schema the code reads,
// and with the rates the vendor's rule gives (decision 324).
import { describe, expect, it } from 'vitest';
import { migrate } from '../src/db/migrate.js';
import type { DbPool } from '../src/db/pool.js';
import { ModelCatalog } from '../src/catalog/models.js';
import { PROVIDERS } from '../src/providers/registry.js';
import { withDatabase } from './support/scratch-database.js';

/**
 * The schema and rows 048 left as it was first committed (7387944), 049 not yet run (the
 * migrations after it are independent of the two and stay applied).
 */
const FIRST_048 = `ALTER TABLE models
    DROP COLUMN IF EXISTS cache_write_1h_cost_per_token,
    DROP COLUMN IF EXISTS cache_write_1h_price_per_token;
  ALTER TABLE usage_records DROP COLUMN IF EXISTS cache_write_1h_tokens;
  UPDATE models
     SET cache_write_cost_per_token = input_cost_per_token * 1.25,
         cache_read_cost_per_token = input_cost_per_token * 0.1,
         cache_write_price_per_token = input_price_per_token * 1.25,
         cache_read_price_per_token = input_price_per_token * 0.1
   WHERE vendor = 'vendor_a';
  UPDATE models
     SET cache_write_cost_per_token = NULL, cache_write_price_per_token = NULL,
         cache_read_cost_per_token = input_cost_per_token * 0.5,
         cache_read_price_per_token = input_price_per_token * 0.5
   WHERE vendor = 'vendor_b';
  DELETE FROM schema_migrations WHERE name = '049_prompt_cache_1h_rates.sql'`;

async function expectCurrentSchema(db: DbPool): Promise<void> {
  const catalog = new ModelCatalog(db, PROVIDERS);
  await catalog.refresh();
  const haiku = catalog.get('vendor_a/claude-haiku-4-5')!;
  expect(haiku.price.cacheWrite1h.attoPerToken).toBe(2n * haiku.price.input.attoPerToken);
  expect(haiku.cost.cacheWrite1h.attoPerToken).toBe(2n * haiku.cost.input.attoPerToken);
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM information_schema.columns
      WHERE table_name = 'usage_records' AND column_name = 'cache_write_1h_tokens'`,
  );
  expect(rows[0]!.n).toBe(1);
  // Every cache rate of the seeded models is the vendor's multiple of the input rate, whether
  // 048 wrote it out or left it unset.
  const seeded = catalog.list().filter((model) => model.vendor === 'vendor_a');
  expect(seeded.length).toBeGreaterThan(0);
  for (const model of seeded) {
    for (const rates of [model.price, model.cost]) {
      const input = rates.input.attoPerToken;
      expect([rates.cacheWrite, rates.cacheWrite1h, rates.cacheRead]).toEqual([
        { attoPerToken: (input * 125n) / 100n },
        { attoPerToken: input * 2n },
        { attoPerToken: input / 10n },
      ]);
    }
  }
}

describe('migrating the prompt-cache rates', () => {
  it('brings a database that ran 048 as first committed to the schema the code reads', async () => {
    await withDatabase('prompt_cache_first', FIRST_048, async (db) => {
      await migrate(db);
      await expectCurrentSchema(db);
    });
  });

  it('leaves a database that ran the edited 048 with that schema', async () => {
    await withDatabase(
      'prompt_cache_edited',
      `DELETE FROM schema_migrations WHERE name = '049_prompt_cache_1h_rates.sql'`,
      async (db) => {
        await migrate(db);
        await expectCurrentSchema(db);
      },
    );
  });
});
