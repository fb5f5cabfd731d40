// The messages-protocol request as the gateway validates it; other fields pass through.
import { z } from 'zod';
import { flatProfileFields } from '../product-users/attribution.js';

const contentSchema = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]);
/** The messages protocol has two turn roles (the system prompt is its own field). */
const turnRole = z.enum(['user', 'assistant']);

export const messagesRequestSchema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  messages: z.array(z.looseObject({ role: turnRole, content: contentSchema })).min(1),
  system: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]).optional(),
  stream: z.boolean().optional(),
  // metadata.user_id attributes the request like `user` (decision 36): the vendor's own type.
  // The product user's id and profile may also come as in chat completions (the gateway
  // reads and removes them; the vendor sees only user_id).
  metadata: z
    .looseObject({
      user_id: z.string().nullish().describe('your id of the product user the request is for'),
    })
    .optional()
    .describe(
      'user_id or external_user_id: your id of the product user; product_user: its display_name, email, metadata',
    ),
  tools: z.array(z.looseObject({ name: z.string() })).optional(),
  ...flatProfileFields,
});

export const countTokensRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: turnRole, content: contentSchema })).min(1),
  system: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]).optional(),
  tools: z.array(z.looseObject({ name: z.string() })).optional(),
});
