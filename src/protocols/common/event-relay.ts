// The shared machinery of every stream relay: SSE bytes in (split anywhere), one call per
// whole event, the client's text out. Each protocol says what an event becomes (`relayEvent`,
// parsing the event's JSON with `parseEventData` when it needs it); this class does the SSE
// parsing and the bookkeeping.
import type { StreamRelay } from './exchange.js';
import type { UnpricedTier } from './served-tiers.js';
import { SseParser, type SseEvent } from './sse.js';
import type { TokenUsage } from './usage.js';

/** An event's data parsed as JSON, or undefined when it is not JSON. */
export function parseEventData(event: SseEvent): unknown {
  try {
    return JSON.parse(event.data);
  } catch {
    return undefined;
  }
}

export abstract class EventRelay implements StreamRelay {
  abstract readonly finalEvent: string;
  abstract readonly usage: TokenUsage | undefined;
  abstract readonly unpricedTiers: readonly UnpricedTier[] | undefined;
  /** Generated text as relayed, for relays that collect it event by event. */
  protected readonly relayedText: string[] = [];
  done = false;
  vendorErrorSeen = false;
  private readonly parser: SseParser;

  /** `maxEventBytes`: the largest event read (SseParser; its default when undefined). */
  constructor(maxEventBytes?: number) {
    this.parser = new SseParser(maxEventBytes);
  }

  get eventTooLarge(): boolean {
    return this.parser.eventTooLarge;
  }

  push(chunk: Uint8Array): string {
    return this.relayAll(this.parser.push(chunk));
  }

  end(): string {
    return this.relayAll(this.parser.end());
  }

  get producedText(): readonly string[] {
    return this.relayedText;
  }

  /** What to send the client for one upstream event ('' for nothing). */
  protected abstract relayEvent(event: SseEvent): string;

  private relayAll(events: readonly SseEvent[]): string {
    let out = '';
    for (const event of events) out += this.relayEvent(event);
    return out;
  }
}
