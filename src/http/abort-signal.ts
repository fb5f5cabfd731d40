// An AbortSignal that aborts when the client goes away: work done for a request (token
// counting, upstream calls) is cancelled with it.
import type { HttpResponse } from './types.js';

export function clientGoneSignal(response: HttpResponse): AbortSignal {
  const controller = new AbortController();
  response.onAborted(() => controller.abort());
  return controller.signal;
}
