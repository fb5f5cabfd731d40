-- Prompt caching priced apart (docs/decisions.md 324). Vendors bill the part of a prompt their
-- cache wrote or read at its own rate: vendor_a writes at 1.25× its input rate (five-minute
-- cache) and reads at 0.1×; vendor_b's cache is automatic, reads at 0.5× and writes at no
-- premium. A NULL rate is the model's input rate (what every prompt token was charged before).
ALTER TABLE models
  ADD COLUMN cache_write_cost_per_token  numeric(30, 18) CHECK (cache_write_cost_per_token >= 0),
  ADD COLUMN cache_read_cost_per_token   numeric(30, 18) CHECK (cache_read_cost_per_token >= 0),
  ADD COLUMN cache_write_price_per_token numeric(30, 18) CHECK (cache_write_price_per_token >= 0),
  ADD COLUMN cache_read_price_per_token  numeric(30, 18) CHECK (cache_read_price_per_token >= 0);

UPDATE models
   SET cache_write_cost_per_token = input_cost_per_token * 1.25,
       cache_read_cost_per_token = input_cost_per_token * 0.1,
       cache_write_price_per_token = input_price_per_token * 1.25,
       cache_read_price_per_token = input_price_per_token * 0.1
 WHERE vendor = 'vendor_a';

UPDATE models
   SET cache_read_cost_per_token = input_cost_per_token * 0.5,
       cache_read_price_per_token = input_price_per_token * 0.5
 WHERE vendor = 'vendor_b';

-- What each record's prompt cache wrote and read (parts of input_tokens). Adding a column with
-- a constant default rewrites no partition.
ALTER TABLE usage_records
  ADD COLUMN cache_write_tokens integer NOT NULL DEFAULT 0,
  ADD COLUMN cache_read_tokens integer NOT NULL DEFAULT 0;
