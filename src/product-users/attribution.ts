// Reads product-user attribution from an inference request: the identifier (header, then
// metadata.external_user_id, then `user`) and the optional profile (nested or flat forms).
// metadata.name / metadata.email / metadata.user_metadata are NOT profile fields.

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
const MAX_EXTERNAL_USER_ID_LENGTH = 256;

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

export class AttributionError extends Error {
  override readonly name = 'AttributionError';
}

/** The attribution a request carries, or undefined when it names no product user. */
export function readAttribution(
  headers: Readonly<Record<string, string>>,
  body: JsonObject,
): Attribution | undefined {
  const metadata = isObject(body.metadata) ? body.metadata : undefined;
  const externalUserId =
    nonEmptyString(headers[EXTERNAL_USER_ID_HEADER]) ??
    nonEmptyString(metadata?.external_user_id) ??
    nonEmptyString(body.user);
  if (externalUserId === undefined) return undefined;
  if (externalUserId.length > MAX_EXTERNAL_USER_ID_LENGTH) {
    throw new AttributionError(
      `external user id is longer than ${MAX_EXTERNAL_USER_ID_LENGTH} characters`,
    );
  }
  const nested = isObject(metadata?.product_user) ? metadata.product_user : {};
  const displayName =
    nonEmptyString(nested.display_name) ?? nonEmptyString(body.product_user_display_name);
  const email = nonEmptyString(nested.email) ?? nonEmptyString(body.product_user_email);
  const profileMetadata = isObject(nested.metadata)
    ? nested.metadata
    : isObject(body.product_user_metadata)
      ? body.product_user_metadata
      : undefined;
  const profile: ProductUserProfile = {
    ...(displayName !== undefined && { displayName }),
    ...(email !== undefined && { email }),
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
  if (isObject(body.metadata)) {
    const { external_user_id: _id, product_user: _profile, ...rest } = body.metadata;
    if (Object.keys(rest).length === 0) delete body.metadata;
    else body.metadata = rest;
  }
}
