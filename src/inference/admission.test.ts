// admit against fakes of its narrow ports: the upstream call is built before the hold, the
// hold covers every choice asked for, and limit_output shares what is affordable among them.
import { describe, expect, it } from 'vitest';
import type { ReserveOutcome, ReserveRequest } from '../billing/budget-store.js';
import { gwError, isGwError } from '../errors.js';
import { costNano } from '../money.js';
import { tokenRates, type CatalogModel } from '../catalog/models.js';
import { identity, model } from '../../test/support/pipeline-fakes.js';
import { chatCompletionsRateLimitHeaders } from './rate-limit-headers.js';
import { admit, type AdmissionPorts, type PlannedOutput } from './admission.js';

function ports(
  reserve: (request: ReserveRequest) => ReserveOutcome = () => held,
  served: CatalogModel = model,
) {
  const reserved: ReserveRequest[] = [];
  const fake: AdmissionPorts = {
    catalog: { get: (id) => (id === served.id ? served : undefined), list: () => [served] },
    productUsers: { resolve: () => Promise.reject(new Error('no attribution expected')) },
    capPolicies: {
      orgCap: () => Promise.resolve(null),
      connectionCap: () => Promise.resolve(null),
      productUserCap: () => Promise.resolve(null),
    },
    credentials: { choiceFor: () => Promise.resolve(null) },
    tokenCounter: { countInput: () => Promise.resolve(10) },
    budget: {
      knownRateRefusal: () => undefined,
      reserve: (request) => {
        reserved.push(request);
        return Promise.resolve(reserve(request));
      },
    },
  };
  return { fake, reserved };
}

const held: ReserveOutcome = { kind: 'held', credentialId: null };

/** A reserve against an allowance of `availableNano`: a hold above it is refused as short. */
const allowanceOf =
  (availableNano: bigint) =>
  (request: ReserveRequest): ReserveOutcome =>
    request.amountNano > availableNano
      ? {
          kind: 'allowance_short',
          capNano: 0n,
          spentNano: 0n,
          baseRemainingNano: 0n,
          creditsNano: 0n,
          availableNano,
        }
      : held;

const input = (overrides: Record<string, unknown> = {}) => ({
  identity,
  requestId: 'req_1',
  headers: {},
  body: {},
  modelId: model.id,
  inputTexts: ['hi'],
  requestedMaxTokens: 100,
  prepareCall: (_model: unknown, output: PlannedOutput) => output,
  rateLimitHeaders: chatCompletionsRateLimitHeaders,
  ...overrides,
});

const costOf = (outputTokens: number): bigint =>
  costNano([10, model.price.input], [outputTokens, model.price.output]);

