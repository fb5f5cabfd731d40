// What the service-key product-user routes share: their dependencies, the by-external-id
// path, and the (app_id, external_user_id) check that finds the user in the caller's org.
import { z } from 'zod';
import type { ServiceKeyIdentity } from '../../auth/service-key-store.js';
import type { DbPool } from '../../db/pool.js';
import { gwError, isGwError, type GwError } from '../../errors.js';
import type { ProductUserManagement } from '../../product-users/management.js';
import type { ProductUserProfiles, ProductUserRow } from '../../product-users/profile.js';
import {
  boundedTextProblem,
  MAX_APP_ID_CHARS,
  MAX_EXTERNAL_USER_ID_CHARS,
  MAX_GRANT_REASON_CHARS,
  storableText,
} from '../../product-users/limits.js';

export interface ProductUserRouteDeps {
  readonly db: DbPool;
  readonly profiles: ProductUserProfiles;
  readonly management: ProductUserManagement;
}

export const BASE = '/product-users/by-external-id';
export const currencyCode = z
  .string()
  .regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO currency code in capitals, such as USD');
/** The instants an RFC 3339 UTC answer can write: years 0001–9999 (toISOString has no other). */
const FIRST_INSTANT_MS = Date.parse('0001-01-01T00:00:00Z');
const LAST_INSTANT_MS = Date.parse('9999-12-31T23:59:59.999Z');
/**
 * An RFC 3339 timestamp with an offset, whose instant is in years 0001–9999 UTC: every one the
 * API takes it writes back as an RFC 3339 UTC string ('0000-01-01T00:00:00+23:59' is year -1).
 */
export const timestamp = z.iso.datetime({ offset: true }).refine((text) => {
  const ms = Date.parse(text);
  return ms >= FIRST_INSTANT_MS && ms <= LAST_INSTANT_MS;
}, 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z');
export const byExternalIdQuery = z.object({ app_id: z.string(), external_user_id: z.string() });
export const identityErrors = ['gw_invalid_app_id', 'gw_invalid_external_user_id'] as const;
/** A body's app_id or external_user_id that is missing or not a string answers its own code. */
export const identityFieldErrors = {
  app_id: 'gw_invalid_app_id',
  external_user_id: 'gw_invalid_external_user_id',
} as const;

/** A credit grant's body: the service-key route takes it whole, the dashboard without the pair. */
export const creditGrantSchema = z.strictObject({
  app_id: z.string(),
  external_user_id: z.string(),
  amount: z.string(),
  currency: currencyCode.optional(),
  expires_at: timestamp.nullable().optional(),
  reason: storableText(MAX_GRANT_REASON_CHARS).optional(),
});

/** Checks the (app_id, external_user_id) pair: present, and the app belongs to the caller's org. */
export async function identifyUser(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  appId: string | null | undefined,
  externalUserId: string | null | undefined,
): Promise<{ appId: string; externalUserId: string } | GwError> {
  // An empty or blank id names nothing: it reads as a missing one does (validation-messages.ts).
  if (!appId || appId.trim() === '') return gwError('gw_invalid_app_id', 'app_id: is required');
  const appIdProblem = boundedTextProblem(appId, MAX_APP_ID_CHARS);
  if (appIdProblem) return gwError('gw_invalid_app_id', `app_id: ${appIdProblem}`);
  if (!externalUserId || externalUserId.trim() === '') {
    return gwError('gw_invalid_external_user_id', 'external_user_id: is required');
  }
  const idProblem = boundedTextProblem(externalUserId, MAX_EXTERNAL_USER_ID_CHARS);
  if (idProblem) {
    return gwError('gw_invalid_external_user_id', `external_user_id: ${idProblem}`);
  }
  const { rowCount } = await deps.db.query('SELECT 1 FROM apps WHERE id = $1 AND org_id = $2', [
    appId,
    caller.orgId,
  ]);
  if (rowCount === 0)
    return gwError('gw_invalid_app_id', 'no app with this app_id in your organization');
  return { appId, externalUserId };
}

/** The user an `app_id` and `external_user_id` name: a read's query or a grant's body. */
export async function findNamedUser(
  deps: ProductUserRouteDeps,
  caller: ServiceKeyIdentity,
  query: { readonly app_id?: string; readonly external_user_id?: string },
): Promise<ProductUserRow | GwError> {
  const pair = await identifyUser(
    deps,
    caller,
    query.app_id ?? null,
    query.external_user_id ?? null,
  );
  if (isGwError(pair)) return pair;
  const user = await deps.profiles.findUser(caller.orgId, pair.appId, pair.externalUserId);
  return (
    user ??
    gwError('gw_product_user_not_found', 'no product user with this app_id and external_user_id')
  );
}
