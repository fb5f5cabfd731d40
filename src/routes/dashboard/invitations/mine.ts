// GET /dashboard/api/user/invitations: the pending invitations addressed to the signed-in
// user's e-mail, from any organization, oldest first. Where gw sends e-mail (it verifies
// addresses), an account that has not proved its address sees none: whoever signed up first
// with a newcomer's address would read who invited them, to which organization, as what
// (decision 411). Once the address is verified they are listed, to accept or decline.
import { invitationView, listInvitationsFor } from '../../../accounts/invitations.js';
import type { AccountMail } from '../../../accounts/account-mail.js';
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import { pageOfQuery } from '../../framework/query.js';
import { pageOf } from '../answers.js';
import { invitationSchema } from './answers.js';

export const myInvitationsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/user/invitations',
  summary: 'The pending invitations to your e-mail, to accept or decline',
  caller: { kind: 'session' },
  query: pageQuerySchema,
  responses: {
    200: { description: 'pending invitations, oldest first', schema: pageOf(invitationSchema) },
  },
  errors: ['gw_invalid_request'],
  async handler(
    { query, caller },
    deps: { readonly db: DbPool; readonly accounts: { readonly mail: AccountMail | null } },
  ) {
    const page = pageOfQuery(query);
    if (isGwError(page)) return page;
    if (deps.accounts.mail !== null && !caller.user.emailVerified) {
      return { data: [], next_cursor: null };
    }
    const { rows, nextCursor } = await listInvitationsFor(deps.db, caller.user.email, page);
    const now = Date.now();
    return { data: rows.map((row) => invitationView(row, now)), next_cursor: nextCursor };
  },
});
