// A connected app as the organization that pays for it sees it: the OAuth connection, who
// made it, its token's request-rate limits, its monthly cap, and what it spent (this calendar
// month and in total, from the daily rollups). Zod and other answers alone, read by the
// dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';
import { decimalString } from '../../answers.js';

const spendSchema = z.object({
  cost: z.string().describe('sell cost, 12 fractional digits'),
  wallet_cost: z.string().describe('what the wallet paid'),
  requests: z.number().int(),
});

export const connectedAppSchema = z.object({
  id: z.string().describe('the app connection'),
  org_id: z.string(),
  app_id: z.string(),
  app_name: z.string(),
  oauth_client_id: z.string(),
  client_name: z.string().nullable(),
  status: z.enum(['active', 'revoked']),
  connected_by: z.string().nullable().describe('e-mail of the user who approved it'),
  token_issued_at: z.string().nullable().describe('null: the app never exchanged its code'),
  token_id: z
    .string()
    .nullable()
    .describe(
      "the app's token (an API-key id, kind oauth_token): PATCH /dashboard/api/api-keys/{id} changes its limits; null: none issued",
    ),
  requests_per_minute: z
    .number()
    .int()
    .nullable()
    .describe("the token's limit of requests per minute (null: none; docs/limits.md)"),
  product_user_requests_per_minute: z
    .number()
    .int()
    .nullable()
    .describe("the token's limit per product user (null: none)"),
  monthly_cap: decimalString
    .nullable()
    .describe(
      "the connection's monthly spending cap (its app-connection cap, set on the consent page or later); null: none. PUT/DELETE /dashboard/api/connections/{id}/cap change it",
    ),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  currency: z.string(),
  spend: z.object({ this_month: spendSchema, total: spendSchema }),
});
