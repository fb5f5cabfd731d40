// Parses a query string against a zod schema into a typed value or the spec's 400 error.
import type { z } from 'zod';
import { CursorError, pageQuerySchema, pageRequest, type PageRequest } from '../../db/pages.js';
import { gwError, isGwError, type GwError } from '../../errors.js';
import { describeFirstIssue } from '../../validation-messages.js';

/**
 * A query string's parameters by name, or the spec's 400 error for a name given twice
 * (`?user=alice&user=bob` names no one: which one was meant is not for the gateway to guess).
 */
export function queryParameters(query: string): Record<string, string> | GwError {
  const parameters: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(query)) {
    if (Object.hasOwn(parameters, name)) {
      return gwError('gw_invalid_request', `query parameter ${JSON.stringify(name)}: given twice`);
    }
    Object.defineProperty(parameters, name, { value, enumerable: true, writable: true });
  }
  return parameters;
}

export function parseQuery<Schema extends z.ZodType>(
  query: string,
  schema: Schema,
): z.infer<Schema> | GwError {
  const parameters = queryParameters(query);
  if (isGwError(parameters)) return parameters;
  const result = schema.safeParse(parameters);
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
