// vendor_a (messages protocol) requests: path, headers, and the vendor's version header.

export const VENDOR_A_MESSAGES_PATH = '/v1/messages';
/** Sent upstream when the client did not name a protocol version. */
export const DEFAULT_VENDOR_A_VERSION = '2023-06-01';

export function vendorAHeaders(
  apiKey: string | undefined,
  version: string | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': version ?? DEFAULT_VENDOR_A_VERSION,
  };
  if (apiKey !== undefined) headers['x-api-key'] = apiKey;
  return headers;
}
