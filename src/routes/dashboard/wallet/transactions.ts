// GET /dashboard/api/orgs/{org_id}/wallet/transactions (any member): the wallet's top-ups and
// balance sets, oldest first, paged (`limit`, `cursor`).
import { listWalletTransactions } from '../../../admin/wallet.js';
import type { DbPool } from '../../../db/pool.js';
import { pageQuerySchema } from '../../../db/pages.js';
import { isGwError } from '../../../errors.js';
import { sendError, sendJson } from '../../../http/respond.js';
import { declareRoute } from '../../framework/declaration.js';
import { parsePage } from '../../framework/query.js';
import { inOrg, pageOf } from '../schemas.js';
import { walletTransactionSchema } from './schema.js';

export const walletTransactionsRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/wallet/transactions',
  summary: "The wallet's top-ups and balance sets, oldest first",
  tag: 'dashboard',
  caller: { kind: 'org_member', role: 'viewer', org: inOrg },
  query: pageQuerySchema,
  responses: { 200: { description: 'transactions', schema: pageOf(walletTransactionSchema) } },
  errors: ['gw_invalid_request'],
  async handler({ request, caller }, response, deps: { readonly db: DbPool }) {
    const page = parsePage(request.query);
    if (isGwError(page)) return sendError(response, page);
    const { rows, nextCursor } = await listWalletTransactions(deps.db, caller.org.id, page);
    sendJson(response, 200, { data: rows, next_cursor: nextCursor });
  },
});
