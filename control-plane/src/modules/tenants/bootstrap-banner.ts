import type { BootstrapResult } from './bootstrap.js';

/**
 * What to print once after start: on a first start, the credentials just created (a
 * generated password or key exists nowhere else); otherwise a reminder of where they were.
 */
export function bootstrapBanner(result: BootstrapResult | null, publicUrl: string): string[] {
  if (!result) return ['Existing database: credentials were printed on its first start (or came from BOOTSTRAP_* variables).'];
  return [
    'First start: created tenant, Admin user and API key. Shown once; store them now:',
    `  Tenant         ${result.tenantId}`,
    `  Admin login    ${result.adminEmail}${result.generatedPassword ? ` / ${result.generatedPassword}` : ' (password from BOOTSTRAP_ADMIN_PASSWORD)'}`,
    result.apiKey ? `  API key        ${result.apiKey}` : '  API key        the value of BOOTSTRAP_API_KEY',
    ...(result.sandbox
      ? [
          `  Sandbox agent  ${result.sandbox.agentName} (${result.sandbox.agentId}), active`,
          `  Sandbox number ${result.sandbox.phoneNumber} (twilio) → ${result.sandbox.agentName}`,
        ]
      : []),
    '',
    `  Try: curl -H "Authorization: Bearer <API key>" ${publicUrl}/api/v1/agents`,
  ];
}
