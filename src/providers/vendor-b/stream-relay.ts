// Relays a vendor_b SSE stream to the client event by event: reads usage on the way, strips
// the usage chunk when the client did not ask for it, and holds back `data: [DONE]` — the
// route writes it after settling, so a client that saw [DONE] always has a usage record.
import { SseParser } from '../sse.js';
import type { StreamRelay } from '../exchange.js';
import type { TokenUsage } from '../usage.js';
import { readVendorBUsage } from './usage.js';

export const DONE_EVENT = 'data: [DONE]\n\n';

interface ChunkShape {
  choices?: Array<{
    delta?: { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> };
  }>;
}

export class VendorBStreamRelay implements StreamRelay {
  readonly finalEvent = DONE_EVENT;
  private readonly parser = new SseParser();
  /** Usage reported by the vendor (the final chunk), once seen. */
  usage: TokenUsage | undefined;
  /** True once the vendor sent [DONE]. */
  done = false;
  /** Generated text seen so far: counted if the stream ends without usage. */
  readonly producedText: string[] = [];

  constructor(private readonly clientWantsUsage: boolean) {}

  /** Feeds upstream bytes; returns what to send to the client now ('' for nothing). */
  push(chunk: Uint8Array): string {
    return this.relay(this.parser.push(chunk));
  }

  /** Flushes at upstream end. */
  end(): string {
    return this.relay(this.parser.end());
  }

  private relay(events: ReturnType<SseParser['push']>): string {
    let out = '';
    for (const event of events) {
      if (event.data === '[DONE]') {
        this.done = true;
        continue;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(event.data);
      } catch {
        out += event.raw; // not ours to judge: pass it through
        continue;
      }
      const usage = readVendorBUsage(chunk);
      if (usage) {
        this.usage = usage;
        const choices = (chunk as ChunkShape).choices;
        if (!this.clientWantsUsage && (!choices || choices.length === 0)) continue;
      }
      this.collectText(chunk as ChunkShape);
      out += event.raw;
    }
    return out;
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
