/**
 * Deterministic stand-ins for a tokenizer, used by the OpenAI simulator so that usage
 * numbers and `max_tokens` truncation are predictable in tests. They are not BPE: a
 * "token" here is a word with its leading whitespace, and prompt size is ~4 chars/token
 * (OpenAI's own rule of thumb for English).
 */

/**
 * Splits text into word-ish tokens, each carrying its leading whitespace
 * (`"Hi there."` → `["Hi", " there."]`), so that joining the tokens gives back the text
 * without its trailing whitespace.
 */
export function splitTokens(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** ceil(chars / 4) over one string. */
export function countTextTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Prompt tokens of a Chat Completions `messages` array as the simulator reports them:
 * ceil(total chars / 4) over every message's text content and its tool-call arguments.
 * Accepts wire messages (`content` as a string, an array of `{ type: 'text', text }`
 * parts, or null) and ignores anything it does not recognise.
 */
export function countPromptTokens(messages: readonly unknown[]): number {
  let chars = 0;
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    const m = message as { content?: unknown; tool_calls?: unknown };
    chars += contentText(m.content).length;
    if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls as { function?: { arguments?: unknown } }[]) {
        const args = call.function?.arguments;
        if (typeof args === 'string') chars += args.length;
      }
    }
  }
  return Math.ceil(chars / 4);
}

/** The text of a wire `content` field: a string, or text parts joined (other parts ignored). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
    .join('');
}
