// The messages protocol's answers as vendor_a writes them on the wire, for the tests' own stub
// vendors and recorded streams: the `message` object (a JSON answer, or the one message_start
// carries) and the stream events (`event:` names its type, which its data repeats).
export const messagesEvent = (type: string, data: Record<string, unknown>): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

export interface MessageFields {
  readonly id: string;
  readonly model: string;
  readonly usage: Record<string, unknown>;
  /** The answer's text, in one text block; no content (as in message_start) when left out. */
  readonly text?: string;
  /** Null (as in message_start) when left out. */
  readonly stopReason?: string;
}

/** An assistant `message` object. */
export const messagesMessage = (fields: MessageFields): Record<string, unknown> => ({
  id: fields.id,
  type: 'message',
  role: 'assistant',
  model: fields.model,
  content: fields.text === undefined ? [] : [{ type: 'text', text: fields.text }],
  stop_reason: fields.stopReason ?? null,
  stop_sequence: null,
  usage: fields.usage,
});

/** The event that opens a text block at `index`. */
export const textBlockStart = (index: number): string =>
  messagesEvent('content_block_start', { index, content_block: { type: 'text', text: '' } });

/** The event that adds `text` to the text block at `index`. */
export const textDelta = (index: number, text: string): string =>
  messagesEvent('content_block_delta', { index, delta: { type: 'text_delta', text } });

/**
 * A whole stream answering `text` in one block: message_start carrying `message`, the block,
 * then message_delta (the turn ended, with `finalUsage`) and message_stop.
 */
export const messagesTextStream = (
  message: Record<string, unknown>,
  text: string,
  finalUsage: Record<string, unknown>,
): string =>
  messagesEvent('message_start', { message }) +
  textBlockStart(0) +
  textDelta(0, text) +
  messagesEvent('content_block_stop', { index: 0 }) +
  messagesEvent('message_delta', {
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: finalUsage,
  }) +
  messagesEvent('message_stop', {});
