// The answers of the sign-in routes (the signed-in user, their organizations, the review a
// password reset leaves): zod and other answers alone, read by the dashboard as types
// (web/dashboard/src/api.ts; test/dashboard-types.test.ts).
import { z } from 'zod';
import { dashboardUserSchema, orgSummarySchema } from '../dashboard/answers.js';

/**
 * The password reset whose review the account has not read or dismissed yet: the dashboard
 * shows a banner leading to "made by your account recently" in every browser until then.
 */
export const reviewAfterResetSchema = z
  .object({ password_reset_at: z.string() })
  .nullable()
  .describe(
    "the account's password reset by e-mailed link not yet reviewed (null: nothing to review)",
  );

export const signedInSchema = z.object({
  user: dashboardUserSchema,
  orgs: z.array(orgSummarySchema),
  review_after_reset: reviewAfterResetSchema,
});
