// Our signatures are what the Standard Webhooks reference library verifies.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newSigningSecret, signatureHeader, webhookHeaders } from './signing.js';

describe('signing', () => {
  it('makes whsec_ secrets of 32 random bytes', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(secret);
  });

  it('signs id.timestamp.body as the reference library verifies it', () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({
      type: 'webhook.test',
      timestamp: new Date().toISOString(),
      data: { é: '✓' },
    });
    const headers = webhookHeaders('msg_abc', body, [secret], Date.now());
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
  });

  it('signs with every secret given, space separated (rotation)', () => {
    const older = newSigningSecret();
    const newer = newSigningSecret();
    const headers = webhookHeaders('msg_two', '{}', [newer, older], Date.now());
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [older, newer])
      expect(() => new Webhook(secret).verify('{}', headers)).not.toThrow();
  });

  it('matches the specification example', () => {
    // From the Standard Webhooks specification.
    expect(
      signatureHeader('msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}', [
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      ]),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });
});
