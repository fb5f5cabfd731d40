// What a service-key create takes, its status routes, and where its routes find their
// organization (the service-key objects: answers.ts).
import { z } from 'zod';
import {
  serviceKeyView,
  setServiceKeyStatusAs,
  type ServiceKeyInvalidation,
} from '../../../admin/service-keys.js';
import { SERVICE_KEY_SCOPES } from '../../../admin/provisioning.js';
import type { DbPool } from '../../../db/pool.js';
import { gwError } from '../../../errors.js';
import { declareRoute } from '../../framework/declaration.js';
import type { Holds, SameLiterals } from '../../answers.js';
import { timestamp } from '../../product-users/lookup.js';
import { serviceKeySchema, type serviceKeyScopeSchema } from './answers.js';

/** The scopes answered are those keys are issued with. */
type _ScopesAnswered = Holds<
  SameLiterals<z.output<typeof serviceKeyScopeSchema>, (typeof SERVICE_KEY_SCOPES)[number]>
>;

export const createServiceKeyBody = z.strictObject({
  scopes: z.array(z.enum(SERVICE_KEY_SCOPES)).min(1, 'must name a scope').optional(),
  // A key issued expired is refused on every call (the CLI refuses one too).
  expires_at: timestamp
    .refine((value) => Date.parse(value) > Date.now(), 'must be in the future')
    .optional(),
});

/** Routes under /dashboard/api/service-keys/{id} act on the key's organization. */
export const ofServiceKey = { param: 'id', table: 'service_keys' } as const;

export interface ServiceKeyRouteDeps {
  readonly db: DbPool;
  readonly serviceKeys: ServiceKeyInvalidation;
}

/** POST /dashboard/api/service-keys/{id}/revoke|disable (admin or owner). */
export function serviceKeyStatusRoute(action: 'revoke' | 'disable') {
  const status = action === 'revoke' ? 'revoked' : 'disabled';
  return declareRoute({
    method: 'POST',
    path: `/dashboard/api/service-keys/{id}/${action}`,
    summary:
      action === 'revoke'
        ? 'Revokes a service key for good: every instance refuses it at once'
        : 'Disables a service key: every instance refuses it at once',
    caller: { kind: 'org_member', role: 'admin', org: ofServiceKey },
    responses: { 200: { description: `the ${status} key`, schema: serviceKeySchema } },
    errors: ['gw_not_found'],
    async handler({ params, caller }, deps: ServiceKeyRouteDeps) {
      const row = await setServiceKeyStatusAs(
        deps.db,
        deps.serviceKeys,
        caller.actor,
        params.id,
        status,
      );
      if (!row) return gwError('gw_not_found', 'no service key with this id');
      return serviceKeyView(row);
    },
  });
}
