// Helpers that write whole responses through the handler interface.
import { errorBody, type ErrorFlavor, type GwError } from '../errors.js';
import type { HttpResponse } from './types.js';

const jsonHeaders = { 'content-type': 'application/json' } as const;

export function sendJson(response: HttpResponse, status: number, body: unknown): void {
  response.writeHead(status, jsonHeaders);
  response.end(JSON.stringify(body));
}

export function sendError(
  response: HttpResponse,
  error: GwError,
  flavor: ErrorFlavor = 'default',
): void {
  response.writeHead(error.status, { ...jsonHeaders, ...error.headers });
  response.end(errorBody(error, flavor));
}
