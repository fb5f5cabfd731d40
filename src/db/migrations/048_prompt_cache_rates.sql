-- Prompt caching priced apart (docs/decisions.md 324). Vendors bill the part of a prompt their
-- cache wrote or read at its own rate: vendor_a writes at 1.25× its input rate (five-minute
-- cache) or 2× (one-hour cache) and reads at 0.1×; vendor_b's cache is automatic, reads at
-- 0.5× and writes at no premium. A model's rate left NULL is its vendor's multiple of its
-- input rate (the provider's `promptCache`, src/providers): set one only where a model's
-- price departs from its vendor's rule.
ALTER TABLE models
  ADD COLUMN cache_write_cost_per_token     numeric(30, 18) CHECK (cache_write_cost_per_token >= 0),
  ADD COLUMN cache_write_1h_cost_per_token  numeric(30, 18)
    CHECK (cache_write_1h_cost_per_token >= 0),
  ADD COLUMN cache_read_cost_per_token      numeric(30, 18) CHECK (cache_read_cost_per_token >= 0),
  ADD COLUMN cache_write_price_per_token    numeric(30, 18)
    CHECK (cache_write_price_per_token >= 0),
  ADD COLUMN cache_write_1h_price_per_token numeric(30, 18)
    CHECK (cache_write_1h_price_per_token >= 0),
  ADD COLUMN cache_read_price_per_token     numeric(30, 18) CHECK (cache_read_price_per_token >= 0);

-- What each record's prompt cache wrote (of which for an hour) and read, parts of
-- input_tokens. Adding a column with a constant default rewrites no partition.
ALTER TABLE usage_records
  ADD COLUMN cache_write_tokens integer NOT NULL DEFAULT 0,
  ADD COLUMN cache_write_1h_tokens integer NOT NULL DEFAULT 0,
  ADD COLUMN cache_read_tokens integer NOT NULL DEFAULT 0;
