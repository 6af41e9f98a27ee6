import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Logger } from 'pino';
import { AppError, newId } from '@vap/shared';
import { toPage } from '../../http/pagination.js';
import type { Principal } from '../auth/principal.js';
import { dateRange } from '../conversations/schemas.js';
import type { PhoneNumberRepository, PhoneNumberRow, PhoneNumberWithAgent } from './phone-number-repository.js';
import type { ListNumbersQuery, NumberStatsQuery, NumberStatsView, PricingQuery, ProvisionNumberInput, SearchNumbersQuery } from './phone-number-schemas.js';
import { TelephonyProviderError } from './providers/types.js';
import { CARRIER_TITLES as CARRIER_LABEL } from './providers/index.js';
import type { TelephonyProviders } from './providers/index.js';
import type { AvailableNumber, ProvisionRequest, TelephonyProvider, TelephonyProviderName } from './providers/types.js';

/** The wrapped carriers and which of them are configured (`createTelephonyProviders`). */
export type TelephonyCarriers = Pick<TelephonyProviders, 'providers' | 'status'>;

/** Order in which a search without `provider` merges carriers, and the pricing default (the first configured). */
const CARRIER_ORDER: readonly TelephonyProviderName[] = ['twilio', 'telnyx', 'vonage'];
/** Seconds a 503 from a carrier that is temporarily unreachable asks the client to wait. */
const CARRIER_RETRY_AFTER_SECONDS = 5;
const STATS_DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

/**
 * The tenant's `maxPhoneNumbers` (spec "Tenant limits"), or null for no limit. The one place
 * provisioning asks for it.
 */
// Tenants have no usage-limit columns yet (db/schema/tenants.ts; the spec's tenant limits come
// with the tenants work, which has no issue yet): read `usageLimits.maxPhoneNumbers` here then.
// Until then: no limit.
export async function maxPhoneNumbersOf(_tenantId: string): Promise<number | null> {
  return null;
}

/** The platform's inbound callbacks a number of `provider` is pointed at (spec "Inbound provider callbacks"). */
export function webhookUrlsFor(provider: TelephonyProviderName, publicUrl: string): Pick<ProvisionRequest, 'voiceWebhookUrl' | 'statusWebhookUrl' | 'smsWebhookUrl'> {
  const base = publicUrl.replace(/\/$/, '');
  switch (provider) {
    case 'twilio':
      return { voiceWebhookUrl: `${base}/webhooks/twilio/voice`, statusWebhookUrl: `${base}/webhooks/twilio/status`, smsWebhookUrl: `${base}/webhooks/twilio/sms` };
    case 'vonage':
      return { voiceWebhookUrl: `${base}/webhooks/vonage/voice/answer`, statusWebhookUrl: `${base}/webhooks/vonage/voice/event` };
    case 'telnyx':
      // Telnyx posts call events to the same connection webhook as the call itself.
      return { voiceWebhookUrl: `${base}/webhooks/telnyx/voice` };
  }
}

/**
 * A failed carrier call as a problem: 503 `unavailable` when retrying may help (timeouts,
 * network errors, 408, 429, 5xx), 502 `carrier-error` when it will not (the carrier refused).
 * The carrier's own message is not echoed (it goes to the log with the cause).
 */
export function carrierProblem(err: unknown, provider: TelephonyProviderName, action: string): AppError {
  // Already a problem: a carrier that is not configured says which variables to set (503).
  if (err instanceof AppError) return err;
  const who = CARRIER_LABEL[provider];
  if (err instanceof TelephonyProviderError) {
    const status = err.status === undefined ? err.code : `HTTP ${err.status}`;
    if (err.retryable) {
      return new AppError('unavailable', `${who} is unreachable or failing (${status}) and did not ${action}; nothing was changed. Retry later.`, {
        cause: err,
        headers: { 'retry-after': String(CARRIER_RETRY_AFTER_SECONDS) },
      });
    }
    return new AppError('carrier-error', `${who} refused to ${action} (${status}, ${err.code}); nothing was changed.`, { cause: err });
  }
  return new AppError('carrier-error', `${who} answered in a way the platform did not understand and did not ${action}; nothing was changed.`, { cause: err });
}

