// Micro-benchmark: what validating a huge invalid body costs beside a valid one of the same size.
// Any API key can send 99,990 messages (under MAX_CONTAINERS) that each break the schema; a
// validator that reports every broken message builds an issue (and, through a union, several)
// per message. Each line: median CPU ms of parseJsonBody (JSON.parse, scan and schema) on the
// body (run: node dist/bench/micro/invalid-bodies.js).
import { chatCompletionRequestSchema } from '../../src/inference/chat-request.js';
import {
  countTokensRequestSchema,
  messagesRequestSchema,
} from '../../src/inference/messages-request.js';
import { parseJsonBody } from '../../src/inference/parse-body.js';
import { cpuMs } from './cpu-time.js';

const MESSAGES = 99_990;

function body(message: (index: number) => unknown): Buffer {
  const messages = Array.from({ length: MESSAGES }, (_, index) => message(index));
  return Buffer.from(JSON.stringify({ model: 'm', max_tokens: 8, messages }));
}

const role = (index: number): string => (index % 2 === 0 ? 'user' : 'assistant');
const bodies: Record<string, Buffer> = {
  valid: body((index) => ({ role: role(index), content: 'hi' })),
  'numeric content': body((index) => ({ role: role(index), content: 1 })),
  'numeric role': body(() => ({ role: 1, content: 'hi' })),
};

const schemas = {
  messages: messagesRequestSchema,
  count_tokens: countTokensRequestSchema,
  chat: chatCompletionRequestSchema,
};

for (const [route, schema] of Object.entries(schemas)) {
  const line = Object.entries(bodies).map(([name, raw]) => {
    const ms = cpuMs(() => parseJsonBody(raw, schema), 7);
    return `${name} ${ms.toFixed(1)} ms`;
  });
  process.stdout.write(`${route}, ${MESSAGES} messages: ${line.join('; ')}\n`);
}
