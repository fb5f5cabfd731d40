// The native messages protocol, served by vendor_a: the body passes through with the vendor's
// model name (and a lowered max_tokens under limit_output).
import type { UpstreamExchange } from '../exchange.js';
import { upstreamError } from '../upstream-errors.js';
import { VendorAMessagesRelay } from './messages-relay.js';
import { VENDOR_A_MESSAGES_PATH, vendorAHeaders } from './request.js';
import { readVendorAUsage } from './usage.js';

export interface MessagesExchangeInput {
  readonly body: Record<string, unknown>;
  readonly upstreamModel: string;
  readonly maxTokens: number;
  readonly version: string | undefined;
}

export function vendorAMessagesExchange(input: MessagesExchangeInput): UpstreamExchange {
  return {
    vendorLabel: 'vendor_a',
    path: VENDOR_A_MESSAGES_PATH,
    headersFor: (apiKey) => vendorAHeaders(apiKey, input.version),
    body: JSON.stringify({
      ...input.body,
      model: input.upstreamModel,
      max_tokens: input.maxTokens,
    }),
    errorFlavor: 'messages',
    readJsonUsage: readVendorAUsage,
    translateJson: (_payload, rawBytes) => rawBytes,
    createStreamRelay: () => new VendorAMessagesRelay(),
    // Both vendors put the message at error.message: one mapping serves them.
    mapUpstreamError: (status, bodyText, retryAfter) =>
      upstreamError('vendor_a', status, bodyText, retryAfter),
  };
}
