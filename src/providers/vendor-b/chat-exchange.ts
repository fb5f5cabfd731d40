// Chat completions served natively by vendor_b.
import type { UpstreamExchange } from '../exchange.js';
import { upstreamError } from '../upstream-errors.js';
import { buildVendorBChatBody, VENDOR_B_CHAT_PATH, vendorBHeaders } from './request.js';
import { VendorBStreamRelay } from './stream-relay.js';
import { readVendorBUsage } from './usage.js';

export interface ChatExchangeInput {
  /** The client's body without the gateway's own fields. */
  readonly body: Record<string, unknown>;
  readonly upstreamModel: string;
  readonly stream: boolean;
  readonly clientWantsUsage: boolean;
}

export function vendorBChatExchange(input: ChatExchangeInput): UpstreamExchange {
  return {
    vendorLabel: 'vendor_b',
    path: VENDOR_B_CHAT_PATH,
    headersFor: (apiKey) => vendorBHeaders(apiKey),
    body: buildVendorBChatBody(input.body, {
      upstreamModel: input.upstreamModel,
      stream: input.stream,
    }),
    errorFlavor: 'default',
    readJsonUsage: readVendorBUsage,
    translateJson: (_payload, rawBytes) => rawBytes,
    createStreamRelay: () => new VendorBStreamRelay(input.clientWantsUsage),
    mapUpstreamError: (status, bodyText, retryAfter) =>
      upstreamError('vendor_b', status, bodyText, retryAfter),
  };
}
