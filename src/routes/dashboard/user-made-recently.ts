// GET /dashboard/api/user/made-recently[?since=…]: what the signed-in account made that still
// works (decision 419), in every organization it is a member of: OAuth approvals it gave, API
// keys and service keys it created (or rotated in), since `since` (default: 30 days ago; at
// most 365 days back), newest first, at most 200. A password reset ends the account's
// sessions, not these: after one, this is the list to read, and to revoke from. Each item
// names the route that revokes it and whether the account's role there allows it — that
// route's own role rule, read from its declaration, so the two cannot disagree (the revoke
// itself is that route, checked again there).
import { z } from 'zod';
import { readMadeByAccount, type MadeByAccountRow } from '../../accounts/made-by-account.js';
import { roleAtLeast, ROLES } from '../../accounts/users.js';
import type { DbPool } from '../../db/pool.js';
import { MAX_PAGE_LIMIT } from '../../db/pages.js';
import { declareRoute } from '../framework/declaration.js';
import { timestamp } from '../product-users/lookup.js';
import { revokeApiKeyRoute } from './api-keys/revoke.js';
import { revokeConnectedAppRoute } from './connected-apps/revoke.js';
import { revokeServiceKeyRoute } from './service-keys/revoke.js';

const DAY_MS = 86_400_000;
/** The window when none is asked for. */
export const DEFAULT_WINDOW_DAYS = 30;
/** The furthest back a review reaches. */
export const MAX_WINDOW_DAYS = 365;

/** Each kind's revoke route: its path (with the item's id) and the least role it takes. */
const revokers = {
  api_key: revokeApiKeyRoute,
  service_key: revokeServiceKeyRoute,
  oauth_approval: revokeConnectedAppRoute,
} as const;

function revokeOf(row: MadeByAccountRow): { path: string; allowed: boolean } {
  const route = revokers[row.kind];
  return {
    path: route.path.replace(/\{[a-z_]+\}/, encodeURIComponent(row.id)),
    allowed: roleAtLeast(row.role, route.caller.role),
  };
}

const madeItemSchema = z.object({
  kind: z.enum(['oauth_approval', 'api_key', 'service_key']),
  id: z.string().describe('the app connection (oauth_approval) or the key'),
  org_id: z.string(),
  org_name: z.string(),
  your_role: z.enum(ROLES).describe('your role in that organization now'),
  created_at: z.string(),
  made_as: z
    .enum(['created', 'rotated', 'approved'])
    .describe('rotated: an API key you made by rotating another'),
  app_id: z.string().nullable(),
  app_name: z.string().nullable(),
  app_org_name: z
    .string()
    .nullable()
    .describe("an approval's app's own organization (who made the app); null for keys"),
  name: z.string().nullable().describe("the key's name, or the connection's"),
  key_hint: z.string().nullable(),
  client_name: z.string().nullable().describe('the OAuth client the approval was given to'),
  revoke_path: z.string().describe('POST it (with the CSRF token) to revoke the item'),
  can_revoke: z
    .boolean()
    .describe(
      'your role there allows that route: an API key or service key takes an admin, a connected app a member',
    ),
});

function madeItemView(row: MadeByAccountRow): z.infer<typeof madeItemSchema> {
  const revoke = revokeOf(row);
  return {
    kind: row.kind,
    id: row.id,
    org_id: row.org_id,
    org_name: row.org_name,
    your_role: row.role,
    created_at: row.created_at.toISOString(),
    made_as: row.made_as,
    app_id: row.app_id,
    app_name: row.app_name,
    app_org_name: row.app_org_name,
    name: row.name,
    key_hint: row.key_hint,
    client_name: row.client_name,
    revoke_path: revoke.path,
    can_revoke: revoke.allowed,
  };
}

export const userMadeRecentlyRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/user/made-recently',
  summary:
    'What your account made that still works, in every organization you are in: OAuth approvals, API keys, service keys (review after a password reset)',
  caller: { kind: 'session' },
  query: z.object({
    since: timestamp
      .optional()
      .refine(
        (text) => text === undefined || Date.parse(text) >= Date.now() - MAX_WINDOW_DAYS * DAY_MS,
        `must be within the last ${MAX_WINDOW_DAYS} days`,
      )
      .refine(
        (text) => text === undefined || Date.parse(text) <= Date.now(),
        'must not be in the future',
      ),
  }),
  responses: {
    200: {
      description: 'what your account made since `since` that still works, newest first',
      schema: z.object({
        since: z.string(),
        password_reset_at: z
          .string()
          .nullable()
          .describe('your latest password reset by e-mail link since `since`, or null'),
        data: z.array(madeItemSchema),
        truncated: z
          .boolean()
          .describe(
            `more than ${MAX_PAGE_LIMIT} items: the newest are listed; revoke and read again`,
          ),
      }),
    },
  },
  errors: ['gw_invalid_request'],
  async handler({ query, caller }, deps: { readonly db: DbPool }) {
    const since = new Date(
      query.since === undefined
        ? Date.now() - DEFAULT_WINDOW_DAYS * DAY_MS
        : Date.parse(query.since),
    );
    const made = await readMadeByAccount(deps.db, caller.user.id, since, MAX_PAGE_LIMIT);
    return {
      since: since.toISOString(),
      password_reset_at: made.passwordResetAt?.toISOString() ?? null,
      data: made.rows.map(madeItemView),
      truncated: made.truncated,
    };
  },
});
