// The request object handlers see, over a uWS request. A class, not an object literal with a
// getter: with a getter literal per request, everything the request allocated survived young
// collections until the next full one (measured: bench/RESULTS.md, 2026-11-23; decision 229).
// The likely mechanism: V8 gives each literal with an accessor its own hidden class, in the old
// generation, pointing at that request's getter and its scope. A class getter lives once, on
// the prototype.
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import { clientAddress, type TrustedProxies } from './client-address.js';
import type { HttpRequest } from './types.js';

const NO_BODY = Buffer.alloc(0);

export class UwsHttpRequest implements HttpRequest {
  /** Set once the body has been read (the authenticator sees the request before it). */
  body: Buffer = NO_BODY;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly query: string,
    readonly headers: Readonly<Record<string, string>>,
    readonly params: Readonly<Record<string, string>>,
    readonly requestId: string,
    readonly receivedAtMs: number,
    /** The client's address on a route that reads it (readAddress), else undefined. */
    private readonly address: string | undefined,
  ) {}

  releaseBody(): void {
    this.body = NO_BODY;
  }

  get remoteAddress(): string {
    if (this.address === undefined) {
      throw new Error(
        `${this.method} ${this.path} reads the client address: its route must declare readsClientAddress`,
      );
    }
    return this.address;
  }
}

/**
 * The client's address (src/http/client-address.ts), read as the request arrives: uWS refuses
 * the peer's address once the client has gone, so a handler reading it after an await would
 * get nothing (decision 471). Only for the routes that read it (sign-in, sign-up, the e-mail
 * throttles): formatting the address costs microseconds, a sizeable part of a proxied request.
 */
export function readAddress(
  native: UwsResponse,
  headers: Readonly<Record<string, string>>,
  trustedProxies: TrustedProxies | undefined,
): string {
  const peer = Buffer.from(native.getRemoteAddressAsText()).toString('latin1');
  return clientAddress(peer, headers['x-forwarded-for'], trustedProxies);
}
