// Waiting for a condition that no event announces: checked again and again
// until it holds or a deadline passes, then a failure that says what never
// happened. Prefer an event or hook where the code offers one.
import { setTimeout as delay } from 'node:timers/promises';

export interface WaitForOptions<T> {
  /** What is awaited, for the failure message ("the run to pause"). */
  what: string;
  /** Give up after this long (default 60 s). */
  deadlineMs?: number;
  /** Between checks (default 100 ms). */
  intervalMs?: number;
  /** When the checked value is good enough (default: it is truthy). */
  until?: (value: T) => boolean;
  /** More to say when it fails (a server's output, say), asked for only then. */
  detail?: () => string;
}

/** Resolves with the first value of `check` that passes `until`; rejects after the deadline with the last value seen. */
export async function waitFor<T>(check: () => T | Promise<T>, options: WaitForOptions<T>): Promise<T> {
  const { what, deadlineMs = 60_000, intervalMs = 100 } = options;
  const until = options.until ?? ((value: T) => Boolean(value));
  const deadline = performance.now() + deadlineMs;
  for (;;) {
    const value = await check();
    if (until(value)) return value;
    if (performance.now() > deadline) {
      const last = typeof value === 'boolean' ? '' : ` (last: ${JSON.stringify(value)})`;
      const detail = options.detail ? `:\n${options.detail()}` : '';
      throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}${last}${detail}`);
    }
    await delay(intervalMs);
  }
}
