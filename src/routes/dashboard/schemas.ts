// Request building blocks of the dashboard API (its answers' blocks: answers.ts).
import { z } from 'zod';
import type { ROLES } from '../../accounts/users.js';
import type { ApiKeyInvalidation } from '../../auth/api-key-store.js';
import { MAX_MODEL_POLICY_PATTERNS, modelPatternProblem } from '../../catalog/model-policy.js';
import type { DbPool } from '../../db/pool.js';
import { displayNameProblem } from '../../text.js';
import type { Holds, SameLiterals } from '../answers.js';
import type { roleSchema } from './answers.js';

/** The roles answered are the accounts' own. */
type _RolesAnswered = Holds<SameLiterals<z.output<typeof roleSchema>, (typeof ROLES)[number]>>;

/** A display name: 1–200 characters of printable text (displayNameProblem). */
export const displayName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .superRefine((value, context) => {
    const problem = displayNameProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });

/**
 * The `{"grace_seconds"}` body of a rotation: how long the old secret keeps working, in whole
 * seconds from 0 to `maxSeconds` (`maxInWords` says that maximum in the message).
 */
export function rotationBody(maxSeconds: number, maxInWords: string, defaultSeconds: number) {
  return z.strictObject({
    grace_seconds: z
      .number()
      .int('must be a whole number')
      .min(0, 'must be at least 0')
      .max(maxSeconds, `must be at most ${maxSeconds} (${maxInWords})`)
      .default(defaultSeconds),
  });
}

/** Routes under /dashboard/api/orgs/{org_id}/… act on that organization. */
export const inOrg = { param: 'org_id', table: 'organizations' } as const;

/**
 * A money amount as the API takes it: a decimal string (checked by `parseAmountField`,
 * money.ts). `whenMissing` words the refusal of a required one left out (after `field: `);
 * without it, "is required". The declared schema is the same either way.
 */
export function amountInputOf(whenMissing?: string) {
  return (
    z
      // a JSON number is told the form
      .string({
        error: (issue) =>
          issue.input === undefined
            ? whenMissing
            : 'must be a decimal amount in a string, such as "10.00"',
      })
      .max(64, 'must be a decimal amount such as "10.00"')
      .describe('decimal amount, at most 12 fractional digits, at most 1000000')
  );
}

export const amountInput = amountInputOf();

/**
 * Patterns such as `vendor_b/*`, exact model ids, or `*` (API keys, provider credentials):
 * checked as every writer checks them (src/catalog/model-policy.ts); a credential's patterns
 * must also name its own provider (checked by the credential service).
 */
export const modelPolicySchema = z
  .array(
    z
      .string()
      .max(200, 'must be at most 200 characters')
      .superRefine((pattern, context) => {
        const problem = modelPatternProblem(pattern);
        if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
      }),
  )
  .min(1, 'must allow at least one model')
  .max(MAX_MODEL_POLICY_PATTERNS, `must have at most ${MAX_MODEL_POLICY_PATTERNS} patterns`);

/** What a route that stops API keys needs: Postgres, and every instance's key caches told. */
export interface KeyRevokingDeps {
  readonly db: DbPool;
  readonly apiKeys: ApiKeyInvalidation;
}
