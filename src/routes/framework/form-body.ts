// Parses an `application/x-www-form-urlencoded` body (RFC 6749 section 3.2; HTML forms) into
// an object of strings, validated against the route's schema; or the spec's 400 error.
import type { z } from 'zod';
import { gwError, type GwError } from '../../errors.js';
import { mediaTypeOf, wrongMediaType } from '../../http/content-type.js';
import { describeValidationError } from '../../inference/parse-body.js';
import { quotableName } from '../../validation-messages.js';

const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';

/** Forms carry a few short parameters; more than this is not a request of ours. */
export const MAX_FORM_PARAMETERS = 64;

export function parseFormBody<Schema extends z.ZodType>(
  headers: Readonly<Record<string, string>>,
  body: Buffer,
  schema: Schema,
): z.infer<Schema> | GwError {
  const declared = headers['content-type'];
  const mediaType = mediaTypeOf(declared);
  if (mediaType !== FORM_MEDIA_TYPE) return wrongMediaType(FORM_MEDIA_TYPE, mediaType);
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(declared ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return gwError('gw_invalid_request', 'content-type: the form must be UTF-8');
  }
  const text = body.toString('utf8');
  if (text.includes('\uFFFD') && !body.includes(Buffer.from('\uFFFD'))) {
    return gwError('gw_invalid_request', 'the form body is not valid UTF-8');
  }
  const form: Record<string, string> = Object.create(null) as Record<string, string>;
  let count = 0;
  for (const [name, value] of new URLSearchParams(text)) {
    count += 1;
    if (count > MAX_FORM_PARAMETERS) {
      return gwError(
        'gw_invalid_request',
        `the form has more than ${MAX_FORM_PARAMETERS} parameters`,
      );
    }
    // RFC 6749 section 3.1: parameters must not be included more than once.
    if (Object.hasOwn(form, name)) {
      return gwError(
        'gw_invalid_request',
        `${quotableName(name) ?? 'a parameter'}: must be sent once`,
      );
    }
    form[name] = value;
  }
  const result = schema.safeParse({ ...form });
  if (!result.success) return gwError('gw_invalid_request', describeValidationError(result.error));
  return result.data;
}
