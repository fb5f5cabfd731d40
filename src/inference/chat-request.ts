// The chat-completions request as the gateway validates it. Unknown fields pass through to
// the vendor; only what the gateway itself relies on is checked here.
import { z } from 'zod';

/** The most choices (`n`) one request may ask for (the vendors' own limit). */
export const MAX_CHOICES = 128;
/** The roles the chat-completions API accepts; anything else is refused, as the vendor does. */
export const CHAT_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

const contentSchema = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))], {
  error: 'must be a string or an array of content parts (objects with a type)',
});

/**
 * A message as the vendors accept it: `content` is a string or an array of content parts. Only
 * an assistant message that carries tool_calls (or the older function_call) may leave it out
 * or null, and a `function` result may be null; every other message needs it. Other fields
 * pass through unchecked.
 */
const messageSchema = z
  .looseObject({
    role: z.enum(CHAT_ROLES),
    content: contentSchema.nullish(),
  })
  .superRefine((message, context) => {
    if (message.content !== undefined && message.content !== null) return;
    const callsTools =
      message.role === 'assistant' &&
      ((message.tool_calls !== undefined && message.tool_calls !== null) ||
        (message.function_call !== undefined && message.function_call !== null));
    if (callsTools || (message.role === 'function' && message.content === null)) return;
    context.addIssue({
      code: 'custom',
      path: ['content'],
      message:
        message.role === 'assistant'
          ? 'is required unless the message has tool_calls'
          : 'is required (a string or an array of content parts)',
    });
  });

export const chatCompletionRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  // Choices multiply the output: each is held for (MAX_CHOICES bounds the hold).
  n: z.number().int().min(1).max(MAX_CHOICES).nullish(),
  user: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).optional(),
});

export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
