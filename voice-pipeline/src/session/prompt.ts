import type { AgentConfig } from '@vap/shared';

/** Values a system prompt template may use, besides the call's own metadata. */
export interface PromptContext {
  callerNumber: string | null;
  calledNumber: string | null;
  callSid: string;
  metadata: Record<string, string>;
  now: Date;
  /** IANA time zone for date/time variables (metadata `timezone`, else UTC). */
  timeZone?: string;
}

/**
 * Fills `{{variables}}` in the agent's `systemPromptTemplate`. Built-ins: `callerNumber`,
 * `calledNumber`, `callSid`, `agentName`, `date`, `time`, `dateTime`, `dayOfWeek`
 * (formatted in the agent's transcription locale), then any call metadata key. Unknown
 * variables become empty strings, so a caller never hears a raw `{{…}}`.
 */
export function renderTemplate(template: string, agent: AgentConfig, ctx: PromptContext): string {
  const locale = agent.transcription.language ?? 'en-US';
  const timeZone = ctx.timeZone ?? ctx.metadata['timezone'] ?? 'UTC';
  const fmt = (o: Intl.DateTimeFormatOptions) => {
    try {
      return new Intl.DateTimeFormat(locale, { ...o, timeZone }).format(ctx.now);
    } catch {
      return new Intl.DateTimeFormat('en-US', { ...o, timeZone: 'UTC' }).format(ctx.now);
    }
  };
  const builtins: Record<string, string> = {
    callerNumber: ctx.callerNumber ?? '',
    calledNumber: ctx.calledNumber ?? '',
    callSid: ctx.callSid,
    agentName: agent.persona.name,
    date: fmt({ dateStyle: 'long' }),
    time: fmt({ timeStyle: 'short' }),
    dateTime: fmt({ dateStyle: 'long', timeStyle: 'short' }),
    dayOfWeek: fmt({ weekday: 'long' }),
  };
  // Own properties only: `{{toString}}` must not find Object.prototype's members.
  const lookup = (o: Record<string, string>, name: string) => (Object.hasOwn(o, name) ? o[name] : undefined);
  return template.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}/g, (_, name: string) => lookup(ctx.metadata, name) ?? lookup(builtins, name) ?? '');
}

/** The system message: persona, the rendered template, and how to talk on a phone line. */
export function buildSystemPrompt(agent: AgentConfig, ctx: PromptContext): string {
  const persona = [
    `You are ${agent.persona.name}${agent.persona.role ? `, ${agent.persona.role}` : ''}.`,
    agent.persona.personality ? `Personality: ${agent.persona.personality}` : '',
  ].filter(Boolean);
  return [
    ...persona,
    renderTemplate(agent.systemPromptTemplate, agent, ctx),
    'You are speaking on a live phone call: answer in short spoken sentences, no lists, no markdown, no emojis.',
    agent.dtmfEnabled ? 'Keys the caller presses arrive as messages like "[DTMF] 5".' : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}
