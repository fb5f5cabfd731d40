// GET /auth/session: who is signed in, and their organizations (the dashboard's first call).
import { declareRoute } from '../framework/declaration.js';
import { signedInView } from './signed-in.js';
import { signedInSchema } from './answers.js';

export const sessionRoute = declareRoute({
  method: 'GET',
  path: '/auth/session',
  summary: 'The signed-in user and their organizations',
  caller: { kind: 'session' },
  responses: { 200: { description: 'the signed-in user', schema: signedInSchema } },
  handler({ caller: { user } }) {
    return signedInView(user);
  },
});
