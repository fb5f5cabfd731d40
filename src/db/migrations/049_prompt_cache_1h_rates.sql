-- One-hour prompt-cache writes priced apart (docs/decisions.md 324): vendor_a bills a write kept
-- an hour at 2× the input rate. 048 stays as it was first applied: a database records a
-- migration by its name, so one that ran 048 never runs it again. Some databases ran an edited
-- 048 that already added these columns: IF NOT EXISTS keeps this one right for both.
--
-- A cache rate left NULL is now the vendor's multiple of the model's input rate (the
-- provider's `promptCache`, src/providers), where the version that applied 048 read it as the
-- input rate. The rates 048 wrote into the vendor_a and vendor_b rows are the same multiples
-- and are left as they are: unsetting them here would have that version, still serving during
-- a rolling deploy, charge those models' cache reads and writes at the input rate.
ALTER TABLE models
  ADD COLUMN IF NOT EXISTS cache_write_1h_cost_per_token numeric(30, 18)
    CHECK (cache_write_1h_cost_per_token >= 0),
  ADD COLUMN IF NOT EXISTS cache_write_1h_price_per_token numeric(30, 18)
    CHECK (cache_write_1h_price_per_token >= 0);

-- Of each record's cache writes, those kept for an hour. A constant default rewrites no
-- partition.
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS cache_write_1h_tokens integer NOT NULL DEFAULT 0;
