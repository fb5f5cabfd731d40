// GET /dashboard/api/orgs/{org_id}/wallet (any member): the live balance, what requests in
// flight hold, and what is available — the figures `gw wallet show` prints — and whether this
// gateway takes top-ups from the dashboard (so a page knows whether to offer one).
import { readWallet } from '../../../admin/wallet.js';
import type { WalletService } from '../../../billing/wallets.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { walletReadSchema } from './answers.js';

export const readWalletRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/wallet',
  summary: "The organization wallet's balance, held and available amounts",
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  responses: {
    200: {
      description: 'the wallet',
      schema: walletReadSchema,
    },
  },
  async handler(
    { caller },
    deps: {
      readonly wallets: Pick<WalletService, 'liveBalance'>;
      readonly dashboardSettings: { readonly walletTopUp: boolean };
    },
  ) {
    return {
      ...(await readWallet(deps.wallets, caller.org.id)),
      top_ups_enabled: deps.dashboardSettings.walletTopUp,
    };
  },
});
