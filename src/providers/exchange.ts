// What the generic proxy needs from a provider for one request: the upstream request, how to
// read usage from a JSON answer, and a relay for a streamed answer. One implementation per
// (client protocol, vendor) pair lives in the vendor's folder. An exchange is built before the
// hold is placed (its body is serialised then: whatever can fail, fails before money moves);
// only the headers wait for the route, whose key the reserve or a failover picks.
import type { ErrorFlavor, GwError } from '../errors.js';
import type { TokenUsage } from './usage.js';

export interface StreamRelay {
  /** Feeds upstream bytes; returns what to send to the client now ('' for nothing). */
  push(chunk: Uint8Array): string;
  /** Flushes at upstream end. */
  end(): string;
  /** Usage reported by the vendor, once seen. */
  readonly usage: TokenUsage | undefined;
  /**
   * Input tokens the vendor reported before the stream ended, when its full usage never came
   * (vendor_a names them in `message_start`): billed instead of the estimate.
   */
  readonly reportedInputTokens?: number;
  /** True once the vendor's stream completed (its terminal event arrived). */
  readonly done: boolean;
  /** True once the vendor sent an error event inside the stream. */
  readonly vendorErrorSeen: boolean;
  /** Generated text relayed so far: counted when the stream ends without usage. */
  readonly producedText: readonly string[];
  /** The terminal event, written to the client only after settlement. */
  readonly finalEvent: string;
}

export interface UpstreamExchange {
  readonly vendorLabel: string;
  readonly path: string;
  /** The serialised upstream body. */
  readonly body: string;
  /** The upstream headers with the route's key (undefined: none). */
  headersFor(apiKey: string | undefined): Record<string, string>;
  /** How errors are dressed for the client's protocol. */
  readonly errorFlavor: ErrorFlavor;
  /** Usage of a JSON answer, if reported. */
  readJsonUsage(payload: unknown): TokenUsage | undefined;
  /** The client's JSON body for the vendor's JSON answer (identity for native routes). */
  translateJson(payload: unknown, rawBytes: Buffer): Uint8Array | string;
  createStreamRelay(): StreamRelay;
  /** The client-facing error for a vendor error answer. */
  mapUpstreamError(status: number, bodyText: string, retryAfter: string | undefined): GwError;
}
