// What a connection's settings mean, in words shown next to the controls.

export type CreditMode = 'enforce' | 'track_only' | 'disabled';
export type OverrunPolicy = 'limit_output' | 'reject';

export const creditModes: readonly { value: CreditMode; label: string }[] = [
  { value: 'enforce', label: 'Enforce: refuse requests beyond a product user’s allowance' },
  { value: 'track_only', label: 'Track only: count allowance use, never refuse' },
  { value: 'disabled', label: 'Disabled: no allowance checks' },
];

export const overrunPolicies: readonly { value: OverrunPolicy; label: string }[] = [
  { value: 'limit_output', label: 'Limit output: shorten the answer to what the budget covers' },
  { value: 'reject', label: 'Reject: refuse a request that could overrun the budget' },
];

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
