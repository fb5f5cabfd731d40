// Identifiers and secrets: CSPRNG only, base62 secrets compared by SHA-256 hash.
import { hash, randomBytes, randomFillSync } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` base62 characters from the CSPRNG (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** 43 base62 characters carry > 256 bits. */
const SECRET_LENGTH = 43;

export const secretPrefixes = {
  apiKey: 'gw_',
  serviceKey: 'gw_svc_',
  oauthToken: 'gw_oauth_',
  oauthClientId: 'gw_client_',
  oauthClientSecret: 'gw_client_secret_',
  invitationToken: 'gw_inv_',
  emailVerificationToken: 'gw_ev_',
  passwordResetToken: 'gw_pwr_',
} as const;

export function newSecret(prefix: string): string {
  return prefix + randomBase62(SECRET_LENGTH);
}

/** An OAuth client's public identifier: `gw_client_` and 24 base62 characters (~143 bits). */
export function newOAuthClientId(): string {
  return secretPrefixes.oauthClientId + randomBase62(24);
}

/** SHA-256 of the text's UTF-8 bytes, in hex (one-shot: no Hash object per call). */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** Readable ids for rows: a short type prefix and 20 base62 characters (~119 bits). */
export function newId(
  prefix:
    | 'org'
    | 'app'
    | 'conn'
    | 'key'
    | 'svc'
    | 'pu'
    | 'cap'
    | 'grant'
    | 'cred'
    | 'usr'
    | 'wh'
    | 'msg'
    | 'inv',
): string {
  return `${prefix}_${randomBase62(20)}`;
}

const uuidBytes = Buffer.alloc(16);
/** CSPRNG bytes fetched in bulk: one fill serves 409 request ids instead of one. */
const randomPool = Buffer.alloc(4096);
let randomPoolOffset = randomPool.length;

/**
 * A UUIDv7 (time-ordered, RFC 9562): request ids sort by time, which keeps the usage ledger's
 * index appends local.
 */
export function newRequestId(): string {
  const now = Date.now();
  if (randomPoolOffset + 10 > randomPool.length) {
    randomFillSync(randomPool);
    randomPoolOffset = 0;
  }
  randomPool.copy(uuidBytes, 6, randomPoolOffset, randomPoolOffset + 10);
  randomPoolOffset += 10;
  uuidBytes.writeUIntBE(now, 0, 6);
  uuidBytes[6] = (uuidBytes[6]! & 0x0f) | 0x70;
  uuidBytes[8] = (uuidBytes[8]! & 0x3f) | 0x80;
  const hex = uuidBytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