function view(row: PhoneNumberRow) {
  return {
    id: row.id,
    phoneNumber: row.phoneNumber,
    friendlyName: row.friendlyName,
    country: row.country,
    provider: row.provider,
    capabilities: row.capabilities as ('voice' | 'sms' | 'mms')[],
    assignedAgentId: row.assignedAgentId,
    status: row.status,
    monthlyCostUsd: row.monthlyCostUsd,
    provisionedAt: row.provisionedAt.toISOString(),
    releasedAt: row.releasedAt?.toISOString() ?? null,
  };
}
const listView = (row: PhoneNumberWithAgent) => ({ ...view(row), assignedAgentName: row.assignedAgentName });

const numberNotFound = (id: string) => new AppError('not-found', `Phone number ${id} was not found.`);
const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;

/**
 * The phone-number API (#9): carrier search, provisioning, assignment, release, statistics
 * and pricing. Carrier calls go through the injected {@link TelephonyProvider}s (each already
 * wrapped with retries and metrics); nothing is stored unless the carrier succeeded, and a
 * number bought but not stored is released again.
 */
export class PhoneNumberService {
  constructor(
    private readonly deps: {
      repo: PhoneNumberRepository;
      carriers: TelephonyCarriers;
      /** `PUBLIC_URL`: the base of the webhook addresses given to the carriers. */
      publicUrl: string;
      log: Logger;
      now?: () => number;
    },
  ) {}

  /**
   * Available numbers. With `provider`: that carrier. Without: every configured carrier at
   * once, each asked for `limit`, merged round-robin in carrier order and cut to `limit`;
   * a carrier that fails is left out (logged) as long as one answered.
   */
  async search(q: SearchNumbersQuery) {
    const names = q.provider ? [q.provider] : this.configured();
    if (names.length === 0) throw new AppError('unavailable', 'No telephony carrier is configured on this platform.');
    const query = { country: q.country, limit: q.limit, ...(q.areaCode ? { areaCode: q.areaCode } : {}), ...(q.contains ? { contains: q.contains } : {}), ...(q.capabilities ? { capabilities: q.capabilities } : {}), ...(q.tollFree !== undefined ? { tollFree: q.tollFree } : {}) };
    const settled = await Promise.allSettled(names.map((name) => this.carrier(name).searchNumbers(query)));
    const lists: (AvailableNumber & { provider: TelephonyProviderName })[][] = [];
    const failures: AppError[] = [];
    settled.forEach((s, i) => {
      const provider = names[i]!;
      if (s.status === 'fulfilled') lists.push(s.value.map((n) => ({ ...n, provider })));
      else {
        failures.push(carrierProblem(s.reason, provider, 'search numbers'));
        this.deps.log.warn({ err: s.reason, provider }, 'number search failed at a carrier');
      }
    });
    if (lists.length === 0) throw failures.find((f) => f.slug === 'unavailable') ?? failures[0]!;
    const merged: (AvailableNumber & { provider: TelephonyProviderName })[] = [];
    for (let i = 0; merged.length < q.limit && lists.some((l) => i < l.length); i++) {
      for (const l of lists) if (i < l.length && merged.length < q.limit) merged.push(l[i]!);
    }
    return {
      numbers: merged.map((n) => ({ phoneNumber: n.phoneNumber, country: n.country, region: n.region, locality: n.locality, provider: n.provider, capabilities: n.capabilities, tollFree: n.tollFree, monthlyCostUsd: n.monthlyCostUsd })),
    };
  }

  /**
   * Buys `phoneNumber` at the carrier with its callbacks pointed at the platform, then stores
   * it (active, unassigned). A number held already (by any tenant) is a 409 before the
   * carrier is asked. If storing fails after the purchase, the number is released at the
   * carrier again, so nothing is left half-made.
   */
  async provision(p: Principal, input: ProvisionNumberInput) {
    const carrier = this.carrier(input.provider);
    // A second purchase of the number while one is at the carrier (a double click, a retry) is a
    // conflict, as it will be once the first is stored, rather than a carrier refusal (502).
    const locked = await this.deps.repo.withPurchaseLock(input.phoneNumber, () => this.provisionLocked(p, input, carrier));
    if (locked.busy) throw new AppError('conflict', `The number ${input.phoneNumber} is being provisioned by another request.`);
    return locked.value;
  }

