// The messages-protocol request as the gateway validates it; other fields pass through.
import { z } from 'zod';

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
  metadata: z
    .looseObject({
      user_id: z.string().nullish().describe('your id of the product user the request is for'),
    })
    .optional(),
  tools: z.array(z.looseObject({ name: z.string() })).optional(),
});

export const countTokensRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: turnRole, content: contentSchema })).min(1),
  system: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]).optional(),
  tools: z.array(z.looseObject({ name: z.string() })).optional(),
});
