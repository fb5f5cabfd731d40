// The chat-completions request as the gateway validates it. Unknown fields pass through to
// the vendor; only what the gateway itself relies on is checked here.
import { z } from 'zod';
import { isJsonObject } from '../json-shapes.js';
import { flatProfileFields } from '../product-users/attribution.js';

/** The most choices (`n`) one request may ask for (the vendors' own limit). */
export const MAX_CHOICES = 128;
/** The roles the chat-completions API accepts; anything else is refused, as the vendor does. */
export const CHAT_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

const CONTENT_RULE = 'must be a string or an array of content parts (objects with a type)';

/**
 * What is wrong with a message's `content`, as the vendors accept it: a string or an array of
 * content parts. Only an assistant message that carries tool_calls (or the older
 * function_call) may leave it out or null, and a `function` result may be null; every other
 * message needs it.
 */
function contentProblem(message: Readonly<Record<string, unknown>>): string | undefined {
  const content = message.content;
  if (typeof content === 'string') return undefined;
  if (Array.isArray(content)) {
    for (const part of content as unknown[]) {
      if (!isJsonObject(part)) return CONTENT_RULE;
      if (typeof part.type !== 'string') return CONTENT_RULE;
    }
    return undefined;
  }
  if (content !== undefined && content !== null) return CONTENT_RULE;
  const callsTools =
    message.role === 'assistant' &&
    ((message.tool_calls !== undefined && message.tool_calls !== null) ||
      (message.function_call !== undefined && message.function_call !== null));
  if (callsTools || (message.role === 'function' && content === null)) return undefined;
  return message.role === 'assistant'
    ? 'is required unless the message has tool_calls'
    : 'is required (a string or an array of content parts)';
}

/**
 * The first message whose content the vendors would refuse, as `messages.N.content: rule`.
 * Checked after the schema, not inside it: a zod refinement on every message of every request
 * doubled the bytes a request promotes to the old generation (bench/RESULTS.md, 2026-11-26).
 */
export function messageContentProblem(
  messages: readonly Readonly<Record<string, unknown>>[],
): string | undefined {
  for (let index = 0; index < messages.length; index += 1) {
    const problem = contentProblem(messages[index]!);
    if (problem) return `messages.${index}.content: ${problem}`;
  }
  return undefined;
}

/** A message: its role checked here, its content by messageContentProblem. */
const messageSchema = z.looseObject({ role: z.enum(CHAT_ROLES) });

export const chatCompletionRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(messageSchema).min(1),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  // Choices multiply the output: each is held for (MAX_CHOICES bounds the hold).
  n: z.number().int().min(1).max(MAX_CHOICES).nullish(),
  user: z.string().optional().describe('your id of the product user the request is for'),
  metadata: z
    .record(z.string(), z.unknown())
    .nullish()
    .describe(
      'external_user_id: your id of the product user (as `user`); product_user: its display_name, email, metadata',
    ),
  tools: z.array(z.looseObject({ type: z.string() })).optional(),
  ...flatProfileFields,
});

export type ChatCompletionRequest = z.infer<typeof chatCompletionRequestSchema>;
