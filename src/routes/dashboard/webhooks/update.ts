// PATCH /dashboard/api/orgs/{org_id}/webhooks/{webhook_id} {"url"?, "description"?,
// "event_types"?, "enabled"?} (admin or owner). Enabling a disabled endpoint forgets its past
// failures; its pending messages then go out.
import { isGwError } from '../../../errors.js';
import { endpointView, updateEndpoint } from '../../../webhooks/endpoints.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { updateWebhookBody, WEBHOOK_PATH, type WebhookRouteDeps } from './schema.js';
import { webhookSchema } from './answers.js';

export const updateWebhookRoute = declareRoute({
  method: 'PATCH',
  path: WEBHOOK_PATH,
  summary: 'Changes a webhook endpoint: URL, description, event types, enabled',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  body: updateWebhookBody,
  bodyOptional: true,
  responses: { 200: { description: 'the endpoint', schema: webhookSchema } },
  errors: ['gw_not_found', 'gw_webhook_url_not_allowed'],
  async handler({ params, caller, body }, deps: { readonly webhooks: WebhookRouteDeps }) {
    const updated = await updateEndpoint(
      deps.webhooks.db,
      deps.webhooks.settings,
      caller.actor,
      caller.org.id,
      params.webhook_id,
      {
        url: body.url,
        description: body.description,
        eventTypes: body.event_types,
        enabled: body.enabled,
      },
    );
    if (isGwError(updated)) return updated;
    return endpointView(updated);
  },
});
