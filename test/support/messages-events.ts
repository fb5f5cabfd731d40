// A messages-protocol stream event as vendor_a writes it on the wire (`event:` names its type,
// which its data repeats), for the tests' own stub vendors and recorded streams.
export const messagesEvent = (type: string, data: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
