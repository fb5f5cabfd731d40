// GET /dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/deliveries?limit&cursor&status (admin
// or owner): the endpoint's delivery log, newest first: each message, its state, its latest
// attempts (time, status, latency, the first bytes of the answer).
import { deliveriesQuery, listDeliveries } from '../../../webhooks/delivery-log.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { pageOf } from '../answers.js';
import { WEBHOOK_PATH, type WebhookRouteDeps } from './schema.js';
import { deliverySchema } from './answers.js';

export const webhookDeliveriesRoute = declareRoute({
  method: 'GET',
  path: `${WEBHOOK_PATH}/deliveries`,
  summary: "The endpoint's delivery log: messages, states and attempts, newest first",
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  query: deliveriesQuery,
  responses: { 200: { description: 'deliveries', schema: pageOf(deliverySchema) } },
  errors: ['gw_invalid_request', 'gw_not_found'],
  async handler({ query, params, caller }, deps: { readonly webhooks: WebhookRouteDeps }) {
    return await listDeliveries(deps.webhooks.db, caller.org.id, params.webhook_id, {
      limit: query.limit,
      before: query.cursor ?? null,
      state: query.status,
    });
  },
});
