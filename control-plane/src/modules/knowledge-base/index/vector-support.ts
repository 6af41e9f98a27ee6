import type pg from 'pg';

/**
 * How the index finds nearest vectors on this database. `pgvector`: HNSW indexes over
 * `embedding::vector(dims)`, one partial index per model. `fallback`: exact cosine in the
 * process over a cache of the tenant's vectors (see {@link FallbackVectorCache}).
 */
export type VectorSupport =
  | {
      kind: 'pgvector';
      /** The installed extension's version, e.g. `0.8.0`. */
      version: string;
      /** pgvector ≥ 0.8 resumes an HNSW scan until enough rows pass the tenant filter. */
      iterativeScan: boolean;
    }
  | { kind: 'fallback'; reason: string };

/**
 * Tries to enable pgvector (`create extension if not exists vector`) and reports what the
 * index can use. Never throws for a missing or forbidden extension: that is the fallback,
 * with the server's message as `reason` (log it at start-up).
 */
export async function detectVectorSupport(pool: pg.Pool): Promise<VectorSupport> {
  try {
    await pool.query('create extension if not exists vector');
  } catch (err) {
    // Two replicas creating it at the same moment: one wins with a unique violation for the other.
    const installed = await installedVersion(pool);
    if (installed === null) return { kind: 'fallback', reason: (err as Error).message };
  }
  const version = await installedVersion(pool);
  if (version === null) return { kind: 'fallback', reason: 'extension vector not installed' };
  return { kind: 'pgvector', version, iterativeScan: versionAtLeast(version, [0, 8, 0]) };
}

async function installedVersion(pool: pg.Pool): Promise<string | null> {
  const r = await pool.query<{ extversion: string }>(`select extversion from pg_extension where extname = 'vector'`);
  return r.rows[0]?.extversion ?? null;
}

function versionAtLeast(version: string, min: [number, number, number]): boolean {
  const parts = version.split('.').map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const a = parts[i] ?? 0;
    if (a !== min[i]) return a > min[i]!;
  }
  return true;
}
