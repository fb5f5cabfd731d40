// Deterministic generated output: words that are each exactly one o200k token, and tool
// arguments built from a JSON schema.

/** Each of these, with its leading space, is one token (checked by the mock-vendor tests). */
export const ONE_TOKEN_WORDS = [
  ' the',
  ' of',
  ' and',
  ' to',
  ' in',
  ' is',
  ' that',
  ' for',
  ' it',
  ' on',
  ' with',
  ' as',
  ' was',
  ' at',
  ' by',
  ' this',
  ' be',
  ' from',
  ' are',
  ' or',
  ' an',
  ' have',
  ' not',
  ' they',
  ' which',
  ' but',
  ' one',
  ' all',
  ' were',
  ' we',
  ' when',
  ' there',
] as const;

/** `count` tokens of text, one word (= one token) per entry. */
export function outputWords(count: number): string[] {
  const words: string[] = [];
  for (let index = 0; index < count; index += 1)
    words.push(ONE_TOKEN_WORDS[index % ONE_TOKEN_WORDS.length]!);
  return words;
}

interface SchemaLike {
  type?: unknown;
  properties?: Record<string, SchemaLike>;
  enum?: unknown[];
  items?: SchemaLike;
}

/** A value that satisfies a simple JSON schema: "mock" for strings, 1 for numbers, … */
export function valueForSchema(schema: SchemaLike | undefined): unknown {
  if (!schema || typeof schema !== 'object') return 'mock';
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (schema.type) {
    case 'object': {
      const value: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(schema.properties ?? {}))
        value[name] = valueForSchema(property);
      return value;
    }
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [valueForSchema(schema.items)];
    default:
      return 'mock';
  }
}

/** Splits a text into `parts` roughly equal fragments (for streaming tool arguments). */
export function fragments(text: string, parts: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out: string[] = [];
  for (let start = 0; start < text.length; start += size) out.push(text.slice(start, start + size));
  return out.length > 0 ? out : [''];
}
