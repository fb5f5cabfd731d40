// The generic proxy step of every inference route: call the vendor through the keep-alive
// pool, relay its JSON or SSE answer, and settle — always settle, whatever happens — before
// the client gets the last byte.
import type { Dispatcher } from 'undici';
import { gwError } from '../errors.js';
import { sendError } from '../http/respond.js';
import type { HttpResponse } from '../http/types.js';
import type { Logger } from '../log.js';
import type { UpstreamExchange } from '../providers/exchange.js';
import type { VendorRoute } from '../providers/system-routes.js';
import type { UpstreamClient } from '../providers/upstream.js';
import type { Admission, AdmissionServices } from './admission.js';
import { settleWithRetry } from './settle-retry.js';
import type { RequestOutcome } from './settlement.js';

export interface ProxyDeps {
  readonly services: AdmissionServices;
  readonly upstream: UpstreamClient;
  readonly logger: Logger;
}

export interface ProxyRequest {
  readonly admission: Admission;
  readonly exchange: UpstreamExchange;
  readonly route: VendorRoute;
  readonly stream: boolean;
  readonly startedAtMs: number;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;
const MAX_ERROR_BODY_BYTES = 64 * 1024;

type OutcomeFields = Omit<RequestOutcome, 'stream' | 'startedAtMs'>;

export async function proxyToVendor(
  deps: ProxyDeps,
  request: ProxyRequest,
  response: HttpResponse,
): Promise<void> {
  const { admission, exchange, route } = request;
  const abort = new AbortController();
  response.onAborted(() => abort.abort());
  const settle = (fields: OutcomeFields): Promise<void> =>
    settleWithRetry(deps, admission, {
      ...fields,
      stream: request.stream,
      startedAtMs: request.startedAtMs,
    });

  let upstreamResponse: Dispatcher.ResponseData;
  try {
    upstreamResponse = await deps.upstream.request({
      baseUrl: route.baseUrl,
      path: exchange.path,
      headers: exchange.headers,
      body: exchange.body,
      signal: abort.signal,
    });
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

  if (upstreamResponse.statusCode >= 400) {
    const errorText = await readBounded(upstreamResponse.body, MAX_ERROR_BODY_BYTES);
    await settle({
      status: 'upstream_error',
      upstreamStatus: upstreamResponse.statusCode,
      inputTokens: 0,
      outputTokens: 0,
    });
    const retryAfter = upstreamResponse.headers['retry-after'];
    const failure = exchange.mapUpstreamError(
      upstreamResponse.statusCode,
      errorText,
      typeof retryAfter === 'string' ? retryAfter : undefined,
    );
    return sendError(response, failure, exchange.errorFlavor);
  }

  if (request.stream) await relayStream(deps, request, upstreamResponse, response, abort, settle);
  else await relayJson(request, upstreamResponse, response, settle);
}

async function relayJson(
  request: ProxyRequest,
  upstreamResponse: Dispatcher.ResponseData,
  response: HttpResponse,
  settle: (fields: OutcomeFields) => Promise<void>,
): Promise<void> {
  const { admission, exchange } = request;
  let bytes: Buffer;
  try {
    bytes = Buffer.from(await upstreamResponse.body.arrayBuffer());
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
  upstreamResponse: Dispatcher.ResponseData,
  response: HttpResponse,
  abort: AbortController,
  settle: (fields: OutcomeFields) => Promise<void>,
): Promise<void> {
  const { admission, exchange } = request;
  const relay = exchange.createStreamRelay();
  response.writeHead(200, SSE_HEADERS);
  let upstreamFailed = false;
  try {
    for await (const chunk of upstreamResponse.body) {
      const out = relay.push(chunk as Buffer);
      // write() false: back off until the client drains, so upstream reading pauses too.
      if (out.length > 0 && !response.write(out)) await response.drained();
      if (response.aborted) break;
    }
    const rest = relay.end();
    if (rest.length > 0) response.write(rest);
  } catch {
    upstreamFailed = !response.aborted;
  }
  if (response.aborted) abort.abort();

  const status = response.aborted
    ? 'client_aborted'
    : relay.done && !upstreamFailed
      ? 'completed'
      : 'incomplete';
  const outputTokens =
    relay.usage?.outputTokens ?? (await deps.services.tokenCounter.countOutput(relay.producedText));
  await settle({
    status,
    upstreamStatus: upstreamResponse.statusCode,
    inputTokens: relay.usage?.inputTokens ?? admission.estimatedInputTokens,
    outputTokens,
  });
  // The terminal event only after settle: a client that saw it has its usage record.
  if (status === 'completed') response.end(relay.finalEvent);
  else response.end(); // closes without it: the client knows the stream is incomplete
}

async function readBounded(
  body: Dispatcher.ResponseData['body'],
  maxBytes: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buffer = chunk as Buffer;
      if (size + buffer.length > maxBytes) {
        chunks.push(buffer.subarray(0, maxBytes - size));
        body.destroy();
        break;
      }
      chunks.push(buffer);
      size += buffer.length;
    }
  } catch {
    // a truncated error body is still an error
  }
  return Buffer.concat(chunks).toString('utf8');
}
