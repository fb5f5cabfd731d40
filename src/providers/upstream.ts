// Keep-alive connection pools to the vendors, one per origin, called through undici's
// dispatch API: the answer's body arrives as an UpstreamBody (see there for why).
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { checkedConnector } from './checked-connector.js';
import {
  aboutToWrite,
  watchVendorWrites,
  type StartingCall,
  type UpstreamNotSentError,
} from './pre-write-check.js';
import { UpstreamBody } from './upstream-body.js';

export interface UpstreamRequest {
  /** Origin plus optional path prefix, without the vendor's /v1 (e.g. http://127.0.0.1:9000). */
  readonly baseUrl: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

export interface UpstreamResponse {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: UpstreamBody;
}

/** One call to a vendor: its answer (once the headers are in), and a way to give up on it. */
export interface UpstreamCall {
  /** Rejects when no answer came (connection refused, headers time-out, aborted). */
  readonly response: Promise<UpstreamResponse>;
  /** Closes the call: before the answer, it rejects; during the body, the body fails. */
  abort(): void;
  /**
   * Whether any byte of the request may have been written: false while it waits for a
   * connection, and for good if it ended there (abandoned, the connection failed) or the last
   * look found its socket closed. The vendor saw nothing of a call that ends unwritten.
   */
  readonly written: boolean;
}

/** The reason a call was aborted (undici reports it back as the failure). */
export class UpstreamAbortedError extends Error {
  override readonly name = 'UpstreamAbortedError';
  readonly code = 'GW_UPSTREAM_ABORTED';
}

export class UpstreamClient {
  private readonly pools = new Map<string, Pool>();
  private readonly prefixes = new Map<string, { origin: string; pathPrefix: string }>();

  constructor(
    private readonly timeoutMs: number,
    /** Connections per vendor origin: each stream in flight holds one (HTTP/1.1). */
    private readonly connectionsPerOrigin = 8192,
  ) {
    watchVendorWrites();
  }

  request(request: UpstreamRequest): UpstreamCall {
    const { origin, pathPrefix } = this.split(request.baseUrl);
    const handler = new CallHandler();
    const { body } = request;
    const large = body.length > RELEASED_BODY_BYTES;
    if (large) handler.unsentBody = new OneChunkBody(body);
    this.pool(origin).dispatch(
      {
        method: 'POST',
        path: pathPrefix + request.path,
        headers: large
          ? Object.assign({}, request.headers, { 'content-length': String(body.length) })
          : request.headers,
        // undici documents async iterables as bodies (Dispatcher.md); its types omit them.
        body: large ? (handler.unsentBody as unknown as Readable) : body,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      },
      handler,
    );
    return handler;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close()));
    this.pools.clear();
  }

  /** A base URL may carry a path prefix (a proxy's); the vendor path goes after it. */
  private split(baseUrl: string): { origin: string; pathPrefix: string } {
    let parts = this.prefixes.get(baseUrl);
    if (!parts) {
      const url = new URL(baseUrl);
      parts = { origin: url.origin, pathPrefix: url.pathname.replace(/\/+$/, '') };
      this.prefixes.set(baseUrl, parts);
    }
    return parts;
  }

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.connectionsPerOrigin,
        pipelining: 1,
        // Below the idle time-outs servers commonly close kept-alive sockets at (Node's 5 s,
        // uWS's 10 s): a socket the vendor closes just as a request is written to it fails
        // that request (a POST is never retried), a 502 to the client (decision 251).
        keepAliveTimeout: 4_000,
        // A new connection the vendor closed before the request went out is replaced, not
        // written to (decision 312).
        connect: checkedConnector(),
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }
}

/**
 * Bodies above this size go to undici as a OneChunkBody, which it lets go of once written;
 * smaller ones as the Buffer, which undici writes with its head in one writev but keeps until
 * the call ends. Measured (bench/RESULTS.md, 2026-11-24, session 10): the iterable costs a
 * few µs of CPU and a second socket write per call; a 20 KB prompt kept for a stream's
 * minutes costs 20 KB per live stream.
 */
export const RELEASED_BODY_BYTES = 4096;

/**
 * A request body undici holds only until it is on the socket. undici keeps a Buffer body on
 * its request for the whole call, a stream's minutes; an async iterable it reads once, and
 * this one gives its chunk up as it hands it over. Sent with its content-length, so the wire
 * is the same as for the Buffer.
 */
export class OneChunkBody implements AsyncIterableIterator<Buffer> {
  constructor(private chunk: Buffer | undefined) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Buffer, undefined>> {
    const chunk = this.chunk;
    this.chunk = undefined;
    return Promise.resolve(
      chunk ? { value: chunk, done: false } : { value: undefined, done: true },
    );
  }

  return(): Promise<IteratorResult<Buffer, undefined>> {
    this.chunk = undefined;
    return Promise.resolve({ value: undefined, done: true });
  }
}

/** undici's handler for one call, and the call's face to the proxy. */
class CallHandler implements Dispatcher.DispatchHandler, UpstreamCall, StartingCall {
  readonly response: Promise<UpstreamResponse>;
  private resolveResponse!: (response: UpstreamResponse) => void;
  private rejectResponse!: (error: unknown) => void;
  private controller: Dispatcher.DispatchController | undefined;
  private body: UpstreamBody | undefined;
  private abortRequested = false;
  written = false;
  /** A large body, for an abandoned call to let go of while undici still queues it. */
  unsentBody: OneChunkBody | undefined = undefined;

  constructor() {
    this.response = new Promise((resolve, reject) => {
      this.resolveResponse = resolve;
      this.rejectResponse = reject;
    });
  }

  abort(): void {
    if (this.abortRequested) return;
    this.abortRequested = true;
    const reason = new UpstreamAbortedError('the call to the vendor was abandoned');
    if (this.controller) return this.controller.abort(reason);
    // Still waiting for a connection (behind a full pool, or its connect under way): undici
    // has no way to take a request off its queues, and would start it only once a connection
    // is free or the connect ends (10 s for one that hangs). The call ends here, unwritten;
    // undici drops the request without writing a byte when it gets to it (decision 316), and
    // until then keeps it queued: its prompt need not stay with it.
    void this.unsentBody?.return();
    this.rejectResponse(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Abandoned while it waited (its caller has moved on): dropped before any byte is written.
    // Thrown, not `controller.abort()`: undici's abort also destroys the socket it was about
    // to use, a kept-alive or just-opened connection with nothing on it, so every abandoned
    // request would cost the next one a new connect (and a hostile client, charged nothing for
    // them, could queue any number). A throw here fails the request alone (writeH1 catches it,
    // the request is marked aborted and taken off the queue) and the connection serves the
    // next request (decision 316).
    if (this.abortRequested) throw new UpstreamAbortedError('abandoned before start');
    else {
      // undici writes the request next, in this same run: the socket gets a last look first.
      this.written = true;
      aboutToWrite(this);
    }
  }

  notSent(error: UpstreamNotSentError): void {
    this.written = false;
    this.controller?.abort(error);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    // undici keeps the raw header Buffers on the controller for the whole call (a stream's
    // minutes); `headers` is their parsed copy.
    controller.rawHeaders = null;
    if (statusCode < 200) return; // 1xx: the real answer follows
    this.body = new UpstreamBody({
      pause: () => controller.pause(),
      resume: () => controller.resume(),
      abort: () => this.abort(),
    });
    this.resolveResponse({ statusCode, headers, body: this.body });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.body?.push(chunk);
  }

  onResponseEnd(): void {
    this.body?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.body) this.body.fail(error);
    else this.rejectResponse(error);
  }
}
