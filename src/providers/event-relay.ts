// The shared machinery of every stream relay: SSE bytes in (split anywhere), one call per
// whole event with its JSON payload, the client's text out. Each protocol says what an event
// becomes (`relayEvent`); this class does the parsing and the bookkeeping.
import type { StreamRelay } from './exchange.js';
import { SseParser, type SseEvent } from './sse.js';
import type { TokenUsage } from './usage.js';

export abstract class EventRelay implements StreamRelay {
  abstract readonly finalEvent: string;
  abstract readonly usage: TokenUsage | undefined;
  readonly producedText: string[] = [];
  done = false;
  private readonly parser = new SseParser();

  push(chunk: Uint8Array): string {
    return this.relayAll(this.parser.push(chunk));
  }

  end(): string {
    return this.relayAll(this.parser.end());
  }

  /**
   * What to send the client for one upstream event ('' for nothing). `payload` is the event's
   * data parsed as JSON, or undefined when it is not JSON.
   */
  protected abstract relayEvent(event: SseEvent, payload: unknown): string;

  private relayAll(events: readonly SseEvent[]): string {
    let out = '';
    for (const event of events) {
      let payload: unknown;
      try {
        payload = JSON.parse(event.data);
      } catch {
        payload = undefined;
      }
      out += this.relayEvent(event, payload);
    }
    return out;
  }
}
