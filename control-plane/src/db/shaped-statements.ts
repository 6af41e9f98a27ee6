import { fillPlaceholders } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type pg from 'pg';

let statements = 0;

/**
 * A statement name no other part of this process uses. A name is bound to one text per
 * connection (pg refuses a second text under it), and several repositories share a pool.
 */
export function nextStatementName(): string {
  statements += 1;
  return `vap_shape_${statements}`;
}

/** Shapes kept per {@link ShapedStatements}; a shape beyond them is built per execution. */
export const MAX_SHAPES = 64;

const dialect = new PgDialect();

/**
 * Raw SQL statements written with drizzle's `sql` template (rows come back as pg parses
 * them, as from `db.execute`), built once per shape instead of on every execution. A shape is
 * the statement `build` returns, with `sql.placeholder(name)` where a value goes; `key` must
 * name it exactly, and `values` give each placeholder's value as the database takes it. Each
 * shape is sent as a named statement, so Postgres parses it once per connection. At most
 * `maxShapes` shapes are kept.
 */
export class ShapedStatements {
  private readonly shapes = new Map<string, { name: string; text: string; params: unknown[] }>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly maxShapes = MAX_SHAPES,
  ) {}

  async query<R extends pg.QueryResultRow>(key: string, build: () => SQL, values: Record<string, unknown>): Promise<pg.QueryResult<R>> {
    let shape = this.shapes.get(key);
    if (!shape) {
      const { sql: text, params } = dialect.sqlToQuery(build());
      if (this.shapes.size >= this.maxShapes) return this.pool.query<R>(text, fillPlaceholders(params, values));
      shape = { name: nextStatementName(), text, params };
      this.shapes.set(key, shape);
    }
    return this.pool.query<R>({ name: shape.name, text: shape.text, values: fillPlaceholders(shape.params, values) });
  }

  /** Shapes built so far. */
  get size(): number {
    return this.shapes.size;
  }
}
