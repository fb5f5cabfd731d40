// Chat completions served by a provider speaking the messages protocol: the request translated
// to the messages protocol, the answer (JSON or stream) translated back.
import {
  serialisedBody,
  type ChatCall,
  type UpstreamExchange,
  type WireEndpoint,
} from '../common/exchange.js';
import { MESSAGES_PATH } from '../messages/request.js';
import { readMessagesUnpricedTiers, readMessagesUsage } from '../messages/usage.js';
import { chatToMessagesBody } from './chat-to-messages.js';
import { MessagesToChatStreamRelay, messageToChatCompletion } from './messages-to-chat.js';

export function chatOverMessagesExchange(endpoint: WireEndpoint, call: ChatCall): UpstreamExchange {
  // The closures read fields, not `call` (see chat-completions/exchange.ts).
  const { clientWantsUsage } = call;
  return {
    vendorLabel: endpoint.id,
    path: MESSAGES_PATH,
    headersFor: (apiKey) => endpoint.headers(apiKey, undefined),
    body: serialisedBody(
      chatToMessagesBody(call.body, {
        upstreamModel: call.upstreamModel,
        maxTokens: call.maxTokens,
        stream: call.stream,
      }),
    ),
    errorFlavor: 'default',
    readJsonUnpricedTiers: readMessagesUnpricedTiers,
    readJsonUsage: readMessagesUsage,
    translateJson: (payload) =>
      JSON.stringify(
        messageToChatCompletion(payload as Parameters<typeof messageToChatCompletion>[0]),
      ),
    createStreamRelay: (maxEventBytes) =>
      new MessagesToChatStreamRelay(endpoint.id, clientWantsUsage, maxEventBytes),
    mapUpstreamError: endpoint.upstreamError,
    credentialCooldownMs: endpoint.credentialCooldownMs,
  };
}
