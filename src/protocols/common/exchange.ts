// What the generic proxy needs from a provider for one request: the upstream request, how to
// read usage from a JSON answer, and a relay for a streamed answer. One implementation per
// (client protocol, wire protocol) pair lives in src/protocols; the provider it is built for
// (a WireEndpoint) adds its label, headers and failure classification. An exchange is built
// before the hold is placed (its body is serialised then: whatever can fail, fails before money
// moves); only the headers wait for the route, whose key the reserve or a failover picks.
import type { ErrorFlavor, GwError } from '../../errors.js';
import type { UnpricedTier } from './served-tiers.js';
import type { PromptTokens, TokenUsage } from './usage.js';

export interface StreamRelay {
  /** Feeds upstream bytes; returns what to send to the client now ('' for nothing). */
  push(chunk: Uint8Array): string;
  /** Flushes at upstream end. */
  end(): string;
  /** Usage reported by the vendor, once seen. */
  readonly usage: TokenUsage | undefined;
  /**
   * The prompt as the vendor reported it before the stream ended, when its full usage never
   * came (vendor_a names it in `message_start`): billed instead of the estimate.
   */
  readonly reportedPrompt?: PromptTokens | undefined;
  /**
   * The web searches the stream began, for a protocol whose vendor searches (vendor_a's
   * `server_tool_use` blocks): charged when its full usage never came, as the output is
   * counted (decision 327). Absent: the protocol's vendor runs no search.
   */
  readonly countedWebSearches?: number;
  /**
   * The tiers the stream's events named that gw's prices do not cover (a priority tier, a
   * pinned geography: decision 342), read from events parsed for their usage; undefined: none.
   */
  readonly unpricedTiers: readonly UnpricedTier[] | undefined;
  /** True once the vendor's stream completed (its terminal event arrived). */
  readonly done: boolean;
  /** True once the vendor sent an error event inside the stream. */
  readonly vendorErrorSeen: boolean;
  /**
   * True once an event grew past the relay's bound (MAX_SSE_EVENT_BYTES): it reads nothing
   * more, and the stream ends as the vendor's failure.
   */
  readonly eventTooLarge: boolean;
  /** Generated text relayed so far: counted when the stream ends without usage. */
  readonly producedText: readonly string[];
  /** The terminal event, written to the client only after settlement. */
  readonly finalEvent: string;
}

export interface UpstreamExchange {
  readonly vendorLabel: string;
  readonly path: string;
  /**
   * The serialised upstream body (bytes: see serialisedBody), until the vendor's answer is
   * accepted: the dispatch loop then drops it (only a failover sends it again, and a stream
   * keeps its exchange for minutes).
   */
  body: Buffer | undefined;
  /** The upstream headers with the route's key (undefined: none). */
  headersFor(apiKey: string | undefined): Record<string, string>;
  /** How errors are dressed for the client's protocol. */
  readonly errorFlavor: ErrorFlavor;
  /** Usage of a JSON answer, if reported. */
  readJsonUsage(payload: unknown): TokenUsage | undefined;
  /** The tiers a JSON answer names that gw's prices do not cover (undefined: none). */
  readJsonUnpricedTiers(payload: unknown): readonly UnpricedTier[] | undefined;
  /** The client's JSON body for the vendor's JSON answer (identity for native routes). */
  translateJson(payload: unknown, rawBytes: Buffer): Uint8Array | string;
  /** A relay for the streamed answer; `maxEventBytes` bounds one event (default: SseParser's). */
  createStreamRelay(maxEventBytes?: number): StreamRelay;
  /** The client-facing error for a vendor error answer. */
  mapUpstreamError(status: number, bodyText: string, retryAfter: string | undefined): GwError;
  /** How long a BYOK credential rests after this vendor answer (undefined: not its fault). */
  credentialCooldownMs(
    status: number,
    bodyText: string,
    retryAfter: string | undefined,
  ): number | undefined;
}

/**
 * What a wire protocol needs from the provider it serves: its name in errors and labels, its
 * request headers, and how it classifies its failures. A Provider is one.
 */
export interface WireEndpoint {
  readonly id: string;
  /** The upstream headers for a call with this key (undefined: none) and client version. */
  headers(apiKey: string | undefined, clientVersion: string | undefined): Record<string, string>;
  upstreamError(status: number, bodyText: string, retryAfter: string | undefined): GwError;
  credentialCooldownMs(
    status: number,
    bodyText: string,
    retryAfter: string | undefined,
  ): number | undefined;
}

/** A chat-completions client's call, as admitted. */
export interface ChatCall {
  /** The client's body without the gateway's own fields. */
  readonly body: Record<string, unknown>;
  readonly upstreamModel: string;
  readonly maxTokens: number;
  readonly stream: boolean;
  readonly clientWantsUsage: boolean;
}

/** A messages client's call, as admitted. */
export interface MessagesCall {
  readonly body: Record<string, unknown>;
  readonly upstreamModel: string;
  readonly maxTokens: number;
  /** The client's protocol version header, if it sent one. */
  readonly version: string | undefined;
}

/**
 * A wire protocol a provider speaks natively: how each client protocol's call becomes an
 * exchange with a provider speaking it. `messages` is undefined where /v1/messages is not
 * served (its clients' requests cannot pass through unchanged).
 */
export interface WireProtocol {
  readonly name: string;
  /**
   * Why a chat request cannot be served as asked with this protocol (`n`, tools it cannot
   * carry, an option the vendor would bill beyond gw's price), or undefined: answered 400
   * before anything is held.
   */
  chatRefusal(
    request: Readonly<Record<string, unknown>> & { readonly model: string },
    choices: number,
  ): string | undefined;
  chat(endpoint: WireEndpoint, call: ChatCall): UpstreamExchange;
  readonly messages: ((endpoint: WireEndpoint, call: MessagesCall) => UpstreamExchange) | undefined;
}

/**
 * The upstream body as the bytes undici sends. Given a string, undici copies it into a Buffer
 * and the exchange keeps the string too (failover may send it again): two copies of the
 * prompt for the whole call, a stream's minutes (bench/RESULTS.md, 2026-11-24).
 */
export function serialisedBody(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}
