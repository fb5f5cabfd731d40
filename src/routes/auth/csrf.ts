// GET /auth/csrf: the CSRF token of the caller's session, to send as X-CSRF-Token on writes.
import { declareRoute } from '../framework/declaration.js';
import { csrfTokenSchema } from './answers.js';

export const csrfRoute = declareRoute({
  method: 'GET',
  path: '/auth/csrf',
  summary: "The session's CSRF token: send it as X-CSRF-Token on every dashboard write",
  caller: { kind: 'session' },
  responses: { 200: { description: 'the token', schema: csrfTokenSchema } },
  answerCarriesSecret: true,
  handler({ caller }) {
    return { csrf_token: caller.session.csrfToken };
  },
});
