// The one rule for which requests are writes. A dashboard write must prove where it comes
// from (an allowed Origin, the session's CSRF token); GET and HEAD change nothing and need
// neither. (HEAD is also answered by the GET route: src/http/server.ts.)

/** A write is any method but GET and HEAD. */
export function isWriteMethod(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD';
}
