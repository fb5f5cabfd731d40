// Request options a vendor bills at a price other than the one gw charges (a faster or
// priority tier, a pinned geography, searches, audio): a request naming one in a form gw does
// not price is refused before anything is held or sent (decision 332). Each protocol lists its
// own; absent and null always mean the vendor's default, which the catalogue prices.

export interface PricedOption {
  /** The body's top-level field. */
  readonly field: string;
  /** Whether gw prices the value as the catalogue does (never asked of absent or null). */
  readonly priced: (value: unknown) => boolean;
  /** Why another value is refused, after `field: `. */
  readonly reason: string;
}

/** The refusal of the first option `body` names in a form gw does not price, or undefined. */
export function unpricedOptionRefusal(
  body: Readonly<Record<string, unknown>>,
  options: readonly PricedOption[],
): string | undefined {
  for (const option of options) {
    const value = body[option.field];
    if (value === undefined || value === null || option.priced(value)) continue;
    return `${option.field}: ${option.reason}`;
  }
  return undefined;
}

/** A PricedOption's `priced` taking only these strings. */
export function oneOf(...values: readonly string[]): (value: unknown) => boolean {
  return (value) => typeof value === 'string' && values.includes(value);
}
