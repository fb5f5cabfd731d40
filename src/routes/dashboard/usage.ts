// GET /dashboard/api/orgs/{org_id}/usage?group_by=day|model|connection|product_user&from&to:
// the organization's requests, tokens (and of the prompt, what the cache read and wrote), web
// searches and cost per group, for the dashboard's plots (any member). Read from the rollups
// the usage writer keeps (product users: whole months from the monthly one,
// src/ledger/product-user-rollups.ts), never a scan of the ledger: src/admin/usage.ts, which
// `gw usage show` answers with too.
import type { z } from 'zod';
import { usageQuery, usageRequest, usageSummary } from '../../admin/usage.js';
import type { DbPool } from '../../db/pool.js';
import { isGwError } from '../../errors.js';
import { USAGE_GROUPS } from '../../ledger/usage-rollups.js';
import type { Holds, SameLiterals } from '../answers.js';
import { usageSchema, type usageGroupSchema } from './answers.js';
import { inOrg } from './schemas.js';
import { declareRoute } from '../framework/declaration.js';

/** The groups answered are those the rollups are read by. */
type _GroupsAnswered = Holds<
  SameLiterals<z.output<typeof usageGroupSchema>, (typeof USAGE_GROUPS)[number]>
>;

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
