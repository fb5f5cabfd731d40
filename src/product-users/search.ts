// Reads of product users and their credit grants for the dashboard: search by the prefix of
// the external id or the display name within one organization, one user by id, and a user's
// grants; all in pages (see db/pages.ts).
import { CURSOR_COLUMN, likePrefix, readPage, type Page, type PageRequest } from '../db/pages.js';
import type { DbPool } from '../db/pool.js';
import type { GrantRow } from './management.js';
import { PRODUCT_USER_COLUMNS, type ProductUserRow } from './profile.js';

export interface ProductUserListRow {
  readonly id: string;
  readonly app_id: string;
  readonly external_user_id: string;
  readonly display_name: string;
  readonly status: string;
  readonly created_at: Date;
  readonly cursor_us: string;
}

/**
 * The organization's product users whose external id starts with `q` (case-sensitive, as ids
 * are) or whose display name starts with it (case-insensitive); all of them without `q`.
 */
export function searchProductUsers(
  db: DbPool,
  orgId: string,
  q: string | undefined,
  page: PageRequest,
): Promise<Page<ProductUserListRow>> {
  const select = `SELECT id, app_id, external_user_id, display_name, status, created_at,
                         ${CURSOR_COLUMN} FROM product_users`;
  if (!q) return readPage(db, { select, where: 'org_id = $1', params: [orgId] }, page);
  const where = 'org_id = $1 AND (external_user_id LIKE $2 OR lower(display_name) LIKE lower($2))';
  return readPage(db, { select, where, params: [orgId, likePrefix(q)] }, page);
}

export function productUserListView(row: ProductUserListRow): Record<string, unknown> {
  return {
    product_end_user_id: row.id,
    app_id: row.app_id,
    external_user_id: row.external_user_id,
    display_name: row.display_name,
    status: row.status,
    created_at: row.created_at.toISOString(),
  };
}

export async function productUserById(
  db: Pick<DbPool, 'query'>,
  id: string,
): Promise<ProductUserRow | undefined> {
  const { rows } = await db.query<ProductUserRow>(
    `SELECT ${PRODUCT_USER_COLUMNS} FROM product_users WHERE id = $1`,
    [id],
  );
  return rows[0];
}

/** A product user's credit grants, oldest first, revoked ones included. */
export function listCreditGrants(
  db: Pick<DbPool, 'query'>,
  productUserId: string,
  page: PageRequest,
): Promise<Page<GrantRow & { cursor_us: string }>> {
  const select = `SELECT id, product_user_id, amount::text, currency, expires_at, reason, status,
                         created_at, org_id, ${CURSOR_COLUMN} FROM credit_grants`;
  return readPage(db, { select, where: 'product_user_id = $1', params: [productUserId] }, page);
}
