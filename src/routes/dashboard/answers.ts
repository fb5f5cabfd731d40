// The dashboard API's shared answer blocks (the page of every list, roles, the signed-in user) and
// the answers of its routes at the top of this folder: zod and other answers alone, read by the
// dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';
import { decimalString } from '../answers.js';

export const roleSchema = z.enum(['owner', 'admin', 'member', 'viewer']);

export const orgSummarySchema = z.object({ id: z.string(), name: z.string(), role: roleSchema });

export const dashboardUserSchema = z.object({
  id: z.string(),
  email: z.string(),
  personal_org_id: z.string(),
  email_verified: z
    .boolean()
    .describe(
      'the account proved its address (or the operator made it); while false and gw sends e-mail, only its own password, sign-out and a new verification link are writes it may make',
    ),
});

/** The envelope of every dashboard list: a page of rows and the cursor of the next page. */
export function pageOf<Row extends z.ZodType>(row: Row) {
  return z.object({ data: z.array(row), next_cursor: z.string().nullable() });
}

/** The wallet's alert, as its routes answer it (and `gw wallet alert` prints it). */
export const walletAlertSchema = z.object({
  org_id: z.string(),
  low_balance_threshold: decimalString.nullable(),
  currency: z.string(),
});

/** One entry of the audit log (and of the account's activity, with its organization). */
export const auditEntrySchema = z.object({
  id: z.string(),
  user_id: z.string(),
  email: z.string().nullable(),
  action: z.string(),
  object_type: z.string(),
  object_id: z.string(),
  details: z.record(z.string(), z.unknown()),
  created_at: z.string(),
});

/** One entry of the account's own activity, in whichever organization. */
export const activityEntrySchema = auditEntrySchema.extend({
  org_id: z.string(),
  org_name: z.string(),
});

/** Requests, tokens and searches are counted: whole numbers. */
const count = z.number().int();

/** The usage route's groups (USAGE_GROUPS, src/ledger/usage-rollups.ts). */
export const usageGroupSchema = z.enum(['day', 'model', 'connection', 'product_user']);

/** GET …/usage: one row per group and currency. */
export const usageSchema = z.object({
  group_by: usageGroupSchema,
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
      cost: z.string().describe('12-digit decimal string'),
      wallet_cost: z.string().describe('12-digit decimal string'),
      external_user_id: z
        .string()
        .nullable()
        .optional()
        .describe(
          "group_by=product_user only: the product user's id in its app (the external_user_id the app sent); null for requests with no product user, or a product user no longer on record",
        ),
      app_id: z
        .string()
        .nullable()
        .optional()
        .describe(
          "group_by=product_user only: the product user's app (external ids are unique within an app); null as external_user_id is",
        ),
    }),
  ),
});

/** GET …/overview (its route bounds the top lists). */
export const overviewSchema = z.object({
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
  top_models: z.array(
    z.object({
      model: z.string(),
      requests: z.number().int(),
      total_tokens: z.number().int(),
      cost: decimalString,
    }),
  ),
  top_product_users: z.array(
    z.object({
      product_end_user_id: z.string(),
      app_id: z.string(),
      external_user_id: z.string(),
      display_name: z.string(),
      requests: z.number().int(),
      cost: decimalString,
    }),
  ),
  /** Apps that are not deleted, and their own connections by status (not OAuth ones). */
  counts: z.object({
    apps: z.number().int(),
    active_connections: z.number().int(),
    revoked_connections: z.number().int(),
  }),
});

/** A routable model and its prices (GET /models, the dashboard's model list). */
export const modelSchema = z.object({
  id: z.string(),
  vendor: z.string(),
  currency: z.string(),
  input_price_per_million_tokens: decimalString,
  output_price_per_million_tokens: decimalString,
  /** Prompt tokens written to (for five minutes, an hour) and read from the vendor's prompt
   * cache (decision 324). */
  cache_write_price_per_million_tokens: decimalString,
  cache_write_1h_price_per_million_tokens: decimalString,
  cache_read_price_per_million_tokens: decimalString,
  /** One search by the vendor's web search server tool; null: gw takes none (decision 327). */
  web_search_price_per_search: decimalString.nullable(),
  max_output_tokens: z.number().int(),
  supports_tools: z.boolean(),
});
