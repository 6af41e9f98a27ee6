import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import type pg from 'pg';
import { newId } from '@vap/shared';
import { openDatabase, runMigrations } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import type { KbChunk } from '../../src/modules/knowledge-base/types.js';

/**
 * PGlite (Postgres in WebAssembly) with pgvector, served on a loopback port over the
 * Postgres wire protocol so the app's own `pg` pool, migrations and SQL run against it.
 * PGlite is one backend: the socket server queues queries from all connections, so a
 * pool of one connection keeps transactions from interleaving.
 */
export async function startPgliteWithVector(): Promise<{ database: Database; stop(): Promise<void> }> {
  const db = await PGlite.create({ extensions: { vector } });
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1' });
  await server.start();
  const database = openDatabase(`postgres://postgres@${server.getServerConn()}/postgres`, 1);
  await runMigrations(database);
  return {
    database,
    stop: async () => {
      await database.close();
      await server.stop();
      await db.close();
    },
  };
}

export async function insertTenant(pool: pg.Pool): Promise<string> {
  const id = newId('ten');
  await pool.query(`insert into tenants (id, name, slug, plan) values ($1, $2, $1, 'enterprise')`, [id, `KB ${id}`]);
  return id;
}

export async function insertDocument(pool: pg.Pool, tenantId: string, name: string, metadata: Record<string, string> = {}): Promise<string> {
  const id = newId('kb');
  await pool.query(
    `insert into kb_documents (id, tenant_id, name, filename, mime_type, document_type, size_bytes, storage_key, metadata)
     values ($1, $2, $3, $4, 'text/plain', 'text', 100, $1, $5)`,
    [id, tenantId, name, `${name}.txt`, JSON.stringify(metadata)],
  );
  return id;
}

export function chunksOf(texts: string[], pageNumber: number | null = null): KbChunk[] {
  return texts.map((text, position) => ({ position, text, tokenCount: text.split(/\s+/).length, pageNumber, context: null }));
}

/**
 * Deterministic test vectors: one axis per topic (8 dimensions), plus a little of a second
 * axis so no two vectors are identical. A query "about" a topic is close to every chunk of
 * that topic whatever its words: the paraphrase case, independent of any embedder.
 */
export const TOPICS = ['hours', 'refunds', 'shipping', 'parking', 'allergens', 'wine', 'staff', 'garden'] as const;
export function topicVector(topic: (typeof TOPICS)[number], nudge = 0, dims = 8): Float32Array {
  const v = new Float32Array(dims);
  const axis = TOPICS.indexOf(topic) % dims;
  v[axis] = 1;
  v[(axis + 1) % dims] = nudge;
  return v;
}

/** Equally similar to every topic (cosine about 0.35 with each): an identifier's embedding, close to nothing. */
export function neutralVector(dims = 8): Float32Array {
  return new Float32Array(dims).fill(1);
}
