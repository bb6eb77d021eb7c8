// The one abortable wait of the engine: a timer from node:timers/promises
// whose abort ends the wait early instead of throwing.
import { setTimeout as delay } from 'node:timers/promises';

/** Waits `ms` (at least 0); resolves true when the time passed, false when `signal` aborted first (at once when it already has). */
export async function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  try {
    await delay(Math.max(0, ms), undefined, { signal });
    return true;
  } catch (error) {
    if (isAbortError(error)) return false;
    throw error;
  }
}

function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}
