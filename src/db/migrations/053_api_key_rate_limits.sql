-- Request rate limits of an API key (docs/decisions.md 344): all requests made with the key,
-- and each product user attributed through it, per minute. NULL is unlimited (every existing
-- key, and every OAuth token: they cannot be set for those yet).
ALTER TABLE api_keys
  ADD COLUMN requests_per_minute integer
    CHECK (requests_per_minute BETWEEN 1 AND 1000000),
  ADD COLUMN product_user_requests_per_minute integer
    CHECK (product_user_requests_per_minute BETWEEN 1 AND 1000000);
