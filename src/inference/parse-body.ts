// Parses and validates a JSON request body into a typed value or the spec's 400 error.
import type { z } from 'zod';
import { gwError, type GwError } from '../errors.js';

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

/** Formats the first zod issue as "field.path: problem". */
export function describeValidationError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid request';
  const path = issue.path.length > 0 ? issue.path.join('.') : '(body)';
  return `${path}: ${issue.message}`;
}
