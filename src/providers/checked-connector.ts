// Opens vendor connections for undici, handing one over only once it is known to be still
// open. undici writes a request on a new connection as soon as its connect event is read; when
// the event loop is stalled, that can be seconds after the vendor accepted it, and a vendor
// that closes connections idle since their accept (uWS after 10 s, load balancers sooner) has
// closed it by then: the request goes onto a closed socket, the vendor never reads it, and
// the client got a 502 (decision 30X). A connection found closed before any request byte was
// written is dropped and another opened; the request is sent on that one. Nothing is sent
// twice: a request is never written to a connection this check has not passed.
import type { Socket } from 'node:net';
import { buildConnector } from 'undici';

/** Connections opened for one request (the first and the ones that replace a closed one). */
export const MAX_CONNECT_ATTEMPTS = 3;

/** The vendor closed every connection opened for a request before it could be sent. */
export class VendorClosedConnectionsError extends Error {
  override readonly name = 'VendorClosedConnectionsError';
  // Not undici's UND_ERR_SOCKET: undici would keep the request queued and connect again,
  // without end, to a vendor that closes every connection.
  readonly code = 'GW_VENDOR_CLOSED_CONNECTIONS';
}

export function checkedConnector(
  connect: buildConnector.connector = buildConnector({}),
  attempts = MAX_CONNECT_ATTEMPTS,
): buildConnector.connector {
  return (options, callback) => {
    let attempt = 0;
    const open = (): void => {
      attempt += 1;
      const closedBeforeUse = (): void => {
        if (attempt < attempts) return open();
        callback(
          new VendorClosedConnectionsError(
            `the vendor closed ${attempts} new connections before a request was sent`,
          ),
          null,
        );
      };
      connect(options, (error, socket) => {
        // A reset during the connect (a TLS handshake cut by the vendor): nothing was sent.
        if (error) return isReset(error) ? closedBeforeUse() : callback(error, null);
        whenChecked(socket, (closed) => {
          if (!closed) return callback(null, socket);
          socket.destroy();
          closedBeforeUse();
        });
      });
    };
    open();
  };
}

function isReset(error: Error): boolean {
  return (error as { code?: string }).code === 'ECONNRESET';
}

/**
 * Calls `done` once the loop has read what the vendor sent on the new connection so far:
 * `true` when it closed it, reset it or wrote to it before being asked anything. Two turns:
 * the connect event is read in one poll phase and the socket starts reading then, so its end
 * (or reset) is read in the next poll phase, before the second turn's check phase.
 */
function whenChecked(socket: Socket, done: (closed: boolean) => void): void {
  let closed = false;
  const onClosed = (): void => {
    closed = true;
  };
  socket.on('readable', onClosed).on('end', onClosed).on('error', onClosed).on('close', onClosed);
  setImmediate(() =>
    setImmediate(() => {
      socket
        .off('readable', onClosed)
        .off('end', onClosed)
        .off('error', onClosed)
        .off('close', onClosed);
      done(closed || socket.destroyed);
    }),
  );
}
