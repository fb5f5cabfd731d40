// A cap rule as the dashboard, the CLI and the webhook events show it, and the columns those
// views read. Apart from the cap service (src/admin/caps.ts) so that what only shows rules (the
// usage writer's thread, for events) loads none of the service's dependencies.
import { formatNumeric } from '../money.js';

/** The rule as the dashboard and the CLI show it. */
export interface CapRuleView {
  cap_rule_id: string;
  /** null on a connection cap that sets only the per-user default. */
  amount: string | null;
  per_user_amount: string | null;
  currency: string;
  period: string;
  credit_mode: string | null;
  overrun_policy: string | null;
  status: 'active';
  updated_at: string;
}

export interface ActiveRuleRow {
  id: string;
  amount: string | null;
  per_user_amount: string | null;
  currency: string;
  period: string;
  credit_mode: string | null;
  overrun_policy: string | null;
  updated_at: Date;
}

/** A cap rule row as the webhook events read it (CAP_RULE_VIEW_COLUMNS): with its target. */
export interface RuleRow extends ActiveRuleRow {
  scope: string;
  org_id: string;
  app_connection_id: string | null;
  product_user_id: string | null;
}

/** The columns ruleView reads. */
export const RULE_COLUMNS = `id, amount::text, per_user_amount::text, currency, period, credit_mode,
  overrun_policy, updated_at`;

/** The columns capRuleView reads: the rule's and its target's. */
export const CAP_RULE_VIEW_COLUMNS = `${RULE_COLUMNS}, scope, org_id, app_connection_id,
  product_user_id`;

/** A cap rule as the dashboard and the CLI show it. */
export function ruleView(row: ActiveRuleRow): CapRuleView {
  return {
    cap_rule_id: row.id,
    amount: formatNumeric(row.amount),
    per_user_amount: formatNumeric(row.per_user_amount),
    currency: row.currency.trim(),
    period: row.period,
    credit_mode: row.credit_mode,
    overrun_policy: row.overrun_policy,
    status: 'active',
    updated_at: row.updated_at.toISOString(),
  };
}

/** A cap rule with its target, flat, as the webhook events show it. */
export function capRuleView(rule: RuleRow): Record<string, unknown> {
  const { cap_rule_id, ...settings } = ruleView(rule);
  return {
    cap_rule_id,
    scope: rule.scope,
    org_id: rule.org_id,
    app_connection_id: rule.app_connection_id,
    product_end_user_id: rule.product_user_id,
    ...settings,
  };
}
