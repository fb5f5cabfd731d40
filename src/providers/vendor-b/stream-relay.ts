// Relays a vendor_b SSE stream to the client event by event: reads usage on the way, strips
// the usage chunk when the client did not ask for it, and holds back `data: [DONE]` — the
// route writes it after settling, so a client that saw [DONE] always has a usage record.
import { EventRelay } from '../event-relay.js';
import type { SseEvent } from '../sse.js';
import type { TokenUsage } from '../usage.js';
import { readVendorBUsage } from './usage.js';

export const DONE_EVENT = 'data: [DONE]\n\n';

interface ChunkShape {
  choices?: Array<{
    delta?: { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> };
  }>;
}

export class VendorBStreamRelay extends EventRelay {
  readonly finalEvent = DONE_EVENT;
  /** Usage reported by the vendor (the final chunk), once seen. */
  usage: TokenUsage | undefined;

  constructor(private readonly clientWantsUsage: boolean) {
    super();
  }

  protected relayEvent(event: SseEvent, chunk: unknown): string {
    if (event.data === '[DONE]') {
      this.done = true;
      return '';
    }
    if (chunk === undefined) return event.raw; // not ours to judge: pass it through
    const usage = readVendorBUsage(chunk);
    if (usage) {
      this.usage = usage;
      const choices = (chunk as ChunkShape).choices;
      if (!this.clientWantsUsage && (!choices || choices.length === 0)) return '';
    }
    this.collectText(chunk as ChunkShape);
    return event.raw;
  }

  private collectText(chunk: ChunkShape): void {
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) return;
    if (typeof delta.content === 'string') this.producedText.push(delta.content);
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls) {
        const fragment = call.function?.arguments;
        if (typeof fragment === 'string') this.producedText.push(fragment);
      }
    }
  }
}
