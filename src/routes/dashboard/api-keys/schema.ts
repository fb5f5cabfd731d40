// What the API-key routes take, and where they find their organization (the API-key objects:
// answers.ts).
import { z } from 'zod';
import { MAX_ROTATION_GRACE_S } from '../../../admin/api-keys.js';
import { MAX_REQUESTS_PER_MINUTE } from '../../../admin/api-key-rate-limits.js';
import { displayName, modelPolicySchema, rotationBody } from '../schemas.js';

/** A request-rate limit as written: an integer 1..1,000,000, or null for none. */
const requestsPerMinute = z
  .number()
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(MAX_REQUESTS_PER_MINUTE, `must be at most ${MAX_REQUESTS_PER_MINUTE}`)
  .nullable();

export const createApiKeyBody = z.strictObject({
  name: displayName.optional(),
  model_policy: modelPolicySchema.optional(),
  requests_per_minute: requestsPerMinute.optional(),
  product_user_requests_per_minute: requestsPerMinute.optional(),
});

/** A change of a key's limits: an absent field is kept, null clears it; at least one. */
export const updateApiKeyBody = z
  .strictObject({
    requests_per_minute: requestsPerMinute.optional(),
    product_user_requests_per_minute: requestsPerMinute.optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'name at least one limit to change');

export const rotateApiKeyBody = rotationBody(MAX_ROTATION_GRACE_S, '24 h', 0);

/** Routes under /dashboard/api/api-keys/{id} act on the key's organization. */
export const ofApiKey = { param: 'id', table: 'api_keys' } as const;
