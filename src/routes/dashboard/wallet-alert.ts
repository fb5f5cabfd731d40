// GET and PUT /dashboard/api/orgs/{org_id}/wallet-alert {"low_balance_threshold": "5.00" |
// null}: the balance below which a request sends the wallet.low_balance webhook (admin or owner
// sets it; any member reads it). Audited.
import { z } from 'zod';
import { setWalletAlert, walletAlert } from '../../billing/wallet-alert.js';
import type { DbPool } from '../../db/pool.js';
import { gwError, isGwError } from '../../errors.js';
import { parseAmountField } from '../../money.js';
import { declareRoute } from '../framework/declaration.js';
import { walletAlertSchema } from './answers.js';
import { inOrg } from './schemas.js';

const PATH = '/dashboard/api/orgs/{org_id}/wallet-alert';

const noWallet = () => gwError('gw_not_found', 'this organization has no wallet');

export const getWalletAlertRoute = declareRoute({
  method: 'GET',
  path: PATH,
  summary: "The wallet's low-balance threshold (wallet.low_balance webhook)",
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  responses: { 200: { description: 'the alert', schema: walletAlertSchema } },
  errors: ['gw_not_found'],
  async handler({ caller }, deps: { readonly db: DbPool }) {
    const alert = await walletAlert(deps.db, caller.org.id);
    if (!alert) return noWallet();
    return alert;
  },
});

export const setWalletAlertRoute = declareRoute({
  method: 'PUT',
  path: PATH,
  summary: "Sets (or with null removes) the wallet's low-balance threshold",
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  body: z.strictObject({ low_balance_threshold: z.string().max(40).nullable() }),
  responses: { 200: { description: 'the alert', schema: walletAlertSchema } },
  errors: ['gw_not_found', 'gw_amount_out_of_range'],
  async handler({ caller, body }, deps: { readonly db: DbPool }) {
    const thresholdNano =
      body.low_balance_threshold === null
        ? null
        : parseAmountField('low_balance_threshold', body.low_balance_threshold);
    if (isGwError(thresholdNano)) return thresholdNano;
    const alert = await setWalletAlert(deps.db, caller.actor, caller.org.id, thresholdNano);
    if (!alert) return noWallet();
    return alert;
  },
});
