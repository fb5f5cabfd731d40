// Incremental Server-Sent Events parser: bytes in (split anywhere, even inside a UTF-8
// character), whole events out, each with its raw text so it can be forwarded unchanged.
//
// Linear in the bytes however they are split: each chunk's text is searched and normalised
// once, and the text of an event that spans many chunks is only appended to until it ends.
// (Kept as one string searched from its start, an 8 MB event cost about a second in 16 KiB
// chunks and over a minute with CRLF line ends in 1 KiB chunks: bench/RESULTS.md, 2026-11-27.)
//
// An event is held until its blank line comes, so one event's size is bounded: past
// `maxEventBytes` the parser stops (`eventTooLarge`), drops what it held and reads nothing more;
// the relay ends the stream as the vendor's failure (decision 354).

export interface SseEvent {
  /** The `event:` field, if any. */
  readonly event: string | undefined;
  /** The `data:` lines joined with '\n'. */
  readonly data: string;
  /** The event exactly as received (normalized line ends), including the blank line. */
  readonly raw: string;
}

const NEWLINE = 0x0a;

/**
 * The largest SSE event a vendor may send, by default (MAX_SSE_EVENT_BYTES). Vendors send a
 * token's delta per event, a web search's or a web fetch's result in one (tens of KB; a fetched
 * PDF, base64, can reach megabytes); an event past this is a vendor gone wrong, which would
 * otherwise hold memory without bound until its blank line comes.
 */
export const DEFAULT_MAX_SSE_EVENT_BYTES = 8 * 1024 * 1024;

/**
 * Whether `text` takes more than `limit` bytes in UTF-8. A UTF-16 code unit takes 1 to 3 bytes,
 * so most texts are answered from their length without counting.
 */
function overBytes(text: string, limit: number): boolean {
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  return Buffer.byteLength(text, 'utf8') > limit;
}

export class SseParser {
  private readonly decoder = new TextDecoder();
  /**
   * The text of the event not complete yet (line ends normalised). Only appended to, never
   * searched: V8 keeps the appends as a rope, copied once, when the event is read.
   */
  private pending = '';
  /** Whether the pending text ends with '\n' (a blank line may end across the next chunk). */
  private pendingEndsWithNewline = false;
  /** A '\r' at the very end of the text so far: the first half of '\r\n', or a line end. */
  private pendingCr = false;
  /** UTF-8 bytes of the pending text. */
  private pendingBytes = 0;
  /** True once an event grew past `maxEventBytes`: nothing more is read. */
  eventTooLarge = false;

  /** `maxEventBytes`: the most bytes (UTF-8, line ends normalised) one event may take. */
  constructor(private readonly maxEventBytes = DEFAULT_MAX_SSE_EVENT_BYTES) {}

  push(chunk: Uint8Array): SseEvent[] {
    if (this.eventTooLarge) return [];
    return this.takeEvents(this.normalised(this.decoder.decode(chunk, { stream: true })));
  }

  /** Flushes at end of stream; a trailing event without its blank line is incomplete and dropped. */
  end(): SseEvent[] {
    if (this.eventTooLarge) return [];
    return this.takeEvents(this.normalised(this.decoder.decode()));
  }

  /** `text` with '\r\n' and '\r' as '\n'; a '\r' it ends with waits for the next text. */
  private normalised(text: string): string {
    if (text.length === 0) return text;
    let added = this.pendingCr ? `\r${text}` : text;
    this.pendingCr = false;
    if (!added.includes('\r')) return added;
    if (added.endsWith('\r')) {
      this.pendingCr = true;
      added = added.slice(0, -1);
    }
    return added.replace(/\r\n?/g, '\n');
  }

  /** The events `text` completes; what it leaves incomplete waits in `pending`. */
  private takeEvents(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    if (text.length === 0) return events;
    let start = 0; // where the text not yet in an event starts
    // The blank line may end across the chunks: the pending text ends with '\n', this begins so.
    if (this.pendingEndsWithNewline && text.charCodeAt(0) === NEWLINE) {
      pushEvent(events, this.takePending().slice(0, -1));
      start = 1;
    }
    for (;;) {
      const end = text.indexOf('\n\n', start);
      if (end === -1) break;
      const tail = text.slice(start, end);
      if (overBytes(tail, this.maxEventBytes - this.pendingBytes)) return this.tooLarge(events);
      pushEvent(events, this.pending === '' ? tail : this.takePending() + tail);
      start = end + 2;
    }
    if (start < text.length) {
      const rest = start === 0 ? text : text.slice(start);
      this.pendingBytes += Buffer.byteLength(rest, 'utf8');
      if (this.pendingBytes > this.maxEventBytes) return this.tooLarge(events);
      this.pending += rest;
      this.pendingEndsWithNewline = text.charCodeAt(text.length - 1) === NEWLINE;
    } else {
      this.pendingEndsWithNewline = false;
    }
    return events;
  }

  /** Stops reading: the events before the one too large, and nothing held any more. */
  private tooLarge(events: SseEvent[]): SseEvent[] {
    this.eventTooLarge = true;
    this.takePending();
    return events;
  }

  /** The pending text in one piece, and nothing pending any more. */
  private takePending(): string {
    const text = this.pending;
    this.pending = '';
    this.pendingBytes = 0;
    return text;
  }
}

function pushEvent(events: SseEvent[], block: string): void {
  const event = parseBlock(block);
  if (event) events.push(event);
}

function parseBlock(block: string): SseEvent | undefined {
  let event: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
  }
  if (data.length === 0 && event === undefined) return undefined;
  return { event, data: data.join('\n'), raw: `${block}\n\n` };
}
