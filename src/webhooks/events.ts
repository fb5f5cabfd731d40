// The webhook event catalogue: every event type gw sends. The names are a contract (endpoints
// filter on them, receivers switch on them); docs/webhooks.md shows each with its payload.
import { isJsonContainer } from '../json-shapes.js';

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
  'api_key.updated',
  'api_key.revoked',
  'oauth_connection.created',
  'oauth_connection.revoked',
  'webhook.test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

const known: ReadonlySet<string> = new Set(EVENT_TYPES);

/**
 * What each event is about, its *subject*: the messages about one subject go to an endpoint in
 * the order they were created (while it is healthy), each subject on one of the endpoint's
 * lanes (docs/decisions.md 317). A field of `data` holding the subject's id, or `org` for the
 * organization's own accounts (its caps and wallet), whose few events keep one order.
 * Migration 046 read this table once, in SQL, to place the deliveries pending then.
 */
export const EVENT_SUBJECTS: Readonly<Record<EventType, 'product_end_user_id' | 'id' | 'org'>> = {
  // a product user, their allowance and their credit grants: one order per product user
  'product_user.created': 'product_end_user_id',
  'product_user.blocked': 'product_end_user_id',
  'product_user.unblocked': 'product_end_user_id',
  'product_user.allowance_threshold': 'product_end_user_id',
  'credit_grant.created': 'product_end_user_id',
  'credit_grant.revoked': 'product_end_user_id',
  'credit_grant.expired': 'product_end_user_id',
  'cap.threshold': 'org',
  'wallet.low_balance': 'org',
  'provider_credential.failed_over': 'id',
  'provider_credential.rejected': 'id',
  'api_key.created': 'id',
  'api_key.updated': 'id',
  'api_key.revoked': 'id',
  'oauth_connection.created': 'id',
  'oauth_connection.revoked': 'id',
  // the endpoint it is sent to
  'webhook.test': 'id',
};

/** The subject of an event (EVENT_SUBJECTS): an id from `data`, else the organization. */
export function eventSubject(type: EventType, orgId: string, data: unknown): string {
  const field = EVENT_SUBJECTS[type];
  if (field === 'org' || !isJsonContainer(data)) return orgId;
  const id = (data as Record<string, unknown>)[field];
  return typeof id === 'string' && id !== '' ? id : orgId;
}

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
