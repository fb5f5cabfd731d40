// The small request/response interface route handlers see. Only src/http/ knows uWS.
import type { ErrorFlavor, GwError } from '../errors.js';

export interface HttpRequest {
  /** Upper-case method. */
  readonly method: string;
  readonly path: string;
  /** Raw query string without the '?'. */
  readonly query: string;
  /** Path parameters of a route path such as `/orgs/{org_id}` (decoded). */
  readonly params: Readonly<Record<string, string>>;
  /**
   * The client's address: the socket's peer, or, when that peer is one of TRUSTED_PROXIES, the
   * address they forwarded in X-Forwarded-For (src/http/client-address.ts), read as the request
   * arrived. Only on routes declared `readsClientAddress` (Route); elsewhere reading it throws.
   */
  readonly remoteAddress: string;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The raw body; empty once released. */
  readonly body: Buffer;
  /**
   * Lets the raw body go once it is parsed: a stream lasts minutes, and the prompt should not
   * stay in memory once more for all of them (bench/RESULTS.md, 2026-11-24).
   */
  releaseBody(): void;
  /** Also sent to the client as `x-request-id`. */
  readonly requestId: string;
  readonly receivedAtMs: number;
}

/** What is known of a request before its body: what a route's authenticator sees. */
export type RequestHead = Omit<HttpRequest, 'body' | 'releaseBody'>;

/**
 * What a handler learned about a request, for its request-log line. Ids, the model name and the
 * client address only: never a key, prompt, completion or body.
 */
export interface RequestAnnotations {
  model?: string;
  /**
   * The client's address, on the requests of the routes that read it (the sign-in, sign-up and
   * e-mail throttles' routes): what they counted the request as from (decisions 449, 471).
   */
  clientAddress?: string;
  orgId?: string;
  productUserId?: string;
  /** The catalogue code of an error answer (src/http/respond.ts sets it). */
  errorCode?: string;
}

export interface HttpResponse {
  /** True once the client went away; after that every write is a no-op. */
  readonly aborted: boolean;
  readonly headersSent: boolean;
  /** Called once if the client goes away before the response ended. */
  onAborted(listener: () => void): void;
  /** Status and headers, sent with the first write or with end. */
  writeHead(status: number, headers?: Readonly<Record<string, string>>): void;
  /**
   * A header sent with whatever status and headers writeHead names (a rate-limited request's
   * headers, on its answer, its stream or its error); ignored once the head is sent.
   */
  header(name: string, value: string): void;
  /** Writes a chunk; false means back off: await drained() before writing more. */
  write(chunk: string | Uint8Array): boolean;
  /** Resolves when the client can take more (or went away). */
  drained(): Promise<void>;
  end(body?: string | Uint8Array): void;
  /** Drops the connection (used when a stream cannot be completed). */
  destroy(): void;
  /** Adds to what the request log says about this request (later values win). */
  annotate(fields: RequestAnnotations): void;
  readonly annotations: Readonly<RequestAnnotations>;
}

/** `caller` is what the route's `authenticate` resolved to (null without one). */
export type Handler = (
  request: HttpRequest,
  response: HttpResponse,
  caller: unknown,
) => Promise<void> | void;

export interface Route {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Exact, or with `{name}` segments that match one path segment each. */
  readonly path: string;
  readonly handler: Handler;
  /**
   * Runs as soon as the headers are read, while the body streams in. A GwError answers at
   * once and the rest of the body is not read; anything else is handed to the handler.
   */
  readonly authenticate?: (request: RequestHead) => Promise<unknown>;
  /**
   * Runs when the adapter refuses a request of this route before its handler for what the
   * request is (its body too large, its framing, a header sent twice, a query parameter; not
   * a refused caller), before the refusal is sent: for what an attempt must do whatever its outcome (spend the OAuth code it
   * presents). `body` is null when it was not read, or not all of it. An error it resolves to
   * is the answer instead.
   */
  readonly onRefused?: (
    request: RequestHead,
    refusal: GwError,
    body: Buffer | null,
  ) => Promise<GwError | undefined>;
  /** How errors raised outside the handler (auth, body limit, …) are dressed on this route. */
  readonly errorFlavor?: ErrorFlavor | ((headers: Readonly<Record<string, string>>) => ErrorFlavor);
  /**
   * A catch-all (`{name*}`) that takes only the paths no other route has, and only its own
   * method: it never makes a path answer 405 (the dashboard's pages share /dashboard/ with
   * its API, where an unknown path must stay a 404 whatever its method).
   */
  readonly fallback?: boolean;
  /**
   * The adapter reads the client address as the request arrives (HttpRequest.remoteAddress);
   * on other routes reading it throws.
   */
  readonly readsClientAddress?: boolean;
}
