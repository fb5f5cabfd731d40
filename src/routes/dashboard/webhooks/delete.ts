// DELETE /dashboard/api/orgs/{org_id}/webhooks/{webhook_id} (admin or owner): the endpoint and
// its delivery log go; nothing more is sent to it.
import { z } from 'zod';
import { gwError } from '../../../errors.js';
import { deleteEndpoint } from '../../../webhooks/endpoints.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { WEBHOOK_PATH, type WebhookRouteDeps } from './schema.js';

export const deleteWebhookRoute = declareRoute({
  method: 'DELETE',
  path: WEBHOOK_PATH,
  summary: 'Deletes a webhook endpoint and its delivery log',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  responses: {
    200: {
      description: 'deleted',
      schema: z.object({ id: z.string(), deleted: z.literal(true) }),
    },
  },
  errors: ['gw_not_found'],
  async handler({ params, caller }, deps: { readonly webhooks: WebhookRouteDeps }) {
    const id = params.webhook_id;
    const deleted = await deleteEndpoint(deps.webhooks.db, caller.actor, caller.org.id, id);
    if (!deleted) return gwError('gw_not_found', 'no webhook endpoint with this id');
    return { id, deleted: true };
  },
});
