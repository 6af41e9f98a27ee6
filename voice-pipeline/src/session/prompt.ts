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
  const fmt = (o: DateStyle) => formatter(locale, timeZone, o).format(ctx.now);
  // Built lazily: most templates use none of the dates, and each costs an Intl lookup.
  const builtin = (name: string): string | undefined => {
    switch (name) {
      case 'callerNumber':
        return ctx.callerNumber ?? '';
      case 'calledNumber':
        return ctx.calledNumber ?? '';
      case 'callSid':
        return ctx.callSid;
      case 'agentName':
        return agent.persona.name;
      case 'date':
      case 'time':
      case 'dateTime':
      case 'dayOfWeek':
        return fmt(name);
      default:
        return undefined;
    }
  };
  // Own properties only: `{{toString}}` must not find Object.prototype's members.
  const fromMetadata = (name: string) => (Object.hasOwn(ctx.metadata, name) ? ctx.metadata[name] : undefined);
  return template.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}/g, (_, name: string) => fromMetadata(name) ?? builtin(name) ?? '');
}

type DateStyle = 'date' | 'time' | 'dateTime' | 'dayOfWeek';
const DATE_STYLES: Record<DateStyle, Intl.DateTimeFormatOptions> = {
  date: { dateStyle: 'long' },
  time: { timeStyle: 'short' },
  dateTime: { dateStyle: 'long', timeStyle: 'short' },
  dayOfWeek: { weekday: 'long' },
};
/**
 * Formatters by locale, time zone and style. Creating an `Intl.DateTimeFormat` costs about
 * 0.1 ms (ICU data lookup); a gateway starts calls by the hundred (#5: four per call were
 * ~0.7 ms of each call's start). Bounded: locales and zones come from agent settings and
 * call metadata, so an odd value cannot grow the map without limit.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATTERS = 256;

function formatter(locale: string, timeZone: string, style: DateStyle): Intl.DateTimeFormat {
  const key = `${locale}|${timeZone}|${style}`;
  let f = formatters.get(key);
  if (f) return f;
  try {
    f = new Intl.DateTimeFormat(locale, { ...DATE_STYLES[style], timeZone });
  } catch {
    // An unknown locale or zone: the en-US wording in UTC rather than no prompt.
    f = new Intl.DateTimeFormat('en-US', { ...DATE_STYLES[style], timeZone: 'UTC' });
  }
  if (formatters.size >= MAX_FORMATTERS) formatters.clear();
  formatters.set(key, f);
  return f;
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
