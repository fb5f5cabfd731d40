// The request bodies of the webhook-endpoint routes and what they need (the endpoint objects:
// answers.ts). Routes live under /dashboard/api/orgs/{org_id}/webhooks: the organization is the
// locator, and an endpoint of another organization answers 404 like a missing one.
import { z } from 'zod';
import type { DbPool } from '../../../db/pool.js';
import { storableText } from '../../../product-users/limits.js';
import { displayNameProblem } from '../../../text.js';
import {
  DEFAULT_ROTATION_GRACE_S,
  MAX_DESCRIPTION_CHARS,
  MAX_ROTATION_GRACE_S,
  type WebhookSettings,
} from '../../../webhooks/endpoints.js';
import { EVENT_TYPES } from '../../../webhooks/events.js';
import { MAX_URL_CHARS } from '../../../webhooks/target-policy.js';
import { timestamp } from '../../product-users/lookup.js';
import { rotationBody } from '../schemas.js';

/** What the webhook routes' handlers are given. */
export interface WebhookRouteDeps {
  readonly db: DbPool;
  readonly settings: WebhookSettings;
}

export const WEBHOOKS_PATH = '/dashboard/api/orgs/{org_id}/webhooks';
export const WEBHOOK_PATH = `${WEBHOOKS_PATH}/{webhook_id}`;

const url = z.string().max(MAX_URL_CHARS, `must be at most ${MAX_URL_CHARS} characters`);
/** Shown to every admin beside the URL: refused where it would read as other text (311). */
const description = storableText(MAX_DESCRIPTION_CHARS).superRefine((value, context) => {
  const problem = displayNameProblem(value);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});
const eventTypes = z
  .array(z.enum(EVENT_TYPES))
  .max(EVENT_TYPES.length, `must list at most ${EVENT_TYPES.length} event types`);

export const createWebhookBody = z.strictObject({
  url,
  description: description.optional(),
  /** Omitted or empty: every event type. */
  event_types: eventTypes.optional(),
});

/** A PATCH naming nothing (an empty object, or no body) is refused, not audited (decision 584). */
export const updateWebhookBody = z
  .strictObject({
    url: url.optional(),
    description: description.optional(),
    event_types: eventTypes.optional(),
    enabled: z.boolean().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'name at least one field to change');

export const rotateWebhookBody = rotationBody(
  MAX_ROTATION_GRACE_S,
  '7 days',
  DEFAULT_ROTATION_GRACE_S,
);

export const redeliverBody = z
  .strictObject({
    message_id: z
      .string()
      .regex(/^msg_[A-Za-z0-9]{1,40}$/, 'is not a message id')
      .optional(),
    since: timestamp.optional(),
  })
  .refine((body) => (body.message_id === undefined) !== (body.since === undefined), {
    message: 'send either message_id or since',
  });
