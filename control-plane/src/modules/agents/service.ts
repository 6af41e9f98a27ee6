import { AppError, SUBJECTS, newId } from '@vap/shared';
import type { Bus, Payload } from '@vap/shared';
import { immutableBody } from '../../http/fast-serializer.js';
import { toPage } from '../../http/pagination.js';
import { toFieldErrors } from '../../http/validation.js';
import type { SecretBox } from '../../secret-box.js';
import type { Principal } from '../auth/principal.js';
import type { AgentRepository, AgentRow, AgentVersionRow, AgentWrite } from './repository.js';
import { changedPaths, checkAgentRules, deepMerge } from './rules.js';
import { agentConfigSchema } from './schemas.js';
import type { AgentConfig, ListAgentsQuery } from './schemas.js';

/** An agent as the API returns it. */
export type AgentView = Omit<AgentConfig, 'llm'> & {
  id: string;
  status: AgentRow['status'];
  version: number;
  publishedVersion: number | null;
  llm: Omit<AgentConfig['llm'], 'apiKey'> & { apiKeySet?: boolean };
  createdAt: string;
  updatedAt: string;
};

function notFound(id: string): AppError {
  return new AppError('not-found', `Agent ${id} was not found.`);
}

function summarize(fields: string[]): string {
  if (fields.length === 0) return 'No changes';
  const shown = fields.slice(0, 10).join(', ');
  return `Changed ${shown}${fields.length > 10 ? ` and ${fields.length - 10} more` : ''}`;
}

/**
 * Agents: create, read, update with versioning, state changes, publish, duplicate.
 * Imports nothing from Fastify; every method takes the calling principal and acts only
 * inside its tenant.
 */
export class AgentService {
  private readonly repo: AgentRepository;
  private readonly bus: Bus;
  private readonly secrets: SecretBox;
  /** Views of frozen (unchanged, see `AgentRepository.find`) rows, by row identity. */
  private readonly frozenViews = new WeakMap<AgentRow, AgentView>();

  constructor(deps: { repo: AgentRepository; bus: Bus; secrets: SecretBox }) {
    this.repo = deps.repo;
    this.bus = deps.bus;
    this.secrets = deps.secrets;
  }

  /** `input` has passed the route's schema; only the cross-field rules are left to check. */
  async create(p: Principal, input: AgentConfig): Promise<AgentView> {
    this.assertRules(input);
    const write = this.toWrite(input, null);
    const row = await this.repo.insert(p.tenantId, newId('agt'), 'draft', write, { changedFields: [], changesSummary: 'Created', createdBy: p.actorId });
    await this.announce(row, 'created');
    return this.view(row);
  }

  async list(p: Principal, q: ListAgentsQuery) {
    const { rows, total } = await this.repo.list(p.tenantId, q);
    return toPage(rows.map((r) => this.view(r)), total, q);
  }

  async get(p: Principal, id: string): Promise<AgentView> {
    const row = await this.repo.find(p.tenantId, id);
    if (!row) throw notFound(id);
    return this.view(row);
  }

  /**
   * Applies a partial update: deep merge, validation of the merged whole, a new version
   * with a full snapshot and the list of changed fields. A PATCH that changes nothing
   * still counts as a version (the spec: every PATCH increments `version`).
   */
  async update(p: Principal, id: string, patch: Record<string, unknown>): Promise<AgentView> {
    if (Object.keys(patch).length === 0) throw new AppError('validation', 'The PATCH body names no field.', { errors: [{ field: '', message: 'must contain at least one agent field' }] });
    const row = await this.repo.update(p.tenantId, id, (current) => {
      const before = current.config;
      const merged = deepMerge(before, patch);
      const llmPatch = (isObject(patch.llm) ? patch.llm : {}) as Record<string, unknown>;
      const llm = merged.llm as Record<string, unknown> | undefined;
      // Leaving huggingface drops its endpoint and key unless the PATCH restates them.
      // (`llm: null` leaves no llm at all; validation below reports it as required.)
      if (llm && llm.provider !== 'huggingface' && (before.llm as Record<string, unknown>).provider === 'huggingface') {
        if (!('endpointUrl' in llmPatch)) delete llm.endpointUrl;
      }
      const config = this.validated(merged);
      // The key: a new one is sealed by toWrite; null or leaving huggingface drops it; otherwise it stays.
      const keepKey = llmPatch.apiKey !== null && config.llm.provider === 'huggingface';
      const write = this.toWrite(config, keepKey ? current.llmApiKeyEncrypted : null);
      const fields = changedPaths(before, write.config);
      if (write.llmApiKeyEncrypted !== current.llmApiKeyEncrypted) fields.push('llm.apiKey');
      fields.sort();
      return { write, version: { changedFields: fields, changesSummary: summarize(fields), createdBy: p.actorId } };
    });
    if (!row) throw notFound(id);
    await this.announce(row, 'updated');
    return this.view(row);
  }

  async remove(p: Principal, id: string): Promise<void> {
    // Its phone numbers stay provisioned and become unassigned (phone_numbers.assigned_agent_id is
    // ON DELETE SET NULL; telephony.numbers.assign.test.ts); conversations are kept.
    if (!(await this.repo.delete(p.tenantId, id))) throw notFound(id);
    await this.bus.publish('agentChanged', SUBJECTS.agentChanged.subject(p.tenantId, id), { tenantId: p.tenantId, agentId: id, version: null, change: 'deleted', at: new Date().toISOString() });
  }

