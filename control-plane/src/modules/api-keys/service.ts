import { AppError, newId, validationError } from '@vap/shared';
import { toPage } from '../../http/pagination.js';
import type { Principal } from '../auth/principal.js';
import { generateKey, hashKey, keyPrefix } from './key-material.js';
import type { KeyEnvironment } from './key-material.js';
import type { ApiKeyRepository, ApiKeyRow } from './repository.js';
import type { CreateApiKeyInput, ListApiKeysQuery } from './schemas.js';

function view(row: ApiKeyRow) {
  return {
    id: row.id,
    name: row.name,
    keyPrefix: row.keyPrefix,
    environment: row.environment,
    scopes: row.scopes,
    canManageApiKeys: row.canManageApiKeys,
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    createdBy: row.createdBy,
  };
}

/**
 * API keys. A caller can only hand out what it holds: the new key's scopes must be a
 * subset of the caller's, so no key can mint a more powerful one.
 */
export class ApiKeyService {
  constructor(
    private readonly deps: {
      repo: ApiKeyRepository;
      defaultEnvironment: KeyEnvironment;
      now?: () => Date;
      /** Told of every revocation once it is stored (drops cached lookups of the key on every replica). */
      onRevoked?: (tenantId: string, keyId: string) => Promise<void>;
    },
  ) {}

  async create(p: Principal, input: CreateApiKeyInput) {
    const missing = input.scopes.filter((s) => !p.scopes.has(s));
    if (missing.length > 0) throw new AppError('forbidden', `You cannot grant scopes you do not hold: ${missing.join(', ')}.`);
    if (input.canManageApiKeys && !p.canManageApiKeys) throw new AppError('forbidden', 'You cannot grant canManageApiKeys without holding it.');
    const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
    if (expiresAt && expiresAt.getTime() <= (this.deps.now?.() ?? new Date()).getTime()) throw validationError('expiresAt', 'must be in the future');
    const { row, key } = await mintApiKey(this.deps.repo, {
      tenantId: p.tenantId,
      name: input.name,
      scopes: input.scopes,
      environment: input.environment ?? this.deps.defaultEnvironment,
      canManageApiKeys: input.canManageApiKeys,
      expiresAt,
      createdBy: p.actorId,
    });
    return { ...view(row), key };
  }

  async list(p: Principal, q: ListApiKeysQuery) {
    const { rows, total } = await this.deps.repo.list(p.tenantId, q);
    return toPage(rows.map(view), total, q);
  }

  async get(p: Principal, id: string) {
    const row = await this.deps.repo.find(p.tenantId, id);
    if (!row) throw new AppError('not-found', `API key ${id} was not found.`);
    return view(row);
  }

  async revoke(p: Principal, id: string): Promise<void> {
    if (!(await this.deps.repo.revoke(p.tenantId, id))) throw new AppError('not-found', `API key ${id} was not found.`);
    await this.deps.onRevoked?.(p.tenantId, id);
  }
}

/**
 * Stores a key (generated, or `key` when given, as at bootstrap) and returns the record
 * with the secret, which exists in clear only in this return value.
 */
export async function mintApiKey(
  repo: ApiKeyRepository,
  opts: Omit<Parameters<ApiKeyRepository['insert']>[0], 'id' | 'keyPrefix' | 'keyHash'> & { key?: string },
): Promise<{ row: ApiKeyRow; key: string }> {
  const { key: given, ...rest } = opts;
  const key = given ?? generateKey(rest.environment);
  const row = await repo.insert({ ...rest, id: newId('key'), keyPrefix: keyPrefix(key), keyHash: hashKey(key) });
  return { row, key };
}
