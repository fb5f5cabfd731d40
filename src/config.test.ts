import { describe, expect, it } from 'vitest';
import { configurationWarnings, loadConfig } from './config.js';

const FLOOR = 2 ** 15;

describe('configurationWarnings', () => {
  it('warns where sign-up is on and gw sends no e-mail, and only there (decision 413)', () => {
    expect(
      configurationWarnings({
        DASHBOARD_SIGNUP: true,
        SMTP_URL: undefined,
        PASSWORD_SCRYPT_N: FLOOR,
      }),
    ).toEqual([
      'DASHBOARD_SIGNUP is on and SMTP_URL is unset: no e-mail address is verified, so anyone may sign up with an address they do not own (set SMTP_URL to verify addresses)',
    ]);
    expect(
      configurationWarnings({
        DASHBOARD_SIGNUP: true,
        SMTP_URL: 'smtp://u:p@mail.test:587',
        PASSWORD_SCRYPT_N: FLOOR,
      }),
    ).toEqual([]);
    expect(
      configurationWarnings({
        DASHBOARD_SIGNUP: false,
        SMTP_URL: undefined,
        PASSWORD_SCRYPT_N: FLOOR,
      }),
    ).toEqual([]);
  });

  it('warns of password hashes below the floor, and only there (decision 573)', () => {
    const warnings = (n: number) =>
      configurationWarnings({ DASHBOARD_SIGNUP: false, SMTP_URL: undefined, PASSWORD_SCRYPT_N: n });
    expect(warnings(1024)).toEqual([
      "PASSWORD_SCRYPT_N is 1024, below OWASP's floor of 32768: passwords set now are cheap to guess from a stolen database (a setting for tests only)",
    ]);
    expect(warnings(FLOOR)).toEqual([]);
    expect(warnings(2 ** 16)).toEqual([]);
  });
});

describe('PASSWORD_SCRYPT_N', () => {
  it('is the floor by default, a power of two from 2^10 to 2^16 when set', () => {
    expect(loadConfig({}).PASSWORD_SCRYPT_N).toBe(FLOOR);
    expect(loadConfig({ PASSWORD_SCRYPT_N: '65536' }).PASSWORD_SCRYPT_N).toBe(65536);
    for (const refused of ['1000', '512', '131072', '3e4', 'many']) {
      expect(() => loadConfig({ PASSWORD_SCRYPT_N: refused }), refused).toThrow(
        /PASSWORD_SCRYPT_N/,
      );
    }
  });
});
