// Reads product-user attribution from an inference request: the identifier (header, then
// metadata.external_user_id, then `user`) and the optional profile (nested or flat forms).
// metadata.name / metadata.email / metadata.user_metadata are NOT profile fields.
import { z } from 'zod';
import {
  boundedTextProblem,
  emailProblem,
  MAX_DISPLAY_NAME_CHARS,
  MAX_EMAIL_CHARS,
  MAX_EXTERNAL_USER_ID_CHARS,
  MAX_METADATA_BYTES,
  MAX_METADATA_DEPTH,
  MAX_METADATA_KEY_CHARS,
  MAX_METADATA_KEYS,
  metadataProblem,
  normalizedEmail,
} from './limits.js';
import { isJsonObject, type JsonObject } from '../json-shapes.js';
import { headerTextProblem } from '../text.js';

export interface ProductUserProfile {
  readonly displayName?: string;
  readonly email?: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

export interface Attribution {
  readonly externalUserId: string;
  readonly profile: ProductUserProfile;
}

export const EXTERNAL_USER_ID_HEADER = 'x-gw-external-user-id';

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

/**
 * The flat profile fields (SPEC: chat completions' compatibility forms) as a request schema
 * declares them, for /openapi.json. The schema checks their types and the display name's
 * length with the messages readAttribution gives; readAttribution checks the rest (an e-mail's
 * form, the metadata's limits, storable text), on every inference route. The metadata is
 * taken as it came (z.custom, no copy): a zod record would drop a `__proto__` key.
 */
export const flatProfileFields = {
  product_user_display_name: z
    .string()
    .max(MAX_DISPLAY_NAME_CHARS, `must be at most ${MAX_DISPLAY_NAME_CHARS} characters`)
    .optional()
    .describe(
      `the product user's display name (metadata.product_user.display_name wins when both are sent): at most ${MAX_DISPLAY_NAME_CHARS} characters (UTF-16 code units), no NUL character or lone surrogate; '' sends none`,
    ),
  product_user_email: z
    .string()
    .optional()
    .describe(
      `the product user's e-mail address, stored only as its hash (metadata.product_user.email wins when both are sent): trimmed, then an address of at most ${MAX_EMAIL_CHARS} characters; '' sends none`,
    ),
  product_user_metadata: z
    .custom<JsonObject>(isJsonObject, { message: 'must be an object' })
    .meta({
      type: 'object',
      description: `free-form data of the product user (metadata.product_user.metadata wins when both are sent): at most ${MAX_METADATA_BYTES} bytes of JSON, ${MAX_METADATA_KEYS} keys at all levels together, nested at most ${MAX_METADATA_DEPTH} deep, keys of at most ${MAX_METADATA_KEY_CHARS} characters, no NUL character or lone surrogate`,
    })
    .optional(),
};

export class AttributionError extends Error {
  override readonly name = 'AttributionError';
}

/** A text field: absent, or a string within its limits. Anything else is refused. */
function checkText(field: string, value: unknown, maxChars: number): void {
  if (value === undefined) return;
  if (typeof value !== 'string') throw new AttributionError(`${field}: must be a string`);
  const problem = boundedTextProblem(value, maxChars);
  if (problem) throw new AttributionError(`${field}: ${problem}`);
}

function checkEmail(field: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'string') throw new AttributionError(`${field}: must be a string`);
  const problem = emailProblem(value);
  if (problem) throw new AttributionError(`${field}: ${problem}`);
}

/** An object field: absent, or an object within the metadata limits. */
function checkObject(field: string, value: unknown): void {
  if (value === undefined) return;
  if (!isJsonObject(value)) throw new AttributionError(`${field}: must be an object`);
}

function checkMetadata(field: string, value: unknown): void {
  checkObject(field, value);
  if (!isJsonObject(value)) return;
  const problem = metadataProblem(value);
  if (problem) throw new AttributionError(`${field}: ${problem}`);
}

/**
 * The identifier header, checked before anything reads it. Its value must be printable ASCII
 * and not empty: the HTTP parser drops bytes from 0x80 up at the ends of a header value, so a
 * non-ASCII identifier cannot arrive whole ("josé" would be read as "jos", another user's id);
 * what is left of it is refused where it can be seen (decision 278).
 */
function checkHeader(value: string | undefined): void {
  if (value === undefined) return;
  const problem =
    value === ''
      ? 'must not be empty (an identifier of only spaces or non-ASCII characters arrives empty; send it in metadata.external_user_id or user instead)'
      : (headerTextProblem(value) ?? boundedTextProblem(value, MAX_EXTERNAL_USER_ID_CHARS));
  if (problem) throw new AttributionError(`X-GW-External-User-ID: ${problem}`);
}

/** The attribution a request carries, or undefined when it names no product user. */
export function readAttribution(
  headers: Readonly<Record<string, string>>,
  body: JsonObject,
): Attribution | undefined {
  // Every form a client can send is checked, used or not: a bad value (the wrong type, too
  // long, not storable) is refused, never silently ignored or shadowed (limits in
  // product-users/limits.ts, docs/limits.md).
  checkHeader(headers[EXTERNAL_USER_ID_HEADER]);
  const metadata = isJsonObject(body.metadata) ? body.metadata : undefined;
  checkObject('metadata.product_user', metadata?.product_user);
  const nested = isJsonObject(metadata?.product_user) ? metadata.product_user : {};
  checkText('metadata.external_user_id', metadata?.external_user_id, MAX_EXTERNAL_USER_ID_CHARS);
  checkText('user', body.user, MAX_EXTERNAL_USER_ID_CHARS);
  checkText('metadata.product_user.display_name', nested.display_name, MAX_DISPLAY_NAME_CHARS);
  checkText('product_user_display_name', body.product_user_display_name, MAX_DISPLAY_NAME_CHARS);
  checkEmail('metadata.product_user.email', nested.email);
  checkEmail('product_user_email', body.product_user_email);
  checkMetadata('metadata.product_user.metadata', nested.metadata);
  checkMetadata('product_user_metadata', body.product_user_metadata);

  const externalUserId =
    nonEmptyString(headers[EXTERNAL_USER_ID_HEADER]) ??
    nonEmptyString(metadata?.external_user_id) ??
    nonEmptyString(body.user);
  if (externalUserId === undefined) return undefined;
  const displayName =
    nonEmptyString(nested.display_name) ?? nonEmptyString(body.product_user_display_name);
  const email = nonEmptyString(nested.email) ?? nonEmptyString(body.product_user_email);
  const profileMetadata = isJsonObject(nested.metadata)
    ? nested.metadata
    : isJsonObject(body.product_user_metadata)
      ? body.product_user_metadata
      : undefined;
  const profile: ProductUserProfile = {
    ...(displayName !== undefined && { displayName }),
    ...(email !== undefined && { email: normalizedEmail(email) }),
    ...(profileMetadata !== undefined && { metadata: profileMetadata }),
  };
  return { externalUserId, profile };
}

/**
 * Removes the gateway's own attribution fields from a body before it goes upstream (vendors
 * reject unknown top-level parameters). `user` stays: it is a vendor parameter too.
 */
export function stripAttributionFields(body: JsonObject): void {
  delete body.product_user_display_name;
  delete body.product_user_email;
  delete body.product_user_metadata;
  if (isJsonObject(body.metadata)) {
    const { external_user_id: _id, product_user: _profile, ...rest } = body.metadata;
    if (Object.keys(rest).length === 0) delete body.metadata;
    else body.metadata = rest;
  }
}
