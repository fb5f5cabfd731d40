// Reading a vendor's success answer: a JSON body read whole, or an SSE stream relayed to the
// client event by event with backpressure. Each returns how the answer ended (for the charging
// policy) and what the client still has to get; neither charges anything.
import { errorBody, gwError, type ErrorFlavor, type GwError } from '../errors.js';
import type { HttpResponse } from '../http/types.js';
import { nosniffHeaders } from '../http/respond.js';
import type { StreamRelay, UpstreamExchange } from '../protocols/common/exchange.js';
import type { UnpricedTier } from '../protocols/common/served-tiers.js';
import type { UpstreamResponse } from '../providers/upstream.js';
import type { ObservedUsage, RequestEnd } from './charging-policy.js';
import { shutdownError, type ShutdownWatch } from './shutdown-cut.js';

/** The client connection as a stream relay needs it. */
export type StreamSink = Pick<HttpResponse, 'aborted' | 'writeHead' | 'write' | 'drained'>;

/** The tiers a vendor's answer named that gw's prices do not cover (decision 342). */
interface ServedAs {
  readonly unpricedTiers?: readonly UnpricedTier[] | undefined;
}

export interface JsonRelayed extends ServedAs {
  readonly end: RequestEnd;
  /** The client's body, an error for the client, or null when the client is gone. */
  readonly reply: { readonly body: Uint8Array | string } | GwError | null;
}

export async function readJsonAnswer(
  exchange: UpstreamExchange,
  upstreamResponse: UpstreamResponse,
  client: { readonly aborted: boolean; readonly cut?: boolean },
): Promise<JsonRelayed> {
  const upstreamStatus = upstreamResponse.statusCode;
  let bytes: Buffer;
  try {
    bytes = await upstreamResponse.body.bytes();
  } catch (error) {
    const clientGone = client.aborted;
    const cut = !clientGone && client.cut === true;
    return {
      end: {
        kind: 'answer_broken',
        upstreamStatus,
        cause: clientGone ? 'client_aborted' : cut ? 'shutdown' : failureCause(error),
        usage: {},
      },
      reply: clientGone
        ? null
        : cut
          ? shutdownError(exchange.vendorLabel)
          : gwError('gw_upstream_error', `${exchange.vendorLabel} closed the response early`),
    };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(bytes.toString('utf8'));
  } catch {
    return {
      end: { kind: 'answer_broken', upstreamStatus, cause: 'invalid_json', usage: {} },
      reply: gwError('gw_upstream_error', `${exchange.vendorLabel} answered with invalid JSON`),
    };
  }
  return {
    end: {
      kind: 'completed',
      upstreamStatus,
      stream: false,
      usage: { reported: exchange.readJsonUsage(payload) },
    },
    reply: { body: exchange.translateJson(payload, bytes) },
    unpricedTiers: exchange.readJsonUnpricedTiers(payload),
  };
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  ...nosniffHeaders,
} as const;
const KEEP_ALIVE_INTERVAL_MS = 15_000;

export interface StreamRelayed extends ServedAs {
  readonly end: RequestEnd;
  /** The terminal event to write after settlement (null: close without it). */
  readonly finalEvent: string | null;
}

export interface StreamRelayOptions {
  /** Counts what the stream produced, for a stream that ended without its usage. */
  readonly countOutput: (texts: readonly string[]) => Promise<number>;
  /** The shutdown cut to watch (none: the stream runs to its end). */
  readonly shutdown?: ShutdownWatch | undefined;
  /** The largest event the vendor may send (MAX_SSE_EVENT_BYTES; undefined: the parser's default). */
  readonly maxEventBytes?: number | undefined;
}

/**
 * Relays a stream until its end, or until the shutdown cut (`shutdown`): the caller aborts the
 * vendor call then; the relay stops waiting at once, even on a client that does not read. An
 * event past `maxEventBytes` ends it as the vendor's failure: the vendor's body is dropped
 * (leaving the loop closes it) and the client gets an error event.
 */
