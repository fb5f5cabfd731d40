// The wire protocols a provider can speak natively, and what each client protocol's call
// becomes with it: passed through where the client speaks the provider's protocol, translated
// where a translation exists, refused (`messages: undefined`) where none does.
import { chatCompletionsExchange } from './chat-completions/exchange.js';
import { chatCompletionsRefusal } from './chat-completions/request.js';
import { chatOverMessagesExchange } from './chat-over-messages/exchange.js';
import { chatOverMessagesRefusal } from './chat-over-messages/refusal.js';
import type { WireProtocol } from './common/exchange.js';
import { messagesExchange } from './messages/exchange.js';

export const chatCompletionsProtocol: WireProtocol = {
  name: 'chat_completions',
  chatRefusal: chatCompletionsRefusal,
  chat: chatCompletionsExchange,
  messages: undefined,
};

export const messagesProtocol: WireProtocol = {
  name: 'messages',
  chatRefusal: chatOverMessagesRefusal,
  chat: chatOverMessagesExchange,
  messages: messagesExchange,
};
