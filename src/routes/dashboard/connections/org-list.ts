// GET /dashboard/api/orgs/{org_id}/connections (any member): the organization's connections
// across its apps, each with its app's name, oldest first, in pages: `q` keeps those whose name
// or app's name starts with it (any case), `status` those active or revoked, `ids` (up to 200,
// comma-separated) those connections only. The dashboard's pickers search and page it, and
// its tables name connections through `ids` (decision 300).
import { z } from 'zod';
import { pageQuerySchema } from '../../../db/pages.js';
import { storableText } from '../../../product-users/limits.js';
import { listOrgConnections, orgConnectionView } from '../../../admin/org-connections.js';
import { isObjectIdForm } from '../../../object-ids.js';
import { declareListRoute } from '../list-route.js';
import { inOrg } from '../schemas.js';
import { orgConnectionSchema } from './answers.js';

/** How many ids one request may name: a page's worth. */
export const MAX_CONNECTION_IDS = 200;

const orgConnectionsQuery = pageQuerySchema.extend({
  q: storableText(200).optional(),
  status: z.enum(['active', 'revoked']).optional(),
  ids: z
    .string()
    .max(MAX_CONNECTION_IDS * 65, `must name at most ${MAX_CONNECTION_IDS} connections`)
    .superRefine((text, context) => {
      const ids = text.split(',');
      const problem =
        ids.length > MAX_CONNECTION_IDS
          ? `must name at most ${MAX_CONNECTION_IDS} connections`
          : ids.some((id) => id === '')
            ? 'must be connection ids separated by commas, with none empty'
            : !ids.every(isObjectIdForm)
              ? 'each connection id is 1 to 64 letters, digits, _ or -'
              : undefined;
      if (problem) context.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
});

export const listOrgConnectionsRoute = declareListRoute({
  path: '/dashboard/api/orgs/{org_id}/connections',
  summary: "The organization's connections with their apps' names: search by name, or by ids",
  org: inOrg,
  rows: 'connections',
  item: orgConnectionSchema,
  query: orgConnectionsQuery,
  list: (db, orgId, page, query) =>
    listOrgConnections(
      db,
      orgId,
      { q: query.q, status: query.status, ids: query.ids?.split(',') },
      page,
    ),
  view: orgConnectionView,
});
