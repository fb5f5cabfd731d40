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

/** A password changed: the other sessions it ended (this one goes on under a new id). */
export const passwordChangedSchema = z.object({
  password_changed: z.literal(true),
  other_sessions_ended: z.number().int(),
});

/** A password reset by e-mailed link: whose, and the sessions it ended. */
export const passwordResetSchema = z.object({
  password_reset: z.literal(true),
  email: z.string(),
  sessions_ended: z.number().int(),
});

/** Where gw sends e-mail, a sign-up's answer: the link (or a notice) is on its way. */
export const verificationSentSchema = z.object({
  email: z.string(),
  verification_sent: z.literal(true),
});

/** An address verified by its link. */
export const emailVerifiedSchema = z.object({ email_verified: z.literal(true), email: z.string() });

/** The session's CSRF token, sent back with every write. */
export const csrfTokenSchema = z.object({ csrf_token: z.string() });
