// POST /dashboard/api/user/made-recently/reviewed: the signed-in user read what their account
// made after a password reset, or dismissed the banner asking them to (decision 513). Names the
// reset it was shown, so a reset since then keeps asking; a user clears only their own mark.
import { z } from 'zod';
import { markResetReviewed } from '../../accounts/review-after-reset.js';
import type { DbPool } from '../../db/pool.js';
import { reviewAfterResetView } from '../auth/signed-in.js';
import { reviewAfterResetSchema } from '../auth/answers.js';
import { declareRoute } from '../framework/declaration.js';
import { timestamp } from '../product-users/lookup.js';

export const userMadeRecentlyReviewedRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/user/made-recently/reviewed',
  summary:
    'Marks the review a password reset asked for as done: the banner leading to it is no longer shown in any browser',
  caller: { kind: 'session' },
  body: z.strictObject({
    password_reset_at: timestamp.describe(
      "the reset reviewed (`review_after_reset.password_reset_at` of the session's answer): a later reset stays to review",
    ),
  }),
  responses: {
    200: {
      description: 'the review that remains (null: none)',
      schema: z.object({ review_after_reset: reviewAfterResetSchema }),
    },
  },
  errors: ['gw_invalid_request'],
  async handler({ body, caller }, deps: { readonly db: DbPool }) {
    const remaining = await markResetReviewed(
      deps.db,
      caller.user.id,
      new Date(body.password_reset_at),
    );
    return { review_after_reset: reviewAfterResetView(remaining) };
  },
});
