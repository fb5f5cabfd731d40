// Parses and validates a JSON request body into a typed value or the spec's 400 error.
import type { z } from 'zod';
import { gwError, type ErrorCode, type GwError } from '../errors.js';
import { mediaTypeOf, wrongMediaType } from '../http/content-type.js';
import { describeFirstIssue, firstIssueCode, quotableName } from '../validation-messages.js';
import { isJsonContainer } from '../json-shapes.js';

/**
 * The deepest nesting of arrays and objects a body may have. Deeper JSON parses, but cannot be
 * serialised again for the vendor (JSON.stringify recurses and overflows the stack), and no
 * real request nests past a few dozen levels.
 */
export const MAX_JSON_DEPTH = 400;

/**
 * `fieldCodes`: top-level fields whose own error code the spec names (`app_id` answers
 * gw_invalid_app_id); a body whose first problem is in one of them answers that code.
 * `strict`: gw's own write routes read a body one way only (decision 310): bytes that are not
 * UTF-8 and an object that names a member twice are refused, where JSON.parse would store
 * U+FFFD or keep the last value while a proxy or log in front may have read the first.
 */
export function parseJsonBody<Schema extends z.ZodType>(
  body: Buffer,
  schema: Schema,
  fieldCodes?: Readonly<Record<string, ErrorCode>>,
  options: { readonly strict?: boolean } = {},
): z.infer<Schema> | GwError {
  let text: string;
  if (options.strict) {
    try {
      text = STRICT_UTF8.decode(body);
    } catch {
      return gwError('gw_invalid_json', 'the request body is not valid UTF-8');
    }
  } else {
    text = body.toString('utf8');
  }
  // A member takes at least 4 characters (`"":0`), so a text shorter than 4 × MAX_OBJECT_SHAPES
  // cannot make that many shapes, nor hold MAX_CONTAINERS arrays and objects (2 characters
  // each): it is not scanned (most requests), and its depth is checked on the parsed value,
  // cheap at that size. A longer one is scanned, its depth with it.
  const scanned = text.length >= 4 * MAX_OBJECT_SHAPES;
  if (scanned) {
    const costly = costlyStructure(text, MAX_OBJECT_SHAPES, MAX_JSON_DEPTH);
    if (costly === 'shapes') {
      return gwError(
        'gw_invalid_request',
        `the request body has objects of more than ${MAX_OBJECT_SHAPES} distinct shapes (member names in order)`,
      );
    }
    if (costly === 'depth') return tooDeep();
    if (costly === 'containers') {
      return gwError(
        'gw_invalid_request',
        `the request body has more than ${MAX_CONTAINERS} arrays and objects`,
      );
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return gwError('gw_invalid_json', 'the request body is not valid JSON');
  }
  if (!scanned && nestsDeeperThan(parsed, MAX_JSON_DEPTH)) return tooDeep();
  if (options.strict) {
    const repeated = repeatedMemberName(text);
    if (repeated !== undefined) {
      return gwError(
        'gw_invalid_request',
        `${quotableName(repeated) ?? 'a field'}: must be sent once`,
      );
    }
  }
  const result = schema.safeParse(parsed, FIRST_ISSUE_ONLY);
  if (!result.success) {
    return gwError(firstIssueCode(result.error, fieldCodes), describeValidationError(result.error));
  }
  return result.data;
}

/**
 * Validation stops at the first issue: a 400 names only that one, and a body of 99,990 messages
 * that each break the schema made zod build an issue per message (several through a union),
 * about 0.4-0.7 s of CPU where the valid body costs 0.1 s; stopped, it costs what its parse
 * costs (decision 354, bench/micro/invalid-bodies.ts). zod's `abortEarly` (the context of its
 * own `validate`) makes arrays and objects stop before their next child once one has failed, so
 * the first issue is the one a full parse would report first.
 */
const FIRST_ISSUE_ONLY: z.core.ParseContextInternal<z.core.$ZodIssue> = { abortEarly: true };

/**
 * The most object shapes a body may make V8 build. JSON.parse gives each object the hidden class
 * of its member names in order, starting from one per member count: every new sequence (a new
 * name, or known names in a new order or in an object of a new size) costs it new classes.
 * 300,000 of them (3.6 MB) cost it over a second of the event loop, where 3.6 MB of ordinary
 * JSON costs tens of milliseconds; 10,000 cost it about 15 ms. Requests repeat their objects'
 * shapes (role and content, type and text); tool schemas add a few hundred at most.
 */
export const MAX_OBJECT_SHAPES = 10_000;

/**
 * The most arrays and objects a body may hold. JSON.parse allocates each, and past a few
 * hundred thousand the collector's work grows faster than their number: 1,300,000 empty
 * objects (3.9 MB) cost it about a second of the event loop, 100,000 about 15-50 ms. A request
 * holds a few per message, content block and tool schema node: tens of thousands would be a
 * conversation of thousands of turns (decision 325).
 */
export const MAX_CONTAINERS = 100_000;

const tooDeep = (): GwError =>
  gwError(
    'gw_invalid_request',
    `the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
  );

/**
 * What would make JSON.parse of `text` costly: `shapes` when its objects have more than
 * `maxShapes` shapes, distinct pairs of a member count and a sequence of names that starts one
 * of its objects of that many members (a hidden class each; names compared as written,
 * escapes and all; more than `maxShapes` distinct name sequences in all count too, closed or
 * not, which bounds what the count keeps); `depth` when it nests arrays and objects deeper
 * than `maxDepth` (JSON.parse builds every level before the parsed value can be checked:
 * 2,000,000 levels in 4 MB cost it 0.5-1.5 s); `containers` when it opens more than
 * MAX_CONTAINERS arrays and objects.
 * Checked before JSON.parse, so it reads text that may not be JSON: it stops at an
 * unterminated string and leaves the refusal to JSON.parse. Jumps over strings with indexOf.
 * On text JSON.parse then accepts, its depth is the parsed value's (nestsDeeperThan).
 */
export function costlyStructure(
  text: string,
  maxShapes: number,
  maxDepth: number,
): 'shapes' | 'depth' | 'containers' | undefined {
  // The name sequences seen, as a tree: 0 is the empty sequence; each other one has the
  // sequence it extends by one name, its member count, and the sequences that extend it.
  const longer: Map<string, number>[] = [new Map()];
  const shorter: number[] = [-1];
  const members: number[] = [0];
  const shapes = new Set<string>(); // `${member count}:${sequence}`
  // The open objects, each as the sequence of its names so far and the arrays open around it
  // since the object outside it; and the arrays open inside the innermost one (or the text).
  const openSequences: number[] = [];
  const openArraysAround: number[] = [];
  let openArrays = 0;
  let depth = 0;
  let containers = 0;
  for (let index = 0; index < text.length; index += 1) {
    const char = text.charCodeAt(index);
    if (char === 0x22 /* " */) {
      let close = text.indexOf('"', index + 1);
      // A quote after an odd run of backslashes is part of the string.
      while (close !== -1 && escapedAt(text, close)) close = text.indexOf('"', close + 1);
      if (close === -1) return undefined;
      let next = close + 1;
      while (isJsonWhitespace(text.charCodeAt(next))) next += 1;
      const top = openSequences.length - 1;
      if (text.charCodeAt(next) === 0x3a /* : */ && top >= 0 && openArrays === 0) {
        const sequence = openSequences[top]!;
        const name = text.slice(index + 1, close);
        let extended = longer[sequence]!.get(name);
        if (extended === undefined) {
          extended = longer.length;
          if (extended > maxShapes) return 'shapes';
          longer[sequence]!.set(name, extended);
          longer.push(new Map());
          shorter.push(sequence);
          members.push(members[sequence]! + 1);
        }
        openSequences[top] = extended;
      }
      index = close;
    } else if (char === 0x5b /* [ */) {
      if (++depth > maxDepth) return 'depth';
      if (++containers > MAX_CONTAINERS) return 'containers';
      openArrays += 1;
    } else if (char === 0x7b /* { */) {
      if (++depth > maxDepth) return 'depth';
      if (++containers > MAX_CONTAINERS) return 'containers';
      openSequences.push(0);
      openArraysAround.push(openArrays);
      openArrays = 0;
    } else if (char === 0x7d /* } */ || char === 0x5d /* ] */) {
      if (depth > 0) depth -= 1;
      if (openArrays > 0) {
        openArrays -= 1;
        continue;
      }
      const closed = openSequences.pop();
      if (closed === undefined) continue;
      openArrays = openArraysAround.pop()!;
      // An object of n members has the shape of each of its first names' sequences, in
      // objects of n members; one counted already was counted with every shorter one.
      const count = members[closed]!;
      for (let sequence = closed; sequence > 0; sequence = shorter[sequence]!) {
        const shape = `${count}:${sequence}`;
        if (shapes.has(shape)) break;
        shapes.add(shape);
        if (shapes.size > maxShapes) return 'shapes';
      }
    }
  }
  return undefined;
}

function escapedAt(text: string, quote: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(quote - 1 - backslashes) === 0x5c /* \ */) backslashes += 1;
  return backslashes % 2 === 1;
}

const isJsonWhitespace = (char: number): boolean =>
  char === 0x20 || char === 0x0a || char === 0x0d || char === 0x09;

/** Refuses bytes that are not UTF-8; keeps a BOM, which JSON.parse then refuses as before. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The first member name that an object of `text` (JSON that JSON.parse accepted) names twice,
 * compared after unescaping (`"a"` and `"\u0061"` are one name); undefined when there is none.
 * One pass over the text with a set of names per open object.
 */
export function repeatedMemberName(text: string): string | undefined {
  const open: (Set<string> | null)[] = []; // per open container: its names, or null (an array)
  let nameNext = false;
  for (let index = 0; index < text.length; index += 1) {
    const char = text.charCodeAt(index);
    if (char === 0x22 /* " */) {
      let end = index + 1;
      let escaped = false;
      while (text.charCodeAt(end) !== 0x22) {
        if (text.charCodeAt(end) === 0x5c /* \ */) {
          escaped = true;
          end += 2;
        } else end += 1;
      }
      const names = open[open.length - 1];
      if (nameNext && names) {
        const name = escaped
          ? (JSON.parse(text.slice(index, end + 1)) as string)
          : text.slice(index + 1, end);
        if (names.has(name)) return name;
        names.add(name);
        nameNext = false;
      }
      index = end;
    } else if (char === 0x7b /* { */) {
      open.push(new Set());
      nameNext = true;
    } else if (char === 0x5b /* [ */) {
      open.push(null);
    } else if (char === 0x7d /* } */ || char === 0x5d /* ] */) {
      open.pop();
    } else if (char === 0x2c /* , */) {
      nameNext = open[open.length - 1] != null;
    }
  }
  return undefined;
}

/**
 * True when `value` nests arrays/objects more than `limit` levels deep. Visits each container
 * once and stops at the limit, so its recursion is bounded too; no allocation per node.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (!isJsonContainer(value)) return false;
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (nestsDeeperThan(item, limit - 1)) return true;
    return false;
  }
  const object = value as Record<string, unknown>;
  for (const key in object) if (nestsDeeperThan(object[key], limit - 1)) return true;
  return false;
}

/**
 * JSON routes refuse a body declared as something else (`text/plain`, a form), as the vendors'
 * APIs do; a body without content-type is read as JSON. See "Non-JSON content types are refused".
 */
export function contentTypeError(headers: Readonly<Record<string, string>>): GwError | undefined {
  const mediaType = mediaTypeOf(headers['content-type']);
  if (mediaType === undefined) return undefined;
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) return undefined;
  return wrongMediaType('application/json', mediaType);
}

/** Formats the first zod issue of a body as "field.path: rule in plain words". */
export function describeValidationError(error: z.ZodError): string {
  return describeFirstIssue(error, 'body');
}
