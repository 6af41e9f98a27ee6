import { randomBytes, randomInt } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One Bot API request the simulator received, in arrival order. */
export interface TelegramSimRequest {
  /** The method as sent (names are case-insensitive on the wire). */
  method: string;
  /** The token in the path (recorded even when refused). */
  token: string;
  /** Parameters from the query string and the JSON or form body. */
  params: Record<string, unknown>;
  /** HTTP status answered. */
  status: number;
}

/** What `setWebhook` registered (the simulator's `deliver` posts there). */
export interface TelegramSimWebhook {
  url: string;
  secretToken: string | null;
}

/** The bot the simulator plays (`getMe`). */
const BOT_USERNAME = 'vap_sandbox_bot';
const SECRET_TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

type Envelope = { ok: true; result: unknown } | { ok: false; error_code: number; description: string; parameters?: { retry_after: number } };

/**
 * A Telegram Bot API stand-in on loopback (reference/messaging.md §1): `POST|GET
 * /bot<token>/<method>` for `getMe`, `sendMessage`, `setWebhook`, `deleteWebhook`,
 * `getWebhookInfo` and `getFile`, with the real `{ok, result}` / `{ok:false, error_code,
 * description}` envelope. A wrong token is 401 `Unauthorized`, an unknown method 404.
 * Records every request; `failNext` and `latencyMs` inject faults. `deliver` posts an
 * Update to the registered webhook with `X-Telegram-Bot-Api-Secret-Token`, as Telegram does.
 * Tests and sandbox mode share it.
 */
