// Keyset pagination for the dashboard's lists: rows ordered by (created_at, id), the cursor an
// opaque token of the last row's pair, so pages stay stable while rows are added. The time
// travels as whole microseconds since the epoch (Postgres' precision; a JS Date would round
// it to milliseconds and repeat rows).
import { z } from 'zod';

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 200;

export const pageQuerySchema = z.object({
  limit: z.coerce
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(MAX_PAGE_LIMIT, `must be at most ${MAX_PAGE_LIMIT}`)
    .default(DEFAULT_PAGE_LIMIT),
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
  if (separator < 0 || !/^\d{1,17}$/.test(createdAtUs) || !/^[\w-]{1,64}$/.test(id)) {
    throw new CursorError('cursor: is not a cursor this API issued');
  }
  return { limit: query.limit, after: { createdAtUs, id } };
}

/** The column a paged query selects so its rows can make the next cursor. */
export const CURSOR_COLUMN = `(extract(epoch FROM created_at) * 1000000)::bigint::text AS cursor_us`;

/** A page of rows fetched with one row more than the limit: that extra row means more. */
export function pageOfRows<Row extends { cursor_us: string; id: string }>(
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
export function afterCursorSql(
  firstParam: number,
  createdAtColumn = 'created_at',
  idColumn = 'id',
): string {
  return `(${createdAtColumn}, ${idColumn}) > (timestamptz 'epoch' + $${firstParam}::bigint * interval '1 microsecond', $${firstParam + 1})`;
}
