import { describe, expect, it } from 'vitest';
import { configurationWarnings } from './config.js';

describe('configurationWarnings', () => {
  it('warns where sign-up is on and gw sends no e-mail, and only there (decision 413)', () => {
    expect(configurationWarnings({ DASHBOARD_SIGNUP: true, SMTP_URL: undefined })).toEqual([
      'DASHBOARD_SIGNUP is on and SMTP_URL is unset: no e-mail address is verified, so anyone may sign up with an address they do not own (set SMTP_URL to verify addresses)',
    ]);
    expect(
      configurationWarnings({ DASHBOARD_SIGNUP: true, SMTP_URL: 'smtp://u:p@mail.test:587' }),
    ).toEqual([]);
    expect(configurationWarnings({ DASHBOARD_SIGNUP: false, SMTP_URL: undefined })).toEqual([]);
  });
});
