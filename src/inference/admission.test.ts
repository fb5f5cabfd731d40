// admit against fakes of its narrow ports: the upstream call is built before the hold, the
// hold covers every choice asked for, and limit_output shares what is affordable among them.
import { describe, expect, it } from 'vitest';
import type { ReserveOutcome, ReserveRequest } from '../billing/budget-store.js';
import { isGwError } from '../errors.js';
import { costNano } from '../money.js';
import { identity, model } from '../../test/support/pipeline-fakes.js';
import { admit, type AdmissionPorts, type PlannedOutput } from './admission.js';

function ports(reserve: (request: ReserveRequest) => ReserveOutcome = () => held) {
  const reserved: ReserveRequest[] = [];
  const fake: AdmissionPorts = {
    catalog: { get: (id) => (id === model.id ? model : undefined) },
    productUsers: { resolve: () => Promise.reject(new Error('no attribution expected')) },
    capPolicies: {
      orgCap: () => Promise.resolve(null),
      connectionCap: () => Promise.resolve(null),
      productUserCap: () => Promise.resolve(null),
    },
    credentials: { choiceFor: () => Promise.resolve(null) },
    tokenCounter: { countInput: () => Promise.resolve(10) },
    budget: {
      reserve: (request) => {
        reserved.push(request);
        return Promise.resolve(reserve(request));
      },
    },
  };
  return { fake, reserved };
}

const held: ReserveOutcome = { kind: 'held', credentialId: null };

const input = (overrides: Record<string, unknown> = {}) => ({
  identity,
  requestId: 'req_1',
  headers: {},
  body: {},
  modelId: model.id,
  inputTexts: ['hi'],
  requestedMaxTokens: 100,
  prepareCall: (_model: unknown, output: PlannedOutput) => output,
  ...overrides,
});

const costOf = (outputTokens: number): bigint =>
  costNano([10, model.inputPrice], [outputTokens, model.outputPrice]);

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
    const { fake, reserved } = ports((request) =>
      request.amountNano > costOf(150)
        ? {
            kind: 'allowance_short',
            capNano: 0n,
            spentNano: 0n,
            baseRemainingNano: 0n,
            creditsNano: 0n,
            availableNano: costOf(150),
          }
        : held,
    );
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
