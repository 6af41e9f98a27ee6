import { randomBytes } from 'node:crypto';
import { AppError, newId, validationError } from '@vap/shared';
import type { OutboundGuard } from '@vap/shared';
import { toPage } from '../../http/pagination.js';
import type { SecretBox } from '../../secret-box.js';
import type { Principal } from '../auth/principal.js';
import type { AttemptRow, DeliveryRow, WebhookRepository, WebhookRow } from './repository.js';
import type { CreateWebhookInput, ListDeliveriesQuery, ListWebhooksQuery, PatchWebhookInput } from './schemas.js';
import { checkWebhookUrl } from './url-rules.js';

/** A generated signing secret: `whsec_` and 32 random bytes in base64url. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function view(row: WebhookRow) {
  return {
    id: row.id,
    agentId: row.agentId,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    secretHint: row.secretHint,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function deliveryView(row: DeliveryRow, attempts: AttemptRow[]) {
  return {
    id: row.eventId,
    webhookId: row.webhookId,
    eventType: row.eventType,
    status: row.status,
    attemptCount: row.totalAttempts,
    replays: row.replays,
    nextAttemptAt: row.nextAttemptAt?.toISOString() ?? null,
    lastStatusCode: row.lastStatusCode,
    lastError: row.lastError,
    createdAt: row.createdAt.toISOString(),
    deliveredAt: row.deliveredAt?.toISOString() ?? null,
    attempts: attempts.map((a) => ({ attempt: a.attempt, run: a.run, at: a.startedAt.toISOString(), statusCode: a.statusCode, latencyMs: a.latencyMs, success: a.success, error: a.error })),
  };
}

const hint = (secret: string) => `…${secret.slice(-4)}`;
const notFound = (id: string) => new AppError('not-found', `Webhook ${id} was not found.`);

/**
 * Webhook configurations and their delivery log. Secrets are sealed at rest and returned
 * only by create; the URL is checked against the outbound guard on every write (and again
 * before every delivery, by the dispatcher).
 */
export class WebhookService {
  constructor(
    private readonly deps: {
      repo: WebhookRepository;
      secrets: SecretBox;
      guard: OutboundGuard;
      appEnv: 'development' | 'production';
      /** Wakes the local dispatcher after a replay. */
      wake?: () => void;
      now?: () => number;
    },
  ) {}

  async create(p: Principal, input: CreateWebhookInput) {
    if (!(await this.deps.repo.agentExists(p.tenantId, input.agentId))) throw validationError('agentId', `agent ${input.agentId} does not exist in this account`);
    const url = await checkWebhookUrl(input.url, this.deps);
    const secret = input.secret ?? generateWebhookSecret();
    const row = await this.deps.repo.insert({
      id: newId('whk'),
      tenantId: p.tenantId,
      agentId: input.agentId,
      url,
      events: input.events,
      enabled: input.enabled,
      secretSealed: this.deps.secrets.seal(secret),
      secretHint: hint(secret),
    });
    return { ...view(row), secret };
  }

  async list(p: Principal, q: ListWebhooksQuery) {
    const { rows, total } = await this.deps.repo.list(p.tenantId, q);
    return toPage(rows.map(view), total, q);
  }

  async get(p: Principal, id: string) {
    return view(await this.found(p, id));
  }

  async update(p: Principal, id: string, patch: PatchWebhookInput) {
    if (Object.keys(patch).length === 0) throw validationError('', 'must change at least one of url, events, secret, enabled');
    await this.found(p, id);
    const set: Parameters<WebhookRepository['update']>[2] = {};
    if (patch.url !== undefined) set.url = await checkWebhookUrl(patch.url, this.deps);
    if (patch.events !== undefined) set.events = patch.events;
    if (patch.enabled !== undefined) set.enabled = patch.enabled;
    if (patch.secret !== undefined) {
      set.secretSealed = this.deps.secrets.seal(patch.secret);
      set.secretHint = hint(patch.secret);
    }
    const row = await this.deps.repo.update(p.tenantId, id, set);
    if (!row) throw notFound(id);
    return view(row);
  }

  async delete(p: Principal, id: string): Promise<void> {
    if (!(await this.deps.repo.delete(p.tenantId, id))) throw notFound(id);
  }

  async deliveries(p: Principal, id: string, q: ListDeliveriesQuery) {
    await this.found(p, id);
    const { rows, attempts, total } = await this.deps.repo.deliveries(id, q);
    return toPage(
      rows.map((r) => deliveryView(r, attempts.filter((a) => a.eventId === r.eventId))),
      total,
      q,
    );
  }

  async delivery(p: Principal, id: string, deliveryId: string) {
    await this.found(p, id);
    const found = await this.deps.repo.delivery(id, deliveryId);
    if (!found) throw new AppError('not-found', `Delivery ${deliveryId} of webhook ${id} was not found.`);
    return { ...deliveryView(found.row, found.attempts), payload: JSON.parse(found.body) as Record<string, unknown> };
  }

  /** Starts a new run of six attempts for a delivered or failed delivery (same id and body, fresh timestamp and signature). */
  async replay(p: Principal, id: string, deliveryId: string) {
    const webhook = await this.found(p, id);
    if (!webhook.enabled) throw new AppError('invalid-state', `Webhook ${id} is disabled; enable it before replaying.`);
    const result = await this.deps.repo.replay(id, deliveryId, new Date((this.deps.now ?? Date.now)()));
    if (result === undefined) throw new AppError('not-found', `Delivery ${deliveryId} of webhook ${id} was not found.`);
    if (result === 'busy') throw new AppError('invalid-state', `Delivery ${deliveryId} is still pending; it can be replayed once delivered or failed.`);
    this.deps.wake?.();
    // The state the replay created (a dispatcher may already be sending it), with the log so far.
    const found = await this.deps.repo.delivery(id, deliveryId);
    const attempts = (found?.attempts ?? []).filter((a) => a.attempt <= result.totalAttempts);
    return { ...deliveryView(result, attempts), payload: JSON.parse(found?.body ?? '{}') as Record<string, unknown> };
  }

  private async found(p: Principal, id: string): Promise<WebhookRow> {
    const row = await this.deps.repo.find(p.tenantId, id);
    if (!row) throw notFound(id);
    return row;
  }
}
