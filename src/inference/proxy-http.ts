// The thin HTTP layer over the proxy step: builds its ports from the gateway's services once
// per route, runs it, and writes the outcome it returns.
import { jsonHeaders, sendError } from '../http/respond.js';
import type { HttpResponse } from '../http/types.js';
import { isGwError, type ErrorFlavor, type GwError } from '../errors.js';
import type { UpstreamExchange } from '../protocols/common/exchange.js';
import type { Admission } from './admission.js';
import { annotateAdmission } from './request-annotations.js';
import { runProxy, type ProxyDeps, type ProxyOutcome, type ProxyPorts } from './proxy.js';
import { settleWithRetry } from './settle-retry.js';
import { UnpricedTierLog } from './unpriced-tiers.js';

const portsByDeps = new WeakMap<ProxyDeps, ProxyPorts>();

/** The proxy step's ports over the gateway's services, built once per deps object. */
export function proxyPortsFor(deps: ProxyDeps): ProxyPorts {
  let ports = portsByDeps.get(deps);
  if (!ports) {
    ports = createProxyPorts(deps);
    portsByDeps.set(deps, ports);
  }
  return ports;
}

function createProxyPorts(deps: ProxyDeps): ProxyPorts {
  return {
    upstream: deps.upstream,
    failover: deps.services.budget,
    secrets: deps.services.credentials,
    systemRoutes: deps.systemRoutes,
    logger: deps.logger,
    nowMs: Date.now,
    outputCounter: deps.services.tokenCounter,
    settle: (admission, outcome) => settleWithRetry(deps, admission, outcome),
    keepHeld: (admission) =>
      deps.services.budget.keepHeld({
        requestId: admission.requestId,
        accounts: admission.accounts,
        amountNano: admission.reservedNano,
      }),
    shutdown: deps.shutdown,
    unpricedTierCounter: deps.unpricedTierCounter,
    unpricedTierLog: new UnpricedTierLog(deps.logger, Date.now),
    maxStreamEventBytes: deps.maxStreamEventBytes,
  };
}

/**
 * Relays an admitted request to its vendor and writes the outcome; a refused admission is
 * returned for the route to answer.
 */
export async function relayAdmission(
  deps: ProxyDeps,
  admission: Admission<UpstreamExchange> | GwError,
  request: { readonly stream: boolean; readonly startedAtMs: number },
  response: HttpResponse,
): Promise<GwError | undefined> {
  if (isGwError(admission)) return admission;
  annotateAdmission(response, admission);
  // Its rate limit's headers go with whatever it is answered: the body, the stream's first
  // bytes, or an error (decision 353).
  for (const name in admission.responseHeaders) {
    response.header(name, admission.responseHeaders[name]!);
  }
  // From here on every path settles: the hold is released and the usage recorded.
  await proxyToVendor(proxyPortsFor(deps), admission, request, response);
  return undefined;
}

export async function proxyToVendor(
  ports: ProxyPorts,
  admission: Admission<UpstreamExchange>,
  request: { readonly stream: boolean; readonly startedAtMs: number },
  response: HttpResponse,
): Promise<void> {
  const outcome = await runProxy(
    ports,
    {
      admission,
      exchange: admission.call,
      stream: request.stream,
      startedAtMs: request.startedAtMs,
    },
    response,
  );
  writeProxyOutcome(response, outcome, admission.call.errorFlavor);
}

export function writeProxyOutcome(
  response: HttpResponse,
  outcome: ProxyOutcome,
  flavor: ErrorFlavor,
): void {
  switch (outcome.kind) {
    case 'json':
      response.writeHead(200, jsonHeaders);
      response.end(outcome.body);
      return;
    case 'error':
      sendError(response, outcome.error, flavor);
      return;
    case 'stream_end':
      // The terminal event only after settle: a client that saw it has its usage record.
      if (outcome.finalEvent !== null) response.end(outcome.finalEvent);
      else response.end(); // closes without it: the client knows the stream is incomplete
      return;
    case 'client_gone':
      return;
  }
}
