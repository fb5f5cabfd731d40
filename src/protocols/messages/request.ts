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
