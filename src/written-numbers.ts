// Numbers that arrive as text (environment variables, query parameters), read only when written
// plainly. `z.coerce.number()` would take whatever Number() does: `0x14` as 20, `1e1` as 10,
// ` 5` as 5, and `""` as 0 (decisions 302, 303).
import { z } from 'zod';

interface Bounds {
  readonly min: number;
  readonly max?: number;
}

/**
 * A whole number written with digits only, within `bounds`. /openapi.json shows it as the
 * integer it stands for (its generator would show the text's pattern and lose the bounds).
 */
export function wholeNumber(bounds: Bounds) {
  const number = z.number().int().min(bounds.min);
  return z
    .string()
    .regex(/^\d+$/, 'must be a whole number, written with digits only')
    .transform(Number)
    .pipe(bounds.max === undefined ? number : number.max(bounds.max))
    .meta({ type: 'integer', minimum: bounds.min, maximum: bounds.max });
}

/** `wholeNumber`, `fallback` when absent; /openapi.json shows the default too. */
export function wholeNumberOr(fallback: number, bounds: Bounds) {
  return wholeNumber(bounds).default(fallback).meta({ default: fallback });
}

/** A decimal number such as `1` or `0.25`, written plainly. */
export const plainDecimal = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'must be a decimal number such as 0.25')
  .transform(Number);