  private async provisionLocked(p: Principal, input: ProvisionNumberInput, carrier: ReturnType<PhoneNumberService['carrier']>) {
    const held = await this.deps.repo.findHeld(input.phoneNumber);
    if (held) throw new AppError('conflict', held.tenantId === p.tenantId ? `The number ${input.phoneNumber} is already provisioned in this account (${held.id}).` : `The number ${input.phoneNumber} is already provisioned.`);
    await this.checkNumberLimit(p.tenantId);
    const parsed = parsePhoneNumberFromString(input.phoneNumber);
    const friendlyName = input.friendlyName ?? parsed?.formatNational() ?? input.phoneNumber;
    let bought;
    try {
      bought = await carrier.provisionNumber({
        phoneNumber: input.phoneNumber,
        ...(parsed?.country ? { country: parsed.country } : {}),
        friendlyName,
        ...webhookUrlsFor(input.provider, this.deps.publicUrl),
      });
    } catch (err) {
      throw carrierProblem(err, input.provider, `provision ${input.phoneNumber}`);
    }
    try {
      const row = await this.deps.repo.insert({
        id: newId('num'),
        tenantId: p.tenantId,
        phoneNumber: input.phoneNumber,
        friendlyName,
        country: bought.country || parsed?.country || 'ZZ',
        provider: input.provider,
        providerSid: bought.providerSid,
        capabilities: bought.capabilities,
        monthlyCostUsd: bought.monthlyCostUsd,
        assignedAgentId: null,
      });
      return view(row);
    } catch (err) {
      // Another request stored the same purchase meanwhile: the number is held, keep it.
      const winner = err instanceof AppError && err.slug === 'conflict' ? await this.deps.repo.findHeld(input.phoneNumber).catch(() => undefined) : undefined;
      if (winner && winner.provider === input.provider && winner.providerSid === bought.providerSid) throw err;
      const released = await this.compensate(carrier, bought.providerSid, input.phoneNumber, err);
      if (err instanceof AppError && released) throw err;
      throw new AppError(
        'unavailable',
        released
          ? `The number ${input.phoneNumber} could not be stored, so it was released at ${CARRIER_LABEL[input.provider]} again; nothing was provisioned. Retry.`
          : `The number ${input.phoneNumber} could not be stored, and releasing it at ${CARRIER_LABEL[input.provider]} failed too: the carrier may still hold it. Quote the traceId to support.`,
        { cause: err },
      );
    }
  }

  async list(p: Principal, q: ListNumbersQuery) {
    const { rows, total } = await this.deps.repo.list(p.tenantId, q);
    return toPage(rows.map(listView), total, q);
  }

  /** Assigns to an agent of the same tenant; again to the same agent is a no-op (200), to another a 409. */
  async assign(p: Principal, numberId: string, agentId: string) {
    const result = await this.deps.repo.assign(p.tenantId, numberId, agentId);
    switch (result.kind) {
      case 'assigned':
        return view(result.row);
      case 'number-not-found':
        throw numberNotFound(numberId);
      case 'agent-not-found':
        throw new AppError('not-found', `Agent ${agentId} was not found.`);
      case 'taken':
        throw new AppError('conflict', `Phone number ${numberId} is assigned to agent ${result.assignedAgentId}; unassign it first.`);
    }
  }

  async unassign(p: Principal, numberId: string) {
    const row = await this.deps.repo.unassign(p.tenantId, numberId);
    if (!row) throw numberNotFound(numberId);
    return view(row);
  }

