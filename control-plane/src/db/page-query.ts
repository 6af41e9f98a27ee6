import { count, getTableColumns, sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { offsetOf } from '../http/pagination.js';
import type { PageQuery } from '../http/pagination.js';
import type { Db } from './database.js';
import { nextStatementName } from './shaped-statements.js';

/** What a list selects: the rows matching `where`, in `orderBy` order. */
export interface ListSpec {
  where: SQL | undefined;
  orderBy: SQL[];
}

type Page<T extends PgTable> = { rows: T['$inferSelect'][]; total: number };
type Row = Record<string, unknown> & { pageTotal: number };

/**
 * The statement of a page and its total: the total is an uncorrelated scalar subquery, which
 * Postgres runs once next to the page (each keeps its own plan, so the page is still served by
 * the index order and LIMIT), and both are read in one snapshot. Two statements cost a second
 * round trip and a second pool connection per list, the larger part of a small list's cost.
 */
function pageStatement(db: Db, table: PgTable, list: ListSpec, limit: number | ReturnType<typeof sql.placeholder>, offset: number | ReturnType<typeof sql.placeholder>) {
  return db
    .select({ ...getTableColumns(table), pageTotal: sql<number>`(${countStatement(db, table, list)})`.mapWith(Number) })
    .from(table)
    .where(list.where)
    .orderBy(...list.orderBy)
    .limit(limit)
    .offset(offset);
}

function countStatement(db: Db, table: PgTable, list: ListSpec) {
  return db.select({ n: count() }).from(table).where(list.where);
}

/**
 * A page past the end has no row to carry the total; only then is it counted on its own
 * (an empty first page needs no count: nothing matches).
 */
async function toPage<T extends PgTable>(withTotal: Row[], offset: number, countAll: () => Promise<Array<{ n: number }>>): Promise<Page<T>> {
  if (withTotal.length === 0) {
    if (offset === 0) return { rows: [], total: 0 };
    const [counted] = await countAll();
    return { rows: [], total: counted?.n ?? 0 };
  }
  const total = withTotal[0]!.pageTotal;
  const rows = withTotal.map(({ pageTotal: _total, ...row }) => row) as T['$inferSelect'][];
  return { rows, total };
}

/** Page `page` of `table`'s rows matching `where` and the number of all matching rows, in one statement. */
export async function pageWithTotal<T extends PgTable>(db: Db, table: T, list: ListSpec, page: PageQuery): Promise<Page<T>> {
  const offset = offsetOf(page);
  const withTotal = (await pageStatement(db, table, list, page.pageSize, offset)) as Row[];
  return toPage<T>(withTotal, offset, () => countStatement(db, table, list));
}

/** Shapes of one list prepared per process; a shape beyond them is built per request. */
export const MAX_PAGE_SHAPES = 64;

const LIMIT = '__pageLimit';
const OFFSET = '__pageOffset';

/** drizzle's prepared select: its statement built once, executed with the placeholders' values. */
interface Prepared {
  execute(values: Record<string, unknown>): Promise<unknown>;
}

/**
 * The statements of a hot list (what {@link pageWithTotal} sends), built by drizzle once per
 * shape of filters and sort instead of on every request: building a select costs more of the
 * control plane's CPU than mapping its rows (a fifth of its busy time under the benchmark's
 * mixed load went to drizzle, most of it building queries). A shape is what `build` makes of
 * the filters present, with `sql.placeholder(name)` where a value goes; `key` must name the
 * shape exactly (two shapes never share a key) and `values` give each placeholder's value,
 * as the database takes it (a date as its ISO text). Each shape's statements are named, so
 * Postgres parses them once per connection. At most {@link MAX_PAGE_SHAPES} shapes are kept.
 */
export class PreparedPages<T extends PgTable> {
  private readonly shapes = new Map<string, { page: Prepared; count: Prepared | null; list: ListSpec }>();

  constructor(
    private readonly db: Db,
    private readonly table: T,
    private readonly maxShapes = MAX_PAGE_SHAPES,
  ) {}

  async page(key: string, build: () => ListSpec, values: Record<string, unknown>, page: PageQuery): Promise<Page<T>> {
    const offset = offsetOf(page);
    const all = { ...values, [LIMIT]: page.pageSize, [OFFSET]: offset };
    let shape = this.shapes.get(key);
    if (!shape) {
      const list = build();
      const statement = pageStatement(this.db, this.table, list, sql.placeholder(LIMIT), sql.placeholder(OFFSET));
      if (this.shapes.size >= this.maxShapes) {
        return toPage<T>((await statement.execute(all)) as Row[], offset, () => countStatement(this.db, this.table, list).execute(values) as Promise<Array<{ n: number }>>);
      }
      shape = { page: statement.prepare(nextStatementName()), count: null, list };
      this.shapes.set(key, shape);
    }
    const found = shape;
    return toPage<T>((await found.page.execute(all)) as Row[], offset, async () => {
      found.count ??= countStatement(this.db, this.table, found.list).prepare(nextStatementName());
      return (await found.count.execute(values)) as Array<{ n: number }>;
    });
  }

  /** Shapes prepared so far. */
  get size(): number {
    return this.shapes.size;
  }
}
