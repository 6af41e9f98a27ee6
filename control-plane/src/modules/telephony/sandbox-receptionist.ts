import { agentConfigSchema, newId } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { AgentRepository } from '../agents/repository.js';
import { checkAgentRules } from '../agents/rules.js';
import { PhoneNumberRepository } from './phone-number-repository.js';

/**
 * Twilio's magic test number: valid as a `From` with test credentials, never a real line,
 * so it cannot collide with a number anyone provisions.
 */
export const SANDBOX_PHONE_NUMBER = '+15005550006';
export const SANDBOX_AGENT_NAME = 'Sandbox receptionist';

/** What was created, for the first-start banner. */
export interface SandboxReceptionist {
  agentId: string;
  agentName: string;
  numberId: string;
  phoneNumber: string;
}

const SANDBOX_AGENT = agentConfigSchema.parse({
  name: SANDBOX_AGENT_NAME,
  description: `Answers the sandbox number ${SANDBOX_PHONE_NUMBER}. Created on first start; edit or delete it freely.`,
  persona: { name: 'Sam', personality: 'Friendly, patient and brief. Speaks in short, natural sentences.', role: 'the receptionist of a small business' },
  voice: { provider: 'elevenlabs', voiceId: '21m00Tcm4TlvDq8ikWAM' },
  llm: { provider: 'openai', model: 'gpt-4o-mini', temperature: 0.6 },
  transcription: { provider: 'deepgram', model: 'nova-2', language: 'en-US' },
  systemPromptTemplate:
    'You are {{agentName}}, answering the phone for a small business on {{dayOfWeek}}. Greet callers warmly, find out what they need, ' +
    'answer simple questions and offer to take a message when you cannot help. Keep every reply to one or two sentences, never invent ' +
    'facts about the business, and say goodbye when the caller is done.',
  firstMessage: 'Hello! Thanks for calling. How can I help you today?',
  endCallPhrases: ['goodbye'],
});

/**
 * Creates the sandbox receptionist: an active agent and the sandbox number assigned to
 * it, so a fresh development install can take a (simulated) call at once. Goes through
 * the agents repository so the agent has its version record like any other.
 *
 * @param createdBy the actor recorded on the agent's first version (the bootstrap Admin)
 */
export async function createSandboxReceptionist(db: Db, tenantId: string, createdBy: string): Promise<SandboxReceptionist> {
  const problems = checkAgentRules(SANDBOX_AGENT);
  if (problems.length > 0) throw new Error(`Sandbox agent breaks agent rules: ${JSON.stringify(problems)}`);
  const agent = await new AgentRepository(db).insert(
    tenantId,
    newId('agt'),
    'active',
    { name: SANDBOX_AGENT.name, tags: SANDBOX_AGENT.tags, config: SANDBOX_AGENT as unknown as Record<string, unknown>, llmApiKeyEncrypted: null },
    { changedFields: [], changesSummary: 'Created', createdBy },
  );
  const number = await new PhoneNumberRepository(db).insert({
    id: newId('num'),
    tenantId,
    phoneNumber: SANDBOX_PHONE_NUMBER,
    friendlyName: 'Sandbox number',
    country: 'US',
    provider: 'twilio',
    capabilities: ['voice'],
    assignedAgentId: agent.id,
    status: 'active',
    monthlyCostUsd: 0,
  });
  return { agentId: agent.id, agentName: agent.name, numberId: number.id, phoneNumber: number.phoneNumber };
}
