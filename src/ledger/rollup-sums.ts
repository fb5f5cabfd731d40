// The columns every usage rollup sums (migrations 014, 042, 051): the usage writer's upserts
// and the product-user readers name them from this one list.
export const ROLLUP_SUMS = [
  'requests',
  'input_tokens',
  'output_tokens',
  'total_tokens',
  'sell_cost_nano',
  'wallet_cost_nano',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'cache_read_tokens',
  'web_search_requests',
] as const;
