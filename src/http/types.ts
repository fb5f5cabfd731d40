// The small request/response interface route handlers see. Only src/http/ knows uWS.
import type { ErrorFlavor } from '../errors.js';

export interface HttpRequest {
  /** Upper-case method. */
  readonly method: string;
  readonly path: string;
  /** Raw query string without the '?'. */
  readonly query: string;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** Also sent to the client as `x-request-id`. */
  readonly requestId: string;
  readonly receivedAtMs: number;
}

export interface HttpResponse {
  /** True once the client went away; after that every write is a no-op. */
  readonly aborted: boolean;
  readonly headersSent: boolean;
  /** Called once if the client goes away before the response ended. */
  onAborted(listener: () => void): void;
  /** Status and headers, sent with the first write or with end. */
  writeHead(status: number, headers?: Readonly<Record<string, string>>): void;
  /** Writes a chunk; false means back off: await drained() before writing more. */
  write(chunk: string | Uint8Array): boolean;
  /** Resolves when the client can take more (or went away). */
  drained(): Promise<void>;
  end(body?: string | Uint8Array): void;
  /** Drops the connection (used when a stream cannot be completed). */
  destroy(): void;
}

export type Handler = (request: HttpRequest, response: HttpResponse) => Promise<void> | void;

export interface Route {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  readonly path: string;
  readonly handler: Handler;
  /** How errors raised before the handler (body limit, …) are dressed on this route. */
  readonly errorFlavor?: ErrorFlavor;
}
