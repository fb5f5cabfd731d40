// The webhook event catalogue: every event type gw sends. The names are a contract (endpoints
// filter on them, receivers switch on them); docs/webhooks.md shows each with its payload.

export const EVENT_TYPES = [
  'product_user.created',
  'product_user.blocked',
  'product_user.unblocked',
  'product_user.allowance_threshold',
  'credit_grant.created',
  'credit_grant.revoked',
  'credit_grant.expired',
  'cap.threshold',
  'wallet.low_balance',
  'provider_credential.failed_over',
  'provider_credential.rejected',
  'api_key.created',
  'api_key.revoked',
  'oauth_connection.created',
  'oauth_connection.revoked',
  'webhook.test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

const known: ReadonlySet<string> = new Set(EVENT_TYPES);

export function isEventType(value: string): value is EventType {
  return known.has(value);
}

/** The share of a cap at which the threshold events fire (once per period each). */
export const CAP_THRESHOLDS = ['0.8', '1.0'] as const;
export type CapThreshold = (typeof CAP_THRESHOLDS)[number];

/** The body every attempt of a message sends: `{"type","timestamp","data"}`. */
export function eventPayload(type: EventType, occurredAt: Date, data: unknown): string {
  return JSON.stringify({ type, timestamp: occurredAt.toISOString(), data });
}
