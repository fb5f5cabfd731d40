// The built-in mock vendors: vendor_b's chat completions and vendor_a's messages protocol on
// one uWS port, in their real wire formats, with deterministic usage, pacing knobs and faults.
import uWS from 'uWebSockets.js';
import { countInputTokens } from '../tokens/count.js';
import {
  authFaultForKey,
  createFaultInjector,
  faultForKey,
  isPlayedFault,
  lastUserText,
  readDirectives,
} from './faults.js';
import {
  mockVendorOptionsSchema,
  type MockVendorOptions,
  type ResolvedMockVendorOptions,
} from './options.js';
import { MockExchange, readBody } from './responses.js';
import type { AnswerPlan, JsonObject, MockHeaders, MockProtocol } from './types.js';
import { countTokensBody, countTokensInvalid, vendorA, vendorAModelsBody } from './vendor-a.js';
import { vendorB, vendorBModelsBody } from './vendor-b.js';
import { isJsonObject } from '../json-shapes.js';

export { mockVendorOptionsSchema, type MockVendorOptions } from './options.js';

export interface RunningMockVendors {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

type BodyHandler = (
  exchange: MockExchange,
  headers: MockHeaders,
  body: JsonObject,
) => Promise<void> | void;

const CLOSE_GRACE_MS = 2000;
/** The invalid_json fault's body: cut inside a string, as a broken proxy would leave it. */
const INVALID_JSON_ANSWER = '{"id":"broken","choices":[{"message":{"content":"unterminat';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function copyHeaders(req: uWS.HttpRequest): MockHeaders {
  return {
    authorization: req.getHeader('authorization'),
    xApiKey: req.getHeader('x-api-key'),
    messagesClient:
      req.getHeader('anthropic-version') !== '' || req.getHeader('vendor-version') !== '',
  };
}

/** The body as a JSON object, or undefined when it is not one. */
function parseObject(body: Buffer): JsonObject | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return isJsonObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function maxTokensOf(body: JsonObject): number | undefined {
  const value = body.max_completion_tokens ?? body.max_tokens;
  return typeof value === 'number' && value >= 0 ? Math.floor(value) : undefined;
}

/** No exception may unwind through a uWS callback: a bug becomes the vendor's 500. */
function runGuarded(exchange: MockExchange, protocol: MockProtocol, run: () => unknown): void {
  const fail = (): void => {
    if (exchange.open) exchange.sendError(protocol.error('server_error'));
  };
  try {
    const pending = run();
    if (pending instanceof Promise) pending.catch(fail);
  } catch {
    fail();
  }
}

export async function startMockVendors(input: MockVendorOptions = {}): Promise<RunningMockVendors> {
  const options: ResolvedMockVendorOptions = Object.freeze(mockVendorOptionsSchema.parse(input));
  // This uWS build silently falls back to a slow JS shim; benches must not measure that.
  if (typeof uWS.getParts !== 'function')
    throw new Error('uWebSockets.js native binary is not loaded (JS fallback only)');
  const injectFault = createFaultInjector(options.faultRate);
  const active = new Set<MockExchange>();
  const forget = (exchange: MockExchange): void => void active.delete(exchange);

  const open = (res: uWS.HttpResponse, protocol: MockProtocol): MockExchange => {
    const exchange = new MockExchange(res, protocol.requestIdHeader, forget);
    active.add(exchange);
    return exchange;
  };

  /** A POST route: copies the headers, reads the body, then runs `handle` on it. */
  const withBody =
    (protocol: MockProtocol, handle: BodyHandler) =>
    (res: uWS.HttpResponse, req: uWS.HttpRequest): void => {
      const headers = copyHeaders(req); // the uWS request dies when this callback returns
      const exchange = open(res, protocol);
      readBody(
        res,
        exchange,
        options.maxBodyBytes,
        (raw) => {
          const body = parseObject(raw);
          if (!body) return exchange.sendError(protocol.invalidJson);
          runGuarded(exchange, protocol, () => handle(exchange, headers, body));
        },
        () => exchange.sendError(protocol.tooLarge),
      );
    };

  const answerCompletion =
    (protocol: MockProtocol): BodyHandler =>
    async (exchange, headers, body) => {
      const keyFault = faultForKey(protocol.apiKey(headers));
      // Authentication comes before body validation, as at the vendors.
      if (keyFault === 'missing_key' || keyFault === 'bad_key')
        return exchange.sendError(protocol.error(keyFault));
      const invalid = protocol.invalidRequest(body);
      if (invalid) return exchange.sendError(invalid);

      const directives = readDirectives(lastUserText(body));
      const latencyMs = directives.latencyMs ?? options.latencyMs;
      if (latencyMs > 0) {
        await sleep(latencyMs);
        if (!exchange.open) return;
      }
      const fault = keyFault ?? injectFault() ?? directives.fault;
      if (fault !== undefined && !isPlayedFault(fault))
        return exchange.sendError(protocol.error(fault, directives.retryAfterSeconds));

      const wantedTokens = directives.outputTokens ?? options.defaultOutputTokens;
      const maxTokens = maxTokensOf(body);
      const plan: AnswerPlan = {
        body,
        model: body.model as string, // invalidRequest checked that it is a string
        inputTokens: countInputTokens(protocol.inputTexts(body)),
        outputTokens: maxTokens === undefined ? wantedTokens : Math.min(wantedTokens, maxTokens),
        limitedByMax: maxTokens !== undefined && maxTokens < wantedTokens,
        maxTokens,
        servedAs: directives.servedAs,
      };
      if (body.stream !== true) {
        if (fault === 'cut_stream') return exchange.close();
        // A 200 whose body is not JSON: a vendor (or a proxy in between) gone wrong.
        if (fault === 'invalid_json') return exchange.sendJson(INVALID_JSON_ANSWER);
        return exchange.sendJson(protocol.completion(plan));
      }
      await exchange.stream(protocol.streamEvents(plan), options.tokensPerSecond, {
        cut: fault === 'cut_stream',
        lastEvent:
          fault === 'error_event'
            ? protocol.streamErrorEvent
            : fault === 'huge_event'
              ? protocol.hugeEvent()
              : undefined,
      });
    };

  const answerCountTokens: BodyHandler = (exchange, headers, body) => {
    const authFault = authFaultForKey(vendorA.apiKey(headers));
    if (authFault) return exchange.sendError(vendorA.error(authFault));
    const invalid = countTokensInvalid(body);
    if (invalid) return exchange.sendError(invalid);
    exchange.sendJson(countTokensBody(body, countInputTokens));
  };

  const app = uWS.App();
  app.post('/v1/chat/completions', withBody(vendorB, answerCompletion(vendorB)));
  app.post('/v1/messages', withBody(vendorA, answerCompletion(vendorA)));
  app.post('/v1/messages/count_tokens', withBody(vendorA, answerCountTokens));
  // One path, two list formats: vendor_a's clients always send a version header.
  app.get('/v1/models', (res, req) => {
    const headers = copyHeaders(req);
    const protocol = headers.messagesClient ? vendorA : vendorB;
    const exchange = open(res, protocol);
    const authFault = authFaultForKey(protocol.apiKey(headers));
    if (authFault) return exchange.sendError(protocol.error(authFault));
    exchange.sendJson(protocol === vendorA ? vendorAModelsBody : vendorBModelsBody);
  });
  app.any('/*', (res, req) => {
    const protocol = copyHeaders(req).messagesClient ? vendorA : vendorB;
    open(res, protocol).sendError(protocol.notFound);
  });

  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(options.host, options.port, (socket) => {
      if (socket) resolve(socket);
      else reject(new Error(`mock vendors cannot listen on ${options.host}:${options.port}`));
    });
  });
  const port = uWS.us_socket_local_port(listenSocket);
  const urlHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | undefined;
  return {
    port,
    url: `http://${urlHost}:${port}`,
    close() {
      closing ??= (async () => {
        uWS.us_listen_socket_close(listenSocket);
        // Let answers in flight finish (bounded), then drop what is left (e.g. slow streams).
        const deadline = Date.now() + CLOSE_GRACE_MS;
        while (active.size > 0 && Date.now() < deadline) await sleep(10);
        for (const exchange of [...active]) exchange.close();
      })();
      return closing;
    },
  };
}
