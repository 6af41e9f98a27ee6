/** Default Bot API base; `TELEGRAM_API_BASE_URL` points it at the simulator. */
export const TELEGRAM_API_BASE_URL = 'https://api.telegram.org';

/** Longest wait for one Bot API call (ms). */
export const TELEGRAM_API_TIMEOUT_MS = 10_000;

/** The parts of a sent `Message` the platform reads (reference/messaging.md §1.3). */
export interface TelegramSentMessage {
  message_id: number;
  chat: { id: number };
  date: number;
  text?: string;
}

/** A Bot API call the service answered `{ok:false}`, or that never got an answer (`errorCode` 0). */
export class TelegramApiError extends Error {
  constructor(
    readonly method: string,
    readonly errorCode: number,
    readonly description: string,
    /** Seconds to wait, with 429 flood control. */
    readonly retryAfterSec?: number,
  ) {
    super(`Telegram ${method} failed: ${errorCode} ${description}`);
    this.name = 'TelegramApiError';
  }
}

/**
 * A minimal Telegram Bot API client over fetch: `POST <baseUrl>/bot<token>/<method>` with a
 * JSON body, answered `{ok, result}` or `{ok:false, error_code, description}`
 * (reference/messaging.md §1). The token is part of the URL, so errors never include the URL.
 */
export class TelegramBotApi {
  private readonly baseUrl: string;

  constructor(private readonly opts: { token: string; baseUrl?: string; timeoutMs?: number }) {
    this.baseUrl = (opts.baseUrl ?? TELEGRAM_API_BASE_URL).replace(/\/+$/, '');
  }

  /** The bot's numeric id: the token's part before the colon. */
  get botId(): string {
    return this.opts.token.split(':')[0] ?? '';
  }

  /** Sends `text` to `chatId`, as a reply to `replyToMessageId` when given. */
  async sendMessage(chatId: number, text: string, replyToMessageId?: number): Promise<TelegramSentMessage> {
    return this.call<TelegramSentMessage>('sendMessage', {
      chat_id: chatId,
      text,
      // `reply_to_message_id` is deprecated (still accepted); a deleted original must not fail the reply.
      ...(replyToMessageId !== undefined ? { reply_parameters: { message_id: replyToMessageId, allow_sending_without_reply: true } } : {}),
    });
  }

  /** One Bot API method; throws {@link TelegramApiError}. */
  async call<T>(method: string, params: Record<string, unknown>): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}/bot${this.opts.token}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(params),
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? TELEGRAM_API_TIMEOUT_MS),
      });
    } catch (err) {
      throw new TelegramApiError(method, 0, err instanceof Error ? err.name : 'request failed');
    }
    const body = (await res.json().catch(() => null)) as { ok?: boolean; result?: T; error_code?: number; description?: string; parameters?: { retry_after?: number } } | null;
    if (body?.ok === true) return body.result as T;
    throw new TelegramApiError(method, body?.error_code ?? res.status, body?.description ?? `HTTP ${res.status}`, body?.parameters?.retry_after);
  }
}
