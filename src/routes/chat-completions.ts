// POST /v1/chat/completions: admission, upstream call, relay (JSON or SSE), settlement.
import type { Dispatcher } from 'undici';
import type { Vendor } from '../catalog/models.js';
import { gwError, isGwError } from '../errors.js';
import { sendError } from '../http/respond.js';
import type { HttpRequest, HttpResponse, Route } from '../http/types.js';
import { admit, type Admission, type AdmissionServices } from '../inference/admission.js';
import { chatCompletionRequestSchema } from '../inference/chat-request.js';
import { parseJsonBody } from '../inference/parse-body.js';
import { settleWithRetry } from '../inference/settle-retry.js';
import type { RequestOutcome } from '../inference/settlement.js';
import type { Logger } from '../log.js';
import { stripAttributionFields } from '../product-users/attribution.js';
import { upstreamError } from '../providers/upstream-errors.js';
import type { UpstreamClient } from '../providers/upstream.js';
import type { SystemRoutes } from '../providers/system-routes.js';
import {
  buildVendorBChatBody,
  VENDOR_B_CHAT_PATH,
  vendorBHeaders,
} from '../providers/vendor-b/request.js';
import { DONE_EVENT, VendorBStreamRelay } from '../providers/vendor-b/stream-relay.js';
import { readVendorBUsage } from '../providers/vendor-b/usage.js';
import { chatCompletionTexts } from '../tokens/request-texts.js';

export interface ChatCompletionsDeps {
  readonly services: AdmissionServices;
  readonly upstream: UpstreamClient;
  readonly systemRoutes: SystemRoutes;
  readonly logger: Logger;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Vendors this route can serve today (vendor_a translation is its own piece of work). */
const ROUTABLE_VENDORS: readonly Vendor[] = ['vendor_b'];

export function chatCompletionsRoute(deps: ChatCompletionsDeps): Route {
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    handler: (request, response) => handleChatCompletion(deps, request, response),
  };
}

async function handleChatCompletion(
  deps: ChatCompletionsDeps,
  request: HttpRequest,
  response: HttpResponse,
): Promise<void> {
  const startedAtMs = request.receivedAtMs;
  const parsed = parseJsonBody(request.body, chatCompletionRequestSchema);
  if (isGwError(parsed)) return sendError(response, parsed);
  const body: Record<string, unknown> = parsed;
  const modelId = parsed.model;
  const vendor = modelId.slice(0, modelId.indexOf('/')) as Vendor;
  if (modelId.includes('/') && !ROUTABLE_VENDORS.includes(vendor) && deps.services.catalog.get(modelId)) {
    return sendError(
      response,
      gwError('gw_unsupported_model', `model ${modelId} is not served on /v1/chat/completions yet`),
    );
  }

  const admission = await admit(deps.services, {
    requestId: request.requestId,
    headers: request.headers,
    body,
    modelId,
    inputTexts: chatCompletionTexts(body),
    requestedMaxTokens: parsed.max_completion_tokens ?? parsed.max_tokens ?? undefined,
  });
  if (isGwError(admission)) return sendError(response, admission);

  // From here on every path settles: the reservation is released and the usage recorded.
  const stream = parsed.stream === true;
  const clientWantsUsage = parsed.stream_options?.include_usage === true;
  stripAttributionFields(body);
  const route = deps.systemRoutes.vendor_b;
  const abort = new AbortController();
  response.onAborted(() => abort.abort());
  const outcome = (fields: Omit<RequestOutcome, 'stream' | 'startedAtMs'>): RequestOutcome => ({
    ...fields,
    stream,
    startedAtMs,
  });

  let upstreamResponse: Dispatcher.ResponseData;
  try {
    upstreamResponse = await deps.upstream.request({
      baseUrl: route.baseUrl,
      path: VENDOR_B_CHAT_PATH,
      headers: vendorBHeaders(route.apiKey),
      body: buildVendorBChatBody(body, { upstreamModel: admission.model.upstreamModel, stream }),
      signal: abort.signal,
    });
  } catch (error) {
    const clientGone = response.aborted;
    // A prompt the vendor started on is billed by the vendor: charge the estimated input.
    await settleWithRetry(deps, admission, outcome({
      status: clientGone ? 'client_aborted' : 'upstream_error',
      upstreamStatus: null,
      inputTokens: clientGone ? admission.estimatedInputTokens : 0,
      outputTokens: 0,
    }));
    if (clientGone) return;
    const timedOut = (error as { code?: string }).code?.includes('TIMEOUT') === true;
    deps.logger.warn({ requestId: request.requestId, code: (error as { code?: string }).code }, 'upstream request failed');
    return sendError(
      response,
      timedOut
        ? gwError('gw_upstream_timeout', 'vendor_b did not answer in time')
        : gwError('gw_upstream_error', 'vendor_b could not be reached'),
    );
  }

  if (upstreamResponse.statusCode >= 400) {
    const errorText = await readBounded(upstreamResponse.body, MAX_ERROR_BODY_BYTES);
    await settleWithRetry(deps, admission, outcome({
      status: 'upstream_error',
      upstreamStatus: upstreamResponse.statusCode,
      inputTokens: 0,
      outputTokens: 0,
    }));
    const retryAfter = upstreamResponse.headers['retry-after'];
    return sendError(
      response,
      upstreamError('vendor_b', upstreamResponse.statusCode, errorText,
        typeof retryAfter === 'string' ? retryAfter : undefined),
    );
  }

  if (stream) {
    await relayStream(deps, admission, upstreamResponse, response, clientWantsUsage, abort, outcome);
  } else {
    await relayJson(deps, admission, upstreamResponse, response, outcome);
  }
}

