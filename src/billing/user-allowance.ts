// The allowance that governs a product user: a direct cap on the user, or else the per-user
// cap of the user's connection; credit mode and overrun policy from the direct cap when it
// sets them, else from the connection.
import type { CreditMode, OverrunPolicy } from './modes.js';
import type { CapRule } from './cap-policies.js';

export interface UserAllowancePolicy {
  /** null: no cap, the base allowance is unlimited. */
  readonly capNano: bigint | null;
  readonly capRule: CapRule | null;
  readonly creditMode: CreditMode;
  readonly overrunPolicy: OverrunPolicy;
}

export function userAllowancePolicy(
  connection: { readonly creditMode: CreditMode; readonly overrunPolicy: OverrunPolicy },
  directRule: CapRule | null,
  connectionRule: CapRule | null,
): UserAllowancePolicy {
  if (directRule) {
    return {
      capNano: directRule.amountNano,
      capRule: directRule,
      creditMode: directRule.creditMode ?? connection.creditMode,
      overrunPolicy: directRule.overrunPolicy ?? connection.overrunPolicy,
    };
  }
  const perUser = connectionRule?.perUserAmountNano ?? null;
  return {
    capNano: perUser,
    capRule: perUser === null ? null : connectionRule,
    creditMode: connection.creditMode,
    overrunPolicy: connection.overrunPolicy,
  };
}
