// Shutdown: what the drain tells the parts started before it (readiness, the lost-request
// recovery, each proxy step), and the drain itself: stop accepting, let the requests in flight
// finish within the grace, cut what outlasts it, then close everything last first.
import type { Closers } from '../closers.js';
import type { Config } from '../config.js';
import type { HttpServer } from '../http/server.js';
import { ShutdownCut } from '../inference/shutdown-cut.js';
import type { Logger } from '../log.js';
import { STOP_WAIT_MS as EMAIL_STOP_WAIT_MS } from './email.js';
import { WRITER_STOP_TIMEOUT_MS } from './usage-recording.js';

/**
 * After the grace, the requests cut then settle (Redis, a token count): this bounds the wait.
 * What is still in flight after it (a stuck Redis) lapses by its hold's TTL, unrecorded.
 */
const CUT_SETTLE_TIMEOUT_MS = 5_000;

/**
 * The longest a stop can take after SIGTERM with these settings: the grace, the settles of
 * what it cut, then the closers that wait, one after another (the e-mail attempts under way,
 * the webhook attempts under way, each bounded by WEBHOOK_TIMEOUT_MS, and the usage writer's
 * final drain). An orchestrator's kill deadline must be above it (decision 400).
 */
export function longestStopMs(
  config: Pick<
    Config,
    'SHUTDOWN_GRACE_MS' | 'SMTP_URL' | 'WEBHOOK_DELIVERY_CONCURRENCY' | 'WEBHOOK_TIMEOUT_MS'
  >,
): number {
  return (
    config.SHUTDOWN_GRACE_MS +
    CUT_SETTLE_TIMEOUT_MS +
    (config.SMTP_URL === undefined ? 0 : EMAIL_STOP_WAIT_MS) +
    (config.WEBHOOK_DELIVERY_CONCURRENCY === 0 ? 0 : config.WEBHOOK_TIMEOUT_MS) +
    WRITER_STOP_TIMEOUT_MS
  );
}

export interface ShutdownState {
  /** True once the drain began (/readyz answers not ready). */
  draining: boolean;
  /** The requests still in flight after the cut (their drafts are left to the others). */
  unsettledAtExit: number;
  /** Watched by every proxy step; cut when the grace has elapsed. */
  readonly cut: ShutdownCut;
}

/** Nothing draining, nothing cut. */
export function shutdownState(): ShutdownState {
  return { draining: false, unsettledAtExit: 0, cut: new ShutdownCut() };
}

/** The listeners a drain stops accepting on. */
export interface Listeners {
  readonly server: HttpServer;
  readonly metricsServer: HttpServer | undefined;
}

/** Graceful stop: stop accepting, drain in-flight requests, flush usage, close everything. */
export async function drainThenClose(
  config: Config,
  logger: Logger,
  { server, metricsServer }: Listeners,
  shutdown: ShutdownState,
  closers: Closers,
): Promise<void> {
  shutdown.draining = true;
  server.stopAccepting();
  metricsServer?.stopAccepting();
  const remaining = await server.whenIdle(config.SHUTDOWN_GRACE_MS);
  if (remaining > 0) {
    // Cut what outlasts the grace while everything a settle needs is still open: each is
    // settled as partial (`gateway_shutdown`) and its record goes out with the writer's
    // final drain below.
    logger.warn({ remaining }, 'shutdown grace elapsed: cutting the requests in flight');
    shutdown.cut.cutAll();
    const unsettled = await server.whenIdle(CUT_SETTLE_TIMEOUT_MS);
    shutdown.unsettledAtExit = unsettled;
    if (unsettled > 0) {
      logger.error({ unsettled }, 'requests still in flight after the cut; their holds lapse');
    }
  }
  await closers.closeAll(logger);
}
