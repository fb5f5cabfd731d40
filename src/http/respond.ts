// Helpers that write whole responses through the handler interface.
import { errorBody, type ErrorFlavor, type GwError } from '../errors.js';
import { escapeHtml, pageHeaders, renderPage } from './html.js';
import type { HttpResponse } from './types.js';

/**
 * What every answer says beside its content type: `nosniff` keeps a browser from reading it as
 * anything else (a script or a page), whatever text it holds (a field of JSON, a model's words
 * in a stream, a label in /metrics).
 */
export const nosniffHeaders = { 'x-content-type-options': 'nosniff' } as const;
/** Every JSON answer gw writes. */
export const jsonHeaders = { 'content-type': 'application/json', ...nosniffHeaders } as const;
/**
 * What a route declared `answerCarriesSecret` adds to its answers (a raw key, a signing or client
 * secret, a token, a person's profile): no browser or proxy cache may keep them.
 */
export const noStoreHeaders = { 'cache-control': 'no-store' } as const;
/** A JSON answer a route writes itself that no cache may keep (it sets a session cookie). */
export const noStoreJsonHeaders = { ...jsonHeaders, ...noStoreHeaders } as const;
/** RFC 6749 section 5.1: answers of the token endpoint are never cached. */
export const oauthHeaders = {
  'cache-control': 'no-store',
  pragma: 'no-cache',
  ...jsonHeaders,
} as const;

export function sendJson(
  response: HttpResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = jsonHeaders,
  extraHeaders?: Readonly<Record<string, string>>,
): void {
  response.writeHead(status, extraHeaders ? { ...headers, ...extraHeaders } : headers);
  response.end(JSON.stringify(body));
}

/** An error's headers and body as its route's flavor dresses it. */
export function errorResponse(
  error: GwError,
  flavor: ErrorFlavor = 'default',
): { headers: Record<string, string>; body: string } {
  if (flavor === 'html') {
    return { headers: { ...pageHeaders(), ...error.headers }, body: errorPage(error) };
  }
  const base = flavor === 'oauth' ? oauthHeaders : jsonHeaders;
  return { headers: { ...base, ...error.headers }, body: errorBody(error, flavor) };
}

export function sendError(
  response: HttpResponse,
  error: GwError,
  flavor: ErrorFlavor = 'default',
  extraHeaders?: Readonly<Record<string, string>>,
): void {
  const { headers, body } = errorResponse(error, flavor);
  response.annotate({ errorCode: error.code });
  response.writeHead(error.status, extraHeaders ? { ...headers, ...extraHeaders } : headers);
  response.end(body);
}

/** The page a browser shows for an error: what went wrong, and its code. */
function errorPage(error: GwError): string {
  return renderPage(
    'Something went wrong',
    `<h1>This request cannot continue</h1>
<p>${escapeHtml(error.message)}</p>
<p class="muted">Error code <code>${escapeHtml(error.code)}</code>. You can close this page and go back to the application.</p>`,
  );
}
