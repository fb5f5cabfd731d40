// The dashboard's overview of an organization: this calendar month's spend against its org cap,
// the wallet, requests and tokens, the top models and product users, its apps and connections
// counted. Every figure comes from the usage rollups the usage writer keeps (never a scan of
// the ledger), the active cap rule, the live wallet and indexed counts, so it answers in milliseconds however large the ledger grows.
// Usage appears once the writer has committed it (tens of milliseconds after a request).
import type { WalletService } from '../billing/wallets.js';
import type { DbPool } from '../db/pool.js';
import { formatNano, numericToNano, SETTLEMENT_CURRENCY } from '../money.js';
import { isoDay, monthlyPeriod } from '../periods.js';
import { PRODUCT_USER_HAVING, productUserRollupSource } from '../ledger/product-user-rollups.js';
import type { RollupSumsText } from '../ledger/usage-rollups.js';
import { orgCounts, type OrgCounts } from './org-connections.js';
import { readWallet, type WalletView } from './wallet.js';

/** How many models and product users the overview ranks. */
export const OVERVIEW_TOP = 5;

export interface OrgOverview {
  org_id: string;
  currency: string;
  period_start: string;
  period_end: string;
  /** What requests cost this period at sell prices: what the org cap counts. */
  spent_this_period: string;
  /** What the wallet paid this period (requests a provider credential served cost it nothing). */
  wallet_cost_this_period: string;
  requests_this_period: number;
  tokens_this_period: { input: number; output: number; total: number };
  org_cap: { cap_rule_id: string; amount: string; remaining: string } | null;
  wallet: Omit<WalletView, 'org_id' | 'currency'>;
  top_models: { model: string; requests: number; total_tokens: number; cost: string }[];
  top_product_users: {
    product_end_user_id: string;
    app_id: string;
    external_user_id: string;
    display_name: string;
    requests: number;
    cost: string;
  }[];
  /** What the organization holds: its apps and their connections (decision 300). */
  counts: OrgCounts;
}

export async function orgOverview(
  db: Pick<DbPool, 'query'>,
  wallets: Pick<WalletService, 'liveBalance'>,
  orgId: string,
  now = new Date(),
): Promise<OrgOverview> {
  // Org caps run on calendar months (UTC), so the overview does too.
  const period = monthlyPeriod(now, null);
  const range = [orgId, isoDay(period.start), isoDay(period.end), SETTLEMENT_CURRENCY];
  // The month is whole: its product users are read from their monthly rollup.
  const users = productUserRollupSource(orgId, { from: period.start, to: period.end }, 3, now);
  const [totals, models, topUsers, cap, wallet, counts] = await Promise.all([
    // The overview's tokens are input, output and total; the usage page splits the prompt.
    db.query<
      Pick<
        RollupSumsText,
        'requests' | 'input_tokens' | 'output_tokens' | 'total_tokens' | 'sell_cost' | 'wallet_cost'
      >
    >(
      `SELECT COALESCE(sum(requests), 0)::text AS requests,
              COALESCE(sum(input_tokens), 0)::text AS input_tokens,
              COALESCE(sum(output_tokens), 0)::text AS output_tokens,
              COALESCE(sum(total_tokens), 0)::text AS total_tokens,
              COALESCE(sum(sell_cost_nano), 0)::text AS sell_cost,
              COALESCE(sum(wallet_cost_nano), 0)::text AS wallet_cost
         FROM usage_rollups_daily
        WHERE org_id = $1 AND day >= $2::date AND day < $3::date AND currency = $4`,
      range,
    ),
    db.query<{ model: string; requests: string; total_tokens: string; cost: string }>(
      `SELECT model, sum(requests)::text AS requests, sum(total_tokens)::text AS total_tokens,
              sum(sell_cost_nano)::text AS cost
         FROM usage_rollups_daily
        WHERE org_id = $1 AND day >= $2::date AND day < $3::date AND currency = $4
        GROUP BY model ORDER BY sum(sell_cost_nano) DESC, model LIMIT $5`,
      [...range, OVERVIEW_TOP],
    ),
    db.query<{
      product_user_id: string;
      app_id: string;
      external_user_id: string;
      display_name: string;
      requests: string;
      cost: string;
    }>(
      `SELECT top.product_user_id, u.app_id, u.external_user_id, u.display_name,
              top.requests::text, top.cost::text
         FROM (SELECT product_user_id, sum(requests) AS requests, sum(sell_cost_nano) AS cost
                 FROM ${users.sql}
                WHERE currency = $1 AND product_user_id <> ''
                GROUP BY product_user_id ${PRODUCT_USER_HAVING}
                ORDER BY sum(sell_cost_nano) DESC, product_user_id LIMIT $2) top
         JOIN product_users u ON u.id = top.product_user_id
        ORDER BY top.cost DESC, top.product_user_id`,
      [SETTLEMENT_CURRENCY, OVERVIEW_TOP, ...users.params],
    ),
    db.query<{ id: string; amount: string }>(
      `SELECT id, amount::text FROM cap_rules
        WHERE scope = 'org' AND org_id = $1 AND status = 'active'`,
      [orgId],
    ),
    readWallet(wallets, orgId),
    orgCounts(db, orgId),
  ]);
  const sums = totals.rows[0]!;
  const spentNano = BigInt(sums.sell_cost);
  const rule = cap.rows[0];
  const capNano = rule ? numericToNano(rule.amount) : null;
  return {
    org_id: orgId,
    currency: SETTLEMENT_CURRENCY,
    period_start: period.start.toISOString(),
    period_end: period.end.toISOString(),
    spent_this_period: formatNano(spentNano),
    wallet_cost_this_period: formatNano(BigInt(sums.wallet_cost)),
    requests_this_period: Number(sums.requests),
    tokens_this_period: {
      input: Number(sums.input_tokens),
      output: Number(sums.output_tokens),
      total: Number(sums.total_tokens),
    },
    org_cap:
      rule && capNano !== null
        ? {
            cap_rule_id: rule.id,
            amount: formatNano(capNano),
            remaining: formatNano(capNano > spentNano ? capNano - spentNano : 0n),
          }
        : null,
    wallet: { balance: wallet.balance, reserved: wallet.reserved, available: wallet.available },
    top_models: models.rows.map((row) => ({
      model: row.model,
      requests: Number(row.requests),
      total_tokens: Number(row.total_tokens),
      cost: formatNano(BigInt(row.cost)),
    })),
    top_product_users: topUsers.rows.map((row) => ({
      product_end_user_id: row.product_user_id,
      app_id: row.app_id,
      external_user_id: row.external_user_id,
      display_name: row.display_name,
      requests: Number(row.requests),
      cost: formatNano(BigInt(row.cost)),
    })),
    counts,
  };
}
