// The upstream call with BYOK failover: send the prepared request to the route the reserve
// picked; when a BYOK credential's vendor answers "this key cannot serve now" (rate limit,
// quota, overload, rejected key) and nothing reached the client yet, cool the credential down
// everywhere and try the next one (or the system route). Returns the vendor's answer, or how
// the request ended without one — it writes nothing and charges nothing.
import { reservationError } from '../billing/rejections.js';
import type { BudgetStore } from '../billing/budget-store.js';
import type { CredentialDirectory } from '../credentials/credential-directory.js';
import { gwError, type GwError } from '../errors.js';
import type { Logger } from '../log.js';
import type { UpstreamExchange } from '../protocols/common/exchange.js';
import { isRejectedKey } from '../providers/common/credential-failures.js';
import type { SystemRoutes, VendorRoute } from '../providers/system-routes.js';
import { isUpstreamNotSent } from '../providers/pre-write-check.js';
import type { UpstreamCall, UpstreamRequest, UpstreamResponse } from '../providers/upstream.js';
import type { Admission } from './admission.js';
import type { RequestEnd } from './charging-policy.js';
import { shutdownError } from './shutdown-cut.js';
import { SETTLEMENT_CURRENCY } from '../money.js';

export interface DispatchPorts {
  readonly upstream: { request(request: UpstreamRequest): UpstreamCall };
  readonly failover: Pick<BudgetStore, 'failover'>;
  readonly secrets: Pick<CredentialDirectory, 'secretOf'>;
  readonly systemRoutes: SystemRoutes;
  readonly logger: Pick<Logger, 'info' | 'warn'>;
  readonly nowMs: () => number;
}

/** The client side as dispatch sees it: whether it left, and where the call in flight goes. */
export interface DispatchClient {
  readonly aborted: boolean;
  /** True once the gateway cut its calls at the end of the shutdown grace. */
  readonly cut?: boolean;
  /** The call in flight, for the client's abort to close. */
  current: UpstreamCall | undefined;
}

export type Dispatched =
  | {
      readonly kind: 'answered';
      readonly response: UpstreamResponse;
      readonly credentialId: string | null;
      readonly mock: boolean;
    }
  | {
      readonly kind: 'ended';
      readonly end: RequestEnd;
      /** What the client gets; null when the client is gone. */
      readonly reply: GwError | null;
      readonly credentialId: string | null;
      readonly mock: boolean;
    };

const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Bounds the failover chain (each step cools a credential down, so it cannot loop). */
export const MAX_ATTEMPTS = 10;

