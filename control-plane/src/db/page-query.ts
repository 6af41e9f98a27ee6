import { count, getTableColumns, sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { offsetOf } from '../http/pagination.js';
import type { PageQuery } from '../http/pagination.js';
import type { Db } from './database.js';

/** What a list selects: the rows matching `where`, in `orderBy` order. */
export interface ListSpec {
  where: SQL | undefined;
  orderBy: SQL[];
}

/**
 * Page `page` of `table`'s rows matching `where` and the number of all matching rows, in one
 * statement: the total is an uncorrelated scalar subquery, which Postgres runs once next to
 * the page (each keeps its own plan, so the page is still served by the index order and
 * LIMIT), and both are read in one snapshot. Two statements cost a second round trip and a
 * second pool connection per list, the larger part of a small list's cost.
 *
 * A page past the end has no row to carry the total; only then is it counted on its own
 * (an empty first page needs no count: nothing matches).
 */
export async function pageWithTotal<T extends PgTable>(db: Db, table: T, list: ListSpec, page: PageQuery): Promise<{ rows: T['$inferSelect'][]; total: number }> {
  const offset = offsetOf(page);
  const countOf = () => db.select({ n: count() }).from(table as PgTable).where(list.where);
  const withTotal = await db
    .select({ ...getTableColumns(table as PgTable), pageTotal: sql<number>`(${countOf()})`.mapWith(Number) })
    .from(table as PgTable)
    .where(list.where)
    .orderBy(...list.orderBy)
    .limit(page.pageSize)
    .offset(offset);
  if (withTotal.length === 0) {
    if (offset === 0) return { rows: [], total: 0 };
    const [counted] = await countOf();
    return { rows: [], total: counted?.n ?? 0 };
  }
  const total = withTotal[0]!.pageTotal;
  const rows = withTotal.map(({ pageTotal: _total, ...row }) => row) as T['$inferSelect'][];
  return { rows, total };
}
