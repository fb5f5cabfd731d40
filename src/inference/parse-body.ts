// Parses and validates a JSON request body into a typed value or the spec's 400 error.
import type { z } from 'zod';
import { gwError, type GwError } from '../errors.js';
import { describeFirstIssue } from '../validation-messages.js';

export function parseJsonBody<Schema extends z.ZodType>(
  body: Buffer,
  schema: Schema,
): z.infer<Schema> | GwError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return gwError('gw_invalid_json', 'the request body is not valid JSON');
  }
  const result = schema.safeParse(parsed);
  if (!result.success) return gwError('gw_invalid_request', describeValidationError(result.error));
  return result.data;
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
