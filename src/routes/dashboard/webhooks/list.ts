// GET /dashboard/api/orgs/{org_id}/webhooks: the organization's webhook endpoints, with their
// health (admin or owner). Secrets are never shown again. Also whether this gateway takes
// http:// URLs (WEBHOOK_ALLOW_HTTP), as the wallet's read says whether it takes top-ups: the
// page that adds an endpoint says which URLs it may have.
import { endpointView, listEndpoints } from '../../../webhooks/endpoints.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { WEBHOOKS_PATH, type WebhookRouteDeps } from './schema.js';
import { webhookListSchema } from './answers.js';

export const listWebhooksRoute = declareRoute({
  method: 'GET',
  path: WEBHOOKS_PATH,
  summary: "The organization's webhook endpoints and their health (at most 20: one page)",
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  responses: {
    200: {
      description: 'webhook endpoints',
      schema: webhookListSchema,
    },
  },
  async handler({ caller }, deps: { readonly webhooks: WebhookRouteDeps }) {
    const rows = await listEndpoints(deps.webhooks.db, caller.org.id);
    const now = Date.now();
    return {
      data: rows.map((row) => endpointView(row, now)),
      next_cursor: null,
      http_urls_allowed: deps.webhooks.settings.policy.allowHttp,
    };
  },
});
