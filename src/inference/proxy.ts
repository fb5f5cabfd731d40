// The proxy step of every inference route, after admission placed the hold: call the vendor
// (with BYOK failover), read or relay its answer, and settle exactly once with the charge the
// charging policy decides — before the client gets the last byte. It returns an outcome that
// the HTTP layer (proxy-http.ts) writes; only a streamed answer is written here, as it comes,
// because it must flow with backpressure.
import type { ErrorCode, GwError } from '../errors.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import type { UpstreamExchange } from '../protocols/common/exchange.js';
import type { UnpricedTier } from '../protocols/common/served-tiers.js';
import type { Logger } from '../log.js';
import type { SystemRoutes } from '../providers/system-routes.js';
import type { UpstreamCall, UpstreamClient } from '../providers/upstream.js';
import type { Admission, AdmissionServices } from './admission.js';
import { chargeFor, type RequestEnd } from './charging-policy.js';
import { dispatchWithFailover, type DispatchClient, type DispatchPorts } from './failover.js';
import { readJsonAnswer, relayStreamAnswer, type StreamSink } from './relay.js';
import type { RequestOutcome } from './settlement.js';
import type { SettledCounter } from './settle-retry.js';
import type { ShutdownWatch } from './shutdown-cut.js';
import {
  reportUnpricedTiers,
  type UnpricedTierCounter,
  type UnpricedTierLog,
} from './unpriced-tiers.js';

/** The gateway's services the inference routes hand the proxy step (ports are built from them). */
export interface ProxyDeps {
  readonly services: AdmissionServices;
  readonly upstream: UpstreamClient;
  readonly systemRoutes: SystemRoutes;
  readonly logger: Logger;
  /** Cuts the vendor calls still in flight at the end of the shutdown grace. */
  readonly shutdown?: ShutdownWatch;
  /** Counts the settled requests and their costs (the metrics). */
  readonly settledCounter?: SettledCounter;
  /** Counts the calls vendors served at a tier gw does not price (the metrics). */
  readonly unpricedTierCounter?: UnpricedTierCounter;
  /** The largest SSE event a vendor may send (MAX_SSE_EVENT_BYTES). */
  readonly maxStreamEventBytes?: number;
}

/** The codes the proxy step answers with (for the routes' declarations). */
export const PROXY_ERRORS: readonly ErrorCode[] = [
  'gw_upstream_rate_limited',
  'gw_upstream_error',
  'gw_upstream_timeout',
  'gw_invalid_request',
  'gw_reservation_insufficient_balance',
  'gw_provider_credentials_unavailable',
];

export interface ProxyPorts extends DispatchPorts {
  readonly outputCounter: Pick<TokenCounter, 'countOutput'>;
  /** Settles the request (releases its holds, charges, records); idempotent. */
  readonly settle: (admission: Admission, outcome: RequestOutcome) => Promise<void>;
  /**
   * Keeps the request's holds from lapsing while it runs (BudgetStore.keepHeld); returns the
   * stop. None: the holds lapse RESERVATION_TTL_MS after the reserve, however long it runs.
   */
  readonly keepHeld?: (admission: Admission) => () => void;
  /** The shutdown cut to watch (none: the call runs to its end). */
  readonly shutdown?: ShutdownWatch;
  /** Counts the tiers vendors served calls at that gw does not price (none: logged only). */
  readonly unpricedTierCounter?: UnpricedTierCounter;
  /** Logs the calls served at such a tier, one line per kind of call a minute. */
  readonly unpricedTierLog: UnpricedTierLog;
  /** The largest SSE event a vendor may send (MAX_SSE_EVENT_BYTES; none: the parser's default). */
  readonly maxStreamEventBytes?: number | undefined;
}

export interface ProxyRequest {
  readonly admission: Admission;
  /** The upstream call, built before the hold was placed. */
  readonly exchange: UpstreamExchange;
  readonly stream: boolean;
  readonly startedAtMs: number;
}

/** The client connection as the proxy step needs it. */
export interface ProxyClient extends StreamSink {
  onAborted(listener: () => void): void;
}

