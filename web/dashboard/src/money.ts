// Money as the API gives it: exact decimal strings, added and compared as integers (never a
// float), shown without rounding.

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

function parse(value: string): { units: bigint; scale: number } {
  const match = DECIMAL.exec(value.trim());
  if (!match) throw new Error(`not a decimal amount: ${value}`);
  const [, sign = '', whole = '0', fraction = ''] = match;
  const units = BigInt(`${whole}${fraction}`);
  return { units: sign ? -units : units, scale: fraction.length };
}

function unitsAt(value: string, scale: number): bigint {
  const parsed = parse(value);
  return parsed.units * 10n ** BigInt(scale - parsed.scale);
}

/** The exact sum of decimal strings, with as many fraction digits as the most precise one. */
export function sumDecimals(values: readonly string[]): string {
  const scale = Math.max(0, ...values.map((value) => parse(value).scale));
  const total = values.reduce((sum, value) => sum + unitsAt(value, scale), 0n);
  const negative = total < 0n;
  const digits = (negative ? -total : total).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return `${negative ? '-' : ''}${whole}${scale > 0 ? `.${fraction}` : ''}`;
}

/** Orders two decimal strings exactly (negative: a < b). */
export function compareDecimals(a: string, b: string): number {
  const scale = Math.max(parse(a).scale, parse(b).scale);
  const difference = unitsAt(a, scale) - unitsAt(b, scale);
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
}

/**
 * An exact decimal string shown without the zeros past the cents it does not need, and with
 * thousands grouped: 1234.500000000000 shows as 1,234.50 and 0.000150000000 as 0.00015. Never
 * rounded.
 */
export function exactAmount(value: string): string {
  const match = DECIMAL.exec(value.trim());
  if (!match) return value;
  const [, sign = '', whole = '0', fraction = ''] = match;
  const trimmed = fraction.replace(/0+$/, '').padEnd(2, '0');
  return `${sign}${whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${trimmed}`;
}

/** An amount with its currency code: `12.50 USD`. */
export const money = (value: string, currency: string): string =>
  `${exactAmount(value)} ${currency}`;

/** For plotting only (a plot's scale is not exact; every number shown in text is). */
export const approximately = (value: string): number => Number(value);

/**
 * An exact amount as a form field takes it back: money as the pages show it, without thousands
 * separators (5.000000000000 → 5.00, 2.500000000000 → 2.50, 0.000150000000 → 0.00015).
 */
export function plainAmount(value: string): string {
  const match = DECIMAL.exec(value.trim());
  if (!match) return value;
  const [, sign = '', whole = '0', fraction = ''] = match;
  return `${sign}${whole}.${fraction.replace(/0+$/, '').padEnd(2, '0')}`;
}

/** The API's money: decimal strings with 12 fraction digits (`25.500000000000`). */
export const isApiAmount = (value: unknown): value is string =>
  typeof value === 'string' && /^-?\d+\.\d{12}$/.test(value);

/** The most fraction digits an amount may have (the API keeps 12: nano-cents and below). */
const MAX_FRACTION_DIGITS = 12;

/**
 * What is wrong with an amount typed in a form, said so the user can fix it, or null when it
 * is a decimal the API takes: digits, at most one point and 12 decimals, above zero (or zero
 * too, with `zero`). Checked before anything asks to confirm it.
 */
export function amountProblem(text: string, options: { zero?: boolean } = {}): string | null {
  const value = text.trim();
  if (value === '') return 'Enter an amount.';
  if (!/^-?\d+(\.\d+)?$/.test(value)) {
    return 'Enter the amount as digits with an optional decimal point, like 25 or 12.50 (no thousands separators, spaces or currency).';
  }
  if (value.startsWith('-')) return 'Enter an amount that is not negative.';
  if ((value.split('.')[1] ?? '').length > MAX_FRACTION_DIGITS) {
    return `Enter at most ${MAX_FRACTION_DIGITS} digits after the decimal point.`;
  }
  if (!options.zero && /^0+(\.0+)?$/.test(value)) return 'Enter an amount above 0.';
  return null;
}
