// Encryption of provider secrets at rest: AES-256-GCM under a master key from the
// environment. Each ciphertext records the id of the key that sealed it, so master keys can
// rotate: add the new key as current, keep the old one as previous, run `gw credentials rewrap`.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export interface SealedSecret {
  readonly keyId: string;
  readonly iv: Buffer;
  readonly ciphertext: Buffer;
  readonly authTag: Buffer;
}

/** What a master key id looks like (CREDENTIALS_MASTER_KEY_ID, src/config.ts). */
const KEY_ID_FORM = /^[\w.-]{1,32}$/;

export class SecretBoxError extends Error {
  override readonly name = 'SecretBoxError';
}

/** Parses "id:base64key" entries (comma separated); every key must be 32 bytes. */
export function parseMasterKeys(
  current: string | undefined,
  currentId: string,
  previous: string | undefined,
): SecretBox | undefined {
  if (!current) return undefined;
  const keys = new Map<string, Buffer>();
  const decode = (id: string, base64: string): void => {
    const key = Buffer.from(base64, 'base64');
    if (key.length !== 32) {
      throw new SecretBoxError(
        `master key ${id} must be 32 bytes written in base64 (openssl rand -base64 32)`,
      );
    }
    // Another key under an id already given would take its place (decision 466); the same
    // key again replaces nothing, and started before (decision 483).
    const earlier = keys.get(id);
    if (earlier !== undefined && !earlier.equals(key)) {
      throw new SecretBoxError(
        `master key id ${id} is given twice: each key needs an id of its own`,
      );
    }
    keys.set(id, key);
  };
  decode(currentId, current);
  // `k1:…, k0:…` as an operator may write it: the spaces are not the id's (decision 492).
  for (const entry of (previous ?? '').split(',').map((text) => text.trim())) {
    if (entry === '') continue;
    const separator = entry.indexOf(':');
    if (separator <= 0)
      throw new SecretBoxError('previous master keys must look like id:base64key');
    const id = entry.slice(0, separator).trim();
    // An id no key is sealed under (CREDENTIALS_MASTER_KEY_ID's form) opens nothing.
    if (!KEY_ID_FORM.test(id)) {
      throw new SecretBoxError(
        'a previous master key id is 1 to 32 letters, digits, _ . or - (as CREDENTIALS_MASTER_KEY_ID)',
      );
    }
    decode(id, entry.slice(separator + 1));
  }
  return new SecretBox(currentId, keys);
}

export class SecretBox {
  constructor(
    readonly currentKeyId: string,
    private readonly keys: ReadonlyMap<string, Buffer>,
  ) {}

  /** The ids of the keys this box opens with (the current one and the previous ones). */
  keyIds(): string[] {
    return [...this.keys.keys()];
  }

  seal(secret: string): SealedSecret {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentKeyId)!, iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return { keyId: this.currentKeyId, iv, ciphertext, authTag: cipher.getAuthTag() };
  }

  /** Opens what seal() sealed; a damaged value or another key's is a SecretBoxError. */
  open(sealed: SealedSecret): string {
    // The id comes from stored data: named only when it can be one (CREDENTIALS_MASTER_KEY_ID's
    // form), so a damaged value never ends up, whole, in a log line or an answer.
    const keyName = KEY_ID_FORM.test(sealed.keyId)
      ? sealed.keyId
      : 'an id no master key can have (the value is damaged)';
    const key = this.keys.get(sealed.keyId);
    if (!key) throw new SecretBoxError(`master key ${keyName} is not configured`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv);
      decipher.setAuthTag(sealed.authTag);
      return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
    } catch {
      // A wrong tag, or an IV or tag of the wrong length (a damaged value).
      throw new SecretBoxError(`a credential sealed under ${keyName} failed authentication`);
    }
  }
}

/** What is shown instead of a secret: a short hash, never the secret or a part of it. */
export function fingerprint(secret: string): string {
  return `sha256:${createHash('sha256').update(secret).digest('hex').slice(0, 16)}`;
}
