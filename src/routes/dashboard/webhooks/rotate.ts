// POST /dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/rotate-secret {"grace_seconds"?}
// (admin or owner): a new signing secret, shown in this answer only. The old one keeps signing
// beside it for the grace period (24 h by default, at most 7 days; 0 ends it at once).
import { isGwError } from '../../../errors.js';
import { endpointView, rotateSecret } from '../../../webhooks/endpoints.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { rotateWebhookBody, WEBHOOK_PATH, type WebhookRouteDeps } from './schema.js';
import { webhookWithSecretSchema } from './answers.js';

export const rotateWebhookSecretRoute = declareRoute({
  method: 'POST',
  path: `${WEBHOOK_PATH}/rotate-secret`,
  summary: 'Rotates the signing secret: the old one also signs during the grace period',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  body: rotateWebhookBody,
  bodyOptional: true,
  answerCarriesSecret: true,
  responses: {
    200: { description: 'the endpoint, with its new secret', schema: webhookWithSecretSchema },
  },
  errors: ['gw_not_found', 'gw_unavailable'],
  async handler({ params, caller, body }, deps: { readonly webhooks: WebhookRouteDeps }) {
    const rotated = await rotateSecret(
      deps.webhooks.db,
      deps.webhooks.settings,
      caller.actor,
      caller.org.id,
      params.webhook_id,
      body.grace_seconds,
    );
    if (isGwError(rotated)) return rotated;
    return { ...endpointView(rotated.row), secret: rotated.secret };
  },
});
