// The answer of "made by your account recently" (GET /dashboard/api/user/made-recently): zod and
// other answers alone, read by the dashboard as types (web/dashboard/src/made-recently.tsx;
// test/dashboard-types.test.ts).
import { z } from 'zod';
import { roleSchema } from './answers.js';

/** What the review lists (MADE_KINDS, src/accounts/made-by-account.ts). */
export const madeKindSchema = z.enum([
  'oauth_approval',
  'api_key',
  'service_key',
  'invitation',
  'oauth_client',
  'webhook_endpoint',
  'member',
]);

/** One thing the account made that still works, and the route that revokes it. */
export const madeItemSchema = z.object({
  kind: madeKindSchema,
  id: z
    .string()
    .describe(
      'the app connection (oauth_approval), the key, the invitation, the OAuth client (its client_id), the webhook endpoint, or the member (their user id; one member is listed in each organization you let them in)',
    ),
  org_id: z.string(),
  org_name: z.string(),
  your_role: roleSchema.describe('your role in that organization now'),
  created_at: z.string(),
  made_as: z
    .enum(['created', 'rotated', 'approved', 'invited', 'redirected', 'joined', 'raised'])
    .describe(
      'rotated: an API key you made by rotating another, or an OAuth client whose secret you rotated (and did not register); redirected: a webhook endpoint someone else made whose address you changed, while it still sends there; joined: a member who joined through your invitation, still a member; raised: a member whose role you raised, while they still hold the role you gave (the newer of the two when both)',
    ),
  app_id: z.string().nullable().describe("a key's, an approval's or an OAuth client's app"),
  app_name: z.string().nullable(),
  app_org_name: z
    .string()
    .nullable()
    .describe("an approval's app's own organization (who made the app); null for the others"),
  name: z
    .string()
    .nullable()
    .describe(
      "the key's name, the connection's, the OAuth client's, the invited e-mail, the webhook endpoint's description, or the member's e-mail",
    ),
  key_hint: z.string().nullable().describe("a key's hint, or an OAuth client's secret hint"),
  client_name: z.string().nullable().describe('the OAuth client the approval was given to'),
  invited_role: roleSchema.nullable().describe('the role an invitation offers'),
  url: z
    .string()
    .nullable()
    .describe(
      "a webhook endpoint's URL, where your role there may read the organization's endpoints (admin); else null",
    ),
  given_role: roleSchema
    .nullable()
    .describe(
      "the role you gave a member: their invitation's (joined), or the one you raised them to (raised); null for the other kinds",
    ),
  member_role: roleSchema
    .nullable()
    .describe("a member's role there now; null for the other kinds"),
  via_email: z
    .string()
    .nullable()
    .describe(
      'a member let in or raised by a member you let in or raised (or further on): the e-mail of the one who did it; null for what you did yourself and the other kinds',
    ),
  revoke_method: z.enum(['POST', 'DELETE']),
  revoke_path: z
    .string()
    .describe(
      'send `revoke_method` to it (with the CSRF token) to revoke the item: the route that revokes a key, a connected app or an invitation, deletes an OAuth client (registered or rotated by you) or a webhook endpoint, or removes a member from the organization',
    ),
  can_revoke: z
    .boolean()
    .describe(
      'your role there allows that route: a connected app takes a member, every other kind an admin (an owner invitation, or removing a member who is an owner, an owner)',
    ),
});

/** The review: what the account made since `since` that still works, newest first. */
export const madeRecentlySchema = z.object({
  since: z.string(),
  password_reset_at: z
    .string()
    .nullable()
    .describe('your latest password reset by e-mail link since `since`, or null'),
  data: z.array(madeItemSchema),
  truncated: z.boolean(),
});
