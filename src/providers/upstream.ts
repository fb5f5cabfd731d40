// Keep-alive connection pools to the vendors, one per origin, called through undici's
// dispatch API: the answer's body arrives as an UpstreamBody (see there for why). Calls
// beyond a pool's connections wait in the origin's line, not in undici (OriginLine).
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { errors, Pool, type Dispatcher } from 'undici';
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
  private readonly lines = new Map<string, OriginLine>();
  /** Set by close(): later calls are refused, as undici refuses them on a closed pool. */
  private closed = false;
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
    if (this.closed) {
      handler.refuse(new errors.ClientClosedError());
      return handler;
    }
    const refused = refusedHeader(request.headers);
    if (refused !== undefined) {
      handler.refuse(new errors.InvalidArgumentError(`invalid ${refused} header`));
      return handler;
    }
    const { body } = request;
    const large = body.length > RELEASED_BODY_BYTES;
    if (large) handler.unsentBody = new OneChunkBody(body);
    this.line(origin).send(handler, {
      method: 'POST',
      path: pathPrefix + request.path,
      headers: large
        ? Object.assign({}, request.headers, { 'content-length': String(body.length) })
        : request.headers,
      // undici documents async iterables as bodies (Dispatcher.md); its types omit them.
      body: large ? (handler.unsentBody as unknown as Readable) : body,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
    return handler;
  }

  /** Calls waiting for a vendor connection, over every origin (a gauge: a full pool). */
  waiting(): number {
    let count = 0;
    for (const line of this.lines.values()) count += line.waitingCount;
    return count;
  }

  /** Refuses new calls, waits for the calls in line to be sent, then closes every connection. */
  async close(): Promise<void> {
    this.closed = true;
    const lines = [...this.lines.values()];
    this.lines.clear();
    await Promise.all(lines.map((line) => line.close()));
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

  private line(origin: string): OriginLine {
    let line = this.lines.get(origin);
    if (!line) {
      const pool = new Pool(origin, {
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
      line = new OriginLine(pool, this.connectionsPerOrigin);
      this.lines.set(origin, line);
    }
    return line;
  }
}

/**
 * A header value undici would refuse (a control character, or a character above U+00FF: its
 * own test), or undefined. undici refuses such a request as it is handed to one of the pool's
 * connections, and its Pool then marks that connection busy until it drains, which it never
 * does: it has nothing to do. As many refusals as connections, and every later call to the
 * origin waited in the Pool's queue for good, and the Pool never closed. A client's
 * `vendor-version` travels upstream as it came, so any client could do that to a vendor for
 * every organization (decision 320). Header names are the gateway's own.
 */
function refusedHeader(headers: Record<string, string>): string | undefined {
  for (const name in headers) {
    if (REFUSED_HEADER_VALUE.test(headers[name]!)) return name;
  }
  return undefined;
}

/** undici's own test of a header value (lib/core/util.js, isValidHeaderValue). */
const REFUSED_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * One vendor origin: its keep-alive pool, and the calls waiting for one of its connections.
 * undici is given at most as many calls as the pool has connections; the rest wait here, in
 * order, where an abandoned one is taken out at once (decision 320). undici has no way to take
 * a request off its own queue, so a call abandoned there stayed, with its prompt, until a
 * connection freed up: against a vendor whose connects hang, clients that leave at once (and
 * are charged nothing) could grow that queue without bound.
 */
class OriginLine {
  /** Calls given to undici and not yet ended; at most `connections`. */
  private inPool = 0;
  private first: CallHandler | undefined;
  private last: CallHandler | undefined;
  waitingCount = 0;
  /** Set while the line hands calls to undici: an end reported meanwhile only counts. */
  private pumping = false;
  private emptied: (() => void) | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly connections: number,
  ) {}

  send(call: CallHandler, options: Dispatcher.DispatchOptions): void {
    if (this.inPool < this.connections && !this.first) return this.dispatch(call, options);
    call.waiting = options;
    call.line = this;
    call.previous = this.last;
    if (this.last) this.last.next = call;
    else this.first = call;
    this.last = call;
    this.waitingCount += 1;
  }

  /** A waiting call abandoned: out of the line, with its request. */
  leave(call: CallHandler): void {
    if (call.previous) call.previous.next = call.next;
    else this.first = call.next;
    if (call.next) call.next.previous = call.previous;
    else this.last = call.previous;
    call.previous = call.next = call.waiting = call.line = undefined;
    this.waitingCount -= 1;
    if (!this.first) this.emptied?.();
  }

  /** undici ended a call it was given (answered, failed or refused): the next one goes. */
  ended(): void {
    this.inPool -= 1;
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.inPool < this.connections && this.first) {
        const call = this.first;
        const options = call.waiting!;
        this.leave(call);
        this.dispatch(call, options);
      }
    } finally {
      this.pumping = false;
    }
  }

  async close(): Promise<void> {
    if (this.first) await new Promise<void>((resolve) => (this.emptied = resolve));
    await this.pool.close();
  }

  private dispatch(call: CallHandler, options: Dispatcher.DispatchOptions): void {
    this.inPool += 1;
    call.sentTo = this;
    this.pool.dispatch(options, call);
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
  /** While the call waits in its origin's line: the line, its place there and its request. */
  line: OriginLine | undefined = undefined;
  previous: CallHandler | undefined = undefined;
  next: CallHandler | undefined = undefined;
  waiting: Dispatcher.DispatchOptions | undefined = undefined;
  /** The line whose undici pool has the call, until undici ends it. */
  sentTo: OriginLine | undefined = undefined;

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
    // Still waiting for a connection. In its origin's line (a full pool), it leaves it with its
    // request (decision 320). Given to undici, its connect under way: undici has no way to take
    // a request off its queues, and would start it only once the connect ends (10 s for one
    // that hangs). Either way the call ends here, unwritten; undici drops the request without
    // writing a byte when it gets to it (decision 316), and until then keeps it: its prompt
    // need not stay with it.
    this.line?.leave(this);
    void this.unsentBody?.return();
    this.rejectResponse(reason);
  }

  /** Ends the call before it reaches undici, unwritten. */
  refuse(error: Error): void {
    this.rejectResponse(error);
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
    this.leavePool();
    this.body?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.leavePool();
    if (this.body) this.body.fail(error);
    else this.rejectResponse(error);
  }

  /** undici is done with the call (once): its place in the pool goes to the next one. */
  private leavePool(): void {
    const line = this.sentTo;
    this.sentTo = undefined;
    line?.ended();
  }
}
