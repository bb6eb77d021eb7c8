// Which HTTP replies of an LLM server are worth another attempt, and the
// wait a reply asks for (Retry-After). The budgets and backoff are
// async/retryBudget.ts's.

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

/** HTTP statuses of a server that is there but cannot serve now (restarting, loading, behind a proxy that lost it). */
export function isUnavailableStatus(status: number): boolean {
  return status === 502 || status === 503 || status === 504;
}
