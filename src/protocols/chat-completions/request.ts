// Chat-completions request building: the client's body, with the vendor's model name and, when
// streaming, usage always requested (the gateway needs it to settle).

import { isJsonContainer, isJsonObject, type JsonObject } from '../../json-shapes.js';
import { serialisedBody } from '../common/exchange.js';
import { oneOf, unpricedOptionRefusal, type PricedOption } from '../common/priced-options.js';

export const CHAT_COMPLETIONS_PATH = '/v1/chat/completions';

export interface ChatCompletionsBodyOptions {
  readonly upstreamModel: string;
  readonly stream: boolean;
}

/** Serializes the upstream body. `body` has already lost the gateway's own fields. */
export function buildChatCompletionsBody(
  body: JsonObject,
  options: ChatCompletionsBodyOptions,
): Buffer {
  // Object.assign, not a spread: see docs/decisions.md, 264.
  const upstream: JsonObject = Object.assign({}, body, { model: options.upstreamModel });
  if (options.stream) {
    const clientOptions = isJsonContainer(body.stream_options)
      ? (body.stream_options as JsonObject)
      : {};
    upstream.stream_options = Object.assign({}, clientOptions, { include_usage: true });
  }
  return serialisedBody(upstream);
}

const AUDIO_RATES = 'audio is billed at audio rates, which gw does not price';

/** The chat-completions options a vendor bills beyond the catalogue's token rates. */
const PRICED_OPTIONS: readonly PricedOption[] = [
  {
    field: 'service_tier',
    priced: oneOf('auto', 'default'),
    reason:
      'gw prices the default tier only (auto or default); the vendor bills others at other rates',
  },
  {
    field: 'web_search_options',
    priced: () => false,
    reason: 'the vendor bills each search, which gw does not meter',
  },
  {
    field: 'modalities',
    priced: (value) => Array.isArray(value) && value.every((modality) => modality === 'text'),
    reason: `only text output is priced; ${AUDIO_RATES}`,
  },
  { field: 'audio', priced: () => false, reason: AUDIO_RATES },
];

/**
 * Why a chat request sent to a chat-completions vendor as it is would be billed beyond what gw
 * charges, or undefined (decision 332): an option the vendor prices otherwise, an audio input
 * part, or an assistant turn replaying an earlier audio answer (`audio: {id}`, fed to the model
 * again as audio input). Checked before admission, so nothing is held or sent.
 */
export function chatCompletionsRefusal(
  request: Readonly<Record<string, unknown>>,
): string | undefined {
  const refusal = unpricedOptionRefusal(request, PRICED_OPTIONS);
  if (refusal) return refusal;
  const messages = Array.isArray(request.messages) ? (request.messages as unknown[]) : [];
  for (const [index, message] of messages.entries()) {
    if (!isJsonObject(message)) continue;
    if (message.audio !== undefined && message.audio !== null) {
      return `messages.${index}.audio: an earlier audio answer is read again as input audio, billed at audio rates gw does not price`;
    }
    const content = message.content;
    if (!Array.isArray(content)) continue;
    for (const [part, block] of content.entries()) {
      if (isJsonObject(block) && block.type === 'input_audio') {
        return `messages.${index}.content.${part}: input ${AUDIO_RATES}`;
      }
    }
  }
  return undefined;
}

/** The protocol's usual headers: JSON and a bearer key. */
export function bearerHeaders(apiKey: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
  return headers;
}
