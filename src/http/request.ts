// The request object handlers see, over a uWS request. A class, not an object literal with a
// getter: with a getter literal per request, everything the request allocated survived young
// collections until the next full one (measured: bench/RESULTS.md, 2026-11-23; decision 229).
// The likely mechanism: V8 gives each literal with an accessor its own hidden class, in the old
// generation, pointing at that request's getter and its scope. A class getter lives once, on
// the prototype.
import type { HttpResponse as UwsResponse } from 'uWebSockets.js';
import { clientAddress, type TrustedProxies } from './client-address.js';
import type { HttpRequest, HttpResponse } from './types.js';

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
    private readonly trustedProxies: TrustedProxies | undefined,
    /** Its request-log line names the address once a handler read it. */
    private readonly response: Pick<HttpResponse, 'annotate'>,
  ) {}

  releaseBody(): void {
    this.body = NO_BODY;
  }

  /**
   * Read only by the routes that need it (sign-in and sign-up throttles): formatting the
   * address costs ~10 µs, a sizeable part of a proxied request. Behind trusted proxies, the
   * address they forwarded (src/http/client-address.ts). The request-log line names it.
   */
  get remoteAddress(): string {
    if (this.address === undefined) {
      this.address = clientAddress(
        remoteAddressOf(this.native),
        this.headers['x-forwarded-for'],
        this.trustedProxies,
      );
      this.response.annotate({ clientAddress: this.address });
    }
    return this.address;
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
