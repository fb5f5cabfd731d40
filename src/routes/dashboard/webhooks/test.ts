// POST /dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/test (admin or owner): queues a
// `webhook.test` message for this endpoint alone; its outcome shows in the delivery log.
import { sendTestEvent } from '../../../webhooks/delivery-log.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { WEBHOOK_PATH, type WebhookRouteDeps } from './schema.js';
import { testQueuedSchema } from './answers.js';

export const testWebhookRoute = declareRoute({
  method: 'POST',
  path: `${WEBHOOK_PATH}/test`,
  summary: 'Sends a webhook.test event to the endpoint (see its deliveries for the outcome)',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  responses: {
    202: { description: 'queued', schema: testQueuedSchema },
  },
  errors: ['gw_not_found', 'gw_conflict'],
  async handler({ params, caller }, deps: { readonly webhooks: WebhookRouteDeps }) {
    return await sendTestEvent(deps.webhooks.db, caller.actor, caller.org.id, params.webhook_id);
  },
});
