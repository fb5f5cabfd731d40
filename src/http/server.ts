// The one HTTP adapter over uWebSockets.js: routing, body reading with a size limit, request
// ids, error containment and in-flight tracking for graceful shutdown.
import type {
  HttpRequest as UwsRequest,
  HttpResponse as UwsResponse,
  TemplatedApp,
  us_listen_socket,
} from 'uWebSockets.js';
import {
  gwError,
  isDependencyUnavailable,
  isGwError,
  type ErrorFlavor,
  type GwError,
} from '../errors.js';
import { newRequestId } from '../ids.js';
import type { Logger } from '../log.js';
import { framingProblem } from './framing.js';
import { hostProblem } from './own-origin.js';
import { textProblem } from '../text.js';
import type { RequestLog } from './request-log.js';
import type { TrustedProxies } from './client-address.js';
import { errorResponse, sendError } from './respond.js';
import { UwsHttpResponse } from './response.js';
import { RouteTable } from './route-table.js';
import { readAddress, UwsHttpRequest } from './request.js';
import type { HttpRequest, Route } from './types.js';
import { loadNativeUws } from './uws.js';

/**
 * Request headers gw reads as one value. Sent twice, they are refused: uWS keeps every
 * line, and taking one of them (the last, say) would bill or authenticate a request by a
 * value its sender may not have meant.
 */
const SINGLE_VALUE_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'x-api-key',
  'x-gw-external-user-id',
  'x-gw-legacy-errors',
  'idempotency-key',
  'content-type',
  'origin',
  'cookie',
  'x-csrf-token',
  'vendor-version',
  'anthropic-version',
  // the dashboard's own origin and the OAuth issuer (src/http/own-origin.ts)
  'host',
]);
export interface HttpServerOptions {
  readonly routes: readonly Route[];
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  /** The peers whose X-Forwarded-For names the client (TRUSTED_PROXIES); unset: none. */
  readonly trustedProxies?: TrustedProxies;
  /** Told about every finished request (for metrics); `route` is the matched path or 'unmatched'. */
  readonly onRequestFinished?: (
    route: string,
    status: number,
    durationMs: number,
    /** The catalogue code of an error answer, if it was one. */
    errorCode: string | undefined,
  ) => void;
  /** Writes the request-log line of every finished request (see request-log.ts). */
  readonly requestLog?: RequestLog;
  /**
   * Whether the instance is too late to take a new request (load shedding, decision 335):
   * asked as each request arrives; when true, it is answered 503 and its connection closed
   * (health checks are always served). Told of each with `onShed`.
   */
  readonly overloaded?: () => boolean;
  readonly onShed?: () => void;
}

export interface HttpServer {
  /**
   * Resolves with the bound port. `shared`: other sockets may bind the port too (SO_REUSEPORT:
   * the gateway's own workers); otherwise the port is this listener's alone, and a port another
   * process holds (even with SO_REUSEPORT) fails the listen.
   */
  listen(host: string, port: number, shared?: boolean): Promise<number>;
  /** Stops accepting connections; in-flight requests continue. */
  stopAccepting(): void;
  /** Resolves when no request is in flight, or after `timeoutMs`. Returns how many remain. */
  whenIdle(timeoutMs: number): Promise<number>;
  readonly inFlight: number;
}

/** A refused request's body up to this size is read (keeps the connection); larger: closed. */
const SMALL_BODY_BYTES = 64 * 1024;
const noop = (): void => undefined;

/** uWS's LIBUS_LISTEN_DEFAULT: SO_REUSEPORT on Linux, so other sockets may bind the port too. */
const LISTEN_SHARED = 0;
/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT: no SO_REUSEPORT; a port already bound fails the listen. */
const LISTEN_EXCLUSIVE = 1;

/**
 * `app.listen(host, port, options, cb)`: the binding takes listen options after a host as after
 * a port alone, but uWS's typings declare them only for the latter.
 */
