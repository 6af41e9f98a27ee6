import { z } from 'zod';

/**
 * Every bus subject with the zod schema of its payload (STYLE.md §2). Subjects are
 * lowercase and dotted, broad to narrow. Payloads are validated when they arrive.
 */
export const SUBJECTS = {
  /** An agent's configuration changed or it was deleted; gateways drop cached copies. */
  agentChanged: {
    subject: (tenantId: string, agentId: string) => `agent.${tenantId}.${agentId}.changed`,
    wildcard: 'agent.*.*.changed',
    schema: z.object({
      tenantId: z.string(),
      agentId: z.string(),
      version: z.number().int().nullable(),
      change: z.enum(['created', 'updated', 'status', 'published', 'deleted']),
      at: z.string(),
    }),
  },
  /** A service instance announces itself on start (used by health views and tests). */
  serviceStarted: {
    subject: (service: string) => `service.${service}.started`,
    wildcard: 'service.*.started',
    schema: z.object({ service: z.string(), instanceId: z.string(), at: z.string() }),
  },
} as const;

export type SubjectName = keyof typeof SUBJECTS;
export type Payload<N extends SubjectName> = z.infer<(typeof SUBJECTS)[N]['schema']>;