  /** draft or inactive → active; activating an active agent is a no-op. */
  async activate(p: Principal, id: string): Promise<AgentView> {
    const { row, changed } = await this.repo.setStatus(p.tenantId, id, ['draft', 'inactive'], 'active');
    if (!row) throw notFound(id);
    if (changed) await this.announce(row, 'status');
    return this.view(row);
  }

  /** active → inactive; deactivating an inactive agent is a no-op; a draft was never active (409). */
  async deactivate(p: Principal, id: string): Promise<AgentView> {
    const { row, changed } = await this.repo.setStatus(p.tenantId, id, ['active'], 'inactive');
    if (!row) throw notFound(id);
    if (!changed && row.status === 'draft') throw new AppError('invalid-state', 'This agent is a draft that was never activated; there is nothing to deactivate.');
    if (changed) await this.announce(row, 'status');
    return this.view(row);
  }

  async publish(p: Principal, id: string, notes: string | undefined): Promise<AgentView> {
    const row = await this.repo.publish(p.tenantId, id, notes);
    if (!row) throw notFound(id);
    await this.announce(row, 'published');
    return this.view(row);
  }

  /** A new inactive agent at version 1 with the source's settings (its stored key included). */
  async duplicate(p: Principal, id: string, name: string): Promise<AgentView> {
    const source = await this.repo.find(p.tenantId, id);
    if (!source) throw notFound(id);
    const config = { ...source.config, name };
    const row = await this.repo.insert(
      p.tenantId,
      newId('agt'),
      'inactive',
      { name, tags: source.tags, config, llmApiKeyEncrypted: source.llmApiKeyEncrypted },
      { changedFields: [], changesSummary: `Duplicated from ${source.id} version ${source.version}`, createdBy: p.actorId },
    );
    await this.announce(row, 'created');
    return this.view(row);
  }

  async versions(p: Principal, id: string) {
    const rows = await this.repo.versions(p.tenantId, id);
    if (rows.length === 0) throw notFound(id);
    return { data: rows.map(versionView) };
  }

  async version(p: Principal, id: string, n: number) {
    const row = await this.repo.version(p.tenantId, id, n);
    if (!row) {
      if (!(await this.repo.find(p.tenantId, id))) throw notFound(id);
      throw new AppError('not-found', `Agent ${id} has no version ${n}.`);
    }
    return { ...versionView(row), config: row.snapshot };
  }

  /** Parses against the full schema (defaults, bounds) and the cross-field rules: 422 on any problem. */
  private validated(input: unknown): AgentConfig {
    const parsed = agentConfigSchema.safeParse(input);
    if (!parsed.success) {
      const { errors } = toFieldErrors(parsed.error.issues, input);
      throw new AppError('validation', 'The agent configuration breaks a rule; see errors.', { errors });
    }
    this.assertRules(parsed.data);
    return parsed.data;
  }

  private assertRules(config: AgentConfig): void {
    const errors = checkAgentRules(config);
    if (errors.length > 0) throw new AppError('validation', 'The agent configuration breaks a rule; see errors.', { errors });
  }

  /** Splits a valid configuration into what is stored in the clear and the sealed key. */
  private toWrite(config: AgentConfig, sealedKey: string | null): AgentWrite {
    const { apiKey, ...llm } = config.llm;
    const tags = [...new Set(config.tags)];
    const stored = { ...config, llm, tags, knowledgeBaseIds: [...new Set(config.knowledgeBaseIds)] };
    return { name: config.name, tags, config: stored, llmApiKeyEncrypted: apiKey !== undefined ? this.secrets.seal(apiKey) : sealedKey };
  }

  private view(row: AgentRow): AgentView {
    // A frozen row is one the repository parsed before and returns again while the stored
    // text is unchanged: its view is built once and frozen too, so the serializer can reuse
    // its JSON (see trustedSerializerCompiler).
    if (!Object.isFrozen(row)) return this.buildView(row);
    let view = this.frozenViews.get(row);
    if (!view) {
      view = immutableBody(Object.freeze(this.buildView(row)));
      Object.freeze(view.llm);
      this.frozenViews.set(row, view);
    }
    return view;
  }

  private buildView(row: AgentRow): AgentView {
    const config = row.config as unknown as AgentConfig;
    return {
      ...config,
      llm: { ...config.llm, ...(row.llmApiKeyEncrypted ? { apiKeySet: true } : {}) },
      id: row.id,
      status: row.status,
      version: row.version,
      publishedVersion: row.publishedVersion,
      createdAt: row.createdAt.toISOString(),
      updatedAt: row.updatedAt.toISOString(),
    };
  }

  private async announce(row: AgentRow, change: Payload<'agentChanged'>['change']): Promise<void> {
    await this.bus.publish('agentChanged', SUBJECTS.agentChanged.subject(row.tenantId, row.id), {
      tenantId: row.tenantId,
      agentId: row.id,
      version: row.version,
      change,
      at: new Date().toISOString(),
    });
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function versionView(v: AgentVersionRow) {
  return {
    version: v.version,
    createdAt: v.createdAt.toISOString(),
    createdBy: v.createdBy,
    changesSummary: v.changesSummary,
    changedFields: v.changedFields,
    ...(v.publishedAt ? { publishedAt: v.publishedAt.toISOString() } : {}),
    ...(v.publishNotes ? { publishNotes: v.publishNotes } : {}),
  };
}
