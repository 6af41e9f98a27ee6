import { z } from 'zod';
import { agentConfigSchema, llmSchema } from '@vap/shared';
import { pageQueryShape } from '../../http/pagination.js';

export { agentConfigSchema, personaSchema, voiceSchema, llmSchema, transcriptionSchema } from '@vap/shared';
export type { AgentConfig } from '@vap/shared';
const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const requiredText = (max: number) => z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

/**
 * The PATCH body: every field of the create schema optional at every depth, `null`
 * clearing an optional field. Rules that span fields (model for provider, required
 * fields) are checked on the merged result.
 */
function deepPartial(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodOptional) return deepPartial(schema.unwrap() as z.ZodType);
  if (schema instanceof z.ZodObject) {
    const shape = Object.fromEntries(Object.entries(schema.shape as Record<string, z.ZodType>).map(([k, v]) => [k, deepPartial(v).nullable().optional()]));
    return z.strictObject(shape);
  }
  return schema;
}

export const agentPatchSchema = (deepPartial(agentConfigSchema) as z.ZodObject).describe('Any agent fields; nested objects may be partial; null clears an optional field.');

const llmOutSchema = llmSchema.omit({ apiKey: true }).extend({ apiKeySet: z.boolean().optional().describe('true when a write-only apiKey is stored') });

/** An agent as returned: no write-only secrets (the serializer drops unknown keys too). */
export const agentSchema = agentConfigSchema
  .extend({
    id: z.string(),
    status: z.enum(['active', 'inactive', 'draft']),
    version: z.number().int(),
    publishedVersion: z.number().int().nullable(),
    llm: llmOutSchema,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Agent' });

export const agentIdParams = z.object({ agentId: z.string().min(1) });
export const versionParams = z.object({
  agentId: z.string().min(1),
  versionNumber: z.coerce.number().int('must be a positive integer').min(1, 'must be a positive integer'),
});

export const listAgentsQuery = z.strictObject({
  ...pageQueryShape,
  status: z.enum(['active', 'inactive', 'draft']).optional(),
  search: z.string().max(100).optional(),
  tags: z.string().max(1100).optional().describe('Comma-separated tags'),
  tagsMatch: z.enum(['any', 'all']).default('any').describe('any: agents with at least one of the tags; all: agents with every tag'),
  sortBy: z.enum(['name', 'createdAt', 'updatedAt']).default('createdAt'),
});
export type ListAgentsQuery = z.infer<typeof listAgentsQuery>;

export const versionRecordSchema = z
  .object({
    version: z.number().int(),
    createdAt: z.string(),
    createdBy: z.string(),
    changesSummary: z.string(),
    changedFields: z.array(z.string()),
    publishedAt: z.string().optional(),
    publishNotes: z.string().optional(),
  })
  .meta({ id: 'AgentVersion' });

export const versionDetailSchema = versionRecordSchema.extend({ config: z.record(z.string(), z.unknown()).describe('The full configuration at this version (secrets excluded)') });

export const publishBody = z.strictObject({ notes: text(2000).optional() }).nullish();
export const duplicateBody = z.strictObject({ name: requiredText(100) });
