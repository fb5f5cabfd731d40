// GET /inference-keys/usage: the calling API key's spend, this calendar month and in total.
import type { ApiKeyStore } from '../auth/api-key-store.js';
import type { DbPool } from '../db/pool.js';
import { isGwError } from '../errors.js';
import { sendError, sendJson } from '../http/respond.js';
import type { Route } from '../http/types.js';
import { usageTotals } from '../ledger/usage-totals.js';

export function keyUsageRoute(apiKeys: ApiKeyStore, db: DbPool): Route {
  return {
    method: 'GET',
    path: '/inference-keys/usage',
    handler: async (request, response) => {
      const identity = await apiKeys.authenticate(request.headers);
      if (isGwError(identity)) return sendError(response, identity);
      const totals = await usageTotals(db, 'api_key_id', identity.keyId);
      sendJson(response, 200, { key_id: identity.keyId, currency: 'USD', ...totals });
    },
  };
}
