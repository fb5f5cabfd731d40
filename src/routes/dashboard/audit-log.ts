// GET /dashboard/api/orgs/{org_id}/audit-log: every change to the organization made in the
// dashboard or with the CLI (user_id `cli`), newest first (admin or owner).
import { auditView, readAuditLog } from '../../audit/audit-log.js';
import type { DbPool } from '../../db/pool.js';
import { newestFirstPageQuerySchema } from '../../db/pages.js';
import { declareRoute } from '../framework/declaration.js';
import { inOrg } from './schemas.js';
import { auditEntrySchema, pageOf } from './answers.js';

export const auditLogRoute = declareRoute({
  method: 'GET',
  path: '/dashboard/api/orgs/{org_id}/audit-log',
  summary:
    'Every change to the organization, in the dashboard or with the CLI (user_id cli): who, what, which object, when',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  query: newestFirstPageQuerySchema,
  responses: {
    200: { description: 'audit entries, newest first', schema: pageOf(auditEntrySchema) },
  },
  errors: ['gw_invalid_request'],
  async handler({ query, caller }, deps: { readonly db: DbPool }) {
    const { rows, nextCursor } = await readAuditLog(
      deps.db,
      caller.org.id,
      query.limit,
      query.cursor ?? null,
    );
    return { data: rows.map(auditView), next_cursor: nextCursor };
  },
});