async function relayJson(
  deps: ChatCompletionsDeps,
  admission: Admission,
  upstreamResponse: Dispatcher.ResponseData,
  response: HttpResponse,
  outcome: (fields: Omit<RequestOutcome, 'stream' | 'startedAtMs'>) => RequestOutcome,
): Promise<void> {
  let bytes: Buffer;
  try {
    bytes = Buffer.from(await upstreamResponse.body.arrayBuffer());
  } catch {
    const clientGone = response.aborted;
    await settleWithRetry(deps, admission, outcome({
      status: clientGone ? 'client_aborted' : 'incomplete',
      upstreamStatus: upstreamResponse.statusCode,
      inputTokens: admission.estimatedInputTokens,
      outputTokens: 0,
    }));
    if (!clientGone) sendError(response, gwError('gw_upstream_error', 'vendor_b closed the response early'));
    return;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(bytes.toString('utf8'));
  } catch {
    payload = undefined;
  }
  const usage = readVendorBUsage(payload);
  await settleWithRetry(deps, admission, outcome({
    status: 'completed',
    upstreamStatus: upstreamResponse.statusCode,
    inputTokens: usage?.inputTokens ?? admission.estimatedInputTokens,
    // Without reported usage the whole reserved output is charged: never under-bill silently.
    outputTokens: usage?.outputTokens ?? admission.maxOutputTokens,
  }));
  if (payload === undefined) {
    return sendError(response, gwError('gw_upstream_error', 'vendor_b answered with invalid JSON'));
  }
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(bytes);
}

async function relayStream(
  deps: ChatCompletionsDeps,
  admission: Admission,
  upstreamResponse: Dispatcher.ResponseData,
  response: HttpResponse,
  clientWantsUsage: boolean,
  abort: AbortController,
  outcome: (fields: Omit<RequestOutcome, 'stream' | 'startedAtMs'>) => RequestOutcome,
): Promise<void> {
  const relay = new VendorBStreamRelay(clientWantsUsage);
  response.writeHead(200, SSE_HEADERS);
  let upstreamFailed = false;
  try {
    for await (const chunk of upstreamResponse.body) {
      const out = relay.push(chunk as Buffer);
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
  await settleWithRetry(deps, admission, outcome({
    status,
    upstreamStatus: upstreamResponse.statusCode,
    inputTokens: relay.usage?.inputTokens ?? admission.estimatedInputTokens,
    outputTokens,
  }));
  // [DONE] only after settle: a client that saw it has its usage record.
  if (status === 'completed') response.end(DONE_EVENT);
  else response.end(); // closes without [DONE]: the client knows the stream is incomplete
}

async function readBounded(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
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
