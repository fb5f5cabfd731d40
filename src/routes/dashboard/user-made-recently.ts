// GET /dashboard/api/user/made-recently[?since=…]: what the signed-in account made that still
// works (decisions 419, 421), in every organization it is a member of: OAuth approvals it gave,
// API keys and service keys it created (or rotated in), invitations it sent that are pending,
// OAuth clients it registered or whose secret it rotated, webhook endpoints it created or
// pointed to another address, members who joined through its invitation or whose role it
// raised (decision 477), since `since` (default: 30 days ago; at most 365 days back),
// newest first, at most 200. A password reset ends the account's sessions, not these: after
// one, this is the list to read, and to revoke from. Each item names the route that revokes it
// and whether the account's role there allows it — that route's own role rule, read from its
// declaration, so the two cannot disagree (the revoke itself is that route, checked again
// there); a member's is removing them.
import { z } from 'zod';
import {
  readMadeByAccount,
  type MADE_KINDS,
  type MadeByAccountRow,
} from '../../accounts/made-by-account.js';
import { canInvite } from '../../accounts/invitations.js';
import { canRemoveMember } from '../../accounts/members.js';
import { roleAtLeast } from '../../accounts/users.js';
import type { DbPool } from '../../db/pool.js';
import { MAX_PAGE_LIMIT } from '../../db/pages.js';
import { declareRoute } from '../framework/declaration.js';
import { timestamp } from '../product-users/lookup.js';
import { revokeApiKeyRoute } from './api-keys/revoke.js';
import type { Holds, SameLiterals } from '../answers.js';
import {
  madeItemSchema,
  madeRecentlySchema,
  type madeKindSchema,
} from './made-recently-answers.js';
import { revokeConnectedAppRoute } from './connected-apps/revoke.js';
import { revokeInvitationRoute } from './invitations/revoke.js';
import { removeMemberRoute } from './members/remove.js';
import { deleteOAuthClientRoute } from './oauth-clients/delete.js';
import { revokeServiceKeyRoute } from './service-keys/revoke.js';
import { deleteWebhookRoute } from './webhooks/delete.js';
import { listWebhooksRoute } from './webhooks/list.js';

/** The kinds answered are those the account's review reads. */
type _KindsAnswered = Holds<
  SameLiterals<z.output<typeof madeKindSchema>, (typeof MADE_KINDS)[number]>
>;

const DAY_MS = 86_400_000;
/** The window when none is asked for. */
export const DEFAULT_WINDOW_DAYS = 30;
/** The furthest back a review reaches. */
export const MAX_WINDOW_DAYS = 365;
/**
 * How much further back a `since` is taken, and read from MAX_WINDOW_DAYS: the account page
 * sends "the last 365 days" reckoned on the browser's clock, which reaches the gateway later
 * (or skewed, or from a page left open); refused, its longest window would always fail.
 */
const WINDOW_SLACK_MS = DAY_MS;

/** Each kind's revoke route: its method, path (with the item's ids) and the least role it takes. */
const revokers = {
  api_key: revokeApiKeyRoute,
  service_key: revokeServiceKeyRoute,
  oauth_approval: revokeConnectedAppRoute,
  invitation: revokeInvitationRoute,
  oauth_client: deleteOAuthClientRoute,
  webhook_endpoint: deleteWebhookRoute,
  member: removeMemberRoute,
} as const;

/**
 * Its revoke route's method and path (with the item's ids), and whether the account's role
 * allows it: that route's declared role, and for an owner invitation the owner role its route
 * also asks; for a member, the rule removing another member keeps (an admin; an owner, an
 * owner). An OAuth client whose secret the account rotated is deleted too, not rotated again
 * with no grace: that rotation would be the same account's, listed again as made by it (the log
 * cannot tell it from an intruder's), and its one-time secret would need a place in the review.
 */
function revokeOf(row: MadeByAccountRow): {
  method: 'POST' | 'DELETE';
  path: string;
  allowed: boolean;
} {
  const route = revokers[row.kind];
  return {
    method: route.method as 'POST' | 'DELETE',
    path: route.path.replace(/\{([a-z_]+)\}/g, (_, param: string) =>
      encodeURIComponent(param === 'org_id' ? row.org_id : row.id),
    ),
    allowed:
      roleAtLeast(row.role, route.caller.role) &&
      (row.invited_role === null || canInvite(row.role, row.invited_role)) &&
      (row.member_role === null || canRemoveMember(row.role, row.member_role)),
  };
}

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
    invited_role: row.invited_role,
    // An endpoint's address is read by the role its list takes (admin): one the account created
    // may have been pointed since, by an admin, at an address that is itself a credential.
    url: roleAtLeast(row.role, listWebhooksRoute.caller.role) ? row.url : null,
    given_role: row.given_role,
    member_role: row.member_role,
    via_email: row.via_email,
    revoke_method: revoke.method,
    revoke_path: revoke.path,
    can_revoke: revoke.allowed,
  };
}

export const userMadeRecentlyRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/user/made-recently',
  summary:
    'What your account made that still works, in every organization you are in: OAuth approvals, API keys, service keys, pending invitations, OAuth clients, webhook endpoints, members you let in or raised (review after a password reset)',
  caller: { kind: 'session' },
  query: z.object({
    since: timestamp
      .optional()
      .refine(
        (text) =>
          text === undefined ||
          Date.parse(text) >= Date.now() - MAX_WINDOW_DAYS * DAY_MS - WINDOW_SLACK_MS,
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
      schema: madeRecentlySchema.extend({
        since: z
          .string()
          .describe(
            `where the window read starts: \`since\`, or ${MAX_WINDOW_DAYS} days ago for one up to a day before that`,
          ),
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
    const now = Date.now();
    const since = new Date(
      query.since === undefined
        ? now - DEFAULT_WINDOW_DAYS * DAY_MS
        : Math.max(Date.parse(query.since), now - MAX_WINDOW_DAYS * DAY_MS),
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
