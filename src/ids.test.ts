import { describe, expect, it } from 'vitest';
import { newRequestId, newSecret, randomBase62, secretPrefixes, sha256Hex } from './ids.js';

describe('request ids', () => {
  it('are unique UUIDv7s that sort by creation time', () => {
    const ids = Array.from({ length: 20_000 }, () => newRequestId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 50)) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    const timestamp = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(Math.abs(timestamp(ids[0]!) - Date.now())).toBeLessThan(5_000);
    for (let index = 1; index < ids.length; index += 1) {
      expect(timestamp(ids[index]!)).toBeGreaterThanOrEqual(timestamp(ids[index - 1]!));
    }
  });
});

describe('secrets', () => {
  it('carry their prefix and 43 base62 characters (> 256 bits)', () => {
    const key = newSecret(secretPrefixes.apiKey);
    expect(key).toMatch(/^gw_[0-9A-Za-z]{43}$/);
    expect(newSecret(secretPrefixes.serviceKey)).toMatch(/^gw_svc_[0-9A-Za-z]{43}$/);
    expect(new Set(Array.from({ length: 1000 }, () => randomBase62(12))).size).toBe(1000);
  });
});

describe('sha256Hex', () => {
  it('is the SHA-256 of the text as UTF-8, in hex (the stored hashes of keys and users)', () => {
    // FIPS 180-2's example, and the hash of the UTF-8 bytes of a non-ASCII text.
    expect(sha256Hex('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    expect(sha256Hex('é')).toBe('4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
  });
});
