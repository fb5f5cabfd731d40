// The generic proxy step of every inference route: call the vendor through the keep-alive
// pool, relay its JSON or SSE answer, and settle — always settle, whatever happens — before
// the client gets the last byte.
import { gwError, type ErrorCode } from '../errors.js';
import { sendError } from '../http/respond.js';
import type { HttpResponse } from '../http/types.js';
import type { Logger } from '../log.js';
import type { UpstreamExchange } from '../providers/exchange.js';
import type { SystemRoutes, VendorRoute } from '../providers/system-routes.js';
import { credentialCooldownMs } from '../providers/credential-failures.js';
import { reservationError } from '../billing/rejections.js';
import { SETTLEMENT_CURRENCY } from './settlement.js';
import type { UpstreamCall, UpstreamClient, UpstreamResponse } from '../providers/upstream.js';
import type { Admission, AdmissionServices } from './admission.js';
import { settleWithRetry } from './settle-retry.js';
import type { RequestOutcome } from './settlement.js';
import type { UsageStatus } from '../ledger/usage-record.js';

export interface ProxyDeps {
  readonly services: AdmissionServices;
  readonly upstream: UpstreamClient;
  readonly systemRoutes: SystemRoutes;
  readonly logger: Logger;
}

export interface ProxyRequest {
  readonly admission: Admission;
  /** Builds the upstream exchange for a route (the system route, or a BYOK credential's). */
  readonly buildExchange: (route: VendorRoute) => UpstreamExchange;
  readonly stream: boolean;
  readonly startedAtMs: number;
}

/** The codes the proxy step answers with (for the routes' declarations). */
export const PROXY_ERRORS: readonly ErrorCode[] = [
  'gw_upstream_rate_limited',
  'gw_upstream_error',
  'gw_upstream_timeout',
  'gw_reservation_insufficient_balance',
  'gw_provider_credentials_unavailable',
];

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;
const MAX_ERROR_BODY_BYTES = 64 * 1024;
const KEEP_ALIVE_INTERVAL_MS = 15_000;
/** Bounds the failover chain (each step cools a credential down, so it cannot loop). */
const MAX_ATTEMPTS = 10;

type OutcomeFields = Omit<RequestOutcome, 'stream' | 'startedAtMs' | 'credentialId'>;
type Settle = (fields: OutcomeFields) => Promise<void>;

export async function proxyToVendor(
  deps: ProxyDeps,
  request: ProxyRequest,
  response: HttpResponse,
): Promise<void> {
  const { admission } = request;
  let call: UpstreamCall | undefined;
  // The client went away: give up on the vendor call in flight (the stream's relay notices).
  response.onAborted(() => call?.abort());
  let credentialId = admission.credentialId;
  const settle: Settle = (fields) =>
    settleWithRetry(deps, admission, {
      ...fields,
      stream: request.stream,
      startedAtMs: request.startedAtMs,
      credentialId,
    });

  for (let attempt = 1; ; attempt += 1) {
    const route = await routeFor(deps, admission, credentialId);
    const exchange = request.buildExchange(route);
    let upstreamResponse: UpstreamResponse;
    try {
      call = deps.upstream.request({
        baseUrl: route.baseUrl,
        path: exchange.path,
        headers: exchange.headers,
        body: exchange.body,
      });
      if (response.aborted) call.abort();
      upstreamResponse = await call.response;
    } catch (error) {
      const clientGone = response.aborted;
      // A prompt the vendor started on is billed by the vendor: charge the estimated input.
      await settle({
        status: clientGone ? 'client_aborted' : 'upstream_error',
        upstreamStatus: null,
        inputTokens: clientGone ? admission.estimatedInputTokens : 0,
        outputTokens: 0,
      });
      if (clientGone) return;
      const code = (error as { code?: string }).code;
      deps.logger.warn({ requestId: admission.requestId, code }, 'upstream request failed');
      const failure = code?.includes('TIMEOUT')
        ? gwError('gw_upstream_timeout', `${exchange.vendorLabel} did not answer in time`)
        : gwError('gw_upstream_error', `${exchange.vendorLabel} could not be reached`);
      return sendError(response, failure, exchange.errorFlavor);
    }

    if (upstreamResponse.statusCode < 400) {
      if (request.stream) {
        await relayStream(deps, request, exchange, upstreamResponse, response, settle);
      } else {
        await relayJson(request, exchange, upstreamResponse, response, settle);
      }
      return;
    }

    const errorText = (await upstreamResponse.body.bounded(MAX_ERROR_BODY_BYTES)).toString('utf8');
    const retryAfter = headerText(upstreamResponse.headers['retry-after']);
    const cooldownMs = credentialId
      ? credentialCooldownMs(upstreamResponse.statusCode, errorText, retryAfter)
      : undefined;
    if (credentialId && cooldownMs !== undefined && attempt < MAX_ATTEMPTS && !response.aborted) {
      // Nothing reached the client yet: cool this credential down everywhere and try the next.
      const next = await deps.services.budget.failover({
        requestId: admission.requestId,
        accounts: admission.accounts,
        failedCredentialId: credentialId,
        cooldownUntilMs: Date.now() + cooldownMs,
        amountNano: admission.reservedNano,
      });
      deps.logger.info(
        {
          requestId: admission.requestId,
          credentialId,
          status: upstreamResponse.statusCode,
          next: next.kind,
        },
        'provider credential failed over',
      );
      if (next.kind === 'credential' || next.kind === 'system') {
        credentialId = next.kind === 'credential' ? next.credentialId : null;
        continue;
      }
      await settle({
        status: 'upstream_error',
        upstreamStatus: upstreamResponse.statusCode,
        inputTokens: 0,
        outputTokens: 0,
      });
      const refusal = reservationError(next, admission.reservedNano, {
        legacyClient: false,
        currency: SETTLEMENT_CURRENCY,
      });
      return sendError(response, refusal, exchange.errorFlavor);
    }
    await settle({
      status: 'upstream_error',
      upstreamStatus: upstreamResponse.statusCode,
      inputTokens: 0,
      outputTokens: 0,
    });
    const failure = exchange.mapUpstreamError(upstreamResponse.statusCode, errorText, retryAfter);
    return sendError(response, failure, exchange.errorFlavor);
  }
}

