// A secret sealed with the credentials master key (AES-256-GCM, the key id kept with the
// ciphertext, src/credentials/secret-box.ts), as one text value
// `<key id>:<iv>:<auth tag>:<ciphertext>` (base64): webhook signing secrets, queued e-mail.
import type { SealedSecret, SecretBox } from './secret-box.js';

export function sealToText(box: SecretBox, secret: string): string {
  const sealed = box.seal(secret);
  return [
    sealed.keyId,
    sealed.iv.toString('base64'),
    sealed.authTag.toString('base64'),
    sealed.ciphertext.toString('base64'),
  ].join(':');
}

export function parseSealed(text: string): SealedSecret {
  const [keyId, iv, authTag, ciphertext] = text.split(':');
  return {
    keyId: keyId ?? '',
    iv: Buffer.from(iv ?? '', 'base64'),
    authTag: Buffer.from(authTag ?? '', 'base64'),
    ciphertext: Buffer.from(ciphertext ?? '', 'base64'),
  };
}

export function openFromText(box: SecretBox, text: string): string {
  return box.open(parseSealed(text));
}

/**
 * `text` sealed under the box's current master key: as it is if it already is, else opened
 * (with the key it names, which the box must still have) and sealed again (`gw credentials
 * rewrap`, after a rotation).
 */
export function resealedText(box: SecretBox, text: string): string {
  return parseSealed(text).keyId === box.currentKeyId
    ? text
    : sealToText(box, openFromText(box, text));
}
