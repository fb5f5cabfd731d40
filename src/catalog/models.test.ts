// What a model's tokens cost: each cache rate set in the catalogue, or its vendor's multiple of
// the input rate; and the part a prompt is held as before the vendor says what it billed.
import { describe, expect, it } from 'vitest';
import { tokenPriceFromDecimal } from '../money.js';
import { promptHoldPart, tokenRates, usageCostNano } from './models.js';

const vendorARatios = { write: '1.25', write1h: '2', read: '0.1' };
const atto = (decimal: string): bigint => tokenPriceFromDecimal(decimal).attoPerToken;

describe('tokenRates', () => {
  it('derives an unset cache rate from the vendor’s multiple of the input rate', () => {
    const rates = tokenRates('0.000003', '0.000015', {}, vendorARatios);
    expect(rates.cacheWrite.attoPerToken).toBe(atto('0.00000375'));
    expect(rates.cacheWrite1h.attoPerToken).toBe(atto('0.000006'));
    expect(rates.cacheRead.attoPerToken).toBe(atto('0.0000003'));
  });

  it('keeps a rate the catalogue sets, and rounds a derived one up to the atto-unit', () => {
    const rates = tokenRates('0.000000000000000003', '0', { read: '0.00000001' }, vendorARatios);
    expect(rates.cacheRead.attoPerToken).toBe(atto('0.00000001'));
    // 3 atto × 1.25 = 3.75 atto: billed as 4, never below what the vendor charges.
    expect(rates.cacheWrite.attoPerToken).toBe(4n);
  });

  it('prices every cache part at the input rate for a vendor without cache pricing', () => {
    const rates = tokenRates('0.000001', '0.000002');
    expect([rates.cacheWrite, rates.cacheWrite1h, rates.cacheRead]).toEqual([
      rates.input,
      rates.input,
      rates.input,
    ]);
  });
});

describe('usageCostNano', () => {
  it('prices the uncached prompt, each cache part and the output at their rates, rounded up once', () => {
    const rates = tokenRates('0.000001', '0.000005', {}, vendorARatios);
    const usage = {
      inputTokens: 1000,
      cacheWriteTokens: 500,
      cacheWrite1hTokens: 200,
      cacheReadTokens: 300,
      outputTokens: 10,
      webSearchRequests: 0,
    };
    // 200 × 1 + 300 × 1.25 + 200 × 2 + 300 × 0.1 + 10 × 5 = 1,055 micro-units.
    expect(usageCostNano(usage, rates)).toBe(1_055_000n);
    // A tenth of a nano-unit is charged as one.
    const oneToken = { ...usage, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0 };
    expect(
      usageCostNano(
        { ...oneToken, inputTokens: 1, outputTokens: 0 },
        tokenRates('0.0000000001', '0'),
      ),
    ).toBe(1n);
  });
});

describe('web searches', () => {
  it('are priced per search at the vendor’s price, beside the tokens', () => {
    const rates = tokenRates('0.000001', '0.000005', {}, undefined, '0.01');
    const usage = {
      inputTokens: 100,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 10,
      webSearchRequests: 3,
    };
    // 100 × 1 + 10 × 5 micro-units, and 3 × 0.01.
    expect(usageCostNano(usage, rates)).toBe(150_000n + 30_000_000n);
    expect(usageCostNano(usage, tokenRates('0.000001', '0.000005'))).toBe(150_000n);
  });
});

describe('promptHoldPart', () => {
  it('holds a prompt as the dearest part the body may make the vendor bill', () => {
    const rates = tokenRates('0.000001', '0.000005', {}, vendorARatios);
    expect(promptHoldPart(rates, 'none')).toBe('input');
    expect(promptHoldPart(rates, 'write')).toBe('write');
    expect(promptHoldPart(rates, 'write_1h')).toBe('write_1h');
    const cheapWrites = tokenRates('0.000001', '0', { write: '0.0000005', write1h: '0.0000009' });
    expect(promptHoldPart(cheapWrites, 'write_1h')).toBe('input');
  });
});
