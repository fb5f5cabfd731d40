// What Postgres did to answer a statement, from its own EXPLAIN (ANALYZE, FORMAT JSON): how many
// rows its scans of given tables visited (returned, or read and dropped by a filter or an index
// recheck), for the scale tests that bound a route's reads whatever the tables hold.
import type { DbPool } from '../../src/db/pool.js';

/** A plan node, with what it read and dropped. */
export interface PlanNode {
  readonly 'Relation Name'?: string;
  readonly 'Index Name'?: string;
  readonly 'Actual Rows': number;
  readonly 'Actual Loops': number;
  readonly 'Rows Removed by Filter'?: number;
  readonly 'Rows Removed by Index Recheck'?: number;
  readonly Plans?: readonly PlanNode[];
}

/** The plan a statement ran with (EXPLAIN ANALYZE runs it: use it on reads). */
export async function analyzedPlan(
  db: Pick<DbPool, 'query'>,
  sql: string,
  params: readonly unknown[],
): Promise<PlanNode> {
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
    [...params],
  );
  return rows[0]!['QUERY PLAN'][0].Plan;
}

/** Rows the plan's scans of the tables `counted` names visited. */
export function rowsVisited(node: PlanNode, counted: (table: string) => boolean): number {
  const table = node['Relation Name'];
  const own =
    table !== undefined && counted(table)
      ? (node['Actual Rows'] +
          (node['Rows Removed by Filter'] ?? 0) +
          (node['Rows Removed by Index Recheck'] ?? 0)) *
        node['Actual Loops']
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsVisited(child, counted), 0);
}

/** The indexes the plan's scans used. */
export function indexesUsed(node: PlanNode): string[] {
  const own = node['Index Name'] === undefined ? [] : [node['Index Name']];
  return [...own, ...(node.Plans ?? []).flatMap(indexesUsed)];
}
