// SMTP_URL and its companions at boot (decision 370): a scheme gw speaks, never the value (it
// holds a password) in the message, and PUBLIC_ORIGIN, EMAIL_FROM and the master key that
// seals the messages waiting to be sent (decision 375) required beside it.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.js';

const SECRET = 'hunter2-smtp-secret';
const complete = {
  SMTP_URL: `smtps://mailer:${SECRET}@smtp.example.com:465`,
  EMAIL_FROM: 'gw <no-reply@example.com>',
  PUBLIC_ORIGIN: 'https://gw.example.com',
  CREDENTIALS_MASTER_KEY: Buffer.alloc(32, 3).toString('base64'),
};

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('SMTP_URL', () => {
  it('takes smtp:// and smtps:// with the settings it needs', () => {
    expect(loadConfig(complete).SMTP_URL).toBe(complete.SMTP_URL);
    const plain = { ...complete, SMTP_URL: 'smtp://127.0.0.1:2525' };
    expect(loadConfig(plain).SMTP_URL).toBe('smtp://127.0.0.1:2525');
    expect(loadConfig({}).SMTP_URL).toBeUndefined();
  });

  it('refuses another scheme or no host, without repeating the value', () => {
    for (const url of [`https://u:${SECRET}@smtp.example.com`, `smtp://u:${SECRET}@`, SECRET]) {
      const message = refusal({ ...complete, SMTP_URL: url });
      expect(message).toContain('SMTP_URL: must be smtp://');
      expect(message).not.toContain(SECRET);
    }
  });

  it('needs PUBLIC_ORIGIN (links never follow a Host header), EMAIL_FROM and CREDENTIALS_MASTER_KEY beside it', () => {
    const message = refusal({ SMTP_URL: complete.SMTP_URL });
    expect(message).toContain('PUBLIC_ORIGIN: must be set when SMTP_URL is');
    expect(message).toContain('EMAIL_FROM: must be set when SMTP_URL is');
    expect(message).toContain('CREDENTIALS_MASTER_KEY: must be set when SMTP_URL is');
    expect(message).not.toContain(SECRET);
  });
});
