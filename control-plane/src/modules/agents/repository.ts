import { and, asc, desc, eq, ilike, sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import pg from 'pg';
import { AppError } from '@vap/shared';
import { poolOf } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { PreparedPages } from '../../db/page-query.js';
import type { ListSpec } from '../../db/page-query.js';
import { ReadCoalescer } from '../../db/read-coalescer.js';
import { ShapedStatements } from '../../db/shaped-statements.js';
import { agents } from '../../db/schema/agents.js';
import { webhooks } from '../../db/schema/webhooks.js';
import type { AgentStatus } from '../../db/schema/agents.js';
import { agentVersions } from '../../db/schema/agent-versions.js';
import { syncAgentKnowledgeBase } from '../knowledge-base/assignments.js';
import type { ListAgentsQuery } from './schemas.js';

export type AgentRow = typeof agents.$inferSelect;

/**
 * GET by id, the hottest read, as plain SQL: one named (server-prepared) statement per
 * connection and the row mapped by hand, skipping drizzle's per-call query plumbing and
 * per-column mapping. Must list the same columns as `agents` (a test compares it with drizzle).
 */
const FIND_BY_ID_SQL =
  'select id, tenant_id, name, status, version, published_version, tags, config, llm_api_key_encrypted, created_at, updated_at from agents where tenant_id = $1 and id = $2';

interface AgentSqlRow {
  id: string;
  tenant_id: string;
  name: string;
  status: AgentRow['status'];
  version: number;
  published_version: number | null;
  tags: string[];
  config: Record<string, unknown>;
  llm_api_key_encrypted: string | null;
  /** Dates from pg's parser; strings through drizzle's `execute`, which maps them as below. */
  created_at: Date | string;
  updated_at: Date | string;
}

const toDate = (v: Date | string): Date => (v instanceof Date ? v : new Date(v));

/** Type parsers that leave every column as the text Postgres sent (parsed by {@link parseRaw}). */
const RAW_TEXT = { getTypeParser: () => (value: string) => value };

/**
 * Agents whose last parsed row {@link AgentRepository.find} keeps (a few KB each: the raw
 * text, the row, and what callers memoize on it). A GET of an agent not among them parses.
 */
const PARSED_ROWS = 1_000;

/** A raw row parsed with pg's own type parsers, exactly as a plain query would have. */
function parseRaw(raw: Array<string | null>, fields: pg.FieldDef[]): AgentSqlRow {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < fields.length; i++) {
    const v = raw[i];
    row[fields[i]!.name] = v === null || v === undefined ? null : pg.types.getTypeParser(fields[i]!.dataTypeID, 'text')(v);
  }
  return row as unknown as AgentSqlRow;
}

