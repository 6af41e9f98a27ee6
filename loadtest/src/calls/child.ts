/**
 * A process of the call benchmark, forked like loadtest/src/load-generator.ts (tsx comes
 * through `execArgv`; worker threads would not load TypeScript on Node 20), with typed
 * messages both ways and a kill that is safe to call at any time.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A forked child speaking `In` (to it) and `Out` (from it); every `Out` has a `kind`. */
export class Child<In, Out extends { kind: string }> {
  private readonly proc: ChildProcess;
  private readonly listeners = new Set<(m: Out) => void>();
  /** Resolves with the exit code (or signal) when the process has exited. */
  readonly exited: Promise<number | string>;

  constructor(
    readonly name: string,
    entryUrl: URL,
    args: string[] = [],
    extraExecArgv: string[] = [],
  ) {
    this.proc = fork(fileURLToPath(entryUrl), args, { execArgv: [...process.execArgv, ...extraExecArgv], stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
    this.proc.on('message', (m) => {
      for (const l of this.listeners) l(m as Out);
    });
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve(signal ?? code ?? 0)));
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  send(message: In): void {
    if (this.running && this.proc.connected) this.proc.send(message as object);
  }

  /** Calls `fn` for every message until the returned function is called. */
  onMessage(fn: (m: Out) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * The next message of kind `kind`. Rejects on a `failed` message (its `message`), on
   * exit before it came, or after `timeoutMs`.
   */
  next<K extends Out['kind']>(kind: K, timeoutMs: number): Promise<Extract<Out, { kind: K }>> {
    return new Promise((resolve, reject) => {
      const done = (fn: () => void) => {
        clearTimeout(timer);
        off();
        fn();
      };
      const timer = setTimeout(() => done(() => reject(new Error(`${this.name}: no "${kind}" within ${Math.round(timeoutMs / 1000)} s`))), timeoutMs);
      const off = this.onMessage((m) => {
        if (m.kind === kind) done(() => resolve(m as Extract<Out, { kind: K }>));
        else if (m.kind === 'failed') done(() => reject(new Error(`${this.name}: ${(m as unknown as { message: string }).message}`)));
      });
      void this.exited.then((code) => done(() => reject(new Error(`${this.name} exited (${code}) before "${kind}"`))));
    });
  }

  /** SIGTERM, then SIGKILL if still alive after `graceMs`; resolves when it has exited. */
  async kill(graceMs = 3000): Promise<void> {
    if (!this.running) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
