// The fields of a credit grant request, checked once for every way in (the service-key route
// and the dashboard): amount, currency, expiry, reason and the Idempotency-Key header.
import { gwError, type GwError } from '../errors.js';
import { AmountError, parseAmountToNano } from '../money.js';
import type { CreditGrantInput } from './management.js';
import { DEFAULT_CURRENCY } from './profile.js';

export interface CreditGrantFields {
  readonly amount: string;
  readonly currency?: string | undefined;
  readonly expires_at?: string | null | undefined;
  readonly reason?: string | undefined;
}

/** The grant to make (without its user and organization), or the spec's 400 error. */
export function creditGrantRequest(
  body: CreditGrantFields,
  idempotencyKey: string | undefined,
): Omit<CreditGrantInput, 'orgId' | 'productUserId'> | GwError {
  let amountNano: bigint;
  try {
    amountNano = parseAmountToNano(body.amount);
  } catch (error) {
    if (error instanceof AmountError)
      return gwError('gw_invalid_request', `amount: ${error.message}`);
    throw error;
  }
  if (amountNano <= 0n) return gwError('gw_invalid_request', 'amount: must be greater than zero');
  const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    return gwError('gw_invalid_request', 'expires_at: must be in the future');
  }
  if (
    idempotencyKey !== undefined &&
    (idempotencyKey.length === 0 || idempotencyKey.length > 255)
  ) {
    return gwError('gw_invalid_request', 'Idempotency-Key: must be 1 to 255 characters');
  }
  return {
    amountNano,
    currency: body.currency ?? DEFAULT_CURRENCY,
    expiresAt,
    reason: body.reason ?? null,
    idempotencyKey: idempotencyKey ?? null,
  };
}

export const idempotencyKeyReused = (): GwError =>
  gwError(
    'gw_idempotency_key_reused',
    'Idempotency-Key was already used with a different request body; use a new key for a new grant',
  );
