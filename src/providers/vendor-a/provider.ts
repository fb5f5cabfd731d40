// vendor_a speaks the messages protocol (x-api-key, a protocol version header).
import { messagesHeaders } from '../../protocols/messages/request.js';
import { messagesProtocol } from '../../protocols/wire-protocols.js';
import { defineProvider } from '../common/provider.js';

export const vendorA = defineProvider({
  id: 'vendor_a',
  protocol: messagesProtocol,
  headers: messagesHeaders,
});
