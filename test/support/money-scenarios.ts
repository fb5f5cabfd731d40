// The scenarios of the randomized money-layer test (test/money-model.race.test.ts): what a run
// does, step by step, as fast-check generates it. Amounts are nano-units, small enough that
// caps, allowances, credits and the wallet all run out within a run.
import fc from 'fast-check';
import type { CreditMode, OverrunPolicy } from '../../src/billing/modes.js';
import type { UserPolicy } from './money-model.js';

export type Cost =
  | { readonly k: 'zero' }
  | { readonly k: 'partial'; readonly percent: number }
  | { readonly k: 'exact' }
  | { readonly k: 'over'; readonly extraNano: bigint };
export type End =
  | { readonly kind: 'settle'; readonly cost: Cost }
  | { readonly kind: 'release' }
  | { readonly kind: 'abandon' };
export interface Chain {
  readonly user: number | null;
  readonly connection: number;
  readonly estimateNano: bigint;
  readonly end: End;
}
export type MidOp =
  | { readonly t: 'revoke'; readonly pick: number }
  | {
      readonly t: 'grant';
      readonly user: number;
      readonly amountNano: bigint;
      readonly days: number | null;
    }
  | { readonly t: 'topup'; readonly amountNano: bigint }
  /** The month turns while the requests are in flight: they settle in the next one. */
  | { readonly t: 'rollover' }
  /** One more request, admitted now (after the ops before it), settled with the others. */
  | { readonly t: 'admit'; readonly chain: Chain };
export type Setting =
  | { readonly t: 'cap'; readonly level: 'org' | 0 | 1; readonly capNano: bigint | null }
  | { readonly t: 'policy'; readonly user: number; readonly policy: UserPolicy };
export type Step =
  | {
      readonly t: 'batch';
      readonly chains: readonly Chain[];
      readonly topUps: readonly bigint[];
      /** A cap or policy change the requests from the `at`-th on are admitted under. */
      readonly change: { readonly at: number; readonly setting: Setting } | null;
    }
  | { readonly t: 'phased'; readonly chains: readonly Chain[]; readonly mid: readonly MidOp[] }
  | Setting
  | {
      readonly t: 'grant';
      readonly user: number;
      readonly amountNano: bigint;
      readonly days: number | null;
    }
  | { readonly t: 'revoke'; readonly pick: number }
  | { readonly t: 'wallet'; readonly kind: 'topup' | 'set'; readonly amountNano: bigint }
  | {
      readonly t: 'rebuild';
      readonly drainFirst: boolean;
      /** Every account of the org's current month, or only the users' credits. */
      readonly lose: 'accounts' | 'credits';
    }
  | { readonly t: 'rollover' }
  | { readonly t: 'drain' };

const nano = (lo: number, hi: number) => fc.bigInt(BigInt(lo), BigInt(hi));
const maybeCap = fc.option(nano(0, 30_000), { nil: null, freq: 3 });
const cost: fc.Arbitrary<Cost> = fc.oneof(
  fc.constant({ k: 'zero' as const }),
  fc.record({ k: fc.constant('partial' as const), percent: fc.integer({ min: 1, max: 99 }) }),
  fc.constant({ k: 'exact' as const }),
  fc.record({ k: fc.constant('over' as const), extraNano: nano(1, 800) }),
);
const chain = (ends: fc.Arbitrary<End>): fc.Arbitrary<Chain> =>
  fc.record({
    user: fc.oneof(fc.constant(null), fc.constant(0), fc.constant(1), fc.constant(0)),
    connection: fc.integer({ min: 0, max: 1 }),
    estimateNano: nano(1, 4_000),
    end: ends,
  });