function sameText(a: Array<string | null>, b: Array<string | null>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Freezes `value` and everything reachable from it (plain objects, arrays, dates); returns it. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

const AGENT_COLUMNS = 'id, tenant_id, name, status, version, published_version, tags, config, llm_api_key_encrypted, created_at, updated_at';

/**
 * Create without knowledge-base documents in one statement (one round trip, its own
 * transaction): the agent and its version-1 record; a new agent has no assignments to clear.
 */
const INSERT_SQL = `with a as (
  insert into agents (id, tenant_id, name, status, version, published_version, tags, config, llm_api_key_encrypted)
  values ($1, $2, $3, $4, 1, null, $5::text[], $6::jsonb, $7) returning ${AGENT_COLUMNS}
), v as (
  insert into agent_versions (agent_id, tenant_id, version, snapshot, changed_fields, changes_summary, created_by)
  select a.id, a.tenant_id, 1, $6::jsonb, $8::text[], $9, $10 from a
)
select * from a`;

/** The values of {@link updateStatement}'s statement, by name. */
function updateValues(tenantId: string, id: string, write: AgentWrite, version: NewVersion, readVersion: number) {
  return {
    tenantId,
    id,
    name: write.name,
    tags: write.tags,
    config: JSON.stringify(write.config),
    llmApiKeyEncrypted: write.llmApiKeyEncrypted,
    readVersion,
    changedFields: version.changedFields,
    changesSummary: version.changesSummary,
    createdBy: version.createdBy,
  };
}

type UpdateValue = keyof ReturnType<typeof updateValues>;

/**
 * An agent's new state in one statement: the agent (only if still at `readVersion`, else no
 * row: someone else wrote in between), its version record, and, when the new configuration
 * lists no knowledge-base documents, the removal of its document assignments. `value(name)`
 * puts a value, or a placeholder for it, where it goes.
 */
function updateStatement(value: (name: UpdateValue) => unknown, clearKnowledgeBase: boolean): SQL {
  const v = (name: UpdateValue) => sql`${value(name)}`;
  const clear = clearKnowledgeBase ? sql`, k as (delete from kb_document_agents where agent_id = ${v('id')} and exists (select 1 from u))` : sql``;
  return sql`with u as (
  update agents set name = ${v('name')}, tags = ${v('tags')}::text[], config = ${v('config')}::jsonb, llm_api_key_encrypted = ${v('llmApiKeyEncrypted')},
         version = ${v('readVersion')}::int + 1, updated_at = now()
   where tenant_id = ${v('tenantId')} and id = ${v('id')} and version = ${v('readVersion')}::int returning ${sql.raw(AGENT_COLUMNS)}
), v as (
  insert into agent_versions (agent_id, tenant_id, version, snapshot, changed_fields, changes_summary, created_by)
  select u.id, u.tenant_id, u.version, ${v('config')}::jsonb, ${v('changedFields')}::text[], ${v('changesSummary')}, ${v('createdBy')} from u
)${clear}
select * from u`;
}

/** The update outside a transaction, built once: placeholders for its values. */
const placeholder = (name: UpdateValue) => sql.placeholder(name);

/**
 * Optimistic single-statement updates tried this many times before taking the row lock. One:
 * under contention (the bench's mixed load renames 8 agents ~100 times a second) every retry
 * re-queues for a pool connection, and 3 tries made PATCH p50 7x the other requests'.
 */
const OPTIMISTIC_TRIES = 1;

function fromSql(r: AgentSqlRow): AgentRow {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    status: r.status,
    version: r.version,
    publishedVersion: r.published_version,
    tags: r.tags,
    config: r.config,
    llmApiKeyEncrypted: r.llm_api_key_encrypted,
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}
export type AgentVersionRow = typeof agentVersions.$inferSelect;

/** What a write stores: the configuration (without the secret) and the sealed secret. */
export interface AgentWrite {
  name: string;
  tags: string[];
  config: Record<string, unknown>;
  llmApiKeyEncrypted: string | null;
}

export interface NewVersion {
  changedFields: string[];
  changesSummary: string;
  createdBy: string;
}

const SORT_COLUMNS = { name: agents.name, createdAt: agents.createdAt, updatedAt: agents.updatedAt } as const;

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/** Reads a tenant's agent under a row lock, for read-modify-write inside a transaction. */
async function lockAgent(tx: Tx, tenantId: string, id: string): Promise<AgentRow | undefined> {
  const [row] = await tx
    .select()
    .from(agents)
    .where(and(eq(agents.tenantId, tenantId), eq(agents.id, id)))
    .for('update');
  return row;
}

function nameConflict(name: string): AppError {
  return new AppError('conflict', `An agent named "${name}" already exists in this account.`);
}

/** The configuration's knowledge-base document ids (kept in step with kb_document_agents). */
function knowledgeBaseIdsOf(write: AgentWrite): string[] {
  const ids = write.config.knowledgeBaseIds;
  return Array.isArray(ids) ? ids.filter((v): v is string => typeof v === 'string') : [];
}

/** The list's statement for the filters `q` gives, with placeholders where their values go. */
function listShape(q: ListAgentsQuery, tagsMatch: 'all' | 'any' | null): ListSpec {
  const where: SQL[] = [eq(agents.tenantId, sql.placeholder('tenantId'))];
  if (q.status) where.push(eq(agents.status, sql.placeholder('status')));
  if (q.search) where.push(ilike(agents.name, sql.placeholder('search')));
  if (tagsMatch) {
    const arr = sql`${sql.placeholder('tags')}::text[]`;
    where.push(tagsMatch === 'all' ? sql`${agents.tags} @> ${arr}` : sql`${agents.tags} && ${arr}`);
  }
  const order = q.sortOrder === 'asc' ? asc : desc;
  return { where: and(...where), orderBy: [order(SORT_COLUMNS[q.sortBy]), order(agents.id)] };
}

/** Every query is scoped by tenant: another tenant's agent is indistinguishable from a missing one. */
export class AgentRepository {
  /** The pool behind `db`. */
  private readonly pool: pg.Pool;
  /** The last row {@link find} parsed per agent id, with the raw text it came from (LRU). */
  private readonly parsed = new Map<string, { raw: Array<string | null>; row: AgentRow }>();
  /** Finds in flight by tenant and agent id. */
  private readonly finds = new ReadCoalescer<string, AgentRow | undefined>();
  /** The list's statements, one per shape of filters and sort. */
  private readonly pages: PreparedPages<typeof agents>;
  /** Statements outside drizzle's query builder, built once. */
  private readonly statements: ShapedStatements;

  constructor(private readonly db: Db) {
    this.pool = poolOf(db);
    this.pages = new PreparedPages(db, agents);
    this.statements = new ShapedStatements(this.pool);
  }

  async insert(tenantId: string, id: string, status: AgentStatus, write: AgentWrite, version: NewVersion): Promise<AgentRow> {
    try {
      if (knowledgeBaseIdsOf(write).length === 0) {
        const { rows } = await this.pool.query<AgentSqlRow>(INSERT_SQL, [
          id,
          tenantId,
          write.name,
          status,
          write.tags,
          JSON.stringify(write.config),
          write.llmApiKeyEncrypted,
          version.changedFields,
          version.changesSummary,
          version.createdBy,
        ]);
        return fromSql(rows[0]!);
      }
      return await this.db.transaction(async (tx) => {
        const [row] = await tx
          .insert(agents)
          .values({ id, tenantId, status, version: 1, publishedVersion: null, ...write })
          .returning();
        await tx.insert(agentVersions).values({ agentId: id, tenantId, version: 1, snapshot: write.config, ...version });
        await syncAgentKnowledgeBase(tx, tenantId, id, knowledgeBaseIdsOf(write));
        return row!;
      });
    } catch (err) {
      if (isUniqueViolation(err, 'agents_tenant_name_key')) throw nameConflict(write.name);
      throw err;
    }
  }

  /**
   * The agent as stored now (every call reads the row). The columns arrive as raw text; when
   * they equal the text of the last row this repository parsed for the agent, that row (deep
   * frozen) is returned again instead of parsing the JSON configuration, dates and tags anew,
   * so callers can memoize what they derive from it by identity (the service's view, the
   * serialized body). A changed column in any way, by any writer, parses afresh. Concurrent
   * finds of one agent share a round trip, but only one issued after they were called
   * ({@link ReadCoalescer}), so a find never answers from before a write its caller saw.
   */
  async find(tenantId: string, id: string): Promise<AgentRow | undefined> {
    return this.finds.read(`${tenantId}|${id}`, () => this.read(tenantId, id));
  }

  private async read(tenantId: string, id: string): Promise<AgentRow | undefined> {
    const res = await this.pool.query<Array<string | null>>({ name: 'agents_by_id_raw', text: FIND_BY_ID_SQL, values: [tenantId, id], rowMode: 'array', types: RAW_TEXT });
    const raw = res.rows[0];
    if (!raw) return undefined;
    const known = this.parsed.get(id);
    if (known && sameText(known.raw, raw)) {
      // Most recently used last (Map keeps insertion order).
      this.parsed.delete(id);
      this.parsed.set(id, known);
      return known.row;
    }
    const row = deepFreeze(fromSql(parseRaw(raw, res.fields)));
    this.parsed.delete(id);
    this.parsed.set(id, { raw, row });
    if (this.parsed.size > PARSED_ROWS) this.parsed.delete(this.parsed.keys().next().value!);
    return row;
  }

  /**
   * A page of the tenant's agents. Its statement is built once per shape (which filters are
   * given, the sort) with placeholders for the values ({@link PreparedPages}).
   */
  async list(tenantId: string, q: ListAgentsQuery): Promise<{ rows: AgentRow[]; total: number }> {
    const values: Record<string, unknown> = { tenantId };
    if (q.status) values.status = q.status;
    if (q.search) values.search = `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const tags = (q.tags ?? '')
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    const tagsMatch = tags.length === 0 ? null : q.tagsMatch === 'all' ? 'all' : 'any';
    if (tagsMatch) values.tags = tags;
    // The shape: which values listShape needs placeholders for, how tags match, the sort.
    const key = `${Object.keys(values).join(',')}|${tagsMatch}|${q.sortBy}|${q.sortOrder}`;
    return this.pages.page(key, () => listShape(q, tagsMatch), values, q);
  }

  /**
   * Reads the agent under a row lock, lets `change` compute the new state, writes it and
   * its version record in one transaction, so concurrent PATCHes get consecutive versions.
   * `change` returns null to write nothing.
   *
   * When the result lists no knowledge-base documents the write is one statement guarded by
   * the version read (read + write: two round trips, no transaction); a concurrent writer makes
   * it read again and recompute, and after a few lost races it takes the row lock below.
   */
  async update(
    tenantId: string,
    id: string,
    change: (row: AgentRow) => { write: AgentWrite; version: NewVersion } | null,
  ): Promise<AgentRow | undefined> {
    let attemptedName = '';
    try {
      for (let attempt = 0; attempt < OPTIMISTIC_TRIES; attempt++) {
        const row = await this.find(tenantId, id);
        if (!row) return undefined;
        const next = change(row);
        if (!next) return row;
        if (knowledgeBaseIdsOf(next.write).length > 0) break;
        attemptedName = next.write.name;
        const values = updateValues(tenantId, id, next.write, next.version, row.version);
        const { rows } = await this.statements.query<AgentSqlRow>('update+clear', () => updateStatement(placeholder, true), values);
        if (rows[0]) return fromSql(rows[0]);
      }
      return await this.db.transaction(async (tx) => {
        const row = await lockAgent(tx, tenantId, id);
        if (!row) return undefined;
        const next = change(row);
        if (!next) return row;
        attemptedName = next.write.name;
        const kb = knowledgeBaseIdsOf(next.write);
        const values = updateValues(tenantId, id, next.write, next.version, row.version);
        const { rows } = await tx.execute<AgentSqlRow & Record<string, unknown>>(updateStatement((name) => sql.param(values[name]), kb.length === 0));
        if (kb.length > 0) await syncAgentKnowledgeBase(tx, tenantId, id, kb);
        return rows[0] && fromSql(rows[0]);
      });
    } catch (err) {
      if (isUniqueViolation(err, 'agents_tenant_name_key')) throw nameConflict(attemptedName);
      throw err;
    }
  }

  async setStatus(tenantId: string, id: string, from: AgentStatus[], to: AgentStatus): Promise<{ row: AgentRow | undefined; changed: boolean }> {
    return this.db.transaction(async (tx) => {
      const row = await lockAgent(tx, tenantId, id);
      if (!row || row.status === to || !from.includes(row.status)) return { row, changed: false };
      const [updated] = await tx.update(agents).set({ status: to, updatedAt: sql`now()` }).where(eq(agents.id, id)).returning();
      return { row: updated, changed: true };
    });
  }

  /**
   * Marks the current version published; returns the agent, or undefined when missing.
   * Republishing keeps the first `publishedAt`, and the notes unless new ones are given.
   */
  async publish(tenantId: string, id: string, notes: string | undefined): Promise<AgentRow | undefined> {
    return this.db.transaction(async (tx) => {
      const row = await lockAgent(tx, tenantId, id);
      if (!row) return undefined;
      await tx
        .update(agentVersions)
        .set({ publishedAt: sql`coalesce(${agentVersions.publishedAt}, now())`, publishNotes: notes ?? sql`${agentVersions.publishNotes}` })
        .where(and(eq(agentVersions.agentId, id), eq(agentVersions.version, row.version)));
      const [updated] = await tx.update(agents).set({ publishedVersion: row.version, updatedAt: sql`now()` }).where(eq(agents.id, id)).returning();
      return updated;
    });
  }

  /** Deletes the agent and its webhooks (with their pending deliveries); conversations are kept. */
  async delete(tenantId: string, id: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const res = await tx
        .delete(agents)
        .where(and(eq(agents.tenantId, tenantId), eq(agents.id, id)))
        .returning({ id: agents.id });
      if (res.length === 0) return false;
      await tx.delete(webhooks).where(and(eq(webhooks.tenantId, tenantId), eq(webhooks.agentId, id)));
      return true;
    });
  }

  async versions(tenantId: string, id: string): Promise<AgentVersionRow[]> {
    return this.db
      .select()
      .from(agentVersions)
      .where(and(eq(agentVersions.tenantId, tenantId), eq(agentVersions.agentId, id)))
      .orderBy(desc(agentVersions.version));
  }

  async version(tenantId: string, id: string, version: number): Promise<AgentVersionRow | undefined> {
    const [row] = await this.db
      .select()
      .from(agentVersions)
      .where(and(eq(agentVersions.tenantId, tenantId), eq(agentVersions.agentId, id), eq(agentVersions.version, version)));
    return row;
  }
}
