// Deterministic generated output: text from words that are each exactly one o200k token,
// tool arguments built from a JSON schema, cheap unique ids, and usage spliced into an answer.
import { randomBytes } from 'node:crypto';
import { countTextTokens } from '../tokens/count.js';
import { isJsonObject } from '../json-shapes.js';

/**
 * Each word, with its leading space, is one o200k token, and the tokenizer never merges across
 * them (its pre-tokenizer splits before each space), so N words are exactly N tokens. The first
 * word of a text drops its space ("the" is one token too). The mock-vendor tests check this.
 */
export const ONE_TOKEN_WORDS: readonly string[] = [
  ' the', ' of', ' and', ' to', ' in', ' is', ' that', ' for',
  ' it', ' on', ' with', ' as', ' was', ' at', ' by', ' this',
  ' be', ' from', ' are', ' or', ' an', ' have', ' not', ' they',
  ' which', ' but', ' one', ' all', ' were', ' we', ' when', ' there',
]; // prettier-ignore

/** The token of word `index` of a generated text (the first one without its space). */
export function outputWord(index: number): string {
  const word = ONE_TOKEN_WORDS[index % ONE_TOKEN_WORDS.length]!;
  return index === 0 ? word.slice(1) : word;
}

/**
 * The output word at each index as a protocol renders it (an SSE event, a delta), each
 * rendered once: a stream then costs string concatenation only.
 */
export function renderedWords(render: (word: string) => string): (index: number) => string {
  const first = render(outputWord(0));
  const words = ONE_TOKEN_WORDS.map(render);
  return (index) => (index === 0 ? first : words[index % words.length]!);
}

/** Bytes of the text of the huge_event fault's one delta: past any bound a gateway should set. */
export const HUGE_EVENT_TEXT_BYTES = 1024 * 1024;

/**
 * An SSE event rendered once, on first use: the huge_event fault's megabyte is built only in a
 * process that plays it.
 */
export function renderedOnce(render: (text: string) => string): () => string {
  let rendered: string | undefined;
  return () => (rendered ??= render(' the'.repeat(HUGE_EVENT_TEXT_BYTES / 4)));
}

/** The HTTP Bearer token of an Authorization header, if it is one. */
export function bearerToken(authorization: string): string | undefined {
  return authorization.startsWith('Bearer ') ? authorization.slice(7).trim() : undefined;
}

// A whole text is built by slicing one long precomputed string: no per-request joins.
const TEXT_CACHE_TOKENS = 4096;
const textEnds: number[] = [];
let cachedText = '';
for (let index = 0; index < TEXT_CACHE_TOKENS; index += 1) {
  cachedText += outputWord(index);
  textEnds.push(cachedText.length);
}

/** A text of exactly `tokens` o200k tokens. */
export function outputText(tokens: number): string {
  if (tokens <= 0) return '';
  if (tokens <= TEXT_CACHE_TOKENS) return cachedText.slice(0, textEnds[tokens - 1]);
  let text = cachedText;
  for (let index = TEXT_CACHE_TOKENS; index < tokens; index += 1) text += outputWord(index);
  return text;
}

export interface SchemaLike {
  readonly type?: unknown;
  readonly properties?: unknown;
  readonly enum?: unknown;
  readonly const?: unknown;
  readonly items?: unknown;
  readonly anyOf?: unknown;
  readonly oneOf?: unknown;
}

const isSchema = (value: unknown): value is SchemaLike => isJsonObject(value);

const MAX_SCHEMA_DEPTH = 8;

/** A value that satisfies a simple JSON schema: "mock" for strings, 1 for numbers, … */
export function valueForSchema(schema: unknown, depth = 0): unknown {
  if (!isSchema(schema) || depth > MAX_SCHEMA_DEPTH) return 'mock';
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf : schema.oneOf;
  if (Array.isArray(alternatives) && alternatives.length > 0)
    return valueForSchema(alternatives[0], depth + 1);
  // A type list like ["string", "null"]: take the first.
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const value: Record<string, unknown> = {};
      if (isSchema(schema.properties)) {
        for (const [name, property] of Object.entries(schema.properties))
          value[name] = valueForSchema(property, depth + 1);
      }
      return value;
    }
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array':
      return [valueForSchema(schema.items, depth + 1)];
    default:
      return isSchema(schema.properties)
        ? valueForSchema({ ...schema, type: 'object' }, depth)
        : 'mock';
  }
}

/** A generated tool call: its arguments as JSON and the output tokens it costs. */
export interface ToolCallOutput {
  readonly name: string;
  readonly argumentsJson: string;
  readonly input: unknown;
  /** Tokens of the name plus tokens of the arguments JSON: the call's output usage. */
  readonly outputTokens: number;
  /** The arguments JSON cut into streaming deltas (they concatenate back to argumentsJson). */
  readonly argumentDeltas: readonly string[];
}

const ARGUMENT_DELTA_CHARS = 8;

export function toolCallOutput(name: string, schema: unknown): ToolCallOutput {
  const input = valueForSchema(isSchema(schema) ? schema : { type: 'object' });
  const argumentsJson = JSON.stringify(input) ?? '{}';
  const argumentDeltas: string[] = [];
  for (let start = 0; start < argumentsJson.length; start += ARGUMENT_DELTA_CHARS)
    argumentDeltas.push(argumentsJson.slice(start, start + ARGUMENT_DELTA_CHARS));
  return {
    name,
    argumentsJson,
    input,
    outputTokens: countTextTokens(name) + countTextTokens(argumentsJson),
    argumentDeltas,
  };
}

/** A tool the request offers: its name and its arguments' JSON schema. */
export interface OfferedTool {
  readonly name: string;
  readonly schema: unknown;
}

/**
 * The offered tool the tool choice names, else the first one offered. `readTool` reads one
 * definition in the protocol's shape (undefined: not a usable tool, skipped).
 */
export function namedOrFirstTool(
  definitions: readonly unknown[],
  namedChoice: unknown,
  readTool: (definition: unknown) => OfferedTool | undefined,
): OfferedTool | undefined {
  let first: OfferedTool | undefined;
  for (const definition of definitions) {
    const tool = readTool(definition);
    if (!tool) continue;
    if (tool.name === namedChoice) return tool;
    first ??= tool;
  }
  return first;
}

/**
 * The call to make for a chosen tool (name and JSON schema), unless the request's max tokens
 * cannot hold it: then the answer is text instead, so usage never exceeds max tokens.
 */
export function fittingToolCall(
  tool: OfferedTool | undefined,
  maxTokens: number | undefined,
): ToolCallOutput | undefined {
  if (!tool) return undefined;
  const call = toolCallOutput(tool.name, tool.schema);
  return maxTokens !== undefined && call.outputTokens > maxTokens ? undefined : call;
}

// Ids: a per-process random stem and a counter, unique without a crypto call per request.
const idStem = randomBytes(5).toString('hex').slice(0, 8);
let idCounter = 0;

export function mockId(prefix: string): string {
  idCounter += 1;
  return `${prefix}${idStem}${idCounter.toString(36).padStart(8, '0')}`;
}

/**
 * An answer's JSON with `"usage":usageJson` as its last field, spliced in as text: usage is all
 * integers, so it needs no serialising. `answer` has at least one field.
 */
export function withUsageJson(answer: object, usageJson: string): string {
  return `${JSON.stringify(answer).slice(0, -1)},"usage":${usageJson}}`;
}