export async function relayStreamAnswer(
  exchange: UpstreamExchange,
  upstreamResponse: UpstreamResponse,
  sink: StreamSink,
  options: StreamRelayOptions,
): Promise<StreamRelayed> {
  const { countOutput, shutdown } = options;
  const relay = exchange.createStreamRelay(options.maxEventBytes);
  sink.writeHead(200, SSE_HEADERS);
  // A vendor that thinks for long between events: an SSE comment keeps proxies and load
  // balancers on the way from closing the idle connection.
  let lastWriteMs = Date.now();
  const keepAlive = setInterval(() => {
    if (Date.now() - lastWriteMs < KEEP_ALIVE_INTERVAL_MS) return;
    lastWriteMs = Date.now();
    sink.write(': keep-alive\n\n');
  }, KEEP_ALIVE_INTERVAL_MS);
  let upstreamFailure: unknown = undefined;
  // The relay runs on its own until the upstream body ends; the response goes on as soon as
  // the vendor's terminal event is relayed (or the relay stops): the chunked terminator that
  // follows it, often one more read away, or a vendor that keeps its body open, then costs
  // the client nothing. Whatever arrives after the terminal event is read and dropped.
  let relayStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (relayStopped = resolve));
  const stopWatching = shutdown?.onCut(() => relayStopped());
  // After the cut nothing more reaches the client: what it got is what is charged.
  const cutNow = (): boolean => shutdown?.cut === true && !relay.done;
  void (async () => {
    try {
      for await (const chunk of upstreamResponse.body) {
        if (cutNow()) break;
        const out = relay.push(chunk);
        if (out.length > 0) {
          lastWriteMs = Date.now();
          // write() false: back off until the client drains, so upstream reading pauses too.
          if (!sink.write(out)) await sink.drained();
        }
        if (sink.aborted || relay.eventTooLarge) break;
        if (relay.done) relayStopped();
      }
      const rest = cutNow() || relay.eventTooLarge ? '' : relay.end();
      if (rest.length > 0) sink.write(rest);
    } catch (error) {
      if (!sink.aborted && !relay.done) upstreamFailure = error ?? new Error('stream failed');
    } finally {
      relayStopped();
    }
  })();
  await stopped;
  clearInterval(keepAlive);
  stopWatching?.();

  const usage: ObservedUsage = {
    reported: relay.usage,
    reportedPrompt: relay.reportedPrompt,
    countedWebSearches: relay.countedWebSearches,
    countedOutputTokens: relay.usage ? undefined : await countOutput(relay.producedText),
  };
  const upstreamStatus = upstreamResponse.statusCode;
  // Named before the stream broke or not, it is how the vendor served (and bills) the call.
  const unpricedTiers = relay.unpricedTiers;
  const cause = streamBreak(relay, sink, upstreamFailure, shutdown?.cut === true);
  if (cause === undefined) {
    return {
      end: { kind: 'completed', upstreamStatus, stream: true, usage },
      finalEvent: relay.finalEvent,
      unpricedTiers,
    };
  }
  // Closed without the terminal event: the client knows the stream is incomplete. A cut at
  // shutdown, or an event too large to relay, also says why, as an error event of the
  // client's protocol (a retry may go to another instance; the vendor's event never came).
  const finalEvent =
    cause === 'shutdown'
      ? streamErrorEvent(shutdownError(exchange.vendorLabel), exchange.errorFlavor)
      : cause === 'event_too_large'
        ? streamErrorEvent(eventTooLargeError(exchange.vendorLabel), exchange.errorFlavor)
        : null;
  return {
    end: { kind: 'answer_broken', upstreamStatus, cause, usage },
    finalEvent,
    unpricedTiers,
  };
}

/** An error as a stream's error event: the messages protocol's `event: error`, else a `data:` error. */
export function streamErrorEvent(error: GwError, flavor: ErrorFlavor): string {
  const data = `data: ${errorBody(error, flavor)}\n\n`;
  return flavor === 'messages' ? `event: error\n${data}` : data;
}

/** What the client is told when the vendor sent an event past the bound. */
function eventTooLargeError(vendorLabel: string): GwError {
  return gwError(
    'gw_upstream_error',
    `${vendorLabel} sent a stream event larger than the gateway relays (MAX_SSE_EVENT_BYTES); the stream was ended`,
  );
}

type BreakCause =
  | 'client_aborted'
  | 'network_error'
  | 'timeout'
  | 'truncated'
  | 'vendor_error_event'
  | 'event_too_large'
  | 'shutdown';

/** Why a stream did not complete (undefined: it did). */
function streamBreak(
  relay: StreamRelay,
  sink: StreamSink,
  upstreamFailure: unknown,
  cutAtShutdown: boolean,
): BreakCause | undefined {
  if (sink.aborted) return 'client_aborted';
  if (relay.vendorErrorSeen) return 'vendor_error_event';
  if (relay.eventTooLarge) return 'event_too_large';
  if (relay.done && upstreamFailure === undefined) return undefined;
  // Cut before its terminal event: charged for what was relayed up to the cut.
  if (cutAtShutdown) return 'shutdown';
  if (upstreamFailure !== undefined) return failureCause(upstreamFailure);
  return 'truncated';
}

/** A body that failed: timed out, or cut (reset, closed early). */
function failureCause(error: unknown): 'timeout' | 'truncated' {
  const code = (error as { code?: string } | null)?.code;
  return code?.includes('TIMEOUT') === true ? 'timeout' : 'truncated';
}