  /**
   * Releases the number at its carrier, then marks it released: from then on it routes no
   * call. If the carrier fails, nothing changes (the number still routes; retry). The row
   * stays, for statistics and billing (billing stops at the next cycle).
   */
  async release(p: Principal, numberId: string): Promise<void> {
    const row = await this.deps.repo.findActive(p.tenantId, numberId);
    if (!row) throw numberNotFound(numberId);
    const carrier = this.deps.carriers.providers[row.provider];
    try {
      // Rows stored without the carrier's id (seeded numbers) are looked up by E.164 first.
      const providerSid = row.providerSid ?? (await carrier.findOwnedNumber(row.phoneNumber))?.providerSid;
      if (providerSid !== undefined) await carrier.releaseNumber({ providerSid, phoneNumber: row.phoneNumber });
    } catch (err) {
      throw carrierProblem(err, row.provider, `release ${row.phoneNumber}`);
    }
    // A concurrent release may have marked it first: either way it is released now.
    await this.deps.repo.markReleased(p.tenantId, numberId, new Date(this.now()));
  }

  /** Calls through the number in the period (default the last 30 days, UTC dates), released numbers included. */
  async stats(p: Principal, numberId: string, q: NumberStatsQuery): Promise<NumberStatsView> {
    const row = await this.deps.repo.find(p.tenantId, numberId);
    if (!row) throw numberNotFound(numberId);
    const today = new Date(this.now()).toISOString().slice(0, 10);
    const dateTo = q.dateTo ?? today;
    const dateFrom = q.dateFrom ?? new Date(dateRange(undefined, dateTo).to!.getTime() - (STATS_DEFAULT_DAYS - 1) * DAY_MS).toISOString().slice(0, 10);
    const { from, to } = dateRange(dateFrom, dateTo);
    const s = await this.deps.repo.stats(row, from!, to!);
    return {
      numberId: row.id,
      phoneNumber: row.phoneNumber,
      period: { from: dateFrom, to: dateTo },
      inboundCalls: s.inboundCalls,
      outboundCalls: s.outboundCalls,
      totalMinutes: s.billedMinutes,
      totalCostUsd: round(s.totalCostUsd, 6),
    };
  }

  /** The carrier's number and per-minute prices for a country (default carrier: the first configured, Twilio first). */
  async pricing(q: PricingQuery) {
    const provider = q.provider ?? this.configured()[0];
    if (!provider) throw new AppError('unavailable', 'No telephony carrier is configured on this platform.');
    const carrier = this.carrier(provider);
    try {
      const prices = await carrier.getPricing(q.country);
      return { country: prices.country, provider, localNumber: prices.localNumber, tollFreeNumber: prices.tollFreeNumber };
    } catch (err) {
      throw carrierProblem(err, provider, `look up prices for ${q.country}`);
    }
  }

  /** Refuses a provisioning that would take the tenant past its `maxPhoneNumbers`. */
  private async checkNumberLimit(tenantId: string): Promise<void> {
    const max = await maxPhoneNumbersOf(tenantId);
    if (max === null) return;
    if ((await this.deps.repo.countHeld(tenantId)) >= max) throw new AppError('invalid-state', `This account holds its maximum of ${max} phone numbers; release one first.`);
  }

  /** The purchase could not be stored: give the number back, or say loudly that it is still held. */
  private async compensate(carrier: TelephonyProvider, providerSid: string, phoneNumber: string, cause: unknown): Promise<boolean> {
    this.deps.log.error({ err: cause, provider: carrier.name, providerSid }, 'storing a provisioned number failed; releasing it at the carrier');
    try {
      await carrier.releaseNumber({ providerSid, phoneNumber });
      return true;
    } catch (err) {
      this.deps.log.error({ err, provider: carrier.name, providerSid, pii: { phoneNumber } }, 'compensating release failed: the carrier still holds a number the platform did not store');
      return false;
    }
  }

  /**
   * A carrier the caller named. One that is not configured answers its calls with a 503 naming
   * the variables to set; asking it for nothing is the same as asking it and failing.
   */
  private carrier(name: TelephonyProviderName): TelephonyProvider {
    return this.deps.carriers.providers[name];
  }

  private configured(): TelephonyProviderName[] {
    return CARRIER_ORDER.filter((n) => this.deps.carriers.status[n].configured);
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }
}
