// The mock's uWS I/O: reading a request body, answering JSON, and playing an SSE stream with
// pacing and backpressure. This module and server.ts are the only ones that touch uWS; both
// follow STYLE.md's uWS rules (onAborted first, copy body chunks, cork after awaits).
import type { HttpResponse } from 'uWebSockets.js';
import { mockId } from './output.js';
import type { MockError, MockErrorFault, MockProtocol, StreamEvents } from './types.js';

type HeaderList = readonly (readonly [string, string])[];

const JSON_CONTENT_TYPE = 'application/json';
const SSE_HEADERS: HeaderList = [
  ['content-type', 'text/event-stream; charset=utf-8'],
  ['cache-control', 'no-cache'],
  ['x-accel-buffering', 'no'],
];

export function jsonError(status: string, body: unknown, headers: HeaderList = []): MockError {
  return { status, headers, body: JSON.stringify(body) };
}

/**
 * A vendor's answer to an injected fault: its static one, but a rate limit given a retry-after
 * of its own (the `mock:retry_after` directive) is made for it.
 */
export const faultAnswers =
  (
    answers: Readonly<Record<MockErrorFault, MockError>>,
    rateLimit: (retryAfterSeconds: number) => MockError,
  ): MockProtocol['error'] =>
  (fault, retryAfterSeconds) =>
    fault === 'rate_limit' && retryAfterSeconds !== undefined
      ? rateLimit(retryAfterSeconds)
      : answers[fault];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One request/response pair. Registers onAborted at once; after an abort nothing touches the
 * uWS response again. Every write goes through cork() (harmless when already corked).
 */
export class MockExchange {
  aborted = false;
  private finished = false;
  private drainWaiter: (() => void) | undefined;
  readonly requestId = mockId('req_');

  constructor(
    private readonly res: HttpResponse,
    private readonly requestIdHeader: string,
    private readonly onDone: (exchange: MockExchange) => void,
  ) {
    res.onAborted(() => {
      this.aborted = true;
      this.settle();
    });
  }

  /** True while the response can still be written. */
  get open(): boolean {
    return !this.aborted && !this.finished;
  }

  send(status: string, contentType: string, body: string, headers: HeaderList = []): void {
    if (!this.open) return;
    this.res.cork(() => {
      this.res.writeStatus(status);
      this.res.writeHeader('content-type', contentType);
      this.res.writeHeader(this.requestIdHeader, this.requestId);
      for (const [name, value] of headers) this.res.writeHeader(name, value);
      this.res.end(body);
    });
    this.settle();
  }

  sendJson(body: string): void {
    this.send('200 OK', JSON_CONTENT_TYPE, body);
  }

  sendError(error: MockError): void {
    this.send(error.status, JSON_CONTENT_TYPE, error.body, error.headers);
  }

  /** Drops the connection without (the rest of) a response, as a failing vendor would. */
  close(): void {
    if (!this.open) return;
    this.settle();
    this.res.close();
  }

  /**
   * Plays an SSE answer. tokensPerSecond > 0 paces the output events (one token each);
   * 0 sends everything in one write. `cut` sends about half the events, then drops the
   * connection (no terminal event, no usage); `lastEvent` (the vendor's error event, or a
   * huge one) sends about half the events, then that event, and ends the body normally.
   */
  async stream(
    answer: StreamEvents,
    tokensPerSecond: number,
    fault: { readonly cut: boolean; readonly lastEvent: string | undefined },
  ): Promise<void> {
    const { cut, lastEvent } = fault;
    const events =
      lastEvent === undefined
        ? answer.events
        : [...answer.events.slice(0, Math.max(1, Math.floor(answer.events.length / 2))), lastEvent];
    if (events !== answer.events) answer = { ...answer, events };
    const total = cut ? Math.max(1, Math.floor(events.length / 2)) : events.length;
    if (!this.open) return;
    this.res.cork(() => {
      this.res.writeStatus('200 OK');
      this.res.writeHeader(this.requestIdHeader, this.requestId);
      for (const [name, value] of SSE_HEADERS) this.res.writeHeader(name, value);
    });
    if (tokensPerSecond <= 0) {
      // One write for the whole stream: the fast path benches use.
      await this.write(total === events.length ? events.join('') : events.slice(0, total).join(''));
    } else {
      await this.paced(answer, total, 1000 / tokensPerSecond);
    }
    if (!this.open) return;
    if (cut) {
      // Let the written events leave uWS's buffer first, so the client sees a half stream.
      await sleep(5);
      this.close();
      return;
    }
    this.res.cork(() => this.res.end());
    this.settle();
  }

  /** Writes events[0, total): the output events at their due times, the rest at once. */
  private async paced(answer: StreamEvents, total: number, intervalMs: number): Promise<void> {
    const { events, firstTokenEvent, tokenEventCount } = answer;
    const tokenEnd = Math.min(total, firstTokenEvent + tokenEventCount);
    let next = Math.min(total, firstTokenEvent + 1); // the first token goes with the opening
    await this.write(events.slice(0, next).join(''));
    const startedAt = performance.now();
    while (next < tokenEnd && this.open) {
      const dueAt = startedAt + (next - firstTokenEvent) * intervalMs;
      const waitMs = dueAt - performance.now();
      if (waitMs >= 1) await sleep(waitMs);
      // Timers are coarse: send every token that is due by now in one write.
      const elapsedTokens = Math.floor((performance.now() - startedAt) / intervalMs);
      const until = Math.min(tokenEnd, Math.max(next + 1, firstTokenEvent + elapsedTokens + 1));
      await this.write(events.slice(next, until).join(''));
      next = until;
    }
    if (next < total) await this.write(events.slice(next, total).join(''));
  }

  /** Writes a chunk; when uWS reports backpressure, waits until the socket drains. */
  private async write(chunk: string): Promise<void> {
    if (!this.open || chunk === '') return;
    let accepted = true;
    this.res.cork(() => {
      accepted = this.res.write(chunk);
    });
    if (accepted) return;
    await new Promise<void>((resolve) => {
      this.drainWaiter = resolve;
      this.res.onWritable(() => {
        this.releaseDrainWaiter();
        return true;
      });
    });
  }

  private releaseDrainWaiter(): void {
    const waiter = this.drainWaiter;
    this.drainWaiter = undefined;
    waiter?.();
  }

  private settle(): void {
    if (this.finished) return;
    this.finished = true;
    this.releaseDrainWaiter();
    this.onDone(this);
  }
}

/**
 * Reads the whole body. uWS neuters each chunk once its callback returns, so earlier chunks
 * are copied; the last one is used in place because onBody consumes it synchronously.
 * Bodies over `limitBytes` get `onTooLarge` as soon as the limit is crossed.
 */
export function readBody(
  res: HttpResponse,
  exchange: MockExchange,
  limitBytes: number,
  onBody: (body: Buffer) => void,
  onTooLarge: () => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.onData((chunk, isLast) => {
    if (!exchange.open || size < 0) return;
    size += chunk.byteLength;
    if (size > limitBytes) {
      size = -1;
      onTooLarge();
      return;
    }
    if (!isLast) {
      chunks.push(Buffer.from(chunk.slice(0)));
      return;
    }
    const last = Buffer.from(chunk);
    onBody(chunks.length === 0 ? last : Buffer.concat([...chunks, last]));
  });
}
