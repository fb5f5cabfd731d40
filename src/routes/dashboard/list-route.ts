// The shape every paged dashboard list shares: GET, a member of the object's organization (any
// role, unless the list names one), `limit`/`cursor` (plus the list's own filters), and
// `{data, next_cursor}` back. A list route declares only what differs: its path, its rows and
// how to read them.
import type { z } from 'zod';
import type { OrgLocator } from '../../accounts/dashboard-auth.js';
import type { Role } from '../../accounts/users.js';
import type { DbPool } from '../../db/pool.js';
import { pageQuerySchema, type PageRequest } from '../../db/pages.js';
import { isGwError } from '../../errors.js';
import { declareRoute } from '../framework/declaration.js';
import { pageOfQuery } from '../framework/query.js';
import { pageOf } from './answers.js';

export interface ListRouteSpec<Row, Query extends typeof pageQuerySchema> {
  readonly path: string;
  readonly summary: string;
  /** Which organization the path's object belongs to; its id is what `list` receives. */
  readonly org: OrgLocator;
  /** The least role that may read the list (default viewer: every member). */
  readonly role?: Role;
  /** What one row is called in the docs, plural ("apps"). */
  readonly rows: string;
  readonly item: z.ZodType;
  /** The list's own filters beside `limit` and `cursor`. */
  readonly query?: Query;
  list(
    db: DbPool,
    scopeId: string,
    page: PageRequest,
    query: z.infer<Query>,
  ): Promise<{ readonly rows: readonly Row[]; readonly nextCursor: string | null }>;
  /** The row as the API shows it; `now` is the same for every row of one answer. */
  view(row: Row, now: number): unknown;
}

export function declareListRoute<
  Row,
  Query extends typeof pageQuerySchema = typeof pageQuerySchema,
>(spec: ListRouteSpec<Row, Query>) {
  const querySchema = spec.query ?? pageQuerySchema;
  return declareRoute({
    method: 'GET',
    path: spec.path,
    summary: spec.summary,
    caller: { kind: 'org_member', role: spec.role ?? 'viewer', org: spec.org },
    query: querySchema,
    responses: { 200: { description: spec.rows, schema: pageOf(spec.item) } },
    errors: ['gw_invalid_request'],
    async handler({ request, query }, deps: { readonly db: DbPool }) {
      const page = pageOfQuery(query);
      if (isGwError(page)) return page;
      const scopeId = request.params[spec.org.param] ?? '';
      const { rows, nextCursor } = await spec.list(deps.db, scopeId, page, query as z.infer<Query>);
      const now = Date.now();
      return {
        data: rows.map((row) => spec.view(row, now)),
        next_cursor: nextCursor,
      };
    },
  });
}
