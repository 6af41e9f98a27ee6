import { isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js';
import { z } from 'zod';
import { pageQueryShape } from '../../http/pagination.js';
import { agentStatsQuery } from '../conversations/schemas.js';

/** The carriers a number can be bought from (spec "Phone number.provider"). */
export const NUMBER_PROVIDERS = ['twilio', 'vonage', 'telnyx'] as const;
export const CAPABILITIES = ['voice', 'sms', 'mms'] as const;
/** Search `limit` (spec "Limits"). */
export const SEARCH_LIMIT_DEFAULT = 10;
export const SEARCH_LIMIT_MAX = 50;

const provider = z.enum(NUMBER_PROVIDERS, { error: `must be one of: ${NUMBER_PROVIDERS.join(', ')}` });

const country = z
  .string()
  .refine((v) => /^[A-Za-z]{2}$/.test(v) && isSupportedCountry(v.toUpperCase()), 'must be an ISO 3166-1 alpha-2 country code with telephone numbering, such as US or GB')
  .transform((v) => v.toUpperCase())
  .describe('ISO 3166-1 alpha-2 (case-insensitive)');

/** `true`/`false` in a query string (also `1`/`0`); anything else is a 422 naming the field. */
const queryBoolean = z
  .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1');

export const searchNumbersQuery = z.strictObject({
  country,
  areaCode: z.string().regex(/^\d{1,6}$/, 'must be 1 to 6 digits').optional().describe('National area code, digits only (415)'),
  contains: z
    .string()
    .regex(/^[0-9A-Za-z]{1,16}$/, 'must be 1 to 16 digits or letters (letters map to keypad digits)')
    .optional()
    .describe('Digits or letters (keypad digits) the number must contain'),
  capabilities: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const list = [...new Set(v.split(',').map((c) => c.trim()))];
      const bad = list.filter((c) => !(CAPABILITIES as readonly string[]).includes(c));
      if (bad.length > 0) ctx.addIssue({ code: 'custom', message: `must be a comma list of: ${CAPABILITIES.join(', ')} (got ${bad.map((b) => JSON.stringify(b)).join(', ')})` });
      return list as (typeof CAPABILITIES)[number][];
    })
    .describe('Comma list of voice, sms, mms; every one must be present'),
  provider: provider.optional().describe('One carrier; absent: every configured carrier, merged'),
  tollFree: queryBoolean.optional().describe('true: toll-free numbers only; false or absent: local numbers'),
  limit: z.coerce
    .number({ error: `must be an integer from 1 to ${SEARCH_LIMIT_MAX}` })
    .int(`must be an integer from 1 to ${SEARCH_LIMIT_MAX}`)
    .min(1, `must be an integer from 1 to ${SEARCH_LIMIT_MAX}`)
    .max(SEARCH_LIMIT_MAX, `must be an integer from 1 to ${SEARCH_LIMIT_MAX}`)
    .default(SEARCH_LIMIT_DEFAULT),
});
export type SearchNumbersQuery = z.infer<typeof searchNumbersQuery>;

export const searchResultSchema = z
  .object({
    numbers: z.array(
      z
        .object({
          phoneNumber: z.string().describe('E.164'),
          country: z.string(),
          region: z.string().nullable(),
          locality: z.string().nullable(),
          provider: z.enum(NUMBER_PROVIDERS),
          capabilities: z.array(z.enum(CAPABILITIES)),
          tollFree: z.boolean(),
          monthlyCostUsd: z.number(),
        })
        .meta({ id: 'AvailablePhoneNumber' }),
    ),
  })
  .meta({ id: 'PhoneNumberSearchResult' });

/** A strict E.164 number that libphonenumber-js considers valid (right length and prefix for its country). */
const e164 = z
  .string()
  .refine((v) => {
    const parsed = /^\+[1-9]\d{6,14}$/.test(v) ? parsePhoneNumberFromString(v) : undefined;
    return parsed !== undefined && parsed.number === v && parsed.isValid();
  }, 'must be a valid phone number in E.164 format, such as +14155550100')
  .describe('E.164');

export const provisionNumberBody = z.strictObject({
  phoneNumber: e164,
  provider,
  friendlyName: z.string().trim().min(1, 'must not be empty').max(64, 'must be at most 64 characters').optional().describe('Default: the number in national format'),
});
export type ProvisionNumberInput = z.infer<typeof provisionNumberBody>;

export const phoneNumberSchema = z
  .object({
    id: z.string(),
    phoneNumber: z.string().describe('E.164'),
    friendlyName: z.string().nullable(),
    country: z.string(),
    provider: z.enum(NUMBER_PROVIDERS),
    capabilities: z.array(z.enum(CAPABILITIES)),
    assignedAgentId: z.string().nullable(),
    status: z.enum(['active', 'released']).describe('active: answers calls; released: given back to the carrier (kept for statistics)'),
    monthlyCostUsd: z.number(),
    provisionedAt: z.string(),
    releasedAt: z.string().nullable().describe('When the number was released; null while active'),
  })
  .meta({ id: 'PhoneNumber' });

export const phoneNumberListItemSchema = phoneNumberSchema.extend({ assignedAgentName: z.string().nullable() }).meta({ id: 'PhoneNumberListItem' });

export const listNumbersQuery = z.strictObject({
  ...pageQueryShape,
  status: z.enum(['active', 'released'], { error: 'must be one of: active, released' }).default('active').describe('Default active; released lists numbers given back'),
  sortBy: z.enum(['provisionedAt', 'phoneNumber', 'friendlyName', 'country', 'monthlyCostUsd'], { error: 'must be one of: provisionedAt, phoneNumber, friendlyName, country, monthlyCostUsd' }).default('provisionedAt'),
});
export type ListNumbersQuery = z.infer<typeof listNumbersQuery>;

export const numberIdParams = z.object({ numberId: z.string().min(1) });
export const assignParams = z.object({ numberId: z.string().min(1), agentId: z.string().min(1) });

/** Same date bounds and validation as agent statistics (a date is a whole UTC day). */
export const numberStatsQuery = agentStatsQuery;
export type NumberStatsQuery = z.infer<typeof numberStatsQuery>;

export const numberStatsSchema = z
  .object({
    numberId: z.string(),
    phoneNumber: z.string(),
    period: z.object({ from: z.string(), to: z.string() }).describe('The bounds used, as given; default the last 30 days (UTC dates)'),
    inboundCalls: z.number().int().describe('Inbound calls to this number (called_phone) started in the period'),
    outboundCalls: z.number().int().describe('Outbound calls from this number (caller_phone) started in the period'),
    totalMinutes: z.number().int().describe('Billed minutes of the ended calls: every started minute counts'),
    totalCostUsd: z.number().describe('Total cost of the ended calls (all parts: telephony, LLM, TTS, STT)'),
  })
  .meta({ id: 'PhoneNumberStatistics' });
export type NumberStatsView = z.infer<typeof numberStatsSchema>;

export const pricingQuery = z.strictObject({
  country,
  provider: provider.optional().describe('Default twilio'),
  tollFree: queryBoolean.optional().describe('Accepted for compatibility; both price sets are always returned'),
});
export type PricingQuery = z.infer<typeof pricingQuery>;

const ratePrices = z.object({ monthlyCostUsd: z.number(), inboundMinuteCostUsd: z.number(), outboundMinuteCostUsd: z.number() });
export const pricingSchema = z
  .object({ country: z.string(), provider: z.enum(NUMBER_PROVIDERS), localNumber: ratePrices, tollFreeNumber: ratePrices })
  .meta({ id: 'PhoneNumberPricing' });
