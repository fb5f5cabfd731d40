// POST /dashboard/api/orgs/{org_id}/service-keys {"scopes"?, "expires_at"?}: a new service key
// of the organization (admin or owner). The raw key is in this answer only.
import { createServiceKeyAs, serviceKeyView } from '../../../admin/service-keys.js';
import type { DbPool } from '../../../db/pool.js';
import { isGwError } from '../../../errors.js';
import { inOrg } from '../schemas.js';
import { declareRoute } from '../../framework/declaration.js';
import { createServiceKeyBody } from './schema.js';
import { issuedServiceKeySchema } from './answers.js';

export const createServiceKeyRoute = declareRoute({
  method: 'POST',
  path: '/dashboard/api/orgs/{org_id}/service-keys',
  summary: 'Issues a service key; the raw key is shown in this answer only',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  idempotent: true,
  body: createServiceKeyBody,
  bodyOptional: true,
  answerCarriesSecret: true,
  responses: {
    201: { description: 'the key, with its raw value', schema: issuedServiceKeySchema },
  },
  async handler({ caller, body }, deps: { readonly db: DbPool }) {
    const issued = await createServiceKeyAs(deps.db, caller.actor, caller.org.id, {
      ...(body.scopes && { scopes: body.scopes }),
      expiresAt: body.expires_at ? new Date(body.expires_at) : null,
    });
    if (isGwError(issued)) return issued;
    return { ...serviceKeyView(issued.row), key: issued.rawKey };
  },
});
