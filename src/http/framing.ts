// Request framing: a body's length must be stated one way only. A request whose framing
// headers disagree (two different Content-Length values, Content-Length together with
// Transfer-Encoding, a Transfer-Encoding other than chunked, a length that is not a number)
// is refused, so no proxy in front of the gateway and the gateway itself can ever read two
// different bodies out of one byte stream. uWebSockets.js itself drops two of these before
// any handler runs — Content-Length with Transfer-Encoding, and a Content-Length that is not
// digits (`abc`, `-1`, `+5`) — by closing the connection with no answer (docs/limits.md);
// the rest (two different lengths, a Transfer-Encoding other than one `chunked`) reach this
// check and are answered 400 with the connection closed.

/** Why the framing headers are ambiguous, or undefined when they are sound. */
export function framingProblem(
  contentLengths: readonly string[],
  transferEncodings: readonly string[],
): string | undefined {
  if (contentLengths.length > 0 && transferEncodings.length > 0) {
    return 'a request may not carry both Content-Length and Transfer-Encoding';
  }
  if (contentLengths.some((value) => !/^\d{1,15}$/.test(value))) {
    return 'Content-Length must be a decimal number';
  }
  if (new Set(contentLengths.map(Number)).size > 1) {
    return 'the request carries conflicting Content-Length headers';
  }
  if (
    transferEncodings.length > 1 ||
    transferEncodings.some((value) => value.trim().toLowerCase() !== 'chunked')
  ) {
    return 'Transfer-Encoding must be exactly one "chunked"';
  }
  return undefined;
}
