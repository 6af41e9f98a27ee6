import { z } from 'zod';

/** The `agentId` a Telegram webhook URL carries (`…/webhooks/telegram/message?agentId=agt_…`). */
export const telegramWebhookQuery = z.object({
  agentId: z.string().regex(/^agt_[0-9a-z]{26}$/, 'must be an agent id (agt_…)'),
});

const telegramMessageSchema = z.looseObject({
  message_id: z.number().int(),
  // Chat ids may exceed 32 bits (up to 52): still safe JavaScript integers.
  chat: z.looseObject({ id: z.number().int(), type: z.string() }),
  date: z.number().int(),
  from: z.looseObject({ id: z.number().int(), is_bot: z.boolean().optional(), first_name: z.string().optional(), username: z.string().optional() }).optional(),
  text: z.string().optional(),
});

/**
 * The parts of a Telegram `Update` the webhook reads (reference/messaging.md §1.3); unknown
 * fields and other update kinds (`edited_message`, `callback_query`, …) pass through.
 */
export const telegramUpdateSchema = z.looseObject({
  update_id: z.number().int().min(0),
  message: telegramMessageSchema.optional(),
});

export type TelegramUpdate = z.infer<typeof telegramUpdateSchema>;
export type TelegramMessage = NonNullable<TelegramUpdate['message']>;
