// What the routes of gw's e-mail (password reset, address verification) share: they answer
// 403 gw_email_disabled where gw sends no e-mail (SMTP_URL unset, decision 370), and their
// token field.
import { z } from 'zod';
import type { AccountMail } from '../../accounts/account-mail.js';
import { EMAIL_TOKEN_MAX_LENGTH } from '../../accounts/email-tokens.js';
import { gwError, type GwError } from '../../errors.js';

export const emailTokenField = z
  .string()
  .max(EMAIL_TOKEN_MAX_LENGTH)
  .describe("the token from the e-mail's link (after `#…_token=`)");

/** gw's e-mail, or the refusal when it sends none. */
export function mailOrRefusal(mail: AccountMail | null): AccountMail | GwError {
  return (
    mail ??
    gwError(
      'gw_email_disabled',
      'this gateway sends no e-mail (SMTP_URL is unset): ask its operator (gw admin set-password)',
    )
  );
}

export function isRefusal(value: AccountMail | GwError): value is GwError {
  return 'code' in value;
}

export const INVALID_LINK =
  'this link is unknown, used or expired (links work once; a reset link for 30 minutes, a verification link for 24 hours): ask for a new one';
