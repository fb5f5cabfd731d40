// The texts that make up a request's input, for token counting: system prompt, each
// message's text (string content or text parts), tool calls and results as JSON, and each
// tool definition as JSON. Shared by the gateway's estimates and the mock vendors' usage, so
// they agree exactly. Total: odd but valid input never throws.

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The text of a content value: a string, or the text/JSON of each part of an array. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content == null ? '' : JSON.stringify(content);
  let text = '';
  for (const part of content) {
    if (!isObject(part)) continue;
    if (typeof part.text === 'string') text += part.text;
    else if (part.type === 'tool_use') text += JSON.stringify(part.input ?? {});
    else if (part.type === 'tool_result') text += contentText(part.content);
    else if (part.type !== 'image' && part.type !== 'image_url') text += JSON.stringify(part);
  }
  return text;
}

function toolTexts(tools: unknown): string[] {
  return Array.isArray(tools) ? tools.map((tool) => JSON.stringify(tool)) : [];
}

/** Input texts of a chat-completions request body. */
export function chatCompletionTexts(body: JsonObject): string[] {
  const texts: string[] = [];
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const message of messages) {
    if (!isObject(message)) continue;
    let text = contentText(message.content);
    if (Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        if (isObject(call) && isObject(call.function)) {
          text += String(call.function.name ?? '') + String(call.function.arguments ?? '');
        }
      }
    }
    texts.push(text);
  }
  return [...texts, ...toolTexts(body.tools)];
}

/** Input texts of a messages-protocol request body. */
export function messagesTexts(body: JsonObject): string[] {
  const texts: string[] = [];
  if (body.system !== undefined) texts.push(contentText(body.system));
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (const message of messages) {
    if (isObject(message)) texts.push(contentText(message.content));
  }
  return [...texts, ...toolTexts(body.tools)];
}
