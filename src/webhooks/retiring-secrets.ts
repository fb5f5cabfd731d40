// How many retired signing secrets may sign beside the current one (decision 361): read by the
// rotation, the CLI's help and the dashboard's webhooks page, so it has no imports.

/**
 * How many retired secrets may sign beside the current one, each until its own grace ends:
 * rotations in a row never end an earlier secret early (a receiver mid-deploy keeps
 * verifying), and the signature header stays small.
 */
export const MAX_RETIRING_SECRETS = 3;
