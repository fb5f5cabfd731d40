// The vendor connector against a real front on its own thread that closes new connections:
// a connection handed over late (its connect event read after the vendor closed it, as under
// a stalled loop) is replaced, never handed to undici; a vendor that closes every one is
// given up on after MAX_CONNECT_ATTEMPTS, with nothing sent.
import type { Socket } from 'node:net';
import { buildConnector } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startClosingFront, type ClosingFront } from '../../test/support/closing-vendor.js';
import { eventually } from '../../test/support/services.js';
import { checkedConnector, MAX_CONNECT_ATTEMPTS } from './checked-connector.js';

const fronts: ClosingFront[] = [];
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const front of fronts.splice(0)) await front.stop();
});

async function front(closeFirst: number): Promise<ClosingFront> {
  const started = await startClosingFront({ mode: 'close_new', closeFirst });
  fronts.push(started);
  return started;
}

/** undici's connector, answering only once the front has closed the connection (if it does). */
function lateConnector(closing: ClosingFront, closeFirst: number): buildConnector.connector {
  const connect = buildConnector({});
  let opened = 0;
  return (options, callback) => {
    opened += 1;
    const closes = opened <= closeFirst;
    connect(options, (error, socket) => {
      const handOver = (): void => (error ? callback(error, null) : callback(null, socket!));
      if (!closes) return handOver();
      const waitForClose = (): void => {
        if (Atomics.load(closing.closed, 0) >= opened) handOver();
        else setTimeout(waitForClose, 5);
      };
      waitForClose();
    });
  };
}

function connectVia(
  connector: buildConnector.connector,
  port: number,
): Promise<{ error: Error | null; socket: Socket | null }> {
  return new Promise((resolve) => {
    connector(
      { hostname: '127.0.0.1', host: '127.0.0.1', protocol: 'http:', port: String(port) },
      (error, socket) => {
        if (socket) sockets.push(socket);
        resolve({ error, socket });
      },
    );
  });
}

describe('checkedConnector', () => {
  it('replaces a new connection the vendor closed before it was used', async () => {
    const closing = await front(1);
    const { error, socket } = await connectVia(
      checkedConnector(lateConnector(closing, 1)),
      closing.port,
    );
    expect(error).toBeNull();
    expect(socket!.destroyed).toBe(false);
    await eventually(async () => ((await closing.stats()).accepted === 2 ? true : undefined));
    expect(await closing.stats()).toEqual({ accepted: 2, closedUnread: 1, requests: 0 });
  });

  it('hands over an open connection as it is', async () => {
    const closing = await front(0);
    const { error, socket } = await connectVia(
      checkedConnector(lateConnector(closing, 0)),
      closing.port,
    );
    expect(error).toBeNull();
    expect(socket!.destroyed).toBe(false);
    // The kernel completes a connect before the front's thread has accepted it.
    await eventually(async () => ((await closing.stats()).accepted === 1 ? true : undefined));
    expect(await closing.stats()).toEqual({ accepted: 1, closedUnread: 0, requests: 0 });
  });

  it('gives up on a vendor that closes every new connection, having sent nothing', async () => {
    const closing = await front(Number.MAX_SAFE_INTEGER);
    const { error, socket } = await connectVia(
      checkedConnector(lateConnector(closing, Number.MAX_SAFE_INTEGER)),
      closing.port,
    );
    expect(socket).toBeNull();
    expect(error).toMatchObject({
      code: 'GW_VENDOR_CLOSED_CONNECTIONS',
      message: `the vendor closed ${MAX_CONNECT_ATTEMPTS} new connections before a request was sent`,
    });
    expect(await closing.stats()).toEqual({
      accepted: MAX_CONNECT_ATTEMPTS,
      closedUnread: MAX_CONNECT_ATTEMPTS,
      requests: 0,
    });
  });
});