export class TelegramSimulator {
  /** Every Bot API request in arrival order. */
  readonly requests: TelegramSimRequest[] = [];
  /** Delay before each answer (ms). */
  latencyMs = 0;
  /** Set by `setWebhook`, cleared by `deleteWebhook`. */
  webhook: TelegramSimWebhook | null = null;
  private failures: { errorCode: number; description: string; count: number } | null = null;
  private nextMessageId = 1;
  private nextFileId = 1;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** The token the simulated bot accepts. */
    readonly token: string,
    /** Bot API base (`apiRoot`), e.g. `http://127.0.0.1:40123`. */
    readonly url: string,
  ) {}

  /** Listens on 127.0.0.1 (ephemeral port unless `port`); `token` defaults to a random `<id>:<secret>` bot token. */
  static async start(opts: { token?: string; port?: number } = {}): Promise<TelegramSimulator> {
    const token = opts.token ?? `${randomInt(100_000_000, 999_999_999)}:SIM${randomBytes(16).toString('hex')}`;
    // The handler needs the simulator, which needs the listening server's port.
    const ref: { sim?: TelegramSimulator } = {};
    const server = createServer((req, res) => void ref.sim!.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const sim = new TelegramSimulator(server, token, `http://127.0.0.1:${port}`);
    ref.sim = sim;
    server.on('connection', (s) => {
      sim.sockets.add(s);
      s.on('close', () => sim.sockets.delete(s));
    });
    return sim;
  }

  /** The bot's numeric id (the token's part before the colon). */
  get botId(): number {
    return Number(this.token.split(':')[0]);
  }

  /** Answers the next `count` method calls with `{ok:false, error_code, description}` (429 adds `retry_after` 1). */
  failNext(errorCode: number, description: string, count = 1): void {
    this.failures = { errorCode, description, count };
  }

  /** The recorded calls of one method (case-insensitive). */
  calls(method: string): TelegramSimRequest[] {
    return this.requests.filter((r) => r.method.toLowerCase() === method.toLowerCase());
  }

  /** Forgets requests, faults and the webhook. */
  reset(): void {
    this.requests.length = 0;
    this.failures = null;
    this.latencyMs = 0;
    this.webhook = null;
  }

  /** Delivers an Update to the webhook `setWebhook` registered; see {@link deliverTelegramUpdate}. */
  async deliver(update: Record<string, unknown>): Promise<{ status: number; body: string }> {
    if (!this.webhook) throw new Error('no webhook registered (call setWebhook first)');
    return deliverTelegramUpdate(this.webhook.url, this.webhook.secretToken, update);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
    let envelope: Envelope;
    let status: number;
    try {
      Object.assign(params, await readParams(req));
    } catch {
      params.__unparsable = true;
    }
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    if (!match) [status, envelope] = [404, { ok: false, error_code: 404, description: 'Not Found' }];
    else if (match[1] !== this.token) [status, envelope] = [401, { ok: false, error_code: 401, description: 'Unauthorized' }];
    else if (this.failures && this.failures.count > 0) {
      const f = this.failures;
      this.failures = f.count > 1 ? { ...f, count: f.count - 1 } : null;
      [status, envelope] = [f.errorCode, { ok: false, error_code: f.errorCode, description: f.description, ...(f.errorCode === 429 ? { parameters: { retry_after: 1 } } : {}) }];
    } else [status, envelope] = this.method(match[2]!.toLowerCase(), params);
    if (match) this.requests.push({ method: match[2]!, token: match[1]!, params, status });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(envelope));
  }

  private method(name: string, p: Record<string, unknown>): [number, Envelope] {
    const bad = (description: string): [number, Envelope] => [400, { ok: false, error_code: 400, description: `Bad Request: ${description}` }];
    const ok = (result: unknown): [number, Envelope] => [200, { ok: true, result }];
    if (p.__unparsable) return bad('can\'t parse request body');
    switch (name) {
      case 'getme':
        return ok({ id: this.botId, is_bot: true, first_name: 'VAP Sandbox', username: BOT_USERNAME, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false });
      case 'sendmessage': {
        const chatId = Number(p.chat_id);
        if (p.chat_id === undefined || p.chat_id === '' || !Number.isSafeInteger(chatId)) return bad('chat_id is empty');
        const text = typeof p.text === 'string' ? p.text : '';
        if (text.trim() === '') return bad('message text is empty');
        if (text.length > 4096) return bad('message is too long');
        const replyTo = (p.reply_parameters as { message_id?: number } | undefined)?.message_id ?? (p.reply_to_message_id === undefined ? undefined : Number(p.reply_to_message_id));
        return ok({
          message_id: this.nextMessageId++,
          from: { id: this.botId, is_bot: true, first_name: 'VAP Sandbox', username: BOT_USERNAME },
          chat: { id: chatId, type: chatId < 0 ? 'group' : 'private' },
          date: Math.floor(Date.now() / 1000),
          text,
          ...(replyTo !== undefined ? { reply_to_message: { message_id: replyTo, chat: { id: chatId, type: chatId < 0 ? 'group' : 'private' }, date: 0 } } : {}),
        });
      }
      case 'setwebhook': {
        const url = typeof p.url === 'string' ? p.url : '';
        if (url === '') {
          this.webhook = null;
          return [200, { ok: true, result: true }];
        }
        const secret = p.secret_token === undefined ? null : String(p.secret_token);
        if (secret !== null && !SECRET_TOKEN.test(secret)) return bad('secret token contains unallowed characters');
        // The real service insists on HTTPS on 443/80/88/8443; the simulator delivers to loopback http too.
        if (!/^https?:\/\//.test(url)) return bad('bad webhook: An HTTPS URL must be provided for webhook');
        this.webhook = { url, secretToken: secret };
        return ok(true);
      }
      case 'deletewebhook':
        this.webhook = null;
        return ok(true);
      case 'getwebhookinfo':
        return ok({ url: this.webhook?.url ?? '', has_custom_certificate: false, pending_update_count: 0 });
      case 'getfile': {
        if (typeof p.file_id !== 'string' || p.file_id === '') return bad('file_id is empty');
        return ok({ file_id: p.file_id, file_unique_id: `U${p.file_id.slice(0, 8)}`, file_size: 15_872, file_path: `voice/file_${this.nextFileId++}.oga` });
      }
      default:
        return [404, { ok: false, error_code: 404, description: 'Not Found: method not found' }];
    }
  }
}

/** Body parameters of a Bot API request: JSON or form-encoded (multipart is not simulated). */
async function readParams(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  if (raw === '') return {};
  const type = String(req.headers['content-type'] ?? '');
  if (type.includes('application/json')) {
    const parsed: unknown = JSON.parse(raw);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as Record<string, unknown>;
  }
  if (type.includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(raw));
  throw new Error('unsupported body');
}

/**
 * Posts one Update to a bot's webhook as Telegram does (reference/messaging.md §1.2): JSON
 * body, `X-Telegram-Bot-Api-Secret-Token` when the webhook has a secret (null sends none).
 */
export async function deliverTelegramUpdate(webhookUrl: string, secretToken: string | null, update: Record<string, unknown>): Promise<{ status: number; body: string }> {
  const res = await fetch(webhookUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(secretToken !== null ? { 'x-telegram-bot-api-secret-token': secretToken } : {}) },
    body: JSON.stringify(update),
  });
  return { status: res.status, body: await res.text() };
}
