/** The ten API-key scopes of the spec ("Authentication › API keys"). */
export const SCOPES = [
  'agents:read',
  'agents:write',
  'conversations:read',
  'conversations:write',
  'telephony:read',
  'telephony:write',
  'webhooks:read',
  'webhooks:write',
  'analytics:read',
  'billing:read',
] as const;

export type Scope = (typeof SCOPES)[number];
