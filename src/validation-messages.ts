// Zod issues in plain words: "max_tokens: must be a whole number of at most 9007199254740991"
// rather than the validator's own text. One formatter for every place that validates input:
// request bodies, query parameters, configuration and CLI options.
import type { z } from 'zod';
import type { ErrorCode } from './errors.js';

type Issue = z.core.$ZodIssue;

const KIND_NAMES: Readonly<Record<string, string>> = {
  number: 'a number',
  int: 'a whole number',
  bigint: 'a whole number',
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  record: 'an object',
  map: 'an object',
  array: 'an array',
  null: 'null',
};

const FORMAT_NAMES: Readonly<Record<string, string>> = {
  email: 'an e-mail address',
  url: 'a URL',
  datetime: 'an RFC 3339 timestamp with an offset, such as 2030-01-31T00:00:00Z',
  date: 'a date (YYYY-MM-DD)',
  uuid: 'a UUID',
};

/** Zod's own messages; anything else was written by us in a schema and is kept as is. */
const VALIDATOR_TEXT = /^(Invalid|Too big|Too small|Unrecognized key)/;

/** Choices in words: `a`, `a or b`, `a, b or c`. */
export function orList(items: readonly string[]): string {
  return items.length < 2
    ? (items[0] ?? '')
    : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

/**
 * A name from the client's own input (a field it sent) as a message may quote it: a plain
 * identifier of at most 64 characters, else undefined. Messages are safe to log, so they never
 * echo control characters or a megabyte-long name back.
 */
export function quotableName(name: string): string | undefined {
  return /^[\w.-]{1,64}$/.test(name) ? name : undefined;
}

/** The field's path as a client names it: `messages.0.role`; `where` for the whole input. */
export function issuePath(issue: Issue, where: string): string {
  return issue.path.length > 0
    ? issue.path
        .map((part) =>
          typeof part === 'string' ? (quotableName(part) ?? '(a field)') : String(part),
        )
        .join('.')
    : where;
}

/** Unknown fields, named where they can be quoted (at most five). */
function unknownFields(keys: readonly string[]): string {
  const quoted = keys.map(quotableName);
  const named = quoted.filter((name): name is string => name !== undefined);
  const parts = named.slice(0, 5);
  const unnamed = quoted.length - named.length;
  if (named.length > 5) parts.push(`${named.length - 5} more`);
  if (unnamed > 0)
    parts.push(
      unnamed === 1
        ? 'a field whose name is not shown'
        : `${unnamed} fields whose names are not shown`,
    );
  return `unknown field${keys.length > 1 ? 's' : ''} ${parts.join(', ')}`;
}

/** The rule an issue breaks, in plain words (no field name). */
export function describeIssue(issue: Issue): string {
  if (!VALIDATOR_TEXT.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_type':
      if (/received undefined$/.test(issue.message)) return 'is required';
      return `must be ${KIND_NAMES[issue.expected] ?? issue.expected}`;
    case 'too_big':
      return sizeRule(issue.origin, 'at most', 'less than', issue.inclusive, issue.maximum);
    case 'too_small':
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      return sizeRule(issue.origin, 'at least', 'more than', issue.inclusive, issue.minimum);
    case 'invalid_format':
      return `must be ${FORMAT_NAMES[issue.format] ?? `in ${issue.format} format`}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => String(value)).join(', ')}`;
    case 'unrecognized_keys':
      return unknownFields(issue.keys);
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_union':
      return 'has none of the accepted forms';
    default:
      return 'is not valid';
  }
}

function sizeRule(
  origin: string,
  inclusiveWord: string,
  exclusiveWord: string,
  inclusive: boolean | undefined,
  limit: number | bigint,
): string {
  const bound = `${inclusive === false ? exclusiveWord : inclusiveWord} ${String(limit)}`;
  switch (origin) {
    case 'string':
      return `must be ${bound} characters long`;
    case 'array':
    case 'set':
      return `must have ${bound} item${Number(limit) === 1 ? '' : 's'}`;
    case 'int':
    case 'bigint':
      return `must be a whole number ${bound}`;
    default:
      return `must be ${bound}`;
  }
}

/** "field: rule" for the first issue (what a 400 answer carries). */
export function describeFirstIssue(error: z.ZodError, where: string): string {
  const issue = error.issues[0];
  if (!issue) return `${where}: is not valid`;
  return `${issuePath(issue, where)}: ${describeIssue(issue)}`;
}

/**
 * The code an input refused for its first issue answers: the code the spec gives that issue's
 * top-level field, if it gives one (`app_id`: gw_invalid_app_id), else gw_invalid_request.
 */
export function firstIssueCode(
  error: z.ZodError,
  fieldCodes: Readonly<Record<string, ErrorCode>> | undefined,
): ErrorCode {
  const field = error.issues[0]?.path[0];
  return (typeof field === 'string' && fieldCodes?.[field]) || 'gw_invalid_request';
}

/** "field: rule" for every issue (what a configuration error lists). */
export function describeAllIssues(error: z.ZodError, where: string): string[] {
  return error.issues.map((issue) => `${issuePath(issue, where)}: ${describeIssue(issue)}`);
}
