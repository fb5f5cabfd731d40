// Chat completions served by a provider that speaks them natively: the body passes through with
// the vendor's model name (and usage requested when streaming).
import type { ChatCall, UpstreamExchange, WireEndpoint } from '../common/exchange.js';
import { buildChatCompletionsBody, CHAT_COMPLETIONS_PATH } from './request.js';
import { ChatCompletionsStreamRelay } from './stream-relay.js';
import { readChatCompletionsUnpricedTiers, readChatCompletionsUsage } from './usage.js';

export function chatCompletionsExchange(endpoint: WireEndpoint, call: ChatCall): UpstreamExchange {
  // The closures read fields, not `call`: a closure over `call` would keep the client's parsed
  // body (the prompt) alive for as long as the exchange, a stream's minutes.
  const { clientWantsUsage } = call;
  return {
    vendorLabel: endpoint.id,
    path: CHAT_COMPLETIONS_PATH,
    headersFor: (apiKey) => endpoint.headers(apiKey, undefined),
    body: buildChatCompletionsBody(call.body, {
      upstreamModel: call.upstreamModel,
      stream: call.stream,
    }),
    errorFlavor: 'default',
    readJsonUnpricedTiers: readChatCompletionsUnpricedTiers,
    readJsonUsage: readChatCompletionsUsage,
    translateJson: (_payload, rawBytes) => rawBytes,
    createStreamRelay: (maxEventBytes) =>
      new ChatCompletionsStreamRelay(clientWantsUsage, maxEventBytes),
    mapUpstreamError: endpoint.upstreamError,
    credentialCooldownMs: endpoint.credentialCooldownMs,
  };
}
