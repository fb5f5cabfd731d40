// Maps a vendor's error answer to the gateway's error. Vendor bodies are not forwarded: they
// can echo request content. Only a short, redacted vendor message is kept for 4xx answers
// that the client can act on.
import { gwError, type GwError } from '../../errors.js';

const SECRET_LIKE = /\b[A-Za-z]{2,8}[-_][A-Za-z0-9_-]{12,}\b/g;
const MAX_VENDOR_MESSAGE = 300;

function vendorMessage(bodyText: string): string | undefined {
  try {
    const parsed = JSON.parse(bodyText) as { error?: { message?: unknown } };
    const message = parsed.error?.message;
    if (typeof message !== 'string') return undefined;
    return message.replace(SECRET_LIKE, '[redacted]').slice(0, MAX_VENDOR_MESSAGE);
  } catch {
    return undefined;
  }
}

export function upstreamError(
  vendor: string,
  status: number,
  bodyText: string,
  retryAfter: string | undefined,
): GwError {
  if (status === 429) {
    return gwError('gw_upstream_rate_limited', `${vendor} rate-limited the request; retry later`, {
      headers: retryAfter !== undefined ? { 'retry-after': retryAfter } : {},
    });
  }
  if (status === 400 || status === 404 || status === 413 || status === 422) {
    const detail = vendorMessage(bodyText);
    return gwError(
      'gw_invalid_request',
      `${vendor} rejected the request (${status})${detail ? `: ${detail}` : ''}`,
    );
  }
  // 401/403 here mean the gateway's own vendor credentials are wrong: not the caller's fault,
  // and not one a retry mends until the operator does. `x-should-retry: false` tells the
  // official clients (openai, @anthropic-ai/sdk) not to retry it, as they would any 502. The
  // message says whose key it is (a BYOK credential's last attempt ends here too: decision 583),
  // so an app does not take the 401 for its own gw key.
  if (status === 401 || status === 403) {
    return gwError(
      'gw_upstream_error',
      `${vendor} answered ${status}: it refused the vendor key gw sent (the gateway operator's, ` +
        "or your organization's provider credential); a retry will not help until that key is " +
        'mended',
      { headers: { 'x-should-retry': 'false' } },
    );
  }
  return gwError('gw_upstream_error', `${vendor} answered ${status}`);
}
