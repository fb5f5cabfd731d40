// When a failed delivery is tried again. The default follows Stripe's practice: minutes, then
// hours, for about three days (13 attempts in 75 h), each delay spread by ±20% jitter so that
// the deliveries of one outage do not all come back at the same second.
// WEBHOOK_RETRY_SCHEDULE (comma-separated seconds) replaces it, e.g. in tests.

export const DEFAULT_RETRY_SCHEDULE_S: readonly number[] = [
  60, 300, 1800, 3600, 7200, 14_400, 28_800, 43_200, 43_200, 43_200, 43_200, 43_200,
];

const JITTER = 0.2;

/** "5,30,60" → [5, 30, 60]; throws on anything but positive numbers of seconds. */
export function parseRetrySchedule(text: string): number[] {
  const steps = text.split(',').map((part) => part.trim());
  const seconds = steps.map(Number);
  if (
    steps.length === 0 ||
    steps.length > 50 ||
    seconds.some((value) => !Number.isFinite(value) || value <= 0 || value > 7 * 86_400)
  ) {
    throw new Error(
      'must be 1 to 50 comma-separated delays in seconds, each above 0 and at most 7 days',
    );
  }
  return seconds;
}

/**
 * The delay before the next attempt after the failure at `step` of the schedule (0: the first
 * attempt failed), or null when the schedule is spent and the delivery fails for good.
 */
export function retryDelayMs(
  schedule: readonly number[],
  step: number,
  random: () => number = Math.random,
): number | null {
  const seconds = schedule[step];
  if (seconds === undefined) return null;
  return Math.round(seconds * 1000 * (1 - JITTER + 2 * JITTER * random()));
}
