// The messages protocol's requests: path, headers, the protocol version header, and the cache
// writes a body asks for.
import type { PromptCacheWrite } from '../../catalog/models.js';

export const MESSAGES_PATH = '/v1/messages';
/** Sent upstream when the client did not name a protocol version. */
export const DEFAULT_MESSAGES_VERSION = '2023-06-01';

export function messagesHeaders(
  apiKey: string | undefined,
  version: string | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': version ?? DEFAULT_MESSAGES_VERSION,
  };
  if (apiKey !== undefined) headers['x-api-key'] = apiKey;
  return headers;
}

/**
 * The cache write a messages-protocol body may make the vendor bill: a `cache_control` member
 * anywhere in it (the top level, tools, system blocks, content blocks, nested tool results)
 * asks for one, kept an hour when its `ttl` is anything but five minutes (`"5m"`, the default).
 * A walk of the parsed body, so no spelling of the name in the JSON text escapes it (decision
 * 324).
 */
export function promptCacheWrite(body: unknown): PromptCacheWrite {
  let found: PromptCacheWrite = 'none';
  // Only containers are queued: a body of millions of scalars costs a glance at each.
  const pending: object[] = isContainer(body) ? [body] : [];
  for (let value = pending.pop(); value !== undefined; value = pending.pop()) {
    const members: readonly unknown[] = Array.isArray(value) ? value : Object.values(value);
    if (!Array.isArray(value) && Object.hasOwn(value, 'cache_control')) {
      const control = (value as { cache_control?: unknown }).cache_control;
      const ttl = isContainer(control) ? (control as { ttl?: unknown }).ttl : undefined;
      if (ttl !== undefined && ttl !== '5m') return 'write_1h';
      found = 'write';
    }
    for (const member of members) if (isContainer(member)) pending.push(member);
  }
  return found;
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}
