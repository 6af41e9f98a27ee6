import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, runMigrations } from '../../src/db/database.js';
import { SANDBOX_AGENT_NAME, SANDBOX_PHONE_NUMBER } from '../../src/modules/telephony/sandbox-receptionist.js';
import { bootstrap } from '../../src/modules/tenants/bootstrap.js';
import { bootstrapBanner } from '../../src/modules/tenants/bootstrap-banner.js';
import { createTestApp } from '../helpers.js';
import { TELEPHONY_ENV, freshDatabases, postTwilio, voiceParams } from '../telephony-fixtures.js';
import { child, parseXml } from '../xml.js';

const logger = pino({ level: 'silent' });
const databases = freshDatabases('vap_sandbox');
afterAll(() => databases.dropAll());

function config(databaseUrl: string, extra: Record<string, string> = {}) {
  return loadConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ...extra });
}

describe('sandbox receptionist on first start', () => {
  it('creates an active agent and the sandbox number once, and answers calls to it', async () => {
    const url = await databases.create();
    const database = openDatabase(url, 2);
    try {
      await runMigrations(database);
      const first = await bootstrap(database, config(url), logger);
      expect(first?.sandbox).toMatchObject({ agentName: SANDBOX_AGENT_NAME, phoneNumber: SANDBOX_PHONE_NUMBER, agentId: expect.stringMatching(/^agt_/), numberId: expect.stringMatching(/^num_/) });
      expect(await bootstrap(database, config(url), logger)).toBeNull();

      const agents = await database.pool.query(`select id, tenant_id, name, status, version, config from agents`);
      expect(agents.rows).toHaveLength(1);
      const agent = agents.rows[0];
      expect(agent).toMatchObject({ id: first!.sandbox!.agentId, tenant_id: first!.tenantId, name: SANDBOX_AGENT_NAME, status: 'active', version: 1 });
      expect(agent.config).toMatchObject({
        firstMessage: 'Hello! Thanks for calling. How can I help you today?',
        endCallPhrases: ['goodbye'],
        llm: { provider: 'openai', model: 'gpt-4o-mini' },
        transcription: { provider: 'deepgram', model: 'nova-2' },
        voice: { provider: 'elevenlabs' },
      });
      const versions = await database.pool.query(`select version, created_by from agent_versions where agent_id = $1`, [agent.id]);
      expect(versions.rows).toEqual([{ version: 1, created_by: expect.stringMatching(/^usr_/) }]);
      const numbers = await database.pool.query(`select phone_number, provider, country, status, assigned_agent_id, tenant_id from phone_numbers`);
      expect(numbers.rows).toEqual([{ phone_number: SANDBOX_PHONE_NUMBER, provider: 'twilio', country: 'US', status: 'active', assigned_agent_id: agent.id, tenant_id: first!.tenantId }]);

      const banner = bootstrapBanner(first, 'http://localhost:3000').join('\n');
      expect(banner).toContain(SANDBOX_AGENT_NAME);
      expect(banner).toContain(SANDBOX_PHONE_NUMBER);

      // The agent the API reads back is a complete, valid agent, and a signed call to the number reaches it.
      const t = await createTestApp({ env: { ...TELEPHONY_ENV, DATABASE_URL: url }, database });
      try {
        const params = voiceParams(SANDBOX_PHONE_NUMBER);
        const res = await postTwilio(t.app, '/webhooks/twilio/voice', params);
        expect(res.statusCode).toBe(200);
        const stream = child(child(parseXml(res.body), 'Connect'), 'Stream');
        expect(stream.attrs.url).toBe(`wss://gw.example.com/api/v1/webhooks/twilio/media-stream?agentId=${agent.id}&tenantId=${first!.tenantId}`);
      } finally {
        await t.close();
      }
    } finally {
      await database.close();
    }
  });

  it('creates no sandbox agent or number in production', async () => {
    const url = await databases.create();
    const database = openDatabase(url, 2);
    try {
      await runMigrations(database);
      const result = await bootstrap(database, config(url, { APP_ENV: 'production' }), logger);
      expect(result?.sandbox).toBeUndefined();
      expect(bootstrapBanner(result, 'http://localhost:3000').join('\n')).not.toContain(SANDBOX_PHONE_NUMBER);
      const counts = await database.pool.query(`select (select count(*)::int from agents) as agents, (select count(*)::int from phone_numbers) as numbers`);
      expect(counts.rows[0]).toEqual({ agents: 0, numbers: 0 });
    } finally {
      await database.close();
    }
  });
});
