// Chat-completions request building: the client's body, with the vendor's model name and, when
// streaming, usage always requested (the gateway needs it to settle).

import { isJsonContainer, type JsonObject } from '../../json-shapes.js';
import { serialisedBody } from '../common/exchange.js';

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

/** The protocol's usual headers: JSON and a bearer key. */
export function bearerHeaders(apiKey: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
  return headers;
}
