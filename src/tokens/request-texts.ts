// The texts that make up a request's input, for token counting: the system prompt, each
// message's text (string content or text parts), assistant tool calls and tool results, and
// each tool definition as JSON. Shared by the gateway's estimates and the mock vendors' usage,
// so the two agree exactly. Total and cheap: odd but valid input never throws, and binary
// parts (images, audio, files) are skipped rather than counted as base64 text.

import { isJsonObject, type JsonObject } from '../json-shapes.js';

/** JSON text of a value; never throws (a body from JSON.parse cannot cycle, but be total). */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/** Part types whose payload is binary: not text the model reads as tokens of its JSON. */
const BINARY_PART_TYPES: ReadonlySet<unknown> = new Set([
  'image',
  'image_url',
  'input_audio',
  'file',
]);

/** The text of one content part of either protocol. */
function partText(part: JsonObject): string {
  if (typeof part.text === 'string') return part.text;
  switch (part.type) {
    case 'tool_use':
    case 'server_tool_use':
      return jsonText(part.input ?? {});
    case 'tool_result':
      return contentText(part.content);
    case 'thinking':
      return typeof part.thinking === 'string' ? part.thinking : '';
    case 'redacted_thinking':
      return '';
    case 'document': {
      // A plain-text document counts as its text; a PDF or other binary source is skipped.
      const source = part.source;
      return isJsonObject(source) && source.type === 'text' && typeof source.data === 'string'
        ? source.data
        : '';
    }
    default:
      return BINARY_PART_TYPES.has(part.type) ? '' : jsonText(part);
  }
}

/** The text of a content value: a string, or the text of each part of an array. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (!Array.isArray(content)) return isJsonObject(content) ? partText(content) : String(content);
  let text = '';
  for (const part of content) {
    if (typeof part === 'string') text += part;
    else if (isJsonObject(part)) text += partText(part);
  }
  return text;
}

/** A chat tool call's name and arguments (the arguments are already a JSON string). */
function functionCallText(call: unknown): string {
  if (!isJsonObject(call)) return '';
  const name = typeof call.name === 'string' ? call.name : '';
  const args = call.arguments;
  return name + (typeof args === 'string' ? args : args === undefined ? '' : jsonText(args));
}

function toolTexts(tools: unknown, into: string[]): void {
  if (!Array.isArray(tools)) return;
  for (const tool of tools) into.push(jsonText(tool));
}

/** Input texts of a chat-completions request body. */
export function chatCompletionTexts(body: JsonObject): string[] {
  const texts: string[] = [];
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const message of messages) {
    if (!isJsonObject(message)) continue;
    let text = contentText(message.content);
    if (Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        if (isJsonObject(call)) text += functionCallText(call.function);
      }
    }
    // The deprecated single function_call of older clients.
    if (message.function_call !== undefined) text += functionCallText(message.function_call);
    texts.push(text);
  }
  toolTexts(body.tools, texts);
  toolTexts(body.functions, texts);
  return texts;
}

/** Input texts of a messages-protocol request body. */
export function messagesTexts(body: JsonObject): string[] {
  const texts: string[] = [];
  if (body.system !== undefined && body.system !== null) texts.push(contentText(body.system));
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const message of messages) {
    if (isJsonObject(message)) texts.push(contentText(message.content));
  }
  toolTexts(body.tools, texts);
  return texts;
}
