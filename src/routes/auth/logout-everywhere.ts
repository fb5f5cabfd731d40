// POST /auth/logout-everywhere: ends every session of the signed-in user, this one included,
// on every instance at once (src/accounts/user-sessions.ts), and clears the cookie. It names
// no user: a user can end only their own sessions.
import { z } from 'zod';
import { endEverySession } from '../../accounts/user-sessions.js';
import { noStoreJsonHeaders } from '../../http/respond.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';

export const logoutEverywhereRoute = declareRoute({
  method: 'POST',
  path: '/auth/logout-everywhere',
  summary: "Signs out of every one of the user's dashboard sessions, on every browser",
  caller: { kind: 'session', unverified: 'allowed' },
  responses: {
    200: {
      description: 'signed out everywhere',
      schema: z.object({ signed_out: z.literal(true), sessions_ended: z.number().int() }),
    },
  },
  async handler({ caller, response }, deps: AccountDeps) {
    const { db, sessions } = deps.accounts;
    const ended = await endEverySession(db, sessions, caller.user.id);
    response.writeHead(200, { ...noStoreJsonHeaders, 'set-cookie': sessions.clearingCookie() });
    response.end(JSON.stringify({ signed_out: true, sessions_ended: ended?.ended.length ?? 0 }));
  },
});