export async function dispatchWithFailover(
  ports: DispatchPorts,
  admission: Admission,
  exchange: UpstreamExchange,
  client: DispatchClient,
): Promise<Dispatched> {
  let credentialId = admission.credentialId;
  let mock = false;
  for (let attempt = 1; ; attempt += 1) {
    const route = await routeFor(ports, admission, credentialId);
    if (!route) {
      return {
        kind: 'ended',
        end: { kind: 'not_dispatched', cause: 'gateway_error' },
        reply: gwError('gw_unsupported_model', `model ${admission.model.id} is not routable`),
        credentialId,
        mock,
      };
    }
    mock = route.mock;
    // Nothing is sent, and nothing charged, for a client that already left.
    if (client.aborted) {
      return {
        kind: 'ended',
        end: { kind: 'not_dispatched', cause: 'client_gone' },
        reply: null,
        credentialId,
        mock,
      };
    }
    // Past the shutdown grace nothing new goes out (nothing sent, nothing charged).
    if (client.cut) return { credentialId, mock, ...shutdownEnd(exchange) };
    const body = exchange.body;
    if (!body) throw new Error('an exchange is dispatched until its answer is accepted, not after');
    let response: UpstreamResponse;
    let call: UpstreamCall | undefined;
    try {
      call = ports.upstream.request({
        baseUrl: route.baseUrl,
        path: exchange.path,
        headers: exchange.headersFor(route.apiKey),
        body,
      });
      client.current = call;
      response = await call.response;
    } catch (error) {
      // Not one byte went out (the vendor had closed the connection it was going on): sent
      // again, the vendor still sees it once (decision 312; decision 251 is about the rest).
      const notSent = isUpstreamNotSent(error);
      if (notSent && attempt < MAX_ATTEMPTS && !client.aborted && !client.cut) continue;
      const written = !notSent && call?.written !== false;
      return {
        credentialId,
        mock,
        ...noAnswer(ports, admission, exchange, client, error, written),
      };
    }
    if (response.statusCode < 400) {
      exchange.body = undefined; // no failover from here on (see UpstreamExchange.body)
      return { kind: 'answered', response, credentialId, mock };
    }

    const errorText = (await response.body.bounded(MAX_ERROR_BODY_BYTES)).toString('utf8');
    const retryAfter = headerText(response.headers['retry-after']);
    const refused = (reply: GwError, failoverExhausted: boolean): Dispatched => ({
      kind: 'ended',
      end: { kind: 'vendor_refused', upstreamStatus: response.statusCode, failoverExhausted },
      reply: client.aborted ? null : reply,
      credentialId,
      mock,
    });
    const cooldownMs = credentialId
      ? exchange.credentialCooldownMs(response.statusCode, errorText, retryAfter)
      : undefined;
    if (
      credentialId &&
      cooldownMs !== undefined &&
      attempt < MAX_ATTEMPTS &&
      !client.aborted &&
      !client.cut
    ) {
      // Nothing reached the client yet: cool this credential down everywhere and try the next.
      const next = await ports.failover.failover({
        requestId: admission.requestId,
        accounts: admission.accounts,
        failedCredentialId: credentialId,
        cooldownUntilMs: ports.nowMs() + cooldownMs,
        amountNano: admission.reservedNano,
        failure: isRejectedKey(response.statusCode) ? 'rejected' : 'failed_over',
        upstreamStatus: response.statusCode,
      });
      ports.logger.info(
        {
          requestId: admission.requestId,
          credentialId,
          status: response.statusCode,
          next: next.kind,
        },
        'provider credential failed over',
      );
      if (next.kind === 'credential' || next.kind === 'system') {
        credentialId = next.kind === 'credential' ? next.credentialId : null;
        continue;
      }
      const refusal = reservationError(next, admission.reservedNano, {
        legacyClient: false,
        currency: SETTLEMENT_CURRENCY,
      });
      return refused(refusal, true);
    }
    return refused(exchange.mapUpstreamError(response.statusCode, errorText, retryAfter), false);
  }
}

/** No answer came: the client left, the call timed out, or the vendor could not be reached. */
function noAnswer(
  ports: DispatchPorts,
  admission: Admission,
  exchange: UpstreamExchange,
  client: DispatchClient,
  error: unknown,
  /** Whether any byte of the request may have reached the vendor. */
  written: boolean,
): { kind: 'ended'; end: RequestEnd; reply: GwError | null } {
  if (client.aborted) {
    // The client left before anything reached the vendor (its call still waited for a
    // connection, or found it closed): nothing is charged, as for a client gone before dispatch.
    const end: RequestEnd = written
      ? { kind: 'no_answer', cause: 'client_aborted' }
      : { kind: 'not_dispatched', cause: 'client_gone' };
    return { kind: 'ended', end, reply: null };
  }
  if (client.cut) return shutdownEnd(exchange);
  const code = (error as { code?: string } | null)?.code;
  ports.logger.warn({ requestId: admission.requestId, code }, 'upstream request failed');
  const timedOut = code?.includes('TIMEOUT') === true;
  return {
    kind: 'ended',
    end: { kind: 'no_answer', cause: timedOut ? 'timeout' : 'network_error' },
    reply: timedOut
      ? gwError('gw_upstream_timeout', `${exchange.vendorLabel} did not answer in time`)
      : gwError('gw_upstream_error', `${exchange.vendorLabel} could not be reached`),
  };
}

/** The call was cut (or never sent) at the end of the shutdown grace: the client may retry. */
function shutdownEnd(exchange: UpstreamExchange): {
  kind: 'ended';
  end: RequestEnd;
  reply: GwError;
} {
  return {
    kind: 'ended',
    end: { kind: 'no_answer', cause: 'shutdown' },
    reply: shutdownError(exchange.vendorLabel),
  };
}

/** Where an attempt goes: the system route, or the vendor with a BYOK credential's key. */
async function routeFor(
  ports: DispatchPorts,
  admission: Admission,
  credentialId: string | null,
): Promise<VendorRoute | undefined> {
  const system = ports.systemRoutes[admission.model.vendor];
  if (!system || !credentialId) return system;
  const secret = await ports.secrets.secretOf(admission.identity.orgId, credentialId);
  // A credential deleted this instant: its vendor call fails as unauthorized and fails over.
  return { baseUrl: system.baseUrl, apiKey: secret ?? '', mock: system.mock };
}

function headerText(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
