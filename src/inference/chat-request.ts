// The chat-completions request as the gateway validates it. Unknown fields pass through to
// the vendor; only what the gateway itself relies on is checked here.
import { z } from 'zod';

/** The roles the chat-completions API accepts; anything else is refused, as the vendor does. */
export const CHAT_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

const messageSchema = z.looseObject({
  role: z.enum(CHAT_ROLES),
});

export const chatCompletionRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  user: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).optional(),
});

export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
