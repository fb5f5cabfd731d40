// The built-in mock vendors: vendor_b's chat completions and vendor_a's messages protocol on
// one port, in their real wire formats, with deterministic usage, pacing knobs and faults.
// Served by the gateway's own uWS adapter (src/http), so it follows the same uWS rules.
import { z } from 'zod';
import { sendJson } from '../http/respond.js';
import { createHttpServer } from '../http/server.js';
import type { HttpRequest, HttpResponse, Route } from '../http/types.js';
import { createLogger } from '../log.js';
import { countInputTokens } from '../tokens/count.js';
import { chatCompletionTexts, messagesTexts } from '../tokens/request-texts.js';
import { faultForKey, lastUserText, readDirectives, type MockFault } from './behaviour.js';
import type { MockAnswer, MockError, MockRequest } from './types.js';
import { vendorAAnswer, vendorAError, vendorAModels } from './vendor-a.js';
import { vendorBAnswer, vendorBError, vendorBModels } from './vendor-b.js';

export const mockVendorOptionsSchema = z.object({
  host: z.string().default('127.0.0.1'),
  port: z.number().int().min(0).max(65535).default(0),
  /** Delay before the first byte of every answer. */
  latencyMs: z.number().int().min(0).default(0),
  /** Stream pacing; 0 sends every event at once. */
  tokensPerSecond: z.number().int().min(0).default(0),
  /** Output length when neither max tokens nor a directive says otherwise. */
  defaultOutputTokens: z.number().int().min(1).default(16),
});

export type MockVendorOptions = z.input<typeof mockVendorOptionsSchema>;

export interface RunningMockVendors {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

const MODELS = {
  vendor_a: ['claude-haiku-4-5', 'claude-sonnet-4-5'],
  vendor_b: ['gpt-4o-mini', 'gpt-4o'],
} as const;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Protocol {
  readonly texts: (body: Record<string, unknown>) => string[];
  readonly answer: (request: MockRequest) => MockAnswer;
  readonly error: (fault: Exclude<MockFault, 'cut_stream'>) => MockError;
  readonly apiKey: (headers: Readonly<Record<string, string>>) => string | undefined;
  readonly requireMaxTokens: boolean;
}

const bearerKey = (headers: Readonly<Record<string, string>>): string | undefined =>
  /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];

const vendorB: Protocol = {
  texts: chatCompletionTexts,
  answer: vendorBAnswer,
  error: vendorBError,
  apiKey: bearerKey,
  requireMaxTokens: false,
};

const vendorA: Protocol = {
  texts: messagesTexts,
  answer: vendorAAnswer,
  error: vendorAError,
  apiKey: (headers) => headers['x-api-key'] ?? bearerKey(headers),
  requireMaxTokens: true,
};

function sendMockError(response: HttpResponse, error: MockError): void {
  response.writeHead(error.status, { 'content-type': 'application/json', ...error.headers });
  response.end(JSON.stringify(error.body));
}

export async function startMockVendors(input: MockVendorOptions = {}): Promise<RunningMockVendors> {
  const options = mockVendorOptionsSchema.parse(input);

  const complete = (protocol: Protocol) => async (request: HttpRequest, response: HttpResponse) => {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(request.body.toString('utf8')) as Record<string, unknown>;
      if (typeof body !== 'object' || body === null || !Array.isArray(body.messages))
        throw new Error('messages');
    } catch {
      return sendMockError(
        response,
        protocol === vendorA
          ? vendorAError('invalid_request', 'messages: field required')
          : {
              status: 400,
              headers: {},
              body: {
                error: {
                  message: 'messages is required',
                  type: 'invalid_request_error',
                  param: 'messages',
                  code: null,
                },
              },
            },
      );
    }
    const maxTokens = [body.max_tokens, body.max_completion_tokens].find(
      (value) => typeof value === 'number',
    ) as number | undefined;
    if (protocol.requireMaxTokens && maxTokens === undefined) {
      return sendMockError(response, vendorAError('invalid_request', 'max_tokens: Field required'));
    }
    const directives = readDirectives(lastUserText(body.messages));
    const keyFault = faultForKey(protocol.apiKey(request.headers));
    const fault = keyFault ?? directives.fault;
    const latency = directives.latencyMs ?? options.latencyMs;
    if (latency > 0) await sleep(latency);
    if (response.aborted) return;
    if (fault && fault !== 'cut_stream') return sendMockError(response, protocol.error(fault));

    const wanted = directives.outputTokens ?? options.defaultOutputTokens;
    const answer = protocol.answer({
      body,
      inputTokens: countInputTokens(protocol.texts(body)),
      outputTokens: Math.min(wanted, maxTokens ?? wanted),
      limitedByMax: maxTokens !== undefined && maxTokens < wanted,
    });
    const cut = fault === 'cut_stream';
    if (body.stream !== true) {
      if (cut) return response.destroy();
      return sendJson(response, 200, answer.json);
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const events = cut
      ? answer.events.slice(0, Math.max(1, Math.floor(answer.events.length / 2)))
      : answer.events;
    const pauseMs = options.tokensPerSecond > 0 ? 1000 / options.tokensPerSecond : 0;
    for (const event of events) {
      if (response.aborted) return;
      if (pauseMs > 0) await sleep(pauseMs);
      if (!response.write(event)) await response.drained();
    }
    if (cut) {
      await sleep(20); // let what was written reach the wire, then drop the connection
      response.destroy();
    } else {
      response.end();
    }
  };

  const routes: Route[] = [
    { method: 'POST', path: '/v1/chat/completions', handler: complete(vendorB) },
    { method: 'POST', path: '/v1/messages', handler: complete(vendorA) },
    {
      method: 'POST',
      path: '/v1/messages/count_tokens',
      handler: (request, response) => {
        const fault = faultForKey(vendorA.apiKey(request.headers));
        if (fault === 'bad_key') return sendMockError(response, vendorAError('bad_key'));
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(request.body.toString('utf8')) as Record<string, unknown>;
        } catch {
          return sendMockError(response, vendorAError('invalid_request', 'invalid JSON'));
        }
        sendJson(response, 200, { input_tokens: countInputTokens(messagesTexts(body)) });
      },
    },
    {
      method: 'GET',
      path: '/v1/models',
      handler: (request, response) => {
        const messagesClient =
          request.headers['anthropic-version'] !== undefined ||
          request.headers['vendor-version'] !== undefined;
        const protocol = messagesClient ? vendorA : vendorB;
        if (faultForKey(protocol.apiKey(request.headers)) === 'bad_key') {
          return sendMockError(response, protocol.error('bad_key'));
        }
        sendJson(
          response,
          200,
          messagesClient ? vendorAModels(MODELS.vendor_a) : vendorBModels(MODELS.vendor_b),
        );
      },
    },
  ];

  const server = createHttpServer({
    routes,
    maxBodyBytes: 32 * 1024 * 1024,
    logger: createLogger('silent', 'mock-vendors'),
  });
  const port = await server.listen(options.host, options.port);
  return {
    port,
    url: `http://${options.host}:${port}`,
    async close() {
      server.stopAccepting();
      await server.whenIdle(2000);
    },
  };
}
