// HTTP/1.1 over a bare node:net socket, so the fuzz suite can send what no HTTP client would:
// duplicate or conflicting framing headers, raw bytes in headers and targets, truncated
// bodies, pipelined requests, and clients that vanish mid-request or mid-stream.
import { connect } from 'node:net';

/** A header value as text (sent as UTF-8) or as raw bytes. */
export type HeaderValue = string | Buffer;

export interface RawRequest {
  readonly method: string;
  /** The request target exactly as sent (path and query, already encoded). */
  readonly target: string | Buffer;
  /** Sent in order; a name may repeat. */
  readonly headers: ReadonlyArray<readonly [string, HeaderValue]>;
  readonly body?: Buffer;
  /** Adds `content-length: <body length>` unless the headers set framing themselves. */
  readonly autoContentLength?: boolean;
}

/** How the client behaves after writing. */
export type ClientBehaviour =
  | { readonly kind: 'wait' }
  /** Writes only the first `bytes` of the request, then half-closes its side or drops it. */
  | { readonly kind: 'truncate'; readonly bytes: number; readonly then: 'half-close' | 'drop' }
  /** Writes everything, then drops the connection after `afterMs` (before any answer). */
  | { readonly kind: 'vanish'; readonly afterMs: number }
  /** Drops the connection as soon as the first body bytes of the answer arrive. */
  | { readonly kind: 'abort-mid-answer' };

export type Outcome =
  | {
      readonly kind: 'answered';
      readonly status: number;
      readonly body: string;
      /** The gateway's `x-request-id`, which names the request's usage record. */
      readonly requestId: string | undefined;
    }
  /** The server closed the connection without a complete status line. */
  | { readonly kind: 'closed' }
  /** The client left on purpose before a full answer (`status` if the head arrived). */
  | { readonly kind: 'client-left'; readonly status?: number }
  | { readonly kind: 'timeout' };

export interface Exchange {
  /** One per answer read (pipelined requests may get several). */
  readonly outcomes: Outcome[];
  readonly durationMs: number;
}

export function encodeRequest(request: RawRequest): Buffer {
  const parts: Buffer[] = [
    Buffer.from(`${request.method} `, 'latin1'),
    typeof request.target === 'string' ? Buffer.from(request.target, 'utf8') : request.target,
    Buffer.from(' HTTP/1.1\r\n', 'latin1'),
  ];
  const names = new Set(request.headers.map(([name]) => name.toLowerCase()));
  const headers = [...request.headers];
  if (!names.has('host')) headers.unshift(['host', '127.0.0.1']);
  if (
    (request.autoContentLength ?? true) &&
    !names.has('content-length') &&
    !names.has('transfer-encoding') &&
    request.body !== undefined
  ) {
    headers.push(['content-length', String(request.body.length)]);
  }
  for (const [name, value] of headers) {
    parts.push(Buffer.from(`${name}: `, 'latin1'));
    parts.push(typeof value === 'string' ? Buffer.from(value, 'utf8') : value);
    parts.push(Buffer.from('\r\n', 'latin1'));
  }
  parts.push(Buffer.from('\r\n', 'latin1'));
  if (request.body) parts.push(request.body);
  return Buffer.concat(parts);
}

interface ParsedAnswer {
  readonly status: number;
  readonly head: string;
  /** Bytes consumed from the buffer, or undefined while the body is incomplete. */
  readonly consumed: number | undefined;
  readonly bodyStart: number;
  readonly sawBody: boolean;
}

/** Parses one answer at the start of `buffer` (1xx heads are skipped), if its head arrived. */
function parseAnswer(buffer: Buffer, headRequest: boolean): ParsedAnswer | undefined {
  let offset = 0;
  for (;;) {
    const headEnd = buffer.indexOf('\r\n\r\n', offset);
    if (headEnd < 0) return undefined;
    const head = buffer.subarray(offset, headEnd).toString('latin1');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? NaN);
    const bodyStart = headEnd + 4;
    if (status >= 100 && status < 200) {
      offset = bodyStart;
      continue;
    }
    const lengthMatch = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
    const sawBody = buffer.length > bodyStart;
    if (headRequest || status === 204 || status === 304)
      return { status, head, consumed: bodyStart, bodyStart, sawBody };
    if (lengthMatch) {
      const end = bodyStart + Number(lengthMatch[1]);
      return { status, head, consumed: buffer.length >= end ? end : undefined, bodyStart, sawBody };
    }
    if (chunked) {
      const end = buffer.indexOf('\r\n0\r\n\r\n', bodyStart - 2);
      return { status, head, consumed: end >= 0 ? end + 7 : undefined, bodyStart, sawBody };
    }
    // Delimited by close.
    return { status, head, consumed: undefined, bodyStart, sawBody };
  }
}

function decodeChunked(body: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = parseInt(body.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Sends `payload` on a new connection and reads up to `answers` answers. */
export function exchange(
  port: number,
  payload: Buffer,
  options: {
    readonly behaviour?: ClientBehaviour;
    readonly answers?: number;
    readonly headRequest?: boolean;
    readonly timeoutMs: number;
  },
): Promise<Exchange> {
  const behaviour = options.behaviour ?? { kind: 'wait' };
  const wanted = options.answers ?? 1;
  const startedAt = Date.now();
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const outcomes: Outcome[] = [];
    let buffer = Buffer.alloc(0);
    let done = false;
    const finish = (last?: Outcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (last) outcomes.push(last);
      socket.destroy();
      resolve({ outcomes, durationMs: Date.now() - startedAt });
    };
    const timer = setTimeout(() => finish({ kind: 'timeout' }), options.timeoutMs);
    const readAnswers = (closed: boolean): void => {
      for (;;) {
        const answer = parseAnswer(buffer, options.headRequest ?? false);
        if (!answer) {
          if (closed) finish(outcomes.length === 0 ? { kind: 'closed' } : undefined);
          return;
        }
        if (behaviour.kind === 'abort-mid-answer' && answer.sawBody) {
          finish({ kind: 'client-left', status: answer.status });
          return;
        }
        const end = answer.consumed ?? (closed ? buffer.length : undefined);
        if (end === undefined) return;
        const rawBody = buffer.subarray(answer.bodyStart, end);
        const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(answer.head);
        outcomes.push({
          kind: 'answered',
          status: answer.status,
          body: chunked ? decodeChunked(rawBody) : rawBody.toString('utf8'),
          requestId: /\r\nx-request-id:\s*(\S+)/i.exec(answer.head)?.[1],
        });
        buffer = buffer.subarray(end);
        if (outcomes.length >= wanted || (closed && buffer.length === 0)) {
          finish();
          return;
        }
      }
    };
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      readAnswers(false);
    });
    socket.on('end', () => readAnswers(true));
    socket.on('close', () => readAnswers(true));
    socket.on('error', () => readAnswers(true));
    socket.on('connect', () => {
      if (behaviour.kind === 'truncate' && behaviour.then === 'half-close') {
        socket.end(payload.subarray(0, behaviour.bytes));
      } else if (behaviour.kind === 'truncate') {
        socket.write(payload.subarray(0, behaviour.bytes), () =>
          setTimeout(() => finish({ kind: 'client-left' }), 20),
        );
      } else {
        socket.write(payload);
        if (behaviour.kind === 'vanish') {
          setTimeout(() => finish({ kind: 'client-left' }), behaviour.afterMs);
        }
      }
    });
  });
}
