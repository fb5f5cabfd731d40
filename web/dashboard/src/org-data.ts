// Data several pages need: the organization's connections (each with its app's name), found
// by id or searched, and the product users a page names by id. An organization may have
// thousands of apps and connections: a page asks for the ones it shows (decision 300).
import { isObjectIdForm } from '../../../src/object-ids.js';
import { api, type Page } from './api.js';
import { useAsync } from './hooks.js';
import { shownText } from './shown-text.js';
import type { OrgConnection, ProductUserProfile } from './types.js';

export type { OrgConnection };

/** How many connections one request names or lists (the API's page). */
export const CONNECTIONS_PAGE = 200;

/** The organization's connections, narrowed by `q` (the start of a name) and `status`. */
export function orgConnectionsPath(
  orgId: string,
  filter: { readonly q?: string; readonly status?: 'active' | 'revoked' } = {},
): string {
  const query = new URLSearchParams({ limit: String(CONNECTIONS_PAGE) });
  if (filter.status) query.set('status', filter.status);
  if (filter.q) query.set('q', filter.q);
  return `/dashboard/api/orgs/${encodeURIComponent(orgId)}/connections?${query.toString()}`;
}

/**
 * The organization's connections with these ids, a request per 200; unknown ids are left out
 * (as are texts that cannot be an id: a mistyped or cut address).
 */
export async function loadConnectionsById(
  orgId: string,
  ids: readonly string[],
): Promise<Map<string, OrgConnection>> {
  // a text of another form than the API's `ids` takes (the server's own rule) names no
  // connection, and asking for it would be refused as a whole
  const unique = [...new Set(ids)].filter(isObjectIdForm).sort();
  const chunks: string[][] = [];
  for (let at = 0; at < unique.length; at += CONNECTIONS_PAGE) {
    chunks.push(unique.slice(at, at + CONNECTIONS_PAGE));
  }
  const pages = await Promise.all(
    chunks.map((chunk) =>
      api.get<Page<OrgConnection>>(
        `${orgConnectionsPath(orgId)}&ids=${chunk.map(encodeURIComponent).join(',')}`,
      ),
    ),
  );
  return new Map(pages.flatMap((page) => page.data.map((row) => [row.id, row] as const)));
}

/** The connections a page names by id (a credential's grants, usage rows), looked up once. */
export function useConnectionsById(orgId: string, ids: readonly string[]) {
  const key = [...new Set(ids)].sort().join(',');
  return useAsync(
    key === '' ? null : () => loadConnectionsById(orgId, key.split(',')),
    key === '' ? null : `${orgId}:${key}`,
  );
}

export const connectionName = (connection: OrgConnection): string =>
  `${connection.app_name} › ${connection.name}`;

/** "App › connection", or the id when the connection is not found. */
export function connectionLabel(
  found: ReadonlyMap<string, OrgConnection> | null | undefined,
  id: string,
): string {
  const connection = found?.get(id);
  return connection ? connectionName(connection) : id;
}

/** The profiles of a few product users (a usage list names them by id only). */
export async function loadProductUsers(
  ids: readonly string[],
): Promise<Map<string, ProductUserProfile>> {
  const found = await Promise.all(
    ids.map((id) =>
      api
        .get<ProductUserProfile>(`/dashboard/api/product-users/${encodeURIComponent(id)}`)
        .catch(() => null),
    ),
  );
  return new Map(
    found.flatMap((profile) => (profile ? [[profile.product_end_user_id, profile] as const] : [])),
  );
}

export const productUserLabel = (profile: ProductUserProfile | undefined, id: string): string =>
  profile ? userLabel(profile) : id;

/** A product user as the dashboard names them: their name and external id (see shownText). */
export const userLabel = (user: {
  readonly display_name: string;
  readonly external_user_id: string;
}): string =>
  shownText(
    user.display_name && user.display_name !== user.external_user_id
      ? `${user.display_name} (${user.external_user_id})`
      : user.external_user_id,
  );
