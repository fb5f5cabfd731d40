// The webhook-endpoint objects of the dashboard API: zod and other answers alone, read
// by the dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';
import { pageOf } from '../answers.js';

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

/** The endpoints, and whether this gateway takes http:// URLs (WEBHOOK_ALLOW_HTTP). */
export const webhookListSchema = pageOf(webhookSchema).extend({ http_urls_allowed: z.boolean() });

/** A created endpoint or a rotated secret: the endpoint and, in this answer only, the secret. */
export const webhookWithSecretSchema = webhookSchema.extend({ secret: z.string() });

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

/** A test event queued to an endpoint: the message its delivery log shows. */
export const testQueuedSchema = z.object({ message_id: z.string() });
