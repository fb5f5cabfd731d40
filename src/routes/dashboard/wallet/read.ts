// GET /dashboard/api/orgs/{org_id}/wallet (any member): the live balance, what requests in
// flight hold, and what is available — the figures `gw wallet show` prints.
import { readWallet } from '../../../admin/wallet.js';
import type { WalletService } from '../../../billing/wallets.js';
import { sendJson } from '../../../http/respond.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { walletSchema } from './schema.js';

export const readWalletRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/wallet',
  summary: "The organization wallet's balance, held and available amounts",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  responses: { 200: { description: 'the wallet', schema: walletSchema } },
  errors: [],
  async handler(
    { caller },
    response,
    deps: { readonly wallets: Pick<WalletService, 'liveBalance'> },
  ) {
    sendJson(response, 200, await readWallet(deps.wallets, caller.org.id));
  },
});
