// Request headers several routes' declarations share (for /openapi.json); the answers' building
// blocks are in answers.ts.
import { z } from 'zod';
import { MAX_EXTERNAL_USER_ID_CHARS } from '../product-users/limits.js';

/** The headers of an inference request that name its product user (for /openapi.json). */
export const attributionHeaders = z.object({
  'X-GW-External-User-ID': z
    .string()
    .max(MAX_EXTERNAL_USER_ID_CHARS)
    .optional()
    .describe(
      'your id of the product user (printable ASCII; or send `user`, `metadata.external_user_id`)',
    ),
  'X-GW-Legacy-Errors': z
    .literal('true')
    .optional()
    .describe(
      '`true`: the allowance refusal names the legacy code gw_product_user_credits_insufficient',
    ),
});

/** The messages protocol's version header (for /openapi.json). */
export const vendorVersionHeader = z.object({
  'vendor-version': z
    .string()
    .optional()
    .describe(
      "the messages protocol's version (`2023-06-01`); on the model routes: its model objects",
    ),
});