function listenOn(
  app: TemplatedApp,
  host: string,
  port: number,
  options: typeof LISTEN_SHARED | typeof LISTEN_EXCLUSIVE,
  done: (socket: us_listen_socket | false) => void,
): void {
  const listen = app.listen as unknown as (
    host: string,
    port: number,
    options: number,
    done: (socket: us_listen_socket | false) => void,
  ) => TemplatedApp;
  listen.call(app, host, port, options, done);
}

/**
 * The paths a request for `path` may have meant (decision 469): the inference routes are
 * under /v1, the product-user routes under no prefix (SPEC: never /api/v1), and a browser
 * opening the gateway's origin wants the dashboard.
 */
function nearPaths(path: string): string[] {
  if (path === '/') return ['/dashboard'];
  const api = ['/api/v1', '/api'].find((prefix) => path.startsWith(`${prefix}/`));
  if (api !== undefined) {
    const rest = path.slice(api.length);
    return [`/v1${rest}`, rest];
  }
  return path.startsWith('/v1/') ? [path.slice('/v1'.length)] : [`/v1${path}`];
}

/** The 404 of a path no route takes, naming the route meant when a prefix is off. */
function routeNotFound(routes: RouteTable, method: string, path: string): GwError {
  const meant = nearPaths(path).find((candidate) => {
    const match = routes.match(method, candidate);
    return match.kind === 'route' && match.route.fallback !== true;
  });
  const said = `no route for ${method} ${path}`;
  return gwError(
    'gw_route_not_found',
    meant === undefined ? said : `${said}; did you mean ${method} ${meant}?`,
  );
}

