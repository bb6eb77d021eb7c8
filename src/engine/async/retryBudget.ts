// How many retries a failing operation may take, for how long, and the wait
// before each: jittered exponential backoff, or what the other side asked
// for (capped). One type for every retry loop (the endpoint client's three
// budgets, the endpoint pool, the trainer bridge's delivery worker).

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

export interface RetryBudgetOptions {
  /** Retries the count allows (default: no limit). */
  maxRetries?: number;
  /** How long retries may go on from the first failure that starts the window, in ms (default: no limit). */
  windowMs?: number;
  backoff?: BackoffOptions;
  /** Milliseconds of a monotonic clock (tests may drive their own). */
  now?: () => number;
  random?: () => number;
}

/**
 * A retry budget: a count of retries, a time window, or both, and the
 * backoff that grows with the retries taken. It only counts and computes
 * waits; the caller decides which limit applies to which failure.
 */
export class RetryBudget {
  private taken = 0;
  private windowStart: number | null = null;
  private readonly maxRetries: number;
  private readonly windowMs: number;
  private readonly backoff: BackoffOptions;
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(options: RetryBudgetOptions = {}) {
    this.maxRetries = options.maxRetries ?? Number.POSITIVE_INFINITY;
    this.windowMs = options.windowMs ?? Number.POSITIVE_INFINITY;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.now = options.now ?? (() => performance.now());
    this.random = options.random ?? Math.random;
  }

  /** Retries taken so far. */
  get retries(): number {
    return this.taken;
  }

  /** Whether the count allows another retry. */
  get canRetry(): boolean {
    return this.taken < this.maxRetries;
  }

  /** Count one retry. */
  take(): void {
    this.taken++;
  }

  /** Forget the retries taken (the operation succeeded). */
  reset(): void {
    this.taken = 0;
  }

  /**
   * The wait before the retry just taken: what the other side asked for
   * (capped at maxRetryAfterMs, with 10% jitter) when it asked for a
   * positive wait, else the backoff for the retries taken.
   */
  delayMs(askedMs: number | null = null): number {
    if (askedMs !== null && askedMs > 0) return Math.min(askedMs, this.backoff.maxRetryAfterMs) * (1 + 0.1 * this.random());
    return backoffDelayMs(this.taken, this.backoff, this.random);
  }

  /** The window's time left in ms; the first call starts the window. */
  windowLeftMs(): number {
    this.windowStart ??= this.now();
    return this.windowMs - (this.now() - this.windowStart);
  }

  /** Close the window: the next windowLeftMs() starts a new one (the retry count is kept). */
  closeWindow(): void {
    this.windowStart = null;
  }
}
