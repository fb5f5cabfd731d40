// Raw HTTP/1.1 over a socket, for what fetch cannot send: duplicate or conflicting framing
// headers, a body that stops half-way.
import { connect } from 'node:net';

export interface RawAnswer {
  readonly status: number;
  readonly head: string;
  readonly body: string;
  /** True when the gateway closed the connection after answering. */
  readonly closed: boolean;
}

/**
 * Writes `head` (the request line and headers, CRLF-separated, without the blank line) and
 * `body`, then reads one answer. Resolves on close, or `settleMs` after a complete answer.
 */
export function rawRequest(
  port: number,
  /** A Buffer sends bytes no string would (latin-1 or raw UTF-8 header values). */
  head: string | Buffer,
  body: string | Buffer = '',
  settleMs = 300,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let timer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      const [answerHead = '', answerBody = ''] = received.split('\r\n\r\n', 2);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answerHead)?.[1] ?? 0);
      resolve({ status, head: answerHead, body: answerBody, closed });
    };
    socket.on('error', (error) => {
      if (received !== '') finish(true);
      else reject(error);
    });
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      clearTimeout(timer);
      if (received.includes('\r\n\r\n')) timer = setTimeout(() => finish(false), settleMs);
    });
    socket.on('close', () => finish(true));
    socket.write(
      typeof head === 'string' ? `${head}\r\n\r\n` : Buffer.concat([head, Buffer.from('\r\n\r\n')]),
    );
    if (body.length > 0) socket.write(body);
  });
}
