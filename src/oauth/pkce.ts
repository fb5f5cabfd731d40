// PKCE (RFC 7636), S256 only: the client sends SHA-256(code_verifier), base64url without
// padding, with the authorization request, and the verifier itself at the token exchange.
import { createHash, timingSafeEqual } from 'node:crypto';

/** base64url of 32 bytes, no padding: exactly 43 characters. */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** RFC 7636 section 4.1: 43–128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export const PKCE_METHOD = 'S256';

export function challengeProblem(
  challenge: string | undefined,
  method: string | undefined,
): string | undefined {
  if (challenge === undefined || challenge === '')
    return 'code_challenge is required (PKCE with S256)';
  if (method !== PKCE_METHOD) {
    return method === undefined || method === ''
      ? 'code_challenge_method is required and must be S256'
      : 'code_challenge_method must be S256 (plain is not supported)';
  }
  if (!CHALLENGE.test(challenge))
    return 'code_challenge must be the base64url SHA-256 of the verifier (43 characters)';
  return undefined;
}

export function verifierProblem(verifier: string | undefined): string | undefined {
  if (verifier === undefined || verifier === '') return 'code_verifier is required (PKCE)';
  if (!VERIFIER.test(verifier))
    return 'code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~';
  return undefined;
}

/** The S256 challenge of a verifier. */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

export function verifierMatches(verifier: string, challenge: string): boolean {
  const computed = Buffer.from(s256(verifier));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}
