// Waiting for Postgres and Redis when a process starts: each attempt bounded by the
// dependency's time-out (DATABASE_TIMEOUT_MS, REDIS_TIMEOUT_MS), so a server that is down or
// hangs (a connection accepted, no answer) ends the wait with a clear reason instead of holding
// it for ever. The CLI makes one attempt (decision 407); the gateway's boot retries with backoff
// for a bounded total, then fails (decision 426).
import pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

/** A dependency did not answer in time, or could not be reached; the message names which. */
export class DependencyUnavailableError extends Error {
  override readonly name = 'DependencyUnavailableError';
}

/**
 * SQLSTATEs that say Postgres is there but cannot take a connection yet: starting up or
 * shutting down (57P03), out of connections (53300), a connection failure (class 08). Any
 * other SQLSTATE is the server refusing us (a wrong password, no such role): no wait helps.
 */
function isTransientRefusal(code: string): boolean {
  return code === '57P03' || code === '53300' || code.startsWith('08');
}

/**
 * `work`, or a `DependencyUnavailableError` naming `service` once it failed to reach the
 * server or `ms` passed. The reason is the driver's (an address, a code), never a URL's
 * password. A refusal by the server itself (its SQLSTATE) is rethrown as it is.
 */
export async function reachable<T>(work: Promise<T>, ms: number, service: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new DependencyUnavailableError(`${service} did not answer within ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([work, late]);
  } catch (error) {
    if (error instanceof DependencyUnavailableError) throw error;
    // Only Postgres' own answer carries a SQLSTATE: a socket's code (EPIPE, EPERM) can look
    // like one, five capitals, and is the connection failing, not the server refusing us.
    if (error instanceof pg.DatabaseError && !isTransientRefusal(error.code ?? '')) throw error;
    const reason = (error as Error).message;
    throw new DependencyUnavailableError(`${service} is unreachable: ${reason}`);
  } finally {
    clearTimeout(timer);
  }
}

/** The boot waits for a dependency at most this many of its time-outs in all. */
export const BOOT_WAIT_TIMEOUTS = 6;
/** The first pause between two attempts; each next one doubles, up to the cap. */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 8_000;

export interface DependencyWait {
  /** How the dependency is named in the log and the error: `Postgres (DATABASE_URL)`. */
  readonly service: string;
  /** The dependency's time-out: the longest one attempt waits. */
  readonly attemptMs: number;
  /** Aborted by a stop signal: once an attempt has failed, the wait ends with `StoppedWhileStarting`. */
  readonly stop?: AbortSignal;
}

/** A stop was asked for while the boot waited for a dependency: nothing to drain yet. */
export class StoppedWhileStarting extends Error {
  override readonly name = 'StoppedWhileStarting';
}

/** `work`, or `StoppedWhileStarting` as soon as `stop` is aborted. */
function unlessStopped<T>(work: Promise<T>, service: string, stop?: AbortSignal): Promise<T> {
  if (stop === undefined) return work;
  const stopped = (): StoppedWhileStarting =>
    new StoppedWhileStarting(`stopped while waiting for ${service}`);
  if (stop.aborted) return Promise.reject(stopped());
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(stopped());
    stop.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => stop.removeEventListener('abort', onAbort));
  });
}

/**
 * Runs `attempt` until it succeeds, each try bounded by `attemptMs` (passed to it, for the
 * driver's own bound), pausing 1 s, 2 s, 4 s, then 8 s between tries, as long as the next try
 * ends within `BOOT_WAIT_TIMEOUTS` × `attemptMs` of the first; each failure is a warning, and
 * the last one is thrown with the count. An error that is not the dependency being away (a
 * wrong password, a changed migration) is thrown at once: trying again cannot help. A stop
 * asked for (`wait.stop`) once the first attempt has failed ends the wait at once.
 */
export async function waitForDependency<T>(
  logger: Logger,
  wait: DependencyWait,
  attempt: (attemptMs: number) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + BOOT_WAIT_TIMEOUTS * wait.attemptMs;
  const started = Date.now();
  let pauseMs = FIRST_RETRY_MS;
  for (let count = 1; ; count += 1) {
    try {
      const trying = reachable(attempt(wait.attemptMs), wait.attemptMs, wait.service);
      // A first attempt runs its course (at most its time-out): a stop asked for while a
      // healthy boot connects is acted on once started, drained and closed (decision 384).
      return await (count === 1 ? trying : unlessStopped(trying, wait.service, wait.stop));
    } catch (error) {
      if (!(error instanceof DependencyUnavailableError)) throw error;
      await unlessStopped(Promise.resolve(), wait.service, wait.stop);
      if (Date.now() + pauseMs + wait.attemptMs > deadline) {
        const tookS = ((Date.now() - started) / 1000).toFixed(1);
        throw new DependencyUnavailableError(
          `${error.message} (gave up after ${count} attempt${count === 1 ? '' : 's'} in ${tookS} s)`,
        );
      }
      logger.warn(
        { attempt: count, retryInMs: pauseMs, reason: error.message },
        `${wait.service} is not reachable yet: trying again`,
      );
      await unlessStopped(
        new Promise((resolve) => setTimeout(resolve, pauseMs)),
        wait.service,
        wait.stop,
      );
      pauseMs = Math.min(pauseMs * 2, MAX_RETRY_MS);
    }
  }
}

/**
 * The longest a boot waits for its dependencies before it fails: Postgres, then Redis, each
 * for at most `BOOT_WAIT_TIMEOUTS` of its time-outs. An orchestrator's startup probe must
 * allow more (deploy/kubernetes/deployment.yaml), or it kills a boot that would have failed
 * with its reason logged, or started.
 */
export function longestBootWaitMs(
  config: Pick<Config, 'DATABASE_TIMEOUT_MS' | 'REDIS_TIMEOUT_MS'>,
): number {
  return BOOT_WAIT_TIMEOUTS * (config.DATABASE_TIMEOUT_MS + config.REDIS_TIMEOUT_MS);
}
