// When and how long to wait before retrying a request: jittered exponential
// backoff, or the server's Retry-After when it gives one.

export interface BackoffOptions {
  baseMs: number; // first retry waits about this long
  maxMs: number; // cap of the exponential part
  maxRetryAfterMs: number; // cap on what a server may ask us to wait
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, maxMs: 30_000, maxRetryAfterMs: 120_000 };

/**
 * Delay before retry number `retry` (1-based): "equal jitter", half fixed and
 * half random, so retries of many failed requests spread out but never
 * come back at once.
 */
export function backoffDelayMs(retry: number, options: BackoffOptions, random: () => number = Math.random): number {
  const exp = Math.min(options.maxMs, options.baseMs * 2 ** Math.max(0, retry - 1));
  return exp / 2 + random() * (exp / 2);
}

/**
 * The wait a reply asks for, in ms: `retry-after-ms` (OpenAI's), else
 * `Retry-After` as seconds or an HTTP date. Null when absent or unreadable.
 */
export function retryAfterMs(headers: { get(name: string): string | null } | undefined, now = Date.now()): number | null {
  if (!headers) return null;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return null;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  if (Number.isFinite(date)) return Math.max(0, date - now);
  return null;
}

/** HTTP statuses worth another attempt: timeouts, conflicts, rate limits, server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Sleep that ends early (resolving false) when signal aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, Math.max(0, ms));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
