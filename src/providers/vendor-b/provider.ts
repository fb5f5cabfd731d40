// vendor_b speaks chat completions (a bearer key). Its prompt cache is automatic: reads bill
// at 0.5× the input rate, writes at no premium.
import { bearerHeaders } from '../../protocols/chat-completions/request.js';
import { chatCompletionsProtocol } from '../../protocols/wire-protocols.js';
import { defineProvider } from '../common/provider.js';

export const vendorB = defineProvider({
  id: 'vendor_b',
  protocol: chatCompletionsProtocol,
  promptCache: { write: '1', write1h: '1', read: '0.5' },
  headers: (apiKey) => bearerHeaders(apiKey),
});
