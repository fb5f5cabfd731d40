// GET /dashboard/api/orgs/{org_id}/overview (any member): the organization at a glance for the
// dashboard's overview page — this calendar month's spend against the org cap, the wallet,
// requests and tokens, the top models and product users by cost — and how many apps and
// connections it has. From the usage rollups, the live wallet and two counts, never a scan of
// the ledger.
import { OVERVIEW_TOP, orgOverview } from '../../admin/overview.js';
import type { WalletService } from '../../billing/wallets.js';
import type { DbPool } from '../../db/pool.js';
import { declareRoute } from '../framework/declaration.js';
import { overviewSchema } from './answers.js';
import { inOrg } from './schemas.js';

/** The overview as answered, its top lists at most OVERVIEW_TOP long (for /openapi.json). */
const boundedOverviewSchema = overviewSchema.extend({
  top_models: overviewSchema.shape.top_models.max(OVERVIEW_TOP),
  top_product_users: overviewSchema.shape.top_product_users.max(OVERVIEW_TOP),
});

export const overviewRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/overview',
  summary: "This month's spend against the org cap, wallet, requests, top models and users",
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  responses: { 200: { description: 'the overview', schema: boundedOverviewSchema } },
  async handler(
    { caller },
    deps: { readonly db: DbPool; readonly wallets: Pick<WalletService, 'liveBalance'> },
  ) {
    return await orgOverview(deps.db, deps.wallets, caller.org.id);
  },
});
