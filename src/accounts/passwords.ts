// Password hashing with scrypt (node:crypto, no native addon): a random salt per password,
// parameters stored with the hash so they can be raised later, constant-time comparison.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, passwordCharacters } from './password-rule.js';

const KEY_LENGTH = 32;
/** N = 2^15, r = 8, p = 1: ~50 ms and 32 MiB per hash, OWASP's scrypt floor. */
export const PASSWORD_SCRYPT_N_DEFAULT = 2 ** 15;
/** The cost new hashes are made at (PASSWORD_SCRYPT_N); a stored hash is checked at its own. */
let parameters = { N: PASSWORD_SCRYPT_N_DEFAULT, r: 8, p: 1 };
/** scrypt's memory is 128·N·r bytes: room for the largest N the configuration accepts. */
const MAX_MEMORY = 128 * 2 * 2 ** 16 * 8;

/**
 * Sets the cost of the hashes made from now on, once at start-up from the configuration
 * (decision 573). Hashes made before keep theirs: each is checked at the cost stored with it.
 */
export function usePasswordScryptN(N: number): void {
  parameters = { ...parameters, N };
}

export { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './password-rule.js';
/** The most UTF-16 units a password of PASSWORD_MAX_LENGTH characters can take (a body's bound). */
export const PASSWORD_MAX_UTF16_UNITS = PASSWORD_MAX_LENGTH * 2;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFKC'),
      salt,
      KEY_LENGTH,
      { ...options, maxmem: MAX_MEMORY },
      (error, key) => (error ? reject(error) : resolve(key)),
    );
  });
}

/** `scrypt$N$r$p$<salt b64>$<hash b64>` */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const { N, r, p } = parameters;
  const key = await derive(password, salt, parameters);
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await derive(password, Buffer.from(salt, 'base64'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash of a random password: checked when the e-mail is unknown, so timing tells nothing. */
let decoyHash: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoyHash ??= hashPassword(randomBytes(24).toString('base64'));
  return decoyHash;
}

/**
 * What a password over the length rule is told, by the rule itself and by a request body's
 * bound on UTF-16 units alike (the body's bound is the rule's, in the units a string has).
 */
export const PASSWORD_TOO_LONG = `must be at most ${PASSWORD_MAX_LENGTH} characters`;

/** Why a new password (in the field `field`) is refused, or null when it is acceptable. */
export function passwordProblem(password: string, field = 'password'): string | null {
  const characters = passwordCharacters(password);
  if (characters < PASSWORD_MIN_LENGTH)
    return `${field}: must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (characters > PASSWORD_MAX_LENGTH) return `${field}: ${PASSWORD_TOO_LONG}`;
  return null;
}
