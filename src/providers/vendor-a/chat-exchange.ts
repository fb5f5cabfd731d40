// Chat completions served by vendor_a: the request translated to the messages protocol, the
// answer (JSON or stream) translated back.
import type { UpstreamExchange } from '../exchange.js';
import { upstreamError } from '../upstream-errors.js';
import { chatToMessagesBody } from './chat-to-messages.js';
import { MessagesToChatStreamRelay, messageToChatCompletion } from './messages-to-chat.js';
import { VENDOR_A_MESSAGES_PATH, vendorAHeaders } from './request.js';
import { readVendorAUsage } from './usage.js';

export interface VendorAChatExchangeInput {
  readonly body: Record<string, unknown>;
  readonly upstreamModel: string;
  readonly maxTokens: number;
  readonly stream: boolean;
  readonly clientWantsUsage: boolean;
}

export function vendorAChatExchange(input: VendorAChatExchangeInput): UpstreamExchange {
  return {
    vendorLabel: 'vendor_a',
    path: VENDOR_A_MESSAGES_PATH,
    headersFor: (apiKey) => vendorAHeaders(apiKey, undefined),
    body: JSON.stringify(
      chatToMessagesBody(input.body, {
        upstreamModel: input.upstreamModel,
        maxTokens: input.maxTokens,
        stream: input.stream,
      }),
    ),
    errorFlavor: 'default',
    readJsonUsage: readVendorAUsage,
    translateJson: (payload) =>
      JSON.stringify(
        messageToChatCompletion(payload as Parameters<typeof messageToChatCompletion>[0]),
      ),
    createStreamRelay: () => new MessagesToChatStreamRelay(input.clientWantsUsage),
    mapUpstreamError: (status, bodyText, retryAfter) =>
      upstreamError('vendor_a', status, bodyText, retryAfter),
  };
}
