// Which vendor answers to a BYOK credential mean "this credential cannot serve right now"
// (fail over to the next one), and for how long to leave it alone.

const RATE_LIMIT_COOLDOWN_MS = 10_000;
const QUOTA_COOLDOWN_MS = 5 * 60_000;
const OVERLOADED_COOLDOWN_MS = 5_000;
const REJECTED_KEY_COOLDOWN_MS = 10 * 60_000;
const MAX_RETRY_AFTER_MS = 60 * 60_000;

function retryAfterMs(retryAfter: string | undefined): number | undefined {
  if (retryAfter === undefined) return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_RETRY_AFTER_MS);
  const date = Date.parse(retryAfter);
  return Number.isNaN(date)
    ? undefined
    : Math.min(Math.max(0, date - Date.now()), MAX_RETRY_AFTER_MS);
}

/** True when the vendor answer means it no longer accepts the key (not a passing condition). */
export function isRejectedKey(status: number): boolean {
  return status === 401 || status === 403;
}

/**
 * The cooldown for a credential after this vendor answer, or undefined when the answer is not
 * the credential's fault (a bad request fails the same on any key: no failover).
 * 429 rate limit (honouring retry-after), 429 insufficient_quota / 402 billing (quota),
 * 529 overloaded, and 401/403 (the vendor no longer accepts the key).
 */
export function credentialCooldownMs(
  status: number,
  bodyText: string,
  retryAfter: string | undefined,
): number | undefined {
  const hinted = retryAfterMs(retryAfter);
  if (status === 429) {
    if (bodyText.includes('insufficient_quota')) return hinted ?? QUOTA_COOLDOWN_MS;
    return hinted ?? RATE_LIMIT_COOLDOWN_MS;
  }
  if (status === 402) return hinted ?? QUOTA_COOLDOWN_MS;
  if (status === 529 || status === 503) return hinted ?? OVERLOADED_COOLDOWN_MS;
  if (isRejectedKey(status)) return REJECTED_KEY_COOLDOWN_MS;
  return undefined;
}
