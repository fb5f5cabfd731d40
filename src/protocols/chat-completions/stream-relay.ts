// Relays a chat-completions SSE stream to the client event by event: reads usage on the way, strips
// the usage chunk when the client did not ask for it, and holds back `data: [DONE]` — the
// route writes it after settling, so a client that saw [DONE] always has a usage record.
import { EventRelay, parseEventData } from '../common/event-relay.js';
import type { UnpricedTier } from '../common/served-tiers.js';
import type { SseEvent } from '../common/sse.js';
import type { TokenUsage } from '../common/usage.js';
import { isJsonObject } from '../../json-shapes.js';
import { chatCompletionsTierTracker, readChatCompletionsUsage } from './usage.js';

export const DONE_EVENT = 'data: [DONE]\n\n';

interface ChunkShape {
  choices?: Array<{
    delta?: { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> };
  }>;
}

/**
 * Whether a chunk's data may carry usage. With usage requested, the vendor sends
 * `"usage":null` on every chunk but the usage chunk: those are relayed without being parsed.
 * Searched from the end, where the field is. Inside a JSON string the quotes would be
 * escaped, so generated text cannot match; other spellings (`"usage": null`) are parsed.
 */
function mayCarryUsage(data: string): boolean {
  const at = data.lastIndexOf('"usage":');
  return at !== -1 && !data.startsWith('null', at + 8);
}

/**
 * Relayed chunks kept unparsed up to this many bytes; past it they are boiled down to their
 * text. A stream is read for text only if usage never comes, so short streams are never
 * parsed, and a long one costs its text in memory, not every chunk's JSON (a maximal answer
 * is megabytes of chunks: times the streams in flight, too much to hold). Small (decision
 * 250): usage comes last, so whatever is held is held for the whole stream; a chunk is about
 * 250 bytes of JSON for one token, and a 200-token answer held whole was 50 KB per stream.
 */
export const UNPARSED_CHUNKS_MAX_BYTES = 4 * 1024;

export class ChatCompletionsStreamRelay extends EventRelay {
  readonly finalEvent = DONE_EVENT;
  /** Usage reported by the vendor (the final chunk), once seen. */
  usage: TokenUsage | undefined;
  /**
   * The tier the parsed chunks name: the usage chunk names it, as every chunk does; a stream
   * that ends before it is read from the chunks it relayed (decision 354).
   */
  private readonly servedTier = chatCompletionsTierTracker();
  /** Data of the chunks relayed and not yet read for text, in order (after earlier text). */
  private unparsedChunks: string[] = [];
  private unparsedBytes = 0;

  constructor(
    private readonly clientWantsUsage: boolean,
    maxEventBytes?: number,
  ) {
    super(maxEventBytes);
  }

  get unpricedTiers(): UnpricedTier[] | undefined {
    // Without the usage chunk, every chunk relayed is kept for its text: reading them (as the
    // count of the output does) gives the tier they named.
    if (this.usage === undefined) this.readUnparsedChunks();
    return this.servedTier.unpricedTiers;
  }

  /** Bytes of chunk data held unparsed: never more than UNPARSED_CHUNKS_MAX_BYTES. */
  get unparsedChunkBytes(): number {
    return this.unparsedBytes;
  }

  /** The generated text, in order (the fallback count when the vendor reports no usage). */
  override get producedText(): readonly string[] {
    this.readUnparsedChunks();
    return this.relayedText;
  }

  protected relayEvent(event: SseEvent): string {
    if (event.data === '[DONE]') {
      this.done = true;
      return '';
    }
    // An error mid-stream is a chunk with a top-level `error` object (relayed as it is).
    if (event.data.startsWith('{"error"')) this.vendorErrorSeen = true;
    if (this.usage === undefined) this.keepForText(event.data);
    if (!mayCarryUsage(event.data)) return event.raw;
    const chunk = parseEventData(event);
    if (chunk === undefined) return event.raw; // not ours to judge: pass it through
    const usage = readChatCompletionsUsage(chunk);
    if (usage) {
      // The chunks before it are read for their tier only if no usage comes: this one is last.
      if (isJsonObject(chunk)) this.servedTier.observe(chunk);
      this.usage = usage;
      const choices = (chunk as ChunkShape).choices;
      if (!this.clientWantsUsage && (!choices || choices.length === 0)) return '';
    }
    return event.raw;
  }

  private keepForText(data: string): void {
    this.unparsedChunks.push(data);
    this.unparsedBytes += data.length;
    if (this.unparsedBytes > UNPARSED_CHUNKS_MAX_BYTES) this.readUnparsedChunks();
  }

  /** Reads the chunks kept for their text, and the tier they name, in the stream's order. */
  private readUnparsedChunks(): void {
    for (const data of this.unparsedChunks) {
      const chunk = parseJson(data);
      collectText(chunk as ChunkShape | null | undefined, this.relayedText);
      if (isJsonObject(chunk)) this.servedTier.observe(chunk);
    }
    this.unparsedChunks = [];
    this.unparsedBytes = 0;
  }
}

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

function collectText(chunk: ChunkShape | null | undefined, text: string[]): void {
  const delta = chunk?.choices?.[0]?.delta;
  if (!delta) return;
  if (typeof delta.content === 'string') text.push(delta.content);
  if (Array.isArray(delta.tool_calls)) {
    for (const call of delta.tool_calls) {
      const fragment = call.function?.arguments;
      if (typeof fragment === 'string') text.push(fragment);
    }
  }
}
