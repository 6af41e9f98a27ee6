import { sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { invalidField } from './problems.js';

type Executor = Pick<Db, 'execute'>;

/**
 * Keeps `kb_document_agents` equal to an agent's `knowledgeBaseIds`, in the transaction
 * that writes the agent (create, update, duplicate): every id must be a document of the
 * agent's tenant (else a 422 naming `knowledgeBaseIds`, which rolls the write back), rows
 * of documents no longer listed are removed and new ones added.
 */
export async function syncAgentKnowledgeBase(tx: Executor, tenantId: string, agentId: string, ids: readonly string[]): Promise<void> {
  const wanted = [...new Set(ids)];
  if (wanted.length > 0) {
    const found = await tx.execute<{ id: string }>(sql`select id from kb_documents where tenant_id = ${tenantId} and id = any(${sql.param(wanted)}::text[]) for key share`);
    const known = new Set(found.rows.map((r) => r.id));
    const missing = wanted.filter((id) => !known.has(id));
    if (missing.length > 0) {
      throw invalidField('knowledgeBaseIds', `${missing.length === 1 ? 'is not a document' : 'are not documents'} of this account: ${missing.join(', ')}`);
    }
  }
  await tx.execute(sql`delete from kb_document_agents where agent_id = ${agentId} and not (document_id = any(${sql.param(wanted)}::text[]))`);
  if (wanted.length > 0) {
    await tx.execute(sql`
      insert into kb_document_agents (document_id, agent_id, tenant_id)
      select d, ${agentId}, ${tenantId} from unnest(${sql.param(wanted)}::text[]) as d
      on conflict do nothing`);
  }
}

/**
 * Adds a document to agents' `knowledgeBaseIds` (upload with `agentIds`), in the upload's
 * transaction; the agents are locked, and each must be the tenant's (else 422 on `agentIds`).
 * The agent's configuration changes without a new version: assignment is the document's
 * side of the relation. Returns the agents changed.
 */
export async function assignDocumentToAgents(tx: Executor, tenantId: string, documentId: string, agentIds: readonly string[]): Promise<string[]> {
  const ids = [...new Set(agentIds)].sort();
  if (ids.length === 0) return [];
  const rows = await tx.execute<{ id: string; n: number }>(sql`
    select id, jsonb_array_length(coalesce(config->'knowledgeBaseIds', '[]'::jsonb)) as n
      from agents where tenant_id = ${tenantId} and id = any(${sql.param(ids)}::text[]) order by id for update`);
  const known = new Map(rows.rows.map((r) => [r.id, Number(r.n)]));
  const missing = ids.filter((id) => !known.has(id));
  if (missing.length > 0) throw invalidField('agentIds', `${missing.length === 1 ? 'is not an agent' : 'are not agents'} of this account: ${missing.join(', ')}`);
  const full = ids.filter((id) => (known.get(id) ?? 0) >= 50);
  if (full.length > 0) throw invalidField('agentIds', `${full.join(', ')} already ${full.length === 1 ? 'has' : 'have'} 50 knowledge-base documents, the most an agent can have`);
  await tx.execute(sql`
    update agents set config = jsonb_set(config, '{knowledgeBaseIds}', coalesce(config->'knowledgeBaseIds', '[]'::jsonb) || to_jsonb(${documentId}::text)), updated_at = now()
     where tenant_id = ${tenantId} and id = any(${sql.param(ids)}::text[]) and not coalesce(config->'knowledgeBaseIds', '[]'::jsonb) ? ${documentId}`);
  await tx.execute(sql`
    insert into kb_document_agents (document_id, agent_id, tenant_id)
    select ${documentId}, a, ${tenantId} from unnest(${sql.param(ids)}::text[]) as a
    on conflict do nothing`);
  return ids;
}

/** Removes a deleted document from its tenant's agents' `knowledgeBaseIds`; returns the agents changed. */
export async function removeDocumentFromAgents(tx: Executor, tenantId: string, documentId: string): Promise<string[]> {
  const res = await tx.execute<{ id: string }>(sql`
    update agents set config = jsonb_set(config, '{knowledgeBaseIds}', (config->'knowledgeBaseIds') - ${documentId}::text), updated_at = now()
     where tenant_id = ${tenantId} and coalesce(config->'knowledgeBaseIds', '[]'::jsonb) ? ${documentId}
    returning id`);
  return res.rows.map((r) => r.id);
}
