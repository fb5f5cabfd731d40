// GET /dashboard/api/orgs/{org_id}/wallet/transactions (any member): the wallet's top-ups and
// balance sets, oldest first, paged (`limit`, `cursor`), with who made each.
import { listWalletTransactions } from '../../../admin/wallet.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { walletTransactionSchema } from './answers.js';

export const walletTransactionsRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/wallet/transactions',
  summary: "The wallet's top-ups and balance sets, oldest first",
  org: inOrg,
  rows: 'wallet transactions',
  item: walletTransactionSchema,
  list: listWalletTransactions,
  view: (transaction) => transaction,
});
