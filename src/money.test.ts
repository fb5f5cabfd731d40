import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AmountError,
  AmountRangeError,
  assertAmountInRange,
  costNano,
  formatNano,
  MAX_AMOUNT_NANO,
  NANO_PER_UNIT,
  numericToNano,
  parseAmountField,
  parseAmountToNano,
  plainAmount,
  tokenPriceFromDecimal,
} from './money.js';

describe('money formatting', () => {
  it('formats nano-units with exactly 12 fractional digits', () => {
    expect(formatNano(1_500_000_000n)).toBe('1.500000000000');
    expect(formatNano(0n)).toBe('0.000000000000');
    expect(formatNano(1n)).toBe('0.000000001000');
    expect(formatNano(-2_000_000_001n)).toBe('-2.000000001000');
  });

  it('round-trips every amount through the wire format', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: MAX_AMOUNT_NANO }), (nano) => {
        const text = formatNano(nano);
        expect(text).toMatch(/^\d+\.\d{12}$/);
        expect(parseAmountToNano(text)).toBe(nano);
        expect(numericToNano(text)).toBe(nano);
      }),
    );
  });

  it('refuses amounts it would have to round, and malformed ones', () => {
    expect(() => parseAmountToNano('0.0000000001')).toThrow(AmountError);
    expect(() => parseAmountToNano('-1')).toThrow(AmountError);
    expect(() => parseAmountToNano('1e3')).toThrow(AmountError);
    expect(() => parseAmountToNano('abc')).toThrow(AmountError);
    for (const text of [' 1.00', '1.00 ', '\t1', '1\n', '1.', '.5', '+1', '01', '', ' ']) {
      expect(() => parseAmountToNano(text), JSON.stringify(text)).toThrow(AmountError);
    }
    expect(parseAmountToNano('10')).toBe(10_000_000_000n);
    expect(parseAmountToNano('0.50')).toBe(500_000_000n);
  });
});

describe('costNano', () => {
  const cheap = tokenPriceFromDecimal('0.00000015'); // $0.15 per million tokens

  it('is exact and rounds the sum up to the nano-unit once', () => {
    // 7 × 0.00000015 = 0.00000105 = 1050 nano exactly
    expect(costNano([7, cheap])).toBe(1050n);
    // 1 token at 0.0000000001 (0.1 nano) → rounds up to 1 nano
    expect(costNano([1, tokenPriceFromDecimal('0.0000000001')])).toBe(1n);
    // two parts of 0.5 nano each sum to exactly 1 nano (rounded once, not twice)
    const half = tokenPriceFromDecimal('0.0000000005');
    expect(costNano([1, half], [1, half])).toBe(1n);
  });

  it('never undercharges: cost × 1e9 ≤ nano < cost × 1e9 + 1', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2_000_000 }),
        fc.integer({ min: 0, max: 2_000_000 }),
        fc.bigInt({ min: 0n, max: 10n ** 15n }),
        fc.bigInt({ min: 0n, max: 10n ** 15n }),
        (input, output, inputAtto, outputAtto) => {
          const exactAtto = BigInt(input) * inputAtto + BigInt(output) * outputAtto;
          const nano = costNano(
            [input, { attoPerToken: inputAtto }],
            [output, { attoPerToken: outputAtto }],
          );
          expect(nano * 1_000_000_000n >= exactAtto).toBe(true);
          expect((nano - 1n) * 1_000_000_000n < exactAtto || nano === 0n).toBe(true);
        },
      ),
    );
  });
});

describe('amount limits', () => {
  it('parses up to MAX_AMOUNT_NANO and refuses anything larger with AmountRangeError', () => {
    expect(parseAmountToNano('1000000')).toBe(MAX_AMOUNT_NANO);
    expect(() => parseAmountToNano('1000000.000000001')).toThrow(AmountRangeError);
    expect(() => parseAmountToNano('1000000000000000000')).toThrow(AmountRangeError);
    expect(() => parseAmountToNano('1' + '0'.repeat(40))).toThrow(AmountError);
  });

  it('says an amount in a message as a sentence would: no trailing zeros, never rounded', () => {
    expect(plainAmount(MAX_AMOUNT_NANO)).toBe('1000000');
    expect(plainAmount(500_000_000n)).toBe('0.5');
    expect(plainAmount(1n)).toBe('0.000000001');
    expect(plainAmount(0n)).toBe('0');
    expect(plainAmount(-18_154_745_500n)).toBe('-18.1547455');
    expect(() =>
      assertAmountInRange(MAX_AMOUNT_NANO + 5n * NANO_PER_UNIT, 'the wallet balance'),
    ).toThrow('the wallet balance would be 1000005; at most 1000000 is accepted');
    expect(parseAmountField('amount', '1000000.5')).toMatchObject({
      code: 'gw_amount_out_of_range',
      message: 'amount: must be at most 1000000',
    });
    expect(parseAmountField('amount', ' 1')).toMatchObject({
      code: 'gw_invalid_request',
      message:
        'amount: must be digits with an optional decimal point, like 25 or 12.50 (no sign, thousands separators, spaces or currency; at most 12 decimals)',
    });
  });
});
