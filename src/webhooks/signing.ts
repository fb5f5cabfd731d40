// Standard Webhooks signing (https://www.standardwebhooks.com): a secret `whsec_<base64>`, and
// per attempt the headers webhook-id (the message id, the same on every retry),
// webhook-timestamp (the attempt's time, seconds) and webhook-signature: `v1,<base64 of
// HMAC-SHA256 over "<id>.<timestamp>.<body>">`, one per secret, space separated — during a
// secret's rotation both the new and the old secret sign, so receivers can switch at leisure.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
/** 32 random bytes: the standard asks for 24 to 64. */
const SECRET_BYTES = 32;

export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** The webhook-signature header value: one `v1,` signature per secret. */
export function signatureHeader(
  messageId: string,
  timestampS: number,
  body: string,
  secrets: readonly string[],
): string {
  const signed = `${messageId}.${timestampS}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`)
    .join(' ');
}

/** The three Standard Webhooks headers of one attempt. */
export function webhookHeaders(
  messageId: string,
  body: string,
  secrets: readonly string[],
  nowMs: number,
): Record<string, string> {
  const timestampS = Math.floor(nowMs / 1000);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': signatureHeader(messageId, timestampS, body, secrets),
  };
}
