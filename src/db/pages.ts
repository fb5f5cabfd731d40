// Keyset pagination for the dashboard's lists: rows ordered by (created_at, id), the cursor an
// opaque token of the last row's pair, so pages stay stable while rows are added. The time
// travels as whole microseconds since the epoch (Postgres' precision; a JS Date would round
// it to milliseconds and repeat rows).
import { z } from 'zod';
import { isObjectIdForm } from '../object-ids.js';
import { wholeNumberOr } from '../written-numbers.js';
import type { DbPool } from './pool.js';

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 200;

export const pageQuerySchema = z.object({
  limit: wholeNumberOr(DEFAULT_PAGE_LIMIT, { min: 1, max: MAX_PAGE_LIMIT }),
  cursor: z.string().max(200, 'is not a cursor this API issued').optional(),
});

export interface PageRequest {
  readonly limit: number;
  /** The last row of the previous page: its created_at in epoch microseconds, and its id. */
  readonly after: { readonly createdAtUs: string; readonly id: string } | null;
}

export class CursorError extends Error {
  override readonly name = 'CursorError';
}

export function pageRequest(query: z.infer<typeof pageQuerySchema>): PageRequest {
  if (query.cursor === undefined) return { limit: query.limit, after: null };
  const text = Buffer.from(query.cursor, 'base64url').toString('utf8');
  const separator = text.indexOf('|');
  const createdAtUs = text.slice(0, separator);
  const id = text.slice(separator + 1);
  if (separator < 0 || !/^\d{1,17}$/.test(createdAtUs) || !isObjectIdForm(id)) {
    throw new CursorError('cursor: is not a cursor this API issued');
  }
  return { limit: query.limit, after: { createdAtUs, id } };
}

/** The column a paged query selects so its rows can make the next cursor. */
export const CURSOR_COLUMN = `(extract(epoch FROM created_at) * 1000000)::bigint::text AS cursor_us`;

/** A page of rows fetched with one row more than the limit: that extra row means more. */
function pageOfRows<Row extends { cursor_us: string; id: string }>(
  rows: readonly Row[],
  limit: number,
): { rows: Row[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > limit && last
      ? Buffer.from(`${last.cursor_us}|${last.id}`).toString('base64url')
      : null;
  return { rows: page, nextCursor };
}

/** SQL for "after the cursor" on (created_at, id): `$n` and `$n+1` take the pair. */
function afterCursorSql(
  firstParam: number,
  createdAtColumn = 'created_at',
  idColumn = 'id',
): string {
  return `(${createdAtColumn}, ${idColumn}) > (timestamptz 'epoch' + $${firstParam}::bigint * interval '1 microsecond', $${firstParam + 1})`;
}

/** One page of rows and the cursor of the next one (null on the last page). */
export interface Page<Row> {
  readonly rows: Row[];
  readonly nextCursor: string | null;
}

/** What a paged list reads: its SELECT (which must select `cursor_us`), filter and columns. */
export interface PagedQuery {
  /** `SELECT … FROM …`, selecting CURSOR_COLUMN (or its equivalent for a joined table). */
  readonly select: string;
  /** The list's conditions over `params` ($1…$n). */
  readonly where: string;
  readonly params: readonly unknown[];
  /** The ordering pair's columns, when they need a table's name. */
  readonly createdAtColumn?: string;
  readonly idColumn?: string;
}

/** Reads one page of a list ordered by (created_at, id), after the page's cursor. */
export async function readPage<Row extends { cursor_us: string; id: string }>(
  db: Pick<DbPool, 'query'>,
  query: PagedQuery,
  page: PageRequest,
): Promise<Page<Row>> {
  const { createdAtColumn = 'created_at', idColumn = 'id' } = query;
  const params = [...query.params];
  let where = query.where;
  if (page.after) {
    params.push(page.after.createdAtUs, page.after.id);
    where += ` AND ${afterCursorSql(params.length - 1, createdAtColumn, idColumn)}`;
  }
  params.push(page.limit + 1);
  const { rows } = await db.query<Row>(
    `${query.select} WHERE ${where} ORDER BY ${createdAtColumn}, ${idColumn} LIMIT $${params.length}`,
    params,
  );
  return pageOfRows(rows, page.limit);
}

/**
 * Lists read newest first by a growing bigint id (the audit log, webhook deliveries): the
 * cursor is the last row's id, and the next page holds the smaller ids.
 */
export const newestFirstPageQuerySchema = z.object({
  limit: wholeNumberOr(DEFAULT_PAGE_LIMIT, { min: 1, max: MAX_PAGE_LIMIT }),
  cursor: z
    .string()
    .regex(/^\d{1,18}$/, 'is not a cursor this API issued')
    .optional(),
});

/** A newest-first page of rows fetched with one row more than the limit: that row means more. */
export function newestFirstPage<Row extends { id: string }>(
  rows: readonly Row[],
  limit: number,
): { rows: Row[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: rows.length > limit ? (page.at(-1)?.id ?? null) : null };
}

/**
 * A LIKE pattern for "starts with `text`": its `\`, `%` and `_` match literally. Compare
 * case-insensitively as `lower(column) LIKE lower($n)`, so that both sides fold the same way
 * (Postgres's folding, not JavaScript's: `İ`, `ß`).
 */
export const likePrefix = (text: string): string => `${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