const anyEnd: fc.Arbitrary<End> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('settle' as const), cost }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'release' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'abandon' as const }) },
);
const phasedEnd: fc.Arbitrary<End> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('settle' as const), cost }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'release' as const }) },
);
const grantFields = {
  user: fc.integer({ min: 0, max: 1 }),
  amountNano: nano(1, 8_000),
  days: fc.option(fc.integer({ min: 2, max: 400 }), { nil: null }),
};
const policy: fc.Arbitrary<UserPolicy> = fc.record({
  capNano: maybeCap,
  creditMode: fc.constantFrom<CreditMode>('enforce', 'enforce', 'track_only', 'disabled'),
  overrunPolicy: fc.constantFrom<OverrunPolicy>('limit_output', 'reject'),
});
const capSetting = fc.record({
  t: fc.constant('cap' as const),
  level: fc.constantFrom<'org' | 0 | 1>('org', 0, 1),
  capNano: maybeCap,
});
const policySetting = fc.record({
  t: fc.constant('policy' as const),
  user: fc.integer({ min: 0, max: 1 }),
  policy,
});
const revokeOp = fc.record({ t: fc.constant('revoke' as const), pick: fc.nat() });
const admitOp = fc.record({ t: fc.constant('admit' as const), chain: chain(phasedEnd) });
const midOp: fc.Arbitrary<MidOp> = fc.oneof(
  { weight: 2, arbitrary: revokeOp },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('grant' as const), ...grantFields }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('topup' as const), amountNano: nano(1, 5_000) }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'rollover' as const }) },
  { weight: 2, arbitrary: admitOp },
);
/** Requests reserved together, then `mid` while they are in flight, then their ends. */
const phasedStep = (mid: fc.Arbitrary<readonly MidOp[]>): fc.Arbitrary<Step> =>
  fc.record({
    t: fc.constant('phased' as const),
    chains: fc.array(chain(phasedEnd), { minLength: 1, maxLength: 4 }),
    mid,
  });
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant('batch' as const),
      chains: fc.array(chain(anyEnd), { minLength: 1, maxLength: 6 }),
      topUps: fc.array(nano(1, 5_000), { maxLength: 1 }),
      change: fc.option(
        fc.record({
          at: fc.integer({ min: 1, max: 5 }),
          setting: fc.oneof(capSetting, policySetting),
        }),
        { nil: null, freq: 2 },
      ),
    }),
  },
  { weight: 3, arbitrary: phasedStep(fc.array(midOp, { minLength: 1, maxLength: 3 })) },
  { weight: 2, arbitrary: capSetting },
  { weight: 2, arbitrary: policySetting },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('grant' as const), ...grantFields }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('revoke' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('wallet' as const),
      kind: fc.constantFrom<'topup' | 'set'>('topup', 'set'),
      amountNano: nano(0, 20_000),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('rebuild' as const),
      drainFirst: fc.boolean(),
      lose: fc.constantFrom<'accounts' | 'credits'>('accounts', 'credits'),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: 'rollover' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'drain' as const }) },
);
const cappedPolicy: fc.Arbitrary<UserPolicy> = fc.record({
  capNano: nano(0, 6_000),
  creditMode: fc.constantFrom<CreditMode>(
    'enforce',
    'enforce',
    'enforce',
    'track_only',
    'disabled',
  ),
  overrunPolicy: fc.constantFrom<OverrunPolicy>('limit_output', 'reject'),
});
export const scenario = fc.record({
  walletNano: nano(10_000, 100_000),
  policies: fc.tuple(fc.oneof(cappedPolicy, policy), fc.oneof(cappedPolicy, policy)),
  grants: fc.array(fc.record(grantFields), { maxLength: 3 }),
  steps: fc.array(step, { minLength: 8, maxLength: 20 }),
});

/**
 * Revocations in flight, which the general scenario reaches rarely: both users' allowances
 * enforced with small caps, grants beyond them, and phases where a grant is revoked while
 * requests hold, then more requests are admitted (never paid by it) before all settle.
 */
const enforcedPolicy: fc.Arbitrary<UserPolicy> = fc.record({
  capNano: nano(0, 1_500),
  creditMode: fc.constant<CreditMode>('enforce'),
  overrunPolicy: fc.constantFrom<OverrunPolicy>('limit_output', 'reject'),
});
const revocationPhase = phasedStep(
  fc
    .tuple(
      fc.array(midOp, { maxLength: 1 }),
      revokeOp,
      fc.array(fc.oneof(admitOp, admitOp, midOp), { minLength: 1, maxLength: 3 }),
    )
    .map(([before, revoke, after]) => [...before, revoke, ...after]),
);
export const revocationScenario = fc.record({
  walletNano: nano(50_000, 100_000),
  policies: fc.tuple(enforcedPolicy, enforcedPolicy),
  grants: fc.array(fc.record({ ...grantFields, amountNano: nano(1_000, 6_000) }), {
    minLength: 1,
    maxLength: 2,
  }),
  steps: fc.array(
    fc.oneof(
      { weight: 3, arbitrary: revocationPhase },
      { weight: 1, arbitrary: fc.record({ t: fc.constant('grant' as const), ...grantFields }) },
    ),
    { minLength: 3, maxLength: 6 },
  ),
});
