// vendor_a speaks the messages protocol (x-api-key, a protocol version header). Its prompt cache
// is asked for with `cache_control`; writes bill at 1.25× the input rate (2× kept an hour),
// reads at 0.1×. Its web search server tool bills 0.01 per search (10 per 1,000).
import { messagesHeaders } from '../../protocols/messages/request.js';
import { messagesProtocol } from '../../protocols/wire-protocols.js';
import { defineProvider } from '../common/provider.js';

export const vendorA = defineProvider({
  id: 'vendor_a',
  protocol: messagesProtocol,
  promptCache: { write: '1.25', write1h: '2', read: '0.1' },
  webSearchPrice: '0.01',
  headers: messagesHeaders,
});
