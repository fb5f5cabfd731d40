// Parses a query string against a zod schema into a typed value or the spec's 400 error.
import type { z } from 'zod';
import { CursorError, pageQuerySchema, pageRequest, type PageRequest } from '../../db/pages.js';
import { gwError, isGwError, type GwError } from '../../errors.js';
import { describeFirstIssue } from '../../validation-messages.js';

export function parseQuery<Schema extends z.ZodType>(
  query: string,
  schema: Schema,
): z.infer<Schema> | GwError {
  const result = schema.safeParse(Object.fromEntries(new URLSearchParams(query)));
  if (!result.success)
    return gwError('gw_invalid_request', describeFirstIssue(result.error, 'query'));
  return result.data;
}

/** The page a list route was asked for (`limit`, `cursor`), or the spec's 400 error. */
export function parsePage(query: string): PageRequest | GwError {
  const parsed = parseQuery(query, pageQuerySchema);
  if (isGwError(parsed)) return parsed;
  try {
    return pageRequest(parsed);
  } catch (error) {
    if (error instanceof CursorError) return gwError('gw_invalid_request', error.message);
    throw error;
  }
}
