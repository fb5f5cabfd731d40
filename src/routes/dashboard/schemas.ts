// Request and response building blocks of the dashboard API.
import { z } from 'zod';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A display name: 1–200 characters of printable text. */
export const displayName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .refine(
    (value) => ![...value].some((char) => char.charCodeAt(0) < 0x20 || char === '\u007f'),
    'must not contain control characters',
  )
  .refine((value) => !LONE_SURROGATE.test(value), 'must not contain lone surrogates');

export const roleSchema = z.enum(['owner', 'admin', 'member', 'viewer']);

export const orgSummarySchema = z.object({ id: z.string(), name: z.string(), role: roleSchema });

export const dashboardUserSchema = z.object({
  id: z.string(),
  email: z.string(),
  personal_org_id: z.string(),
});

/** The envelope of every dashboard list: a page of rows and the cursor of the next page. */
export function pageOf<Row extends z.ZodType>(row: Row) {
  return z.object({ data: z.array(row), next_cursor: z.string().nullable() });
}

/** Routes under /dashboard/api/orgs/{org_id}/… act on that organization. */
export const inOrg = { param: 'org_id', table: 'organizations' } as const;
