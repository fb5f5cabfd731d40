// Token counting is bounded, linear, off the event loop and cancellable, and its estimate is
// never below what an unbounded o200k BPE (what a vendor with this tokenizer reports) counts.
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, describe, expect, it } from 'vitest';
import { countInputTokens, countTextTokens, LONG_RUN_CHARS } from './count.js';
import { leavingClient } from '../../test/support/leaving-client.js';
import { PiscinaTokenCounter } from './token-counter.js';

const counter = new PiscinaTokenCounter(1);
afterAll(() => counter.close());

const MIB = 1024 * 1024;

/** Deterministic pseudo-random text from an alphabet (a small LCG: same text every run). */
function seededText(alphabet: string, length: number, seed: number): string {
  const chars = [...alphabet];
  let state = seed;
  let text = '';
  for (let index = 0; index < length; index += 1) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    text += chars[state % chars.length];
  }
  return text;
}

const vendorLikeInputs: Record<string, string> = {
  english: 'The quick brown fox jumps over the lazy dog. '.repeat(200),
  code: 'function add(a, b) {\n  return a + b; // sum\n}\n\n'.repeat(100),
  compactJson: JSON.stringify({
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', description: 'the city' } },
      },
    },
  }),
  oneLetterRun: 'a'.repeat(3_000),
  cjkRun: '漢字かな交じり文'.repeat(300),
  cjkWithSpaces: seededText('的一是不了人我在有他这中大来上国个到说们为子和你 ', 3_000, 7),
  whitespaceRun: ' '.repeat(2_000) + 'x' + '\n'.repeat(2_000),
  punctuationNewlines: '!!!\n\n???\r\n...//'.repeat(300),
  emoji: '😀🎉👍🏽 '.repeat(400) + '😀'.repeat(500),
  mixedRandom: seededText('abcXYZ 0123456789.,;:!?-_"\'\n\t漢é😀', 6_000, 42),
  runAtBoundary: `${'b'.repeat(LONG_RUN_CHARS)} ${'c'.repeat(LONG_RUN_CHARS + 1)} end`,
};

describe('countTextTokens', () => {
  for (const [name, text] of Object.entries(vendorLikeInputs)) {
    it(`is never below the vendor-like count: ${name}`, () => {
      expect(countTextTokens(text)).toBeGreaterThanOrEqual(countTokens(text));
    });
  }

  it('counts ordinary text exactly like the tokenizer', () => {
    const text = 'Hello there, how are you today? I would like a summary of this.';
    expect(countTextTokens(text)).toBe(countTokens(text));
  });

  it('counts 4 MiB adversarial runs (one letter, CJK, whitespace) at their bytes', () => {
    for (const unit of ['a', '漢', ' ']) {
      const run = unit.repeat((4 * MIB) / Buffer.byteLength(unit));
      expect(countTextTokens(run)).toBe(Buffer.byteLength(run));
    }
  });

  it('bounds BPE per request: text past the budget counts as bytes, never less', () => {
    const long = seededText('abcdefghij klmnopqrstuvwxyz ', 200_000, 3);
    const counted = countInputTokens([long]);
    expect(counted).toBeGreaterThan(countTokens(long.slice(0, 20_000)));
    expect(counted).toBeLessThanOrEqual(Buffer.byteLength(long) + 7);
  });
});

describe('PiscinaTokenCounter', () => {
  it('counts small and large inputs like countInputTokens', async () => {
    expect(await counter.countInput(['hello world'])).toBe(countInputTokens(['hello world']));
    const large = 'lorem ipsum dolor sit amet '.repeat(2_000);
    expect(await counter.countInput([large])).toBe(countInputTokens([large]));
  });

  it('counts a 4 MiB adversarial body off the event loop', async () => {
    const body = 'a'.repeat(2 * MIB) + '漢'.repeat((2 * MIB) / 3);
    // Counted inline, the answer is there before any other promise's reaction runs; from a
    // worker it comes back through the event loop, so a reaction queued now runs first,
    // however fast the worker is (timing the worker against the loop's next turn was not:
    // a loaded machine let the worker answer within the same turn).
    const firstSettled = (counting: Promise<unknown>): Promise<string> =>
      Promise.race([
        counting.then(() => 'counted'),
        Promise.resolve().then(() => 'still counting'),
      ]);
    // The check can fail: a short text is counted inline.
    expect(await firstSettled(counter.countInput(['hello world']))).toBe('counted');
    const counted = counter.countInput([body]);
    expect(await firstSettled(counted)).toBe('still counting');
    expect(await counted).toBe(Buffer.byteLength(body) + 7);
  });

  it('is cancelled with its request, and the pool keeps counting afterwards', async () => {
    await expect(
      counter.countInput(['x'.repeat(10_000)], { orgId: 'org_a', client: leavingClient(true) }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    const leaving = leavingClient();
    const counting = counter.countInput([seededText('abcdefghij klmnopqrstuvwxyz ', 100_000, 9)], {
      orgId: 'org_a',
      client: leaving,
    });
    leaving.leave();
    await expect(counting).rejects.toMatchObject({ name: 'AbortError' });
    expect(await counter.countInput(['y '.repeat(500)])).toBe(countInputTokens(['y '.repeat(500)]));
  });

  it("refuses an organization's count past its waiting bound with 429, and counts another's", async () => {
    const refusals: string[] = [];
    const bounded = new PiscinaTokenCounter(1, {
      maxWaitingPerOrg: 1,
      onRefused: () => refusals.push('refused'),
    });
    try {
      const prompt = 'lorem ipsum dolor sit amet '.repeat(50);
      const running = bounded.countInput([prompt], { orgId: 'org_a' });
      const waiting = bounded.countInput([prompt], { orgId: 'org_a' });
      expect(await bounded.countInput([prompt], { orgId: 'org_a' })).toEqual({
        code: 'gw_concurrency_limited',
        status: 429,
        message:
          'this organization already has 1 requests waiting for their tokens to be counted on this gateway instance; retry shortly',
        headers: { 'retry-after': '1' },
      });
      expect(refusals).toEqual(['refused']);
      // Inline counts never wait, and the stream end's count is never refused.
      expect(await bounded.countInput(['short'], { orgId: 'org_a' })).toBe(
        countInputTokens(['short']),
      );
      const output = bounded.countOutput([prompt], { orgId: 'org_a' });
      const other = bounded.countInput([prompt], { orgId: 'org_b' });
      expect(bounded.waiting).toBe(3);
      const counted = countInputTokens([prompt]);
      expect(await Promise.all([running, waiting, other])).toEqual([counted, counted, counted]);
      expect(await output).toBe(counted - 7); // no per-message and reply overheads
      expect(refusals).toEqual(['refused']);
    } finally {
      await bounded.close();
    }
  });
});