/** What the HTTP layer writes once the request is settled. */
export type ProxyOutcome =
  | { readonly kind: 'json'; readonly body: Uint8Array | string }
  | { readonly kind: 'error'; readonly error: GwError }
  /** The stream was relayed; end it with `finalEvent` (null: close without it). */
  | { readonly kind: 'stream_end'; readonly finalEvent: string | null }
  /** The client left: nothing to write. */
  | { readonly kind: 'client_gone' };

/**
 * What the failover loop asks about the client while it calls the vendor. A class, not an
 * object literal with getters: a getter literal per request gets its own hidden class, which
 * keeps the whole request alive through young collections (see src/http/request.ts).
 */
class ClientWatch implements DispatchClient {
  current: UpstreamCall | undefined = undefined;

  constructor(
    private readonly client: ProxyClient,
    private readonly shutdown: ShutdownWatch | undefined,
  ) {}

  get aborted(): boolean {
    return this.client.aborted;
  }

  get cut(): boolean {
    return this.shutdown?.cut === true;
  }
}

export async function runProxy(
  ports: ProxyPorts,
  request: ProxyRequest,
  client: ProxyClient,
): Promise<ProxyOutcome> {
  const { admission, exchange } = request;
  const shutdown = ports.shutdown;
  const dispatchClient = new ClientWatch(client, shutdown);
  // The client went away, or the shutdown grace ended: give up on the vendor call in flight
  // (the stream's relay notices).
  client.onAborted(() => dispatchClient.current?.abort());
  const stopWatching = shutdown?.onCut(() => dispatchClient.current?.abort());
  // A stream may outlast RESERVATION_TTL_MS: its holds stand until it settles.
  const stopKeeping = ports.keepHeld?.(admission);

  let settled = false;
  let credentialId = admission.credentialId;
  let mock = false;
  const settle = async (end: RequestEnd): Promise<void> => {
    settled = true;
    const charge = chargeFor(end, {
      estimatedPrompt: admission.estimatedPrompt,
      heldWebSearches: admission.heldWebSearches,
      heldOutputTokens: admission.heldOutputTokens,
    });
    await ports.settle(admission, {
      stream: request.stream,
      startedAtMs: request.startedAtMs,
      credentialId,
      mock,
      ...charge,
    });
  };

  // The vendor's own word on the tier it served the call at (decision 342): charges unchanged.
  const noteServedTiers = (tiers: readonly UnpricedTier[] | undefined): void => {
    if (!tiers) return;
    const served = { admission, provider: exchange.vendorLabel, credentialId };
    reportUnpricedTiers(ports, served, tiers);
  };

  try {
    const dispatched = await dispatchWithFailover(ports, admission, exchange, dispatchClient);
    credentialId = dispatched.credentialId;
    mock = dispatched.mock;
    if (dispatched.kind === 'ended') {
      await settle(dispatched.end);
      return dispatched.reply
        ? { kind: 'error', error: dispatched.reply }
        : { kind: 'client_gone' };
    }
    if (request.stream) {
      const relayed = await relayStreamAnswer(exchange, dispatched.response, client, {
        // Charged by it whatever the client does: never cancelled, never refused.
        countOutput: (texts) =>
          ports.outputCounter.countOutput(texts, { orgId: admission.identity.orgId }),
        shutdown,
        maxEventBytes: ports.maxStreamEventBytes,
      });
      await settle(relayed.end);
      noteServedTiers(relayed.unpricedTiers);
      return { kind: 'stream_end', finalEvent: relayed.finalEvent };
    }
    const answered = await readJsonAnswer(exchange, dispatched.response, dispatchClient);
    await settle(answered.end);
    noteServedTiers(answered.unpricedTiers);
    if (answered.reply === null) return { kind: 'client_gone' };
    return 'body' in answered.reply
      ? { kind: 'json', body: answered.reply.body }
      : { kind: 'error', error: answered.reply };
  } catch (error) {
    // A bug between the hold and settle: release the hold now rather than by its TTL.
    if (!settled) {
      await settle({ kind: 'not_dispatched', cause: 'gateway_error' }).catch(() => undefined);
    }
    throw error;
  } finally {
    stopWatching?.();
    stopKeeping?.();
  }
}
