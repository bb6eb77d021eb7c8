// Wake-on-change: waiters sleep until something changed (notify), a time
// passed, or their signals abort, whichever comes first.
import { sleep } from './sleep';

export class Notifier {
  private waiters = new Set<() => void>();

  /** Wake every waiter. */
  notify(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves on the next notify(), after `ms`, or when one of `signals` aborts (at once when one has). */
  async wait(ms: number, signals: readonly AbortSignal[]): Promise<void> {
    if (signals.some((s) => s.aborted)) return;
    const woken = new AbortController();
    const wake = () => woken.abort();
    this.waiters.add(wake);
    for (const s of signals) s.addEventListener('abort', wake, { once: true });
    try {
      await sleep(ms, woken.signal);
    } finally {
      this.waiters.delete(wake);
      for (const s of signals) s.removeEventListener('abort', wake);
    }
  }
}
