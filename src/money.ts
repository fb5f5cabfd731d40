// Money: integer nano-units (1e-9 of the currency unit) as bigint inside the gateway and as
// integer strings in Redis; decimal strings with 12 fractional digits on the wire; numeric in
// Postgres. Never a float.
import { Decimal } from 'decimal.js';
import { gwError, type GwError } from './errors.js';

export const NANO_PER_UNIT = 1_000_000_000n;

/** Every cost is priced and charged in this currency; credits in another never pay one. */
export const SETTLEMENT_CURRENCY = 'USD';
const WIRE_FRACTION_DIGITS = 12;
const decimalAmount = /^(?:0|[1-9]\d{0,39})(?:\.\d{1,12})?$/;

/** Formats nano-units as the wire's decimal string: "1.500000000000". */
export function formatNano(nano: bigint): string {
  const negative = nano < 0n;
  const magnitude = negative ? -nano : nano;
  const units = magnitude / NANO_PER_UNIT;
  const fraction = (magnitude % NANO_PER_UNIT).toString().padStart(9, '0');
  return `${negative ? '-' : ''}${units}.${fraction}${'0'.repeat(WIRE_FRACTION_DIGITS - 9)}`;
}

/** An amount as a sentence says it: no trailing zeros ("1000005", "0.5"), never rounded. */
export function plainAmount(nano: bigint): string {
  return formatNano(nano).replace(/\.?0+$/, '');
}

export class AmountError extends Error {
  override readonly name: string = 'AmountError';
}

/**
 * The largest amount the money layer takes, and the largest balance it lets one account
 * reach: 1,000,000 currency units (1e15 nano-units). The Lua scripts compute in doubles,
 * exact only below 2^53 nano-units; they refuse any amount from 2^51 on (a sum of four stays
 * exact), and this limit keeps every amount, wallet balance and credit total well below
 * that. docs/limits.md lists where it applies.
 */
export const MAX_AMOUNT_NANO = 1_000_000n * NANO_PER_UNIT;

/** An amount beyond MAX_AMOUNT_NANO (`gw_amount_out_of_range`). */
export class AmountRangeError extends AmountError {
  override readonly name = 'AmountRangeError';
}

/** Throws AmountRangeError when `nano` (what `subject` would become) is beyond the limit. */
export function assertAmountInRange(nano: bigint, subject: string): void {
  if (nano > MAX_AMOUNT_NANO || nano < -MAX_AMOUNT_NANO) {
    throw new AmountRangeError(
      `${subject} would be ${plainAmount(nano)}; at most ${plainAmount(MAX_AMOUNT_NANO)} is accepted`,
    );
  }
}

/**
 * What an amount must look like, said as the dashboard's forms say it (web/dashboard/src/money.ts),
 * so the API, the CLI and the dashboard give a user who typed "1,000" the same advice.
 */
export const AMOUNT_FORMAT_RULE =
  'must be digits with an optional decimal point, like 25 or 12.50 (no sign, thousands separators, spaces or currency; at most 12 decimals)';

/**
 * Parses a non-negative decimal amount ("10", "0.50", "1.000000000000") into nano-units.
 * The text is taken as it is: no surrounding whitespace, no sign, no exponent, digits on both
 * sides of a point ("1." and ".5" are refused like " 1.00"). Digits beyond the ninth
 * fractional place must be zero: amounts are never silently rounded. Amounts beyond
 * MAX_AMOUNT_NANO throw AmountRangeError.
 */
export function parseAmountToNano(text: string): bigint {
  if (!decimalAmount.test(text)) {
    throw new AmountError(AMOUNT_FORMAT_RULE);
  }
  const [units = '0', fraction = ''] = text.split('.');
  if (/[1-9]/.test(fraction.slice(9))) {
    throw new AmountError('has more precision than a nano-unit (1e-9)');
  }
  const nano = BigInt(units) * NANO_PER_UNIT + BigInt(fraction.slice(0, 9).padEnd(9, '0'));
  if (nano > MAX_AMOUNT_NANO) {
    throw new AmountRangeError(`must be at most ${plainAmount(MAX_AMOUNT_NANO)}`);
  }
  return nano;
}

/**
 * An amount field of an API body in nano-units, or the spec's 400 naming the field:
 * `gw_amount_out_of_range` past the money layer's limit, `gw_invalid_request` for anything
 * that is not a decimal amount.
 */
export function parseAmountField(field: string, text: string): bigint | GwError {
  try {
    return parseAmountToNano(text);
  } catch (error) {
    if (error instanceof AmountRangeError)
      return gwError('gw_amount_out_of_range', `${field}: ${error.message}`);
    if (error instanceof AmountError)
      return gwError('gw_invalid_request', `${field}: ${error.message}`);
    throw error;
  }
}

/** Postgres numeric text ("12.345000000000") → nano-units, rounding up any sub-nano remainder. */
export function numericToNano(text: string): bigint {
  return BigInt(new Decimal(text).times(1e9).toDecimalPlaces(0, Decimal.ROUND_CEIL).toFixed(0));
}

/** nano-units → the numeric text Postgres stores (9 fractional digits are exact). */
export function nanoToNumeric(nano: bigint): string {
  return formatNano(nano);
}

/** A stored amount (Postgres numeric text) as the API shows it; an absent one stays null. */
export function formatNumeric(text: string): string;
export function formatNumeric(text: string | null): string | null;
export function formatNumeric(text: string | null): string | null {
  return text === null ? null : formatNano(numericToNano(text));
}

/** A per-token price in 1e-18 currency units (atto-units), so catalogue prices stay exact. */
export interface TokenPrice {
  readonly attoPerToken: bigint;
}

const ATTO_PER_NANO = 1_000_000_000n;

export function tokenPriceFromDecimal(pricePerToken: string): TokenPrice {
  const atto = new Decimal(pricePerToken).times('1e18');
  if (!atto.isInteger() || atto.isNegative()) {
    throw new AmountError('a per-token price must be non-negative with at most 18 decimals');
  }
  return { attoPerToken: BigInt(atto.toFixed(0)) };
}

/**
 * The billable cost of some priced token counts: the exact sum, rounded up once to the
 * nano-unit. Used for estimates and for settlement alike.
 */
export function costNano(
  ...items: ReadonlyArray<readonly [tokens: number, price: TokenPrice]>
): bigint {
  let atto = 0n;
  for (const [tokens, price] of items) atto += BigInt(tokens) * price.attoPerToken;
  return (atto + ATTO_PER_NANO - 1n) / ATTO_PER_NANO;
}
