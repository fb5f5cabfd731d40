// Relays a native messages-protocol stream unchanged, reading usage on the way and
// holding back `message_stop`: the route writes it after settling.
import { parseEventData } from '../common/event-relay.js';
import type { SseEvent } from '../common/sse.js';
import { MessagesUsageRelay, type MessagesStreamUsage } from './usage.js';

export const MESSAGE_STOP_EVENT = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

type EventShape = Parameters<MessagesStreamUsage['observe']>[0] & {
  delta?: { type?: unknown; text?: unknown; partial_json?: unknown; thinking?: unknown };
};

/**
 * The output a content delta carries, as the vendor bills it: text, a tool call's JSON, and
 * extended thinking (billed as output tokens though the client may never show it). What a
 * stream that ends without a usable report is charged for is counted from these.
 */
function billedText(delta: EventShape['delta']): unknown {
  return delta?.text ?? delta?.partial_json ?? delta?.thinking;
}

export class MessagesStreamRelay extends MessagesUsageRelay {
  readonly finalEvent = MESSAGE_STOP_EVENT;

  protected relayEvent(event: SseEvent): string {
    const payload = parseEventData(event);
    if (payload === undefined) return event.raw;
    const typed = payload as EventShape;
    if (typed.type === 'message_stop') {
      this.done = true;
      return '';
    }
    if (typed.type === 'error') this.vendorErrorSeen = true;
    this.tracker.observe(typed);
    if (typed.type === 'content_block_delta') {
      const text = billedText(typed.delta);
      if (typeof text === 'string') this.relayedText.push(text);
    }
    return event.raw;
  }
}
