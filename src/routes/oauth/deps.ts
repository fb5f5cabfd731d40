// What the OAuth routes need: the database, the authorization codes, the API-key cache (an
// OAuth token is an API-key record: revoking one drops it from every instance's cache), and
// the settings the issuer identifier comes from.
import type { ApiKeyInvalidation } from '../../auth/api-key-store.js';
import type { DbPool } from '../../db/pool.js';
import type { ErrorFlavor } from '../../errors.js';
import { acceptsHtml } from '../../http/html.js';
import type { AuthorizationCodes } from '../../oauth/codes.js';
import type { IssuerSettings } from '../../oauth/issuer.js';

export interface OAuthDeps {
  readonly oauth: {
    readonly db: DbPool;
    readonly codes: AuthorizationCodes;
    readonly apiKeys: ApiKeyInvalidation;
    /** Where the issuer identifier comes from (PUBLIC_ORIGIN, or the request's origin). */
    readonly issuer: IssuerSettings;
  };
}

/** The authorization endpoint answers a browser with a page, anything else with JSON. */
export const pageOrJson = (headers: Readonly<Record<string, string>>): ErrorFlavor =>
  acceptsHtml(headers) ? 'html' : 'default';
