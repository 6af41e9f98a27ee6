import pg from 'pg';

/** Distinct statement texts named per process (each costs a few KB per connection on the server). */
export const MAX_NAMES = 500;
/** Longest text named, in characters (the hot ones are under 1,200: the agent statistics statement is the longest). */
export const MAX_TEXT_LENGTH = 8_192;
/** Uses of a text before it is named. */
export const SEEN_BEFORE_NAMING = 2;

/**
 * Names for the statements the platform sends again and again, so that Postgres parses and
 * analyses each text once per connection instead of on every execution (drizzle sends every
 * query unnamed). A text is named from its {@link SEEN_BEFORE_NAMING}th use, so one-off
 * texts never become server-side statements; at most {@link MAX_NAMES} texts are named per
 * process, after which new texts run unnamed as before, and texts longer than
 * {@link MAX_TEXT_LENGTH} never are. Only parameterized texts are named: a text without
 * parameters may hold several statements, which a named statement cannot.
 */
export class StatementNames {
  private readonly names = new Map<string, string>();
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly maxNames = MAX_NAMES,
    private readonly seenBeforeNaming = SEEN_BEFORE_NAMING,
  ) {}

  /** The name to send `text` under, or undefined to send it unnamed. */
  nameFor(text: string): string | undefined {
    // A long text (a bulk insert of many rows, say) costs more to execute than to parse, and
    // keeping it would cost memory here and on the server.
    if (text.length > MAX_TEXT_LENGTH) return undefined;
    const known = this.names.get(text);
    if (known !== undefined || this.names.size >= this.maxNames) return known;
    const uses = (this.seen.get(text) ?? 0) + 1;
    if (uses < this.seenBeforeNaming) {
      // Bounded like the names: when full, the counts start over, which forgets the one-off
      // texts (a hot text is soon counted again) and never shuts a later hot text out.
      if (this.seen.size >= this.maxNames) this.seen.clear();
      this.seen.set(text, uses);
      return undefined;
    }
    this.seen.delete(text);
    const name = `vap_${this.names.size + 1}`;
    this.names.set(text, name);
    return name;
  }

  get size(): number {
    return this.names.size;
  }
}

type QueryConfig = { text?: unknown; name?: unknown; values?: unknown; submit?: unknown };

/**
 * A pg `Client` that sends the parameterized statements `names` picks as named (prepared)
 * statements, given as a text or a query config. Queries given a name of their own,
 * submittables (cursors, streams) and texts without parameters pass through untouched.
 */
export function namingClient(names: StatementNames): typeof pg.Client {
  class NamingClient extends pg.Client {
    // pg's `query` is heavily overloaded; every call is passed on as it came, except a config's name.
    override query(...args: unknown[]): never {
      const [config, values] = args;
      if (typeof config === 'string') {
        const name = Array.isArray(values) && values.length > 0 ? names.nameFor(config) : undefined;
        if (name !== undefined) args[0] = { text: config, name };
      } else if (typeof config === 'object' && config !== null) {
        const c = config as QueryConfig;
        const params = values ?? c.values;
        if (typeof c.text === 'string' && c.name === undefined && typeof c.submit !== 'function' && Array.isArray(params) && params.length > 0) {
          const name = names.nameFor(c.text);
          if (name !== undefined) args[0] = { ...c, name };
        }
      }
      return (super.query as (...a: unknown[]) => never)(...args);
    }
  }
  return NamingClient;
}
