// One log line per finished request: what an operator needs to follow traffic (request id,
// route, status, latency, and the model, org, product user and client address a handler
// annotated; the address only where a handler read it, the sign-in and e-mail routes), never a
// key, prompt or body. Errors are always logged; successes may be sampled for high volume.
import type { Logger } from '../log.js';
import type { RequestAnnotations } from './types.js';

export interface FinishedRequest {
  readonly requestId: string;
  readonly method: string;
  /** The route's declared path (bounded), or 'unmatched'. */
  readonly route: string;
  readonly status: number;
  readonly durationMs: number;
  readonly annotations: Readonly<RequestAnnotations>;
}

export type RequestLog = (request: FinishedRequest) => void;

/**
 * `successSampleRate` is the fraction of requests answered below 400 that are logged (1: all,
 * 0: none); 4xx, 5xx and client aborts (499) are always logged. Lines are at `info`, so
 * LOG_LEVEL=warn turns them all off.
 */
export function createRequestLog(
  logger: Logger,
  successSampleRate: number,
  random: () => number = Math.random,
): RequestLog {
  if (!logger.isLevelEnabled('info')) return () => undefined;
  return (request) => {
    if (request.status < 400 && successSampleRate < 1 && random() >= successSampleRate) return;
    const { model, orgId, productUserId, errorCode, clientAddress } = request.annotations;
    logger.info(
      {
        requestId: request.requestId,
        method: request.method,
        route: request.route,
        status: request.status,
        durationMs: request.durationMs,
        ...(model !== undefined && { model }),
        ...(orgId !== undefined && { orgId }),
        ...(productUserId !== undefined && { productUserId }),
        ...(errorCode !== undefined && { errorCode }),
        ...(clientAddress !== undefined && { clientAddress }),
      },
      'request',
    );
  };
}
