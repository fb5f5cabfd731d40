// GET /dashboard/api/orgs/{org_id}/usage?group_by=day|model|connection|product_user&from&to:
// the organization's requests, tokens (and of the prompt, what the cache read and wrote), web
// searches and cost per group, for the dashboard's plots (any member). Read from the rollups
// the usage writer keeps (product users: whole months from the monthly one,
// src/ledger/product-user-rollups.ts), never a scan of the ledger: src/admin/usage.ts, which
// `gw usage show` answers with too.
import { z } from 'zod';
import { usageQuery, usageRequest, usageSummary } from '../../admin/usage.js';
import type { DbPool } from '../../db/pool.js';
import { isGwError } from '../../errors.js';
import { USAGE_GROUPS } from '../../ledger/usage-rollups.js';
import { inOrg } from './schemas.js';
import { declareRoute } from '../framework/declaration.js';

const money = z.string().describe('12-digit decimal string');

/** Requests, tokens and searches are counted: whole numbers. */
const count = z.number().int();

const usageSchema = z.object({
  group_by: z.enum(USAGE_GROUPS),
  from: z.string(),
  to: z.string(),
  data: z.array(
    z.object({
      key: z.string().nullable(),
      currency: z.string(),
      requests: count,
      input_tokens: count,
      output_tokens: count,
      total_tokens: count,
      cache_write_tokens: count.describe(
        'of input_tokens, those the prompt cache wrote (five-minute and one-hour)',
      ),
      cache_write_1h_tokens: count.describe(
        'of cache_write_tokens, those written to be kept an hour',
      ),
      cache_read_tokens: count.describe('of input_tokens, those read from the prompt cache'),
      web_search_requests: count.describe("searches the vendor's web search tool made"),
      cost: money,
      wallet_cost: money,
    }),
  ),
});

export const usageRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/usage',
  summary:
    'Requests, tokens and cost per day, model, connection or product user (top spenders first)',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  query: usageQuery,
  responses: {
    200: { description: 'usage rows, one per group and currency', schema: usageSchema },
  },
  errors: ['gw_invalid_request'],
  async handler({ query, caller }, deps: { readonly db: DbPool }) {
    const request = usageRequest(query);
    if (isGwError(request)) return request;
    return await usageSummary(deps.db, caller.org.id, request);
  },
});
