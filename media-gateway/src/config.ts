import { z } from 'zod';

/** Every environment variable the media gateway reads (listed in `.env.example` too). */
export const gatewayConfigSchema = z.object({
  GATEWAY_HOST: z.string().default('127.0.0.1'),
  GATEWAY_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  NATS_URL: z.string().trim().min(1).optional().or(z.literal('').transform(() => undefined)),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // Shared with the control plane on purpose: the gateway checks X-Twilio-Signature on a
  // stream upgrade over the very URL the control plane put in <Stream url>, so the two
  // must not be configured apart (reference/telephony-twilio.md §2).
  MEDIA_GATEWAY_PUBLIC_URL: z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' }).default('ws://127.0.0.1:3001'),
  // Unset: stream upgrades are accepted without a signature check (sandbox).
  TWILIO_AUTH_TOKEN: z.string().trim().min(1).optional().or(z.literal('').transform(() => undefined)),
});

export interface GatewayConfig {
  host: string;
  port: number;
  natsUrl: string | undefined;
  logLevel: z.infer<typeof gatewayConfigSchema>['LOG_LEVEL'];
  /** Public base URL of the gateway (`wss://gw.example.com`), no trailing slash: signed stream URLs are rebuilt from it. */
  publicUrl: string;
  /** Twilio Auth Token for stream-upgrade signatures; undefined in the sandbox. */
  twilioAuthToken: string | undefined;
}

export function loadGatewayConfig(env: Record<string, string | undefined> = process.env): GatewayConfig {
  const parsed = gatewayConfigSchema.safeParse(env);
  if (!parsed.success) throw new Error(`Invalid configuration:\n${parsed.error.issues.map((i) => `  - ${i.path.join('.')}: ${i.message}`).join('\n')}`);
  const e = parsed.data;
  return Object.freeze({
    host: e.GATEWAY_HOST,
    port: e.GATEWAY_PORT,
    natsUrl: e.NATS_URL,
    logLevel: e.LOG_LEVEL,
    publicUrl: e.MEDIA_GATEWAY_PUBLIC_URL.replace(/\/$/, ''),
    twilioAuthToken: e.TWILIO_AUTH_TOKEN,
  });
}