describe('admit', () => {
  it('builds the upstream call before placing the hold', async () => {
    const order: string[] = [];
    const { fake } = ports(() => {
      order.push('reserve');
      return held;
    });
    const admission = await admit(
      fake,
      input({
        prepareCall: () => {
          order.push('prepare');
          return 'call';
        },
      }),
    );
    expect(order).toEqual(['prepare', 'reserve']);
    expect(isGwError(admission) ? admission : admission.call).toBe('call');
  });

  it('places no hold when the upstream call cannot be built', async () => {
    const { fake, reserved } = ports();
    const failing = input({
      prepareCall: () => {
        throw new RangeError('Maximum call stack size exceeded');
      },
    });
    await expect(admit(fake, failing)).rejects.toThrow(RangeError);
    expect(reserved).toHaveLength(0);
  });

  it('holds the maximum output for every choice', async () => {
    const { fake, reserved } = ports();
    const admission = await admit(fake, input({ choices: 3 }));
    expect(reserved[0]!.amountNano).toBe(costOf(300));
    expect(admission).toMatchObject({ maxOutputTokens: 100, heldOutputTokens: 300 });
  });

  it('under limit_output, lowers the output per choice to what the allowance covers for all of them', async () => {
    const { fake, reserved } = ports(allowanceOf(costOf(150)));
    const admission = await admit(
      fake,
      input({ identity: { ...identity, overrunPolicy: 'limit_output' }, choices: 3 }),
    );
    expect(admission).toMatchObject({
      maxOutputTokens: 50,
      heldOutputTokens: 150,
      outputClamped: true,
      call: { maxOutputTokens: 50, clamped: true },
    });
    expect(reserved.map((request) => request.amountNano)).toEqual([costOf(300), costOf(150)]);
  });

  describe('a prompt the vendor may write to its cache', () => {
    // Cache writes at 1.25× the input rate, reads at 0.1× (as vendor_a bills them).
    const caching: CatalogModel = {
      ...model,
      price: tokenRates('0.00000016', '0.0000006', {
        write: '0.0000002',
        write1h: '0.00000032',
        read: '0.000000016',
      }),
    };
    const heldFor = (promptRate: string, outputTokens: number): bigint =>
      costNano([10, tokenRates(promptRate, '0').input], [outputTokens, caching.price.output]);

    it('is held at the cache-write rate when the body asks for a cache write', async () => {
      const { fake, reserved } = ports(undefined, caching);
      await admit(fake, input({ promptCacheWrite: () => 'write' }));
      expect(reserved[0]!.amountNano).toBe(heldFor('0.0000002', 100));
      expect(reserved[0]!.amountNano).toBeGreaterThan(heldFor('0.00000016', 100));
    });

    it('is held at the one-hour write rate when the body asks for an hour', async () => {
      const { fake, reserved } = ports(undefined, caching);
      await admit(fake, input({ promptCacheWrite: () => 'write_1h' }));
      expect(reserved[0]!.amountNano).toBe(heldFor('0.00000032', 100));
    });

    it('is held at the input rate when the body does not ask, or the write costs no more', async () => {
      const { fake, reserved } = ports(undefined, caching);
      await admit(fake, input({ promptCacheWrite: () => 'none' }));
      await admit(fake, input());
      expect(reserved.map((request) => request.amountNano)).toEqual([
        heldFor('0.00000016', 100),
        heldFor('0.00000016', 100),
      ]);
      const asked: string[] = [];
      const plain = ports();
      await admit(
        plain.fake,
        input({
          promptCacheWrite: () => {
            asked.push('asked');
            return 'write_1h';
          },
        }),
      );
      expect(plain.reserved[0]!.amountNano).toBe(costOf(100));
      expect(asked).toEqual([]);
    });

    it('under limit_output, leaves the prompt its cache-write cost', async () => {
      // 300 nano over 40 tokens' worth: at the input rate the prompt would leave room for 41.
      const available = heldFor('0.0000002', 40) + 300n;
      const { fake, reserved } = ports(allowanceOf(available), caching);
      const admission = await admit(
        fake,
        input({
          identity: { ...identity, overrunPolicy: 'limit_output' },
          promptCacheWrite: () => 'write',
        }),
      );
      expect(admission).toMatchObject({ maxOutputTokens: 40, outputClamped: true });
      expect(reserved.map((request) => request.amountNano)).toEqual([
        heldFor('0.0000002', 100),
        heldFor('0.0000002', 40),
      ]);
    });
  });

  describe('a key its budget store already knows to be past its own rate limit', () => {
    const known =
      (asked: string[]): AdmissionPorts['budget']['knownRateRefusal'] =>
      (limits) => {
        asked.push(`${limits.apiKeyId} ${String(limits.keyPerMinute)}`);
        const rateLimit = { limitPerMinute: 5, remaining: 0, resetMs: 12_250, atMs: 0 };
        return {
          kind: 'rate_limited',
          scope: 'key',
          limitPerMinute: 5,
          retryAfterMs: 1_500,
          rateLimit,
        };
      };

    it('is refused before its product user is looked up or its tokens are counted', async () => {
      const asked: string[] = [];
      const { fake, reserved } = ports();
      const counted: string[] = [];
      const refused = await admit(
        {
          ...fake,
          tokenCounter: { countInput: () => Promise.resolve(counted.push('counted')) },
          budget: { ...fake.budget, knownRateRefusal: known(asked) },
        },
        input({
          identity: { ...identity, requestsPerMinute: 5 },
          headers: { 'x-gw-external-user-id': 'user-1' },
        }),
      );
      // The fake directory rejects any lookup: none was made.
      expect(refused).toEqual({
        code: 'gw_rate_limited',
        status: 429,
        message: "this API key's limit of 5 requests per minute is reached; retry in 2 s",
        details: { rate_limit_scope: 'key' },
        // where the key stands, in the names of the route's protocol (decision 353)
        headers: {
          'retry-after': '2',
          'retry-after-ms': '1500',
          'x-ratelimit-limit-requests': '5',
          'x-ratelimit-remaining-requests': '0',
          'x-ratelimit-reset-requests': '12.25s',
        },
      });
      expect(asked).toEqual(['key_1 5']);
      expect([counted, reserved]).toEqual([[], []]);
    });

    it('is not asked about a key without limits', async () => {
      const asked: string[] = [];
      const { fake, reserved } = ports();
      const admission = await admit(
        { ...fake, budget: { ...fake.budget, knownRateRefusal: known(asked) } },
        input(),
      );
      expect(isGwError(admission)).toBe(false);
      expect([asked, reserved.length]).toEqual([[], 1]);
    });
  });

  it("counts the prompt in its organization's lane, and answers a refused count before the product user is looked up or anything is held", async () => {
    const { fake, reserved } = ports();
    const asked: Array<{ texts: readonly string[]; orgId: string | undefined }> = [];
    const busy = gwError('gw_concurrency_limited', 'waiting counts of this organization are at 64');
    const refused = await admit(
      {
        ...fake,
        tokenCounter: {
          countInput: (texts, countFor) => {
            asked.push({ texts, orgId: countFor?.orgId });
            return Promise.resolve(busy);
          },
        },
      },
      input({ headers: { 'x-gw-external-user-id': 'user-1' } }),
    );
    // The fake directory rejects any lookup: none was made.
    expect(refused).toBe(busy);
    expect(asked).toEqual([{ texts: ['hi'], orgId: 'org_1' }]);
    expect(reserved).toEqual([]);
  });

  it('refuses an unknown model before building anything or holding', async () => {
    const { fake, reserved } = ports();
    const admission = await admit(
      fake,
      input({
        modelId: 'vendor_x/none',
        prepareCall: () => {
          throw new Error('not reached');
        },
      }),
    );
    expect(admission).toMatchObject({ code: 'gw_unsupported_model' });
    expect(reserved).toHaveLength(0);
  });
});
