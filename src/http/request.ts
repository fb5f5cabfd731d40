// The request object handlers see, over a uWS request. A class, not an object literal with a
// getter: V8 gives every literal with an accessor its own hidden class, whose descriptors (in
// the old generation) then point at that request's getter and, through its scope, at everything
// the request allocates. Young collections cannot free any of it until the next full one, so a
// getter literal per request tripled the gateway's garbage-collection time (bench/RESULTS.md,
// 2026-11-23). A getter on a class lives once, on the prototype.
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import type { HttpRequest } from './types.js';

const NO_BODY = Buffer.alloc(0);

export class UwsHttpRequest implements HttpRequest {
  /** Set once the body has been read (the authenticator sees the request before it). */
  body: Buffer = NO_BODY;
  private address: string | undefined;

  constructor(
    private readonly native: UwsResponse,
    readonly method: string,
    readonly path: string,
    readonly query: string,
    readonly headers: Readonly<Record<string, string>>,
    readonly params: Readonly<Record<string, string>>,
    readonly requestId: string,
    readonly receivedAtMs: number,
  ) {}

  /**
   * Read only by the routes that need it (sign-in and sign-up throttles): formatting the
   * address costs ~10 µs, a sizeable part of a proxied request.
   */
  get remoteAddress(): string {
    return (this.address ??= remoteAddressOf(this.native));
  }
}

/** The peer's address as text; '' once the response is gone (uWS then refuses the access). */
function remoteAddressOf(native: UwsResponse): string {
  try {
    return Buffer.from(native.getRemoteAddressAsText()).toString('latin1');
  } catch {
    return '';
  }
}
