// POST /dashboard/api/orgs/{org_id}/webhooks/{webhook_id}/redeliver {"message_id"} or
// {"since"} (admin or owner): sends one message again, or every message since a time, from the
// start of the retry schedule, with the same webhook-id. Everything since a time is rewritten in
// batches, each its own transaction (src/webhooks/redelivery-batches.ts, decision 577): a 503
// after some of them says how far it got and which `since` goes on from there.
import { z } from 'zod';
import { redeliver } from '../../../webhooks/delivery-log.js';
import { declareRoute } from '../../framework/declaration.js';
import { inOrg } from '../schemas.js';
import { redeliverBody, WEBHOOK_PATH, type WebhookRouteDeps } from './schema.js';

export const redeliverWebhookRoute = declareRoute({
  method: 'POST',
  path: `${WEBHOOK_PATH}/redeliver`,
  summary: 'Sends a message again, or every message since a time',
  caller: { kind: 'org_member', role: 'admin', org: inOrg },
  body: redeliverBody,
  responses: {
    202: {
      description: 'queued again',
      schema: z.object({ redelivered: z.number().int() }),
    },
  },
  errors: ['gw_not_found', 'gw_conflict', 'gw_unavailable'],
  async handler({ params, caller, body }, deps: { readonly webhooks: WebhookRouteDeps }) {
    return await redeliver(
      deps.webhooks.db,
      caller.actor,
      caller.org.id,
      params.webhook_id,
      body.message_id !== undefined
        ? { messageId: body.message_id }
        : { since: new Date(body.since!) },
    );
  },
});
