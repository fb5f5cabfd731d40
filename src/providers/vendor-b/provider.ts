// vendor_b speaks chat completions (a bearer key).
import { bearerHeaders } from '../../protocols/chat-completions/request.js';
import { chatCompletionsProtocol } from '../../protocols/wire-protocols.js';
import { defineProvider } from '../common/provider.js';

export const vendorB = defineProvider({
  id: 'vendor_b',
  protocol: chatCompletionsProtocol,
  headers: (apiKey) => bearerHeaders(apiKey),
});
