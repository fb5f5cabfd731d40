// The Idempotency-Key header (Stripe's): what a key may be, checked once for every route that
// takes one (the router's idempotent routes, decision 372, and the credit grants, whose keys
// are their own).
import { gwError, type GwError } from '../errors.js';
import { headerTextProblem } from '../text.js';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const IDEMPOTENCY_KEY_MAX_CHARS = 255;

/** The request's Idempotency-Key, undefined when it sent none, or the spec's 400. */
export function idempotencyKeyOf(
  headers: Readonly<Record<string, string>>,
): string | undefined | GwError {
  const key = headers[IDEMPOTENCY_KEY_HEADER];
  if (key === undefined) return undefined;
  const problem = idempotencyKeyProblem(key);
  return problem ? gwError('gw_invalid_request', `Idempotency-Key: ${problem}`) : key;
}

/**
 * What is wrong with a key, if anything: for the header's 400, and for `gw wallet`'s
 * --idempotency-key, which names its flag (decision 575).
 */
export function idempotencyKeyProblem(key: string): string | undefined {
  if (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX_CHARS) {
    return `must be 1 to ${IDEMPOTENCY_KEY_MAX_CHARS} characters`;
  }
  // Keys that differ only in non-ASCII characters at an end would arrive equal (decision 278).
  return headerTextProblem(key);
}
