// Data several pages need: every connection of the organization with its app's name (the
// API lists connections per app), and the product users a page names by id.
import { api, type Page } from './api.js';
import type { AppRow, ConnectionRow, ProductUserProfile } from './types.js';

export interface OrgConnection extends ConnectionRow {
  readonly appName: string;
}

export interface OrgConnections {
  readonly apps: AppRow[];
  /** True when the organization has more apps than one page holds (the counts are partial). */
  readonly appsMore: boolean;
  readonly connections: OrgConnection[];
}

const LIMIT = 200;

export async function loadOrgConnections(orgId: string): Promise<OrgConnections> {
  const apps = await api.get<Page<AppRow>>(
    `/dashboard/api/orgs/${encodeURIComponent(orgId)}/apps?limit=${LIMIT}`,
  );
  const lists = await Promise.all(
    apps.data.map((app) =>
      api
        .get<Page<ConnectionRow>>(
          `/dashboard/api/apps/${encodeURIComponent(app.id)}/connections?limit=${LIMIT}`,
        )
        .then((page) => page.data.map((connection) => ({ ...connection, appName: app.name }))),
    ),
  );
  return { apps: apps.data, appsMore: apps.next_cursor !== null, connections: lists.flat() };
}

/** "App › connection", or the id when the connection is not in the list. */
export function connectionLabel(connections: readonly OrgConnection[] | undefined, id: string) {
  const found = connections?.find((connection) => connection.id === id);
  return found ? `${found.appName} › ${found.name}` : id;
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
  profile
    ? profile.display_name && profile.display_name !== profile.external_user_id
      ? `${profile.display_name} (${profile.external_user_id})`
      : profile.external_user_id
    : id;
