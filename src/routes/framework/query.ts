// Parses a query string against a zod schema into a typed value or the spec's 400 error. The
// router (bind.ts) does it for every route that declares its `query`; handlers get the value.
import type { z } from 'zod';
import { CursorError, pageQuerySchema, pageRequest, type PageRequest } from '../../db/pages.js';
import { gwError, isGwError, type ErrorCode, type GwError } from '../../errors.js';
import { describeFirstIssue, firstIssueCode } from '../../validation-messages.js';

/**
 * A query string's parameters by name, or the spec's 400 error for a name given twice
 * (`?user=alice&user=bob` names no one: which one was meant is not for the gateway to guess)
 * or, when the route's declared parameters are given, for a name it does not take
 * (`?status=blocked` on a route with no such filter would otherwise answer as if unfiltered).
 */
export function queryParameters(
  query: string,
  declared?: z.ZodObject,
): Record<string, string> | GwError {
  const parameters: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(query)) {
    if (Object.hasOwn(parameters, name)) {
      return gwError('gw_invalid_request', `query parameter ${quotedName(name)}: given twice`);
    }
    if (declared && !Object.hasOwn(declared.shape, name)) {
      const taken = Object.keys(declared.shape).join(', ');
      return gwError(
        'gw_invalid_request',
        `query parameter ${quotedName(name)}: not one this route takes (${taken})`,
      );
    }
    Object.defineProperty(parameters, name, { value, enumerable: true, writable: true });
  }
  return parameters;
}

/** A parameter's name for an error message: quoted, and cut short when it is long. */
function quotedName(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

/**
 * The route's declared parameters, typed, or the spec's 400 error naming the first problem.
 * `fieldCodes`: parameters whose own error code the spec names (`app_id`: gw_invalid_app_id).
 */
export function parseQuery<Schema extends z.ZodObject>(
  query: string,
  schema: Schema,
  fieldCodes?: Readonly<Record<string, ErrorCode>>,
): z.infer<Schema> | GwError {
  const parameters = queryParameters(query, schema);
  if (isGwError(parameters)) return parameters;
  const result = schema.safeParse(parameters);
  if (!result.success)
    return gwError(
      firstIssueCode(result.error, fieldCodes),
      describeFirstIssue(result.error, 'query'),
    );
  return result.data;
}

/** The page a list route was asked for (`limit`, `cursor`), or the spec's 400 error. */
export function parsePage(query: string): PageRequest | GwError {
  const parsed = parseQuery(query, pageQuerySchema);
  return isGwError(parsed) ? parsed : pageOfQuery(parsed);
}

/** The page named by parameters already parsed (a list's filters beside them), or a 400. */
export function pageOfQuery(parsed: z.infer<typeof pageQuerySchema>): PageRequest | GwError {
  try {
    return pageRequest(parsed);
  } catch (error) {
    if (error instanceof CursorError) return gwError('gw_invalid_request', error.message);
    throw error;
  }
}
