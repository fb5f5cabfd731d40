// Secrets that keep working for a grace period after a rotation: a webhook endpoint's signing
// secrets (decision 361) and an OAuth client's secrets (decision 374) follow the same rules,
// which live here. Read by the rotations, the CLI's help and the dashboard's pages, so it has
// no imports.

/** How long a rotated-out secret keeps working by default (24 h), and at most (7 days). */
export const DEFAULT_ROTATION_GRACE_S = 86_400;
export const MAX_ROTATION_GRACE_S = 7 * 86_400;

/**
 * How many retired secrets may work beside the current one, each until its own grace ends:
 * rotations in a row never end an earlier secret early (a receiver or an app mid-deploy keeps
 * working), and what is checked or sent stays small.
 */
export const MAX_RETIRING_SECRETS = 3;

/** A retired secret (in whatever form its owner stores it) that works until `expires_at`. */
export interface RetiringSecret {
  /** RFC 3339. */
  readonly expires_at: string;
}

/** The retired secrets still in their grace at `nowMs`, in their order. */
export function stillRetiring<Secret extends RetiringSecret>(
  retired: readonly Secret[],
  nowMs: number,
): Secret[] {
  return retired.filter((secret) => Date.parse(secret.expires_at) > nowMs);
}

/**
 * The retired secrets a rotation with `graceSeconds` keeps working beside the new one (the
 * secret it retires joins them): those still in grace, or none when the grace is 0 (a leaked
 * secret: every old one stops at once). A refusal (the message of a 409) when
 * MAX_RETIRING_SECRETS already work: rotating would end the first one early.
 */
export function keptByRotation<Secret extends RetiringSecret>(
  stillInGrace: readonly Secret[],
  graceSeconds: number,
  /** What a secret does, for the refusal: `sign`, `authenticate`. */
  verb: string,
): Secret[] | { readonly refusal: string } {
  if (graceSeconds === 0) return [];
  if (stillInGrace.length < MAX_RETIRING_SECRETS) return [...stillInGrace];
  const firstEnd = stillInGrace.map((retired) => retired.expires_at).sort()[0]!;
  return {
    refusal: `at most ${MAX_RETIRING_SECRETS} earlier secrets ${verb} beside the current one: the first stops at ${firstEnd}; rotate after that, or with grace_seconds 0, which stops them all now`,
  };
}
