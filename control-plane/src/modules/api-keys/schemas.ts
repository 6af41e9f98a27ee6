import { z } from 'zod';
import { SCOPES } from '@vap/shared';
import { pageQueryShape } from '../../http/pagination.js';

export const createApiKeyBody = z.strictObject({
  name: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
  scopes: z
    .array(z.enum(SCOPES))
    .min(1, 'must have at least one scope')
    .refine((s) => new Set(s).size === s.length, 'must not repeat a scope'),
  expiresAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' }).nullable().optional().describe('When the key stops working; null or absent: never'),
  environment: z.enum(['live', 'sandbox']).optional().describe('svc_live_ or svc_sb_ key; default: live in production, sandbox in development'),
  canManageApiKeys: z.boolean().default(false).describe('Whether this key may create and revoke API keys (only a key holding it may grant it)'),
});
export type CreateApiKeyInput = z.infer<typeof createApiKeyBody>;

export const apiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    keyPrefix: z.string().describe('Leading characters of the key, to recognise it'),
    environment: z.enum(['live', 'sandbox']),
    scopes: z.array(z.enum(SCOPES)),
    canManageApiKeys: z.boolean(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    expiresAt: z.string().nullable(),
    createdBy: z.string().nullable(),
  })
  .meta({ id: 'ApiKey' });

export const createdApiKeySchema = apiKeySchema.extend({ key: z.string().describe('The secret key. Shown only in this response; store it now.') }).meta({ id: 'CreatedApiKey' });

export const listApiKeysQuery = z.strictObject({ ...pageQueryShape, sortBy: z.enum(['createdAt', 'name', 'lastUsedAt', 'expiresAt']).default('createdAt') });
export type ListApiKeysQuery = z.infer<typeof listApiKeysQuery>;

export const apiKeyIdParams = z.object({ id: z.string().min(1) });
