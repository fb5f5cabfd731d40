// Relays a native vendor_a (messages protocol) stream unchanged, reading usage on the way and
// holding back `message_stop`: the route writes it after settling.
import type { StreamRelay } from '../exchange.js';
import { SseParser } from '../sse.js';
import type { TokenUsage } from '../usage.js';
import { VendorAStreamUsage } from './usage.js';

export const MESSAGE_STOP_EVENT = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

interface DeltaShape {
  type?: unknown;
  delta?: { type?: unknown; text?: unknown; partial_json?: unknown };
}

export class VendorAMessagesRelay implements StreamRelay {
  readonly finalEvent = MESSAGE_STOP_EVENT;
  readonly producedText: string[] = [];
  done = false;
  private readonly parser = new SseParser();
  private readonly tracker = new VendorAStreamUsage();

  get usage(): TokenUsage | undefined {
    return this.tracker.usage;
  }

  push(chunk: Uint8Array): string {
    return this.relay(this.parser.push(chunk));
  }

  end(): string {
    return this.relay(this.parser.end());
  }

  private relay(events: ReturnType<SseParser['push']>): string {
    let out = '';
    for (const event of events) {
      let payload: DeltaShape & Parameters<VendorAStreamUsage['observe']>[0];
      try {
        payload = JSON.parse(event.data) as typeof payload;
      } catch {
        out += event.raw;
        continue;
      }
      if (payload.type === 'message_stop') {
        this.done = true;
        continue;
      }
      this.tracker.observe(payload);
      if (payload.type === 'content_block_delta') {
        const text = payload.delta?.text ?? payload.delta?.partial_json;
        if (typeof text === 'string') this.producedText.push(text);
      }
      out += event.raw;
    }
    return out;
  }
}
