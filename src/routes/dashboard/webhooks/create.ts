// POST /dashboard/api/orgs/{org_id}/webhooks {"url", "description"?, "event_types"?}: a new
// endpoint (admin or owner). Its signing secret (whsec_…) is in this answer only.
import { isGwError } from '../../../errors.js';
import { createEndpoint, endpointView } from '../../../webhooks/endpoints.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { createWebhookBody, WEBHOOKS_PATH, type WebhookRouteDeps } from './schema.js';
import { webhookWithSecretSchema } from './answers.js';

export const createWebhookRoute = declareRoute({
  method: 'POST',
  path: WEBHOOKS_PATH,
  summary: 'Adds a webhook endpoint; its signing secret is shown in this answer only',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  idempotent: true,
  body: createWebhookBody,
  answerCarriesSecret: true,
  responses: {
    201: { description: 'the endpoint, with its secret', schema: webhookWithSecretSchema },
  },
  errors: ['gw_webhook_url_not_allowed', 'gw_conflict', 'gw_unavailable'],
  async handler({ caller, body }, deps: { readonly webhooks: WebhookRouteDeps }) {
    const created = await createEndpoint(
      deps.webhooks.db,
      deps.webhooks.settings,
      caller.actor,
      caller.org.id,
      { url: body.url, description: body.description, eventTypes: body.event_types },
    );
    if (isGwError(created)) return created;
    return { ...endpointView(created.row), secret: created.secret };
  },
});
