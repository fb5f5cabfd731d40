// The messages protocol's requests: path, headers, and the protocol version header.

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
 * Whether a messages-protocol body asks the vendor to write its prompt cache: a
 * `cache_control` member anywhere in it (the top level, tools, system blocks, content blocks,
 * nested tool results). A walk of the parsed body, so no spelling of the name in the JSON
 * text escapes it (decision 324).
 */
export function asksForPromptCache(body: unknown): boolean {
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
    } else {
      if (Object.hasOwn(value, 'cache_control')) return true;
      for (const member of Object.values(value)) pending.push(member);
    }
  }
  return false;
}
