// The fields of a credit grant request, checked once for every way in (the service-key route
// and the dashboard): amount, currency, expiry, reason and the Idempotency-Key header.
import { gwError, isGwError, type GwError } from '../errors.js';
import { AmountRangeError, parseAmountField } from '../money.js';
import { idempotencyKeyOf } from '../idempotency/key.js';
import { AppDeletedError, type CreditGrant, type CreditGrantInput } from './management.js';
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
  headers: Readonly<Record<string, string>>,
): Omit<CreditGrantInput, 'orgId' | 'productUserId'> | GwError {
  const idempotencyKey = idempotencyKeyOf(headers);
  if (isGwError(idempotencyKey)) return idempotencyKey;
  const amountNano = parseAmountField('amount', body.amount);
  if (isGwError(amountNano)) return amountNano;
  if (amountNano <= 0n) return gwError('gw_invalid_request', 'amount: must be greater than zero');
  const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    return gwError('gw_invalid_request', 'expires_at: must be in the future');
  }
  return {
    amountNano,
    currency: body.currency ?? DEFAULT_CURRENCY,
    expiresAt,
    reason: body.reason ?? null,
    idempotencyKey: idempotencyKey ?? null,
  };
}

/**
 * What grantCredits answered, with its refusals as the spec's errors: credits the user would
 * hold beyond the maximum amount (nothing granted), an Idempotency-Key reused with another body,
 * or a user of a deleted app (409 gw_conflict).
 */
export async function grantOutcome(
  granting: Promise<{ grant: CreditGrant; created: boolean } | { keyReused: true }>,
): Promise<{ grant: CreditGrant; created: boolean } | GwError> {
  try {
    const granted = await granting;
    if ('keyReused' in granted) {
      return gwError(
        'gw_idempotency_key_reused',
        'Idempotency-Key was already used with a different request body; use a new key for a new grant',
      );
    }
    return granted;
  } catch (error) {
    if (error instanceof AmountRangeError) return gwError('gw_amount_out_of_range', error.message);
    if (error instanceof AppDeletedError) return gwError('gw_conflict', error.message);
    throw error;
  }
}
