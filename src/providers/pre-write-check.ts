// The last look at a vendor socket before undici writes a request to it. undici reads a
// kept-alive socket one loop turn before reusing it, and drops it after 4 s idle (decision
// 251), but both run on the loop: stalled, the socket is reused after 8–12 s idle, and a
// vendor close that arrives during that turn's poll phase is not read until after the write.
// undici publishes `sendHeaders` just before a request's first byte is written: there the
// socket is read once (closedByPeer), and a closed one fails the call with
// UpstreamNotSentError before any byte went out, so the call can be sent again
// (src/inference/failover.ts; decision 312).
import dc from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { closedByPeer } from './checked-connector.js';

/** The request was not written: the vendor had closed the connection undici was about to use. */
export class UpstreamNotSentError extends Error {
  override readonly name = 'UpstreamNotSentError';
  readonly code = 'GW_UPSTREAM_NOT_SENT';
}

/**
 * Whether a call failed with no byte of its request written: the last look found its socket
 * closed, or the vendor closed every new connection opened for it (checkedConnector).
 */
export function isUpstreamNotSent(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'GW_UPSTREAM_NOT_SENT' || code === 'GW_VENDOR_CLOSED_CONNECTIONS';
}

export interface StartingCall {
  /** Gives up on the call before its request is written. */
  notSent(error: UpstreamNotSentError): void;
}

/**
 * The call undici is about to write: set by the call's handler when undici starts it, and read
 * by `sendHeaders`, which undici publishes next in the same synchronous run (one slot, not a
 * map: nothing is kept per request).
 */
let starting: StartingCall | undefined;

export function aboutToWrite(call: StartingCall): void {
  starting = call;
}

let watching = false;

/** Starts the last look (once per process; the vendor clients call it). */
export function watchVendorWrites(): void {
  if (watching) return;
  watching = true;
  dc.subscribe('undici:client:sendHeaders', (message) => {
    const call = starting;
    starting = undefined;
    // Another undici client's request (a webhook delivery): not ours to judge.
    if (!call) return;
    const { socket } = message as { socket: Socket };
    if (closedByPeer(socket)) {
      call.notSent(new UpstreamNotSentError('the vendor closed the connection before the request'));
    }
  });
}
