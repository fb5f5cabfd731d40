// HttpResponse over a uWS response: corking, backpressure and abort rules live here only.
import { STATUS_CODES } from 'node:http';
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import type { HttpResponse, RequestAnnotations } from './types.js';

/** The de facto status for a request whose client went away first (nginx's 499). */
const CLIENT_CLOSED_REQUEST = 499;
const statusLines = new Map<number, string>();
function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
    statusLines.set(status, line);
  }
  return line;
}

export class UwsHttpResponse implements HttpResponse {
  aborted = false;
  headersSent = false;
  private ended = false;
  /** endAndClose was called and its answer waits for the next turn (see there). */
  private closePending = false;
  /** HEAD only: the GET wrote its body in chunks, so its length is not known. */
  private bodyStreamed = false;
  private status = 200;
  private headers: Readonly<Record<string, string>> = {};
  /** Headers added by header(), sent after writeHead's (none on nearly every answer). */
  private addedHeaders: Array<readonly [string, string]> | undefined = undefined;
  private abortListeners: Array<() => void> = [];
  private drainWaiters: Array<() => void> = [];
  annotations: RequestAnnotations = {};

  constructor(
    private readonly native: UwsResponse,
    private readonly requestId: string,
    /** Called once when the response ends or the client goes away (status 499 then). */
    private readonly onFinished: (status: number) => void,
    /** A HEAD request: the GET's status and headers, its body's length, no body. */
    private readonly headOnly = false,
  ) {}

  /** Called by the adapter from the native onAborted callback. */
  markAborted(): void {
    if (this.aborted || (this.ended && !this.closePending)) return;
    this.aborted = true;
    this.closePending = false;
    this.settleDrainWaiters();
    for (const listener of this.abortListeners) listener();
    this.abortListeners = [];
    this.onFinished(CLIENT_CLOSED_REQUEST);
  }

  annotate(fields: RequestAnnotations): void {
    this.annotations = { ...this.annotations, ...fields };
  }

  onAborted(listener: () => void): void {
    if (this.aborted) listener();
    else if (!this.ended) this.abortListeners.push(listener); // an ended response never aborts
  }

  writeHead(status: number, headers: Readonly<Record<string, string>> = {}): void {
    if (this.headersSent) return;
    this.status = status;
    this.headers = headers;
  }

  header(name: string, value: string): void {
    if (this.headersSent) return;
    (this.addedHeaders ??= []).push([name, value]);
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.aborted || this.ended) return true;
    let writable = true;
    this.native.cork(() => {
      this.flushHead();
      if (this.headOnly) this.bodyStreamed = true;
      else writable = this.native.write(chunk);
    });
    if (!writable) {
      this.native.onWritable(() => {
        this.settleDrainWaiters();
        return true;
      });
    }
    return writable;
  }

  drained(): Promise<void> {
    if (this.aborted || this.ended) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  end(body?: string | Uint8Array): void {
    if (this.aborted || this.ended) return;
    this.ended = true;
    this.native.cork(() => {
      this.flushHead();
      this.endBody(body, false);
    });
    this.finished();
  }

  destroy(): void {
    if (this.aborted || this.ended) return;
    this.ended = true;
    this.native.close();
    this.finished();
  }

  /**
   * Ends with a body and `Connection: close`, and closes the connection once it is sent: after
   * it, nothing more on the connection is served. Written on the loop's next turn, when uWS
   * has parsed everything that arrived with the request: uWS dispatches a request pipelined
   * behind an answer that closes, and the next request's start clears the close (its
   * connection stays open), whereas a request pipelined behind one not answered yet makes uWS
   * drop the connection unanswered, as it does behind any request whose answer is awaited.
   * The client then retries both (RFC 9112 section 9.3.2), and neither was processed.
   */
  endAndClose(status: number, headers: Readonly<Record<string, string>>, body: string): void {
    if (this.aborted || this.ended) return;
    this.ended = true;
    this.closePending = true;
    this.status = status;
    this.headers = headers;
    setImmediate(() => {
      if (this.aborted) return; // the connection went first (markAborted finished it)
      this.closePending = false;
      this.native.cork(() => {
        this.flushHead();
        this.endBody(body, true);
      });
      this.finished();
    });
  }

  private endBody(body: string | Uint8Array | undefined, close: boolean): void {
    if (!this.headOnly) {
      this.native.end(body, close);
      return;
    }
    if (close) {
      // uWS closes a connection only after an answer whose Content-Length it wrote, and one
      // naming a length it does not send never ends (the connection would hang): a HEAD
      // answered this way says 0 (decision 355).
      this.native.endWithoutBody(0, true);
      return;
    }
    // HEAD: the length the GET's body would have had (unknown once it was streamed). Written
    // as a header: uWS's endWithoutBody(length) leaves the head unterminated (uWS.js #739).
    if (!this.bodyStreamed) {
      const length = typeof body === 'string' ? Buffer.byteLength(body) : (body?.byteLength ?? 0);
      this.native.writeHeader('content-length', String(length));
    }
    // Without arguments: with any, uWS 20 writes a Content-Length of its own (bogus, or one
    // that leaves the answer unfinished: the connection would hang).
    this.native.endWithoutBody();
  }

  /** After any of the three ways to end: nothing waits on the response or listens to it. */
  private finished(): void {
    this.settleDrainWaiters();
    this.abortListeners = [];
    this.onFinished(this.status);
  }

  private flushHead(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.native.writeStatus(statusLine(this.status));
    this.native.writeHeader('x-request-id', this.requestId);
    for (const name in this.headers) this.native.writeHeader(name, this.headers[name]!);
    if (this.addedHeaders) {
      for (const [name, value] of this.addedHeaders) this.native.writeHeader(name, value);
    }
  }

  private settleDrainWaiters(): void {
    const waiters = this.drainWaiters;
    if (waiters.length === 0) return;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