/** Where an attempt goes: the system route, or the vendor with a BYOK credential's key. */
async function routeFor(
  deps: ProxyDeps,
  admission: Admission,
  credentialId: string | null,
): Promise<VendorRoute> {
  const system = deps.systemRoutes[admission.model.vendor];
  if (!credentialId) return system;
  const secret = await deps.services.credentials.secretOf(admission.identity.orgId, credentialId);
  // A credential deleted this instant: its vendor call fails as unauthorized and fails over.
  return { baseUrl: system.baseUrl, apiKey: secret ?? '', mock: system.mock };
}

function headerText(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

async function relayJson(
  request: ProxyRequest,
  exchange: UpstreamExchange,
  upstreamResponse: UpstreamResponse,
  response: HttpResponse,
  settle: Settle,
): Promise<void> {
  const { admission } = request;
  let bytes: Buffer;
  try {
    bytes = await upstreamResponse.body.bytes();
  } catch {
    const clientGone = response.aborted;
    await settle({
      status: clientGone ? 'client_aborted' : 'incomplete',
      upstreamStatus: upstreamResponse.statusCode,
      inputTokens: admission.estimatedInputTokens,
      outputTokens: 0,
    });
    if (!clientGone) {
      const failure = gwError(
        'gw_upstream_error',
        `${exchange.vendorLabel} closed the response early`,
      );
      sendError(response, failure, exchange.errorFlavor);
    }
    return;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(bytes.toString('utf8'));
  } catch {
    payload = undefined;
  }
  const usage = exchange.readJsonUsage(payload);
  await settle({
    status: 'completed',
    upstreamStatus: upstreamResponse.statusCode,
    inputTokens: usage?.inputTokens ?? admission.estimatedInputTokens,
    // Without reported usage the whole reserved output is charged: never under-bill silently.
    outputTokens: usage?.outputTokens ?? admission.maxOutputTokens,
  });
  if (payload === undefined) {
    const failure = gwError(
      'gw_upstream_error',
      `${exchange.vendorLabel} answered with invalid JSON`,
    );
    return sendError(response, failure, exchange.errorFlavor);
  }
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(exchange.translateJson(payload, bytes));
}

async function relayStream(
  deps: ProxyDeps,
  request: ProxyRequest,
  exchange: UpstreamExchange,
  upstreamResponse: UpstreamResponse,
  response: HttpResponse,
  settle: Settle,
): Promise<void> {
  const { admission } = request;
  const relay = exchange.createStreamRelay();
  response.writeHead(200, SSE_HEADERS);
  // A vendor that thinks for long between events: an SSE comment keeps proxies and load
  // balancers on the way from closing the idle connection.
  let lastWriteMs = Date.now();
  const keepAlive = setInterval(() => {
    if (Date.now() - lastWriteMs < KEEP_ALIVE_INTERVAL_MS) return;
    lastWriteMs = Date.now();
    response.write(': keep-alive\n\n');
  }, KEEP_ALIVE_INTERVAL_MS);
  let upstreamFailed = false;
  // The relay runs on its own until the upstream body ends; the response goes on as soon as
  // the vendor's terminal event is relayed (or the relay stops): the chunked terminator that
  // follows it, often one more read away, or a vendor that keeps its body open, then costs
  // the client nothing. Whatever arrives after the terminal event is read and dropped.
  let relayStopped!: () => void;
  const stopped = new Promise<void>((resolve) => (relayStopped = resolve));
  void (async () => {
    try {
      for await (const chunk of upstreamResponse.body) {
        const out = relay.push(chunk);
        if (out.length > 0) {
          lastWriteMs = Date.now();
          // write() false: back off until the client drains, so upstream reading pauses too.
          if (!response.write(out)) await response.drained();
        }
        if (response.aborted) break;
        if (relay.done) relayStopped();
      }
      const rest = relay.end();
      if (rest.length > 0) response.write(rest);
    } catch {
      upstreamFailed = !response.aborted && !relay.done;
    } finally {
      relayStopped();
    }
  })();
  await stopped;
  clearInterval(keepAlive);

  const status: UsageStatus = response.aborted
    ? 'client_aborted'
    : relay.done && !upstreamFailed
      ? 'completed'
      : 'incomplete';
  const outputTokens =
    relay.usage?.outputTokens ?? (await deps.services.tokenCounter.countOutput(relay.producedText));
  await settle({
    status,
    upstreamStatus: upstreamResponse.statusCode,
    inputTokens:
      relay.usage?.inputTokens ?? relay.reportedInputTokens ?? admission.estimatedInputTokens,
    outputTokens,
  });
  // The terminal event only after settle: a client that saw it has its usage record.
  if (status === 'completed') response.end(relay.finalEvent);
  else response.end(); // closes without it: the client knows the stream is incomplete
}
