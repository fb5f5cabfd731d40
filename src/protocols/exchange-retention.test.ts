// An exchange lives as long as its call to the vendor (a stream's minutes). It must not keep
// the client's parsed body, the prompt, alive that long: its upstream body is already the one
// copy that is sent (decision 266).
import { describe, expect, it } from 'vitest';
import { collected } from '../../test/support/collectable.js';
import { chatCompletionsExchange } from './chat-completions/exchange.js';
import { chatOverMessagesExchange } from './chat-over-messages/exchange.js';
import type { UpstreamExchange, WireEndpoint } from './common/exchange.js';
import { messagesExchange } from './messages/exchange.js';

const endpoint: WireEndpoint = {
  id: 'vendor_test',
  headers: (apiKey, version) => ({ authorization: `Bearer ${apiKey}`, version: version ?? '' }),
  upstreamError: () => {
    throw new Error('not called');
  },
  credentialCooldownMs: () => undefined,
};

/** Makes an exchange from a fresh body; returns it with a weak reference to that body. */
function exchangeOver(make: (body: Record<string, unknown>) => UpstreamExchange): {
  exchange: UpstreamExchange;
  body: WeakRef<object>;
} {
  const body = { messages: [{ role: 'user', content: 'a long prompt '.repeat(2_000) }] };
  return { exchange: make(body), body: new WeakRef(body) };
}

const call = { upstreamModel: 'model-x', maxTokens: 64, stream: true };

describe('an exchange does not hold the client body', () => {
  it.each([
    [
      'chat completions',
      (body: Record<string, unknown>) =>
        chatCompletionsExchange(endpoint, { ...call, body, clientWantsUsage: true }),
    ],
    [
      'chat over messages',
      (body: Record<string, unknown>) =>
        chatOverMessagesExchange(endpoint, { ...call, body, clientWantsUsage: true }),
    ],
    [
      'messages',
      (body: Record<string, unknown>) =>
        messagesExchange(endpoint, { ...call, body, version: '2023-06-01' }),
    ],
  ])('%s: the parsed body is collectable while the exchange is in use', async (_name, make) => {
    const { exchange, body } = exchangeOver(make);
    expect(await collected(body)).toBe(true);
    // The exchange still works, with its one serialised copy.
    expect(Buffer.isBuffer(exchange.body)).toBe(true);
    expect(exchange.body?.toString()).toContain('a long prompt');
    expect(exchange.createStreamRelay()).toBeDefined();
    expect(exchange.headersFor('key-1').authorization).toBe('Bearer key-1');
  });
});
