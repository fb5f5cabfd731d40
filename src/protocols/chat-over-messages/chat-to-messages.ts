// Translates a chat-completions request into the messages protocol:
// system prompts, multi-part content, tools, tool calls and tool results, stop sequences.
// Parameters the messages protocol has no counterpart for are dropped without error.

import { isJsonObject, type JsonObject } from '../../json-shapes.js';

type Block = JsonObject;
interface Turn {
  role: 'user' | 'assistant';
  content: Block[];
}

/** Parameters with the same meaning on both protocols. */
const SHARED_PARAMETERS = ['temperature', 'top_p', 'top_k'] as const;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isJsonObject(part) && typeof part.text === 'string' ? part.text : ''))
    .join('');
}

function imageBlock(url: string): Block {
  const data = /^data:([^;]+);base64,(.*)$/s.exec(url);
  return data
    ? { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } }
    : { type: 'image', source: { type: 'url', url } };
}

function contentBlocks(content: unknown): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const blocks: Block[] = [];
  for (const part of content) {
    if (!isJsonObject(part)) continue;
    if (part.type === 'text' && typeof part.text === 'string')
      blocks.push({ type: 'text', text: part.text });
    else if (
      part.type === 'image_url' &&
      isJsonObject(part.image_url) &&
      typeof part.image_url.url === 'string'
    ) {
      blocks.push(imageBlock(part.image_url.url));
    }
  }
  return blocks;
}

function parseArguments(text: unknown): unknown {
  if (typeof text !== 'string' || text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

function toolUseBlocks(toolCalls: unknown): Block[] {
  if (!Array.isArray(toolCalls)) return [];
  return toolCalls.filter(isJsonObject).map((call) => {
    const fn = isJsonObject(call.function) ? call.function : {};
    return {
      type: 'tool_use',
      id: String(call.id ?? ''),
      name: String(fn.name ?? ''),
      input: parseArguments(fn.arguments),
    };
  });
}

/** The messages protocol wants alternating roles: consecutive turns of one role are merged. */
function pushTurn(turns: Turn[], role: Turn['role'], content: Block[]): void {
  if (content.length === 0) return;
  const last = turns.at(-1);
  if (!last || last.role !== role) {
    turns.push({ role, content });
    return;
  }
  // One push per block: spread into one call, every block is an argument on the stack, and
  // about 120,000 of them (fewer deeper in a call stack) overflow it.
  for (const block of content) last.content.push(block);
}

function namedToolChoice(choice: unknown): JsonObject | undefined {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any' };
  if (
    isJsonObject(choice) &&
    isJsonObject(choice.function) &&
    typeof choice.function.name === 'string'
  ) {
    return { type: 'tool', name: choice.function.name };
  }
  return undefined;
}

/** tool_choice, with `parallel_tool_calls: false` as the messages protocol's `disable_parallel_tool_use`. */
function translateToolChoice(choice: unknown, parallel: unknown): JsonObject | undefined {
  const translated = namedToolChoice(choice);
  if (parallel !== false || translated?.type === 'none') return translated;
  return Object.assign({}, translated ?? { type: 'auto' }, { disable_parallel_tool_use: true });
}

export function chatToMessagesBody(
  body: JsonObject,
  options: { upstreamModel: string; maxTokens: number; stream: boolean },
): JsonObject {
  const system: string[] = [];
  const turns: Turn[] = [];
  const messages = Array.isArray(body.messages) ? body.messages.filter(isJsonObject) : [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(textOf(message.content));
        break;
      case 'assistant':
        pushTurn(turns, 'assistant', [
          ...contentBlocks(message.content),
          ...toolUseBlocks(message.tool_calls),
        ]);
        break;
      case 'tool':
        pushTurn(turns, 'user', [
          {
            type: 'tool_result',
            tool_use_id: String(message.tool_call_id ?? ''),
            content: textOf(message.content),
          },
        ]);
        break;
      default:
        pushTurn(turns, 'user', contentBlocks(message.content));
    }
  }
  const upstream: JsonObject = {
    model: options.upstreamModel,
    max_tokens: options.maxTokens,
    messages: turns,
  };
  if (system.length > 0) upstream.system = system.join('\n\n');
  if (options.stream) upstream.stream = true;
  for (const name of SHARED_PARAMETERS) if (body[name] !== undefined) upstream[name] = body[name];
  const stop =
    typeof body.stop === 'string' ? [body.stop] : Array.isArray(body.stop) ? body.stop : undefined;
  if (stop && stop.length > 0) upstream.stop_sequences = stop;
  if (Array.isArray(body.tools) && body.tools.length > 0) {
    upstream.tools = body.tools.filter(isJsonObject).map((tool) => {
      const fn = isJsonObject(tool.function) ? tool.function : {};
      return Object.assign(
        { name: fn.name },
        fn.description !== undefined ? { description: fn.description } : {},
        {
          input_schema: isJsonObject(fn.parameters)
            ? fn.parameters
            : { type: 'object', properties: {} },
        },
      );
    });
    const choice = translateToolChoice(body.tool_choice, body.parallel_tool_calls);
    if (choice) upstream.tool_choice = choice;
  }
  return upstream;
}
