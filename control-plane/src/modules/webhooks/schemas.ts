import { z } from 'zod';
import { EVENT_KINDS } from '@vap/shared';
import { pageQueryShape } from '../../http/pagination.js';

/** Longest accepted webhook URL; longer ones are almost always pasted by mistake. */
export const MAX_URL_LENGTH = 2048;

const url = z.string().trim().min(1, 'must not be empty').max(MAX_URL_LENGTH, `must be at most ${MAX_URL_LENGTH} characters`).describe('Where events are POSTed: https, or http to a loopback address in Development');
const events = z
  .array(z.enum(EVENT_KINDS, { error: `must be one of: ${EVENT_KINDS.join(', ')}` }))
  .min(1, 'must list at least one event kind')
  .refine((e) => new Set(e).size === e.length, 'must not repeat an event kind')
  .describe('Event kinds delivered to this URL');
const secret = z
  .string()
  .min(16, 'must be at least 16 characters')
  .max(256, 'must be at most 256 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
  .describe('HMAC-SHA256 signing secret; generated (whsec_…) when absent. Returned only by create.');

export const createWebhookBody = z.strictObject({
  agentId: z.string().min(1, 'must not be empty').describe('Agent whose events are delivered (same tenant)'),
  url,
  events,
  secret: secret.optional(),
  enabled: z.boolean().default(true),
});
export type CreateWebhookInput = z.infer<typeof createWebhookBody>;

/** PATCH: any of url, events, secret, enabled; `agentId` cannot change (create another webhook). */
export const patchWebhookBody = z.strictObject({ url: url.optional(), events: events.optional(), secret: secret.optional(), enabled: z.boolean().optional() });
export type PatchWebhookInput = z.infer<typeof patchWebhookBody>;

export const webhookSchema = z
  .object({
    id: z.string(),
    agentId: z.string(),
    url: z.string(),
    events: z.array(z.enum(EVENT_KINDS)),
    enabled: z.boolean(),
    secretHint: z.string().describe('The secret\'s last 4 characters, prefixed "…"; the secret itself is shown only by create'),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Webhook' });

export const createdWebhookSchema = webhookSchema.extend({ secret: z.string().describe('The signing secret. Shown only in this response; store it now.') }).meta({ id: 'CreatedWebhook' });

export const listWebhooksQuery = z.strictObject({
  ...pageQueryShape,
  agentId: z.string().min(1).optional().describe('Only this agent\'s webhooks'),
  sortBy: z.enum(['createdAt', 'url']).default('createdAt'),
});
export type ListWebhooksQuery = z.infer<typeof listWebhooksQuery>;

export const webhookIdParams = z.object({ webhookId: z.string().min(1) });
export const deliveryParams = z.object({ webhookId: z.string().min(1), deliveryId: z.string().min(1) });

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

export const listDeliveriesQuery = z.strictObject({
  ...pageQueryShape,
  status: z.enum(DELIVERY_STATUSES).optional(),
  eventType: z.enum(EVENT_KINDS).optional(),
});
export type ListDeliveriesQuery = z.infer<typeof listDeliveriesQuery>;

export const deliveryAttemptSchema = z
  .object({
    attempt: z.number().int().describe('1-based over the delivery\'s whole life, replays included'),
    run: z.number().int().describe('0 for the original schedule, n for the n-th replay'),
    at: z.string().describe('When the request started'),
    statusCode: z.number().int().nullable().describe('HTTP status; null when there was no response (timeout, connection error, blocked address)'),
    latencyMs: z.number().int(),
    success: z.boolean(),
    error: z.string().nullable(),
  })
  .meta({ id: 'WebhookDeliveryAttempt' });

export const deliverySchema = z
  .object({
    id: z.string().describe('The event id, sent as X-Webhook-Delivery-Id'),
    webhookId: z.string(),
    eventType: z.enum(EVENT_KINDS),
    status: z.enum(DELIVERY_STATUSES).describe('pending: waiting for its first or next attempt; delivered: a 2xx arrived; failed: six attempts failed'),
    attemptCount: z.number().int(),
    replays: z.number().int(),
    nextAttemptAt: z.string().nullable(),
    lastStatusCode: z.number().int().nullable(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    deliveredAt: z.string().nullable(),
    attempts: z.array(deliveryAttemptSchema),
  })
  .meta({ id: 'WebhookDelivery' });

export const deliveryDetailSchema = deliverySchema.extend({ payload: z.record(z.string(), z.unknown()).describe('The event envelope as sent') }).meta({ id: 'WebhookDeliveryDetail' });
