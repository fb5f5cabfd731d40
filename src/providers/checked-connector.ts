// Opens vendor connections for undici, handing one over only if the vendor has not closed it.
// undici writes a request on a new connection as soon as its connect event is read; when the
// event loop is stalled, that can be seconds after the vendor accepted it, and a vendor that
// closes connections idle since their accept (uWS after 10 s, load balancers sooner) has
// closed it by then: the request goes onto a closed socket, the vendor never reads it, and the
// client got a 502 (decision 312). A connection found closed before any request byte was
// written is dropped and another opened; the request is sent on that one. Nothing is sent
// twice: a request is never written to a connection this check found closed.
import { readSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
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
        if (!closedByPeer(socket)) return callback(null, socket);
        socket.destroy();
        closedBeforeUse();
      });
    };
    open();
  };
}

function isReset(error: Error): boolean {
  return (error as { code?: string }).code === 'ECONNRESET';
}

const probe = Buffer.alloc(1);

/**
 * Whether the vendor closed (or reset, or wrote to) a connection not used yet, as of now: undici
 * writes the request in the same turn, so this is the state the request meets. The loop has
 * not read the socket yet (its connect event was just read), so the end or reset, if any, is
 * still in the kernel: one read(2) of the descriptor finds it (0 bytes: the end; an error:
 * the reset; EAGAIN: nothing, open). A plain TCP socket only: on TLS the bytes are the TLS
 * layer's (a session ticket may be waiting), and the handshake has just shown the vendor there,
 * in the same turn as the request's write.
 */
export function closedByPeer(socket: Socket): boolean {
  if (socket.destroyed) return true;
  if ((socket as TLSSocket).encrypted) return false;
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return false; // no descriptor to look at (Windows)
  // An open socket answers EAGAIN, which readSync throws: the usual answer, on every request's
  // write. Its error is made without a stack trace (what capturing one cost was most of the
  // check's CPU); the limit is set back before anything else runs.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    readSync(fd, probe, 0, 1, null);
    return true; // the end, or bytes the vendor sent before it was asked anything
  } catch (error) {
    return (error as { code?: string }).code !== 'EAGAIN';
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}