export function createHttpServer(options: HttpServerOptions): HttpServer {
  const uws = loadNativeUws();
  const app = uws.App();
  const routes = new RouteTable(options.routes);

  let inFlight = 0;
  let idleWaiters: Array<() => void> = [];
  let listenSocket: us_listen_socket | undefined;
  let draining = false;
  const finished = (): void => {
    inFlight -= 1;
    if (inFlight === 0 && idleWaiters.length > 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };

  app.any('/*', (native: UwsResponse, nativeRequest: UwsRequest) => {
    // uWS's request object is valid only synchronously: copy everything first.
    const method = nativeRequest.getMethod().toUpperCase();
    const path = nativeRequest.getUrl();
    const query = nativeRequest.getQuery() ?? '';
    const headers: Record<string, string> = {};
    const contentLengths: string[] = [];
    const transferEncodings: string[] = [];
    let repeated: string | undefined;
    nativeRequest.forEach((name, value) => {
      if (repeated === undefined && SINGLE_VALUE_HEADERS.has(name) && Object.hasOwn(headers, name))
        repeated = name;
      // X-Forwarded-For in several lines (HAProxy adds a line of its own) is one list, in
      // order (RFC 9110 §5.3): the last line alone would drop the client (decision 453).
      headers[name] =
        name === 'x-forwarded-for' && Object.hasOwn(headers, name)
          ? `${headers[name]}, ${value}`
          : value;
      if (name === 'content-length') contentLengths.push(value);
      else if (name === 'transfer-encoding') transferEncodings.push(value);
    });
    const requestId = newRequestId();
    const receivedAtMs = Date.now();
    inFlight += 1;
    // HEAD is the GET without its body (RFC 9110 §9.3.2): the GET route answers it.
    const headOnly = method === 'HEAD';
    const match = routes.match(headOnly ? 'GET' : method, path);
    const route = match.kind === 'route' ? match.route : undefined;
    // Metrics are labelled by the route's declared path (bounded), never the raw path.
    const routeLabel = route ? route.path : 'unmatched';
    const response = new UwsHttpResponse(
      native,
      requestId,
      (status) => {
        finished();
        const durationMs = Date.now() - receivedAtMs;
        options.onRequestFinished?.(routeLabel, status, durationMs, response.annotations.errorCode);
        options.requestLog?.({
          requestId,
          method,
          route: routeLabel,
          status,
          durationMs,
          annotations: response.annotations,
        });
      },
      headOnly,
    );
    native.onAborted(() => response.markAborted());
    /** Answers with an error and closes the connection (the rest of the body is not read). */
    const closeWith = (error: GwError, errorFlavor: ErrorFlavor): void => {
      const { headers: errorHeaders, body } = errorResponse(error, errorFlavor);
      response.annotate({ errorCode: error.code });
      response.endAndClose(error.status, errorHeaders, body);
    };
    const flavor: ErrorFlavor = route ? flavorOf(route, headers) : 'default';
    // The messages protocol's clients read the request id from `request-id` (its vendor's name).
    if (flavor === 'messages') response.header('request-id', requestId);
    // Read now, while the client is surely there, for the routes that read it; the request
    // log names it.
    const address = route?.readsClientAddress
      ? readAddress(native, headers, options.trustedProxies)
      : undefined;
    if (address !== undefined) response.annotate({ clientAddress: address });
    const head = route
      ? new UwsHttpRequest(
          method,
          path,
          query,
          headers,
          match.kind === 'route' ? match.params : {},
          requestId,
          receivedAtMs,
          address,
        )
      : undefined;
    /**
     * Refuses the request for what it is before its body is read (its size, its framing, a
     * header or query parameter): the route's `onRefused` runs first (an OAuth code is spent
     * whatever fails, decisions 276 and 292), with the body if it was read (null: not read,
     * or not all of it). `close`: the rest of the body is not read. A refused caller does not
     * come here: another site can make a browser send a request its Origin check refuses,
     * and that is no attempt of the visitor's (sign-up would count it against them).
     */
    const refuseEarly = (error: GwError, body: Buffer | null, close: boolean): void => {
      const answer = (final: GwError): void =>
        close ? closeWith(final, flavor) : sendError(response, final, flavor);
      const onRefused = route?.onRefused;
      if (!onRefused || !head) {
        answer(error);
        return;
      }
      let pending: Promise<GwError | undefined>;
      try {
        pending = onRefused(head, error, body);
      } catch (failure) {
        pending = Promise.reject(failure as Error);
      }
      pending.then(
        (instead) => answer(instead ?? error),
        (failure: unknown) => {
          logFailure(failure);
          answer(failureAnswer(failure));
        },
      );
    };

    /** Tells the client to retry elsewhere (the connection closes); onRefused does not run. */
    const sendElsewhere = (why: string): void =>
      closeWith(
        gwError('gw_unavailable', `this gateway instance is ${why}; retry`, {
          headers: { 'retry-after': '1' },
        }),
        flavor,
      );
    const healthCheck = path === '/healthz' || path === '/readyz';
    if (draining && !healthCheck) {
      // A request on a kept-alive connection after SIGTERM: tell the client to go elsewhere.
      // Its route's onRefused does not run: the client is told to retry this very request
      // (an OAuth code it presents must still work there; decision 292).
      sendElsewhere('shutting down');
      return;
    }
    if (!healthCheck && options.overloaded?.() === true) {
      // Taken now, it would wait behind the work that made the loop late and make that later
      // still: refused at once, before its body or its key is read (decision 335).
      options.onShed?.();
      sendElsewhere('overloaded');
      return;
    }
    const badFraming = framingProblem(contentLengths, transferEncodings);
    if (badFraming !== undefined) {
      // Which body follows is ambiguous: answer and close; nothing of it is read.
      refuseEarly(gwError('gw_invalid_request', badFraming), null, true);
      return;
    }
    if (repeated !== undefined) {
      // Two keys, two product users, two idempotency keys: which one was meant is not for
      // the gateway to guess (decision 287).
      refuseEarly(gwError('gw_invalid_request', `header ${repeated}: given twice`), null, false);
      return;
    }
    const badHost = hostProblem(headers.host);
    if (badHost !== undefined) {
      // RFC 9112 section 3.2; an issuer or own origin is never made from it (decision 346).
      refuseEarly(gwError('gw_invalid_request', badHost), null, false);
      return;
    }
    if (match.kind !== 'route' || !route || !head) {
      const error =
        match.kind === 'wrong_method'
          ? gwError('gw_method_not_allowed', `${method} is not supported on ${path}`, {
              headers: { allow: allowedMethods(match.allowed) },
            })
          : // A HEAD answers as its GET would, to the byte count of the body it leaves out.
            routeNotFound(routes, headOnly ? 'GET' : method, path);
      sendError(response, error);
      return;
    }
    const badText = unstorableParameter(query, match.params);
    if (badText !== undefined) {
      refuseEarly(gwError('gw_invalid_request', badText), null, false);
      return;
    }

    // The caller is authenticated while the body streams in; a refused request is answered
    // at once and its body is not buffered (an unauthenticated client cannot make the
    // gateway hold megabytes).
    let bodyComplete = false;
    let refused = false;
    const caller: Promise<unknown> = route.authenticate
      ? route.authenticate(head)
      : Promise.resolve(null);
    // Until the caller is known the rest of the body is not read (the socket is paused after
    // the first read that did not complete it): an unauthenticated client makes the gateway
    // hold at most what one read delivered. A body complete in its first read (most) never
    // pauses: uWS's resume() arms a 10 s idle time-out that nothing clears once the body is
    // in, so a resumed socket whose answer took longer (a vendor thinking before its first
    // byte, a slow admission) was closed under the waiting client. (A chunked body whose
    // last chunks were in the read that paused still completes paused, and keeps that limit.)
    let callerKnown = false;
    let bodyPaused = false;
    let refusalAfterBody: GwError | undefined;
    // Every way out of the paused state resumes before anything is sent: a paused
    // kept-alive socket would never read the client's next request.
    const unpause = (): void => {
      if (!bodyPaused) return;
      bodyPaused = false;
      if (!response.aborted && !response.headersSent) native.resume();
    };
    const declaredLength = Number(headers['content-length'] ?? Infinity);
    caller.then(
      (value) => {
        callerKnown = true;
        if (!isGwError(value)) {
          unpause();
          return;
        }
        if (response.aborted) return;
        if (bodyComplete) {
          refused = true;
          unpause(); // the connection is kept alive: its next request must be read
          sendError(response, value, flavor);
        } else if (declaredLength <= SMALL_BODY_BYTES) {
          // A small body is read to its end and the error sent then, so the client's
          // kept-alive connection stays usable (closing it makes pools reuse a dead socket).
          refusalAfterBody = value;
          unpause();
        } else {
          // Mid-body the connection is closed: the rest of the body is never read.
          refused = true;
          closeWith(value, flavor);
        }
      },
      (error: unknown) => {
        refused = true;
        unpause();
        failed(error);
      },
    );

    const run = (body: Buffer): void => {
      bodyComplete = true;
      if (refusalAfterBody) {
        refused = true;
        sendError(response, refusalAfterBody, flavor);
        return;
      }
      head.body = body;
      const request: HttpRequest = head;
      caller.then((value) => {
        if (refused || isGwError(value) || response.aborted) return;
        let outcome: Promise<void> | void;
        try {
          outcome = route.handler(request, response, value);
        } catch (error) {
          failed(error);
          return;
        }
        if (outcome) outcome.catch(failed);
      }, noop);
    };
    function failed(error: unknown): void {
      // Work cancelled because the client went away (a token count) is not a bug.
      if (response.aborted && (error as { name?: unknown } | null)?.name === 'AbortError') return;
      logFailure(error);
      if (response.aborted) return;
      if (response.headersSent) {
        response.destroy();
        return;
      }
      sendError(response, failureAnswer(error), flavor);
    }
    function logFailure(error: unknown): void {
      // A dependency away (Redis, Postgres refusing or not answering in time) is not a bug:
      // a warning, as its 503 says, not an error per request while the outage lasts.
      if (isDependencyUnavailable(error)) {
        options.logger.warn(
          { err: error, requestId, path },
          'route answered 503: a dependency is unavailable',
        );
        return;
      }
      options.logger.error({ err: error, requestId, path }, 'unhandled error in route handler');
    }
    /** What a bug (500) or an unreachable dependency (503) answers. */
    function failureAnswer(error: unknown): GwError {
      return isDependencyUnavailable(error)
        ? gwError('gw_unavailable', 'a dependency of the gateway is unreachable; retry shortly', {
            headers: { 'retry-after': '1' },
          })
        : gwError('gw_internal_error', `internal error; request id ${requestId}`);
    }
    // The body is not read (or not all of it): nothing in it is seen, an OAuth code neither.
    const tooLarge = (): void =>
      refuseEarly(
        gwError('gw_body_too_large', `the request body exceeds ${options.maxBodyBytes} bytes`),
        null,
        true,
      );

    const contentLength = headers['content-length'];
    const hasBody =
      (contentLength !== undefined && contentLength !== '0') ||
      headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      run(Buffer.alloc(0));
      return;
    }
    if (contentLength !== undefined && Number(contentLength) > options.maxBodyBytes) {
      tooLarge();
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    native.onData((chunk, isLast) => {
      if (response.aborted || refused || received < 0) return;
      received += chunk.byteLength;
      if (received > options.maxBodyBytes) {
        received = -1;
        tooLarge();
        return;
      }
      // uWS neuters the chunk when this callback returns: copy it.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) {
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        chunks.length = 0; // this closure lives as long as the request: only `head` keeps the body
        run(body);
      } else if (route.authenticate && !callerKnown && !bodyPaused) {
        bodyPaused = true;
        native.pause();
      }
    });
  });

  return {
    get inFlight() {
      return inFlight;
    },
    listen(host, port, shared = false) {
      return new Promise((resolve, reject) => {
        listenOn(app, host, port, shared ? LISTEN_SHARED : LISTEN_EXCLUSIVE, (socket) => {
          if (!socket) {
            reject(new Error(`could not listen on ${host}:${port}`));
            return;
          }
          listenSocket = socket;
          resolve(uws.us_socket_local_port(socket));
        });
      });
    },
    stopAccepting() {
      draining = true;
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
    },
    whenIdle(timeoutMs) {
      if (inFlight === 0) return Promise.resolve(0);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(inFlight), timeoutMs);
        idleWaiters.push(() => {
          clearTimeout(timer);
          resolve(0);
        });
      });
    },
  };
}

/** Why a query or path parameter cannot be used (NUL, lone surrogate), or undefined. */
function unstorableParameter(
  query: string,
  params: Readonly<Record<string, string>>,
): string | undefined {
  for (const [name, value] of Object.entries(params)) {
    const problem = textProblem(value);
    if (problem) return `path parameter ${name}: ${problem}`;
  }
  if (query === '') return undefined;
  for (const [name, value] of new URLSearchParams(query)) {
    const problem = textProblem(name) ?? textProblem(value);
    if (problem)
      return `query parameter ${JSON.stringify(textProblem(name) ? '?' : name)}: ${problem}`;
  }
  return undefined;
}

function flavorOf(route: Route, headers: Readonly<Record<string, string>>): ErrorFlavor {
  return typeof route.errorFlavor === 'function'
    ? route.errorFlavor(headers)
    : (route.errorFlavor ?? 'default');
}

/** The Allow header of a path: its routes' methods, and HEAD wherever GET is. */
function allowedMethods(methods: readonly string[]): string {
  return (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', ');
}
