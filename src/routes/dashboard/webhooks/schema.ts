// The webhook endpoint object of the dashboard API, its request bodies, and what its routes
// need. Routes live under /dashboard/api/orgs/{org_id}/webhooks: the organization is the
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

export const webhookSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  url: z.string(),
  description: z.string(),
  /** Empty: every event type. */
  event_types: z.array(z.string()),
  status: z.enum(['enabled', 'disabled']),
  /** manual, failing (failed for days), gone (answered 410). */
  disabled_reason: z.enum(['manual', 'failing', 'gone']).nullable(),
  disabled_at: z.string().nullable(),
  /** The first failure since the last success; null while healthy. */
  failing_since: z.string().nullable(),
  last_success_at: z.string().nullable(),
  /** While a rotated-out secret still signs beside the new one. */
  previous_secret_expires_at: z.string().nullable(),
  /** Secrets retired by earlier rotations that still sign until then (their own grace). */
  earlier_secrets_expire_at: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});

/** A created endpoint or a rotated secret: the endpoint and, in this answer only, the secret. */
export const webhookWithSecretSchema = webhookSchema.extend({ secret: z.string() });

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

export const updateWebhookBody = z.strictObject({
  url: url.optional(),
  description: description.optional(),
  event_types: eventTypes.optional(),
  enabled: z.boolean().optional(),
});

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

export const deliverySchema = z.object({
  id: z.string(),
  message_id: z.string(),
  event_type: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempt_count: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  created_at: z.string(),
  /** The body every attempt sent: {"type","timestamp","data"}. */
  payload: z.record(z.string(), z.unknown()),
  /** The latest attempts, newest first. */
  attempts: z.array(
    z.object({
      attempted_at: z.string(),
      status_code: z.number().int().nullable(),
      latency_ms: z.number().int(),
      response_snippet: z.string(),
      error: z.string().nullable(),
    }),
  ),
});
