// What the HTTP parser (uWebSockets.js) hands the gateway for header values that are not
// ASCII: it trims every byte from 0x80 up at a value's ends, as it trims spaces (a signed
// `< 33` comparison), and decodes the rest as UTF-8. This is why X-GW-External-User-ID and
// Idempotency-Key must be printable ASCII (decision 278): "josé" arrives as "jos". When this
// test fails, the parser reads such values whole, and that rule can be revisited.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import uWS from 'uWebSockets.js';

let listenSocket: uWS.us_listen_socket | undefined;
let port = 0;

beforeAll(async () => {
  const app = uWS.App();
  app.any('/*', (response, request) => {
    // Read as the gateway reads headers (src/http/server.ts): forEach decodes values as UTF-8,
    // where getHeader would give their bytes as latin-1.
    let value = '';
    request.forEach((name, text) => {
      if (name === 'x-value') value = text;
    });
    response.end(JSON.stringify(value));
  });
  await new Promise<void>((resolve) => {
    app.listen('127.0.0.1', 0, (socket) => {
      listenSocket = socket || undefined;
      port = uWS.us_socket_local_port(socket);
      resolve();
    });
  });
});

afterAll(() => {
  if (listenSocket) uWS.us_listen_socket_close(listenSocket);
});

function headerAsReceived(value: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        Buffer.concat([
          Buffer.from('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Value: '),
          value,
          Buffer.from('\r\nConnection: close\r\n\r\n'),
        ]),
      );
    });
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('utf8')));
    socket.on('error', reject);
    socket.on('close', () => resolve(JSON.parse(received.split('\r\n\r\n')[1]!) as string));
  });
}

describe('header values as uWebSockets.js reads them', () => {
  it('drops non-ASCII bytes at the ends and keeps (UTF-8 decoded) those inside', async () => {
    expect(await headerAsReceived(Buffer.from('josé'))).toBe('jos');
    expect(await headerAsReceived(Buffer.from('Äcollide'))).toBe('collide');
    expect(await headerAsReceived(Buffer.from('用户'))).toBe('');
    expect(await headerAsReceived(Buffer.from('zoë-li'))).toBe('zoë-li');
    expect(await headerAsReceived(Buffer.from('zo\xebli', 'latin1'))).toBe('zo\ufffdli');
  });
});
