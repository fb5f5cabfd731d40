// The native messages protocol: the body passes through with the vendor's model name (and a
// lowered max_tokens under limit_output).
import {
  serialisedBody,
  type MessagesCall,
  type UpstreamExchange,
  type WireEndpoint,
} from '../common/exchange.js';
import { MESSAGES_PATH } from './request.js';
import { MessagesStreamRelay } from './stream-relay.js';
import { readMessagesUnpricedTiers, readMessagesUsage } from './usage.js';

export function messagesExchange(endpoint: WireEndpoint, call: MessagesCall): UpstreamExchange {
  // The closures read fields, not `call` (see chat-completions/exchange.ts).
  const { version } = call;
  return {
    vendorLabel: endpoint.id,
    path: MESSAGES_PATH,
    headersFor: (apiKey) => endpoint.headers(apiKey, version),
    body: serialisedBody(
      Object.assign({}, call.body, { model: call.upstreamModel, max_tokens: call.maxTokens }),
    ),
    errorFlavor: 'messages',
    readJsonUnpricedTiers: readMessagesUnpricedTiers,
    readJsonUsage: readMessagesUsage,
    translateJson: (_payload, rawBytes) => rawBytes,
    createStreamRelay: (maxEventBytes) => new MessagesStreamRelay(maxEventBytes),
    mapUpstreamError: endpoint.upstreamError,
    credentialCooldownMs: endpoint.credentialCooldownMs,
  };
}
