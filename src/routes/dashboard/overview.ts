// GET /dashboard/api/orgs/{org_id}/overview (any member): the organization at a glance for the
// dashboard's overview page — this calendar month's spend against the org cap, the wallet,
// requests and tokens, the top models and product users by cost — and how many apps and
// connections it has. From the usage rollups, the live wallet and two counts, never a scan of
// the ledger.
import { z } from 'zod';
import { OVERVIEW_TOP, orgOverview } from '../../admin/overview.js';
import type { WalletService } from '../../billing/wallets.js';
import type { DbPool } from '../../db/pool.js';
import { declareRoute } from '../framework/declaration.js';
import { decimalString } from '../schemas.js';
import { inOrg } from './schemas.js';

const overviewSchema = z.object({
  org_id: z.string(),
  currency: z.string(),
  /** The calendar month (UTC) the figures cover; org caps run on it. */
  period_start: z.string(),
  period_end: z.string(),
  /** Requests' cost at sell prices: what the org cap counts. */
  spent_this_period: decimalString,
  /** What the wallet paid (requests a provider credential served cost it nothing). */
  wallet_cost_this_period: decimalString,
  requests_this_period: z.number().int(),
  tokens_this_period: z.object({
    input: z.number().int(),
    output: z.number().int(),
    total: z.number().int(),
  }),
  /** null: no org cap. `remaining` is the amount less this period's spend, at least 0. */
  org_cap: z
    .object({ cap_rule_id: z.string(), amount: decimalString, remaining: decimalString })
    .nullable(),
  wallet: z.object({ balance: decimalString, reserved: decimalString, available: decimalString }),
  top_models: z
    .array(
      z.object({
        model: z.string(),
        requests: z.number().int(),
        total_tokens: z.number().int(),
        cost: decimalString,
      }),
    )
    .max(OVERVIEW_TOP),
  top_product_users: z
    .array(
      z.object({
        product_end_user_id: z.string(),
        app_id: z.string(),
        external_user_id: z.string(),
        display_name: z.string(),
        requests: z.number().int(),
        cost: decimalString,
      }),
    )
    .max(OVERVIEW_TOP),
  /** Apps that are not deleted, and their own connections by status (not OAuth ones). */
  counts: z.object({
    apps: z.number().int(),
    active_connections: z.number().int(),
    revoked_connections: z.number().int(),
  }),
});

export const overviewRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/overview',
  summary: "This month's spend against the org cap, wallet, requests, top models and users",
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  responses: { 200: { description: 'the overview', schema: overviewSchema } },
  async handler(
    { caller },
    deps: { readonly db: DbPool; readonly wallets: Pick<WalletService, 'liveBalance'> },
  ) {
    return await orgOverview(deps.db, deps.wallets, caller.org.id);
  },
});
