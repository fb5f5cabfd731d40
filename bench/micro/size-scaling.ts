// Micro-benchmark: how the work of one request grows with its size, step by step, as the ratio
// of its CPU at 2N to its CPU at N (2.0 is linear; 4.0 is quadratic). The request path: a body
// of N short alternating messages through each route's steps; the stream path: one SSE event of
// N bytes read in 16 KiB chunks (run: node dist/bench/micro/size-scaling.js).
import { chatCompletionRequestSchema } from '../../src/inference/chat-request.js';
import {
  countTokensRequestSchema,
  messagesRequestSchema,
} from '../../src/inference/messages-request.js';
import { parseJsonBody } from '../../src/inference/parse-body.js';
import { chatToMessagesBody } from '../../src/protocols/chat-over-messages/chat-to-messages.js';
import {
  buildChatCompletionsBody,
  chatCompletionsRefusal,
} from '../../src/protocols/chat-completions/request.js';
import { SseParser } from '../../src/protocols/common/sse.js';
import { serialisedBody } from '../../src/protocols/common/exchange.js';
import { promptCacheWrite } from '../../src/protocols/messages/request.js';
import { countInputTokens } from '../../src/tokens/count.js';
import { chatCompletionTexts, messagesTexts } from '../../src/tokens/request-texts.js';
import type { JsonObject } from '../../src/json-shapes.js';
import { cpuMs } from './cpu-time.js';

/** N messages of 'hi', roles alternating, starting and ending with the user. */
function body(model: string, messages: number): Buffer {
  const turns = Array.from({ length: messages | 1 }, (_, index) => ({
    role: index % 2 === 0 ? 'user' : 'assistant',
    content: 'hi',
  }));
  return Buffer.from(JSON.stringify({ model, max_tokens: 8, messages: turns }));
}

// Under MAX_CONTAINERS (100,000): larger bodies are refused before JSON.parse.
const SIZES = [12_500, 25_000, 50_000, 99_990];

const steps: Record<string, (messages: number) => () => unknown> = {
  'chat: parse and validate': (n) => {
    const raw = body('vendor_b/gpt-4o-mini', n);
    return () => parseJsonBody(raw, chatCompletionRequestSchema);
  },
  'messages: parse and validate': (n) => {
    const raw = body('vendor_a/claude-haiku-4-5', n);
    return () => parseJsonBody(raw, messagesRequestSchema);
  },
  'count_tokens: parse and validate': (n) => {
    const raw = body('vendor_a/claude-haiku-4-5', n);
    return () => parseJsonBody(raw, countTokensRequestSchema);
  },
  'chat: priced options, texts, count': (n) => {
    const parsed = JSON.parse(body('m', n).toString()) as JsonObject;
    return () => chatCompletionsRefusal(parsed) ?? countInputTokens(chatCompletionTexts(parsed));
  },
  'messages: cache walk, texts, count': (n) => {
    const parsed = JSON.parse(body('m', n).toString()) as JsonObject;
    return () => [promptCacheWrite(parsed), countInputTokens(messagesTexts(parsed))];
  },
  'chat: upstream body (same protocol)': (n) => {
    const parsed = JSON.parse(body('m', n).toString()) as JsonObject;
    return () => buildChatCompletionsBody(parsed, { upstreamModel: 'u', stream: false });
  },
  'chat: upstream body (to messages)': (n) => {
    const parsed = JSON.parse(body('m', n).toString()) as JsonObject;
    const options = { upstreamModel: 'u', maxTokens: 8, stream: false };
    return () => serialisedBody(chatToMessagesBody(parsed, options));
  },
};

for (const schema of [
  chatCompletionRequestSchema,
  messagesRequestSchema,
  countTokensRequestSchema,
]) {
  const parsed = parseJsonBody(body('m', SIZES.at(-1)!), schema) as { code?: string };
  if (parsed.code !== undefined) throw new Error(`the largest body was refused: ${parsed.code}`);
}
for (const [name, build] of Object.entries(steps)) {
  const ms = SIZES.map((size) => cpuMs(build(size)));
  const growth = ms.slice(1).map((value, index) => (value / ms[index]!).toFixed(2));
  process.stdout.write(
    `${name}: ${ms.map((value) => value.toFixed(1)).join(' / ')} ms at ${SIZES.join(' / ')} messages; ` +
      `growth per doubling ${growth.join(', ')}\n`,
  );
}

const EVENT_MIB = [1, 2, 4, 8];
for (const [lineEnd, chunkBytes] of [
  ['\n', 16 * 1024],
  ['\r\n', 1024],
] as const) {
  const eventMs = EVENT_MIB.map((mib) => {
    const data = 'x'.repeat(mib * 1024 * 1024);
    const bytes = Buffer.from(`event: delta${lineEnd}data: ${data}${lineEnd}${lineEnd}`);
    return cpuMs(() => {
      const parser = new SseParser();
      for (let at = 0; at < bytes.length; at += chunkBytes) {
        parser.push(bytes.subarray(at, at + chunkBytes));
      }
      return parser.end();
    });
  });
  const growth = eventMs.slice(1).map((value, index) => (value / eventMs[index]!).toFixed(2));
  process.stdout.write(
    `SSE: one event of ${EVENT_MIB.join(' / ')} MiB, ${lineEnd === '\n' ? 'LF' : 'CRLF'} line ends, ` +
      `in ${chunkBytes / 1024} KiB chunks: ${eventMs.map((value) => value.toFixed(1)).join(' / ')} ms; ` +
      `growth per doubling ${growth.join(', ')}\n`,
  );
}
