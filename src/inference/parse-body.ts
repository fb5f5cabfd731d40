// Parses and validates a JSON request body into a typed value or the spec's 400 error.
import type { z } from 'zod';
import { gwError, type ErrorCode, type GwError } from '../errors.js';
import { describeFirstIssue } from '../validation-messages.js';

/**
 * The deepest nesting of arrays and objects a body may have. Deeper JSON parses, but cannot be
 * serialised again for the vendor (JSON.stringify recurses and overflows the stack), and no
 * real request nests past a few dozen levels.
 */
export const MAX_JSON_DEPTH = 400;

/**
 * `fieldCodes`: top-level fields whose own error code the spec names (`app_id` answers
 * gw_invalid_app_id); a body whose first problem is in one of them answers that code.
 */
export function parseJsonBody<Schema extends z.ZodType>(
  body: Buffer,
  schema: Schema,
  fieldCodes?: Readonly<Record<string, ErrorCode>>,
): z.infer<Schema> | GwError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return gwError('gw_invalid_json', 'the request body is not valid JSON');
  }
  if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) {
    return gwError(
      'gw_invalid_request',
      `the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
    );
  }
  const result = schema.safeParse(parsed);
  if (!result.success) {
    const field = result.error.issues[0]?.path[0];
    const code = (typeof field === 'string' && fieldCodes?.[field]) || 'gw_invalid_request';
    return gwError(code, describeValidationError(result.error));
  }
  return result.data;
}

/**
 * True when `value` nests arrays/objects more than `limit` levels deep. Visits each container
 * once and stops at the limit, so its recursion is bounded too; no allocation per node.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
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
  const declared = headers['content-type'];
  if (declared === undefined) return undefined;
  const mediaType = declared.split(';', 1)[0]!.trim().toLowerCase();
  if (mediaType === 'application/json' || mediaType.endsWith('+json')) return undefined;
  return gwError(
    'gw_invalid_request',
    `content-type: must be application/json (the body was sent as ${mediaType || 'nothing'})`,
  );
}

/** Formats the first zod issue of a body as "field.path: rule in plain words". */
export function describeValidationError(error: z.ZodError): string {
  return describeFirstIssue(error, 'body');
}
