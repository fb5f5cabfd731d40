// What a connection's settings mean, in words shown next to the controls.
import type { z } from 'zod';
import type {
  creditModeSchema,
  overrunPolicySchema,
} from '../../../../src/routes/dashboard/connections/answers.js';

export type CreditMode = z.output<typeof creditModeSchema>;
export type OverrunPolicy = z.output<typeof overrunPolicySchema>;

export interface Choice<Value> {
  readonly value: Value;
  readonly label: string;
  /** What choosing it does, shown under the control. */
  readonly hint: string;
}

export const creditModes: readonly Choice<CreditMode>[] = [
  {
    value: 'enforce',
    label: 'Enforce',
    hint: 'Refuses requests beyond a product user’s allowance.',
  },
  { value: 'track_only', label: 'Track only', hint: 'Counts allowance use, never refuses.' },
  { value: 'disabled', label: 'Disabled', hint: 'No allowance checks.' },
];

export const overrunPolicies: readonly Choice<OverrunPolicy>[] = [
  {
    value: 'limit_output',
    label: 'Limit output',
    hint: 'Shortens the answer to what the budget still covers.',
  },
  { value: 'reject', label: 'Reject', hint: 'Refuses a request that could overrun the budget.' },
];

export const hintOf = <Value>(choices: readonly Choice<Value>[], value: Value): string =>
  choices.find((choice) => choice.value === value)?.hint ?? '';

export interface ConnectionSettings {
  credit_mode: CreditMode;
  overrun_policy: OverrunPolicy;
  requires_product_user: boolean;
}

export const defaultSettings: ConnectionSettings = {
  credit_mode: 'enforce',
  overrun_policy: 'limit_output',
  requires_product_user: false,
};
