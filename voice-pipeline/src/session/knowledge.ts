/**
 * Knowledge-base passages in a call's prompt (RAG): each caller turn of an agent with
 * `knowledgeBaseIds` retrieves passages, which reach the LLM as one system message for
 * that request only (never kept in the history, so the context stays bounded).
 */

/** One passage as the control plane's `knowledge.retrieve` answers it. */
export interface KnowledgePassage {
  documentName: string;
  text: string;
  pageNumber: number | null;
  score?: number;
}

export interface KnowledgeOptions {
  /** Fetches the passages for a caller's words, best first (the gateway asks a control plane over the bus). */
  retrieve(query: string, signal: AbortSignal): Promise<KnowledgePassage[]>;
  /** The turn goes on without knowledge after this long (default {@link DEFAULT_RETRIEVAL_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Bound of the knowledge message's content (default {@link DEFAULT_KNOWLEDGE_MAX_CHARS}). */
  maxChars?: number;
  /** Retrieval failed or timed out; the turn continued without knowledge. */
  onFailure?(err: unknown, timedOut: boolean): void;
}

export const DEFAULT_RETRIEVAL_TIMEOUT_MS = 800;
export const DEFAULT_KNOWLEDGE_MAX_CHARS = 6000;
/** How many passages a turn asks for. */
export const KNOWLEDGE_TOP_K = 5;
/** The knowledge message starts with this (the OpenAI simulator recognises it). */
export const KNOWLEDGE_HEADER = 'Relevant knowledge';
/** A passage cut to fit keeps at least this much, or is left out. */
const MIN_PASSAGE_CHARS = 200;

const PREAMBLE =
  `${KNOWLEDGE_HEADER} from the agent's documents for the caller's last message, best match first. ` +
  'Answer from it when it covers the question; if it does not, say you do not know rather than guessing. ' +
  'Do not read out document names or numbers unless asked.';

/**
 * The system message carrying `passages`, at most `maxChars` characters in all: passages
 * are added best first, the first that does not fit is cut at a sentence or word boundary
 * (when at least 200 characters of it fit) and the rest are left out. Null without passages.
 */
export function knowledgeMessage(passages: readonly KnowledgePassage[], maxChars = DEFAULT_KNOWLEDGE_MAX_CHARS): string | null {
  let content = PREAMBLE;
  let added = 0;
  for (const p of passages) {
    const text = p.text.trim();
    if (!text) continue;
    const label = `\n\n[${added + 1}] ${p.documentName.replace(/\s+/g, ' ').trim() || 'Document'}${p.pageNumber !== null ? `, page ${p.pageNumber}` : ''}:\n`;
    const room = maxChars - content.length - label.length;
    if (text.length <= room) {
      content += label + text;
      added++;
      continue;
    }
    if (room >= MIN_PASSAGE_CHARS) {
      content += label + cutText(text, room);
      added++;
    }
    break;
  }
  return added > 0 ? content : null;
}

/** `text` cut to at most `max` characters: at the last sentence end, else word boundary, in its second half, with `…`. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const room = Math.max(0, max - 1);
  const head = text.slice(0, room);
  const sentence = Math.max(head.lastIndexOf('. '), head.lastIndexOf('! '), head.lastIndexOf('? '), head.lastIndexOf('\n'));
  if (sentence >= room / 2) return `${head.slice(0, sentence + 1).trimEnd()}…`;
  const space = head.lastIndexOf(' ');
  return `${(space >= room / 2 ? head.slice(0, space) : head).trimEnd()}…`;
}

/**
 * Runs `opts.retrieve` within its timeout. Never throws: a failure, a timeout (its signal is
 * aborted) or an empty answer gives `[]`, reported through `onFailure` unless the turn itself
 * was aborted (`turnSignal`), which ends the wait at once.
 */
export async function retrieveWithin(opts: KnowledgeOptions, query: string, turnSignal: AbortSignal): Promise<KnowledgePassage[]> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_RETRIEVAL_TIMEOUT_MS;
  const controller = new AbortController();
  const onTurnAbort = (): void => controller.abort();
  turnSignal.addEventListener('abort', onTurnAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  const aborted = new Promise<'aborted'>((resolve) => controller.signal.addEventListener('abort', () => resolve('aborted'), { once: true }));
  try {
    const result = await Promise.race([opts.retrieve(query, controller.signal), timedOut, aborted]);
    if (result === 'aborted') return [];
    if (result === 'timeout') {
      controller.abort();
      opts.onFailure?.(new Error(`knowledge retrieval took longer than ${timeoutMs} ms`), true);
      return [];
    }
    return result;
  } catch (err) {
    if (!turnSignal.aborted) opts.onFailure?.(err, false);
    return [];
  } finally {
    clearTimeout(timer);
    turnSignal.removeEventListener('abort', onTurnAbort);
  }
}
