// POST /auth/logout: ends the session (server-side) and clears the cookie.
import { z } from 'zod';
import { jsonHeaders } from '../../http/respond.js';
import { declareRoute } from '../framework/declaration.js';
import type { AccountDeps } from './deps.js';

export const logoutRoute = declareRoute({
  method: 'POST',
  path: '/auth/logout',
  summary: 'Signs out of the dashboard: the session ends on every instance at once',
  caller: { kind: 'session', unverified: 'allowed' },
  responses: {
    200: { description: 'signed out', schema: z.object({ signed_out: z.literal(true) }) },
  },
  async handler({ caller, response }, deps: AccountDeps) {
    await deps.accounts.sessions.destroy(caller.session);
    response.writeHead(200, {
      ...jsonHeaders,
      'set-cookie': deps.accounts.sessions.clearingCookie(),
    });
    response.end(JSON.stringify({ signed_out: true }));
  },
});
