// GET /inference-keys/usage: the calling API key's spend, this calendar month and in total.
import { z } from 'zod';
import type { DbPool } from '../db/pool.js';
import { usageTotals } from '../ledger/usage-totals.js';
import { declareRoute } from './framework/declaration.js';
import { usageTotalsSchema } from './answers.js';

export const keyUsageRoute = declareRoute({
  method: 'GET',
  path: '/inference-keys/usage',
  summary: "The calling API key's spend this month and in total",
  caller: { kind: 'api_key' },
  responses: {
    200: {
      description: 'the key spend',
      schema: z.object({
        key_id: z.string(),
        currency: z.string(),
        this_month: usageTotalsSchema,
        total: usageTotalsSchema,
      }),
    },
  },
  errors: ['gw_unavailable'],
  async handler({ caller }, deps: { readonly db: DbPool }) {
    const totals = await usageTotals(deps.db, 'api_key_id', caller.keyId);
    return { key_id: caller.keyId, currency: 'USD', ...totals };
  },
});
