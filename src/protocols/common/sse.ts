// Incremental Server-Sent Events parser: bytes in (split anywhere, even inside a UTF-8
// character), whole events out, each with its raw text so it can be forwarded unchanged.

export interface SseEvent {
  /** The `event:` field, if any. */
  readonly event: string | undefined;
  /** The `data:` lines joined with '\n'. */
  readonly data: string;
  /** The event exactly as received (normalized line ends), including the blank line. */
  readonly raw: string;
}

export class SseParser {
  private readonly decoder = new TextDecoder();
  private buffer = '';

  push(chunk: Uint8Array): SseEvent[] {
    this.append(this.decoder.decode(chunk, { stream: true }));
    return this.takeEvents();
  }

  /** Flushes at end of stream; a trailing event without its blank line is incomplete and dropped. */
  end(): SseEvent[] {
    this.append(this.decoder.decode());
    return this.takeEvents();
  }

  private append(text: string): void {
    if (text.length === 0) return;
    // A '\r' at the very end may be the first half of '\r\n': keep it for the next chunk.
    this.buffer += text;
    if (this.buffer.includes('\r')) {
      const pendingCr = this.buffer.endsWith('\r');
      const body = pendingCr ? this.buffer.slice(0, -1) : this.buffer;
      this.buffer = body.replace(/\r\n?/g, '\n') + (pendingCr ? '\r' : '');
    }
  }

  private takeEvents(): SseEvent[] {
    const events: SseEvent[] = [];
    let start = 0;
    for (;;) {
      const end = this.buffer.indexOf('\n\n', start);
      if (end === -1) break;
      const block = this.buffer.slice(start, end);
      start = end + 2;
      const event = parseBlock(block);
      if (event) events.push(event);
    }
    if (start > 0) this.buffer = this.buffer.slice(start);
    return events;
  }
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
