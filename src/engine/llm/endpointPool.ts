// Several inference servers behind one `thetaevolve.endpoint` (docs/architecture.md
// "Several inference servers"): base URLs separated by commas. Each request goes to
// the healthy server with the fewest outstanding requests; a server whose
// requests fail for connection reasons is taken out and health-checked
// (/v1/models) again later; a failed request is retried on another server
// within the retry budget. Each server is one EndpointClient (with retries
// off: the pool retries across servers), so the wire format, token ids and
// accounting stay those of the single-server client.
import { setMaxListeners } from 'node:events';
import { z } from 'zod';
import { firstZodIssue } from '../common/errors';
import type { EndpointServersEvent } from '../common/events';
import { percentile } from '../common/stats';
import type { GenerationJob, ResponseSource, Sample, SampleFailure, ServerCheckOptions, SourceStatus } from '../common/types';
import { EndpointAddressError, ServerUnreachableError } from './serverProbe';
import { EndpointClient, type EndpointGenerationStats, type EndpointOptions, type TokenSupport } from './endpointClient';
import { DEFAULT_BACKOFF, RetryBudget, type BackoffOptions } from '../async/retryBudget';
import { Semaphore } from '../async/semaphore';
import { sleep } from '../async/sleep';

/** First wait before a server that was taken out is health-checked again; doubles per failed check. */
const DEFAULT_HEALTH_RETRY_MS = 5_000;
const MAX_HEALTH_RETRY_MS = 120_000;
/** Failed requests in a row (of any kind) that take a server out. */
const FAILURES_BEFORE_OUT = 3;

const BaseUrlSchema = z
  .string()
  .trim()
  .refine((s) => {
    try {
      const url = new URL(s);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'is not an http(s) URL')
  .transform((s) => s.replace(/\/+$/, ''));

/** `thetaevolve.endpoint`: one base URL, or several separated by commas. */
export const EndpointListSchema = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== ''),
  )
  .pipe(
    z
      .array(BaseUrlSchema)
      .min(1, 'names no base URL')
      .refine((urls) => new Set(urls).size === urls.length, 'lists the same base URL twice'),
  );

/** The base URLs of `thetaevolve.endpoint`; throws one message naming the setting. */
export function parseEndpointList(value: string): string[] {
  const parsed = EndpointListSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const which = issue && typeof issue.path[0] === 'number' ? ` (entry ${issue.path[0] + 1})` : '';
  throw new Error(
    `Setting thetaevolve.endpoint${which} ${firstZodIssue(parsed.error, '').message} (got ${JSON.stringify(value)}); separate several base URLs with commas.`,
  );
}

export interface EndpointPoolOptions extends Omit<EndpointOptions, 'baseURL'> {
  /** The servers it starts with; may be empty when servers join later (addServer: inference jobs on SLURM). */
  baseURLs: string[];
  /** First wait before a server taken out is checked again (default 5 s; doubles per failed check, at most 2 min). */
  healthRetryMs?: number;
}

/** One server's share, for the dashboard. */
export interface EndpointServerStats {
  baseURL: string;
  healthy: boolean;
  /** Requests sent now and not answered yet. */
  outstanding: number;
  requests: number;
  /** Requests that failed on this server (each retry elsewhere counts here once). */
  failures: number;
  samples: number;
  completionTokens: number;
  /** Completion tokens per second of the time this server had requests outstanding. */
  tokensPerSecond: number;
  latencyMsP50: number | null;
  /** Why it was taken out last (null when it never was). */
  lastError: string | null;
}

/** Whether a failure the client reported is worth another attempt, and whether it says the server is gone. */
function classify(error: string): { retryable: boolean; serverDown: boolean } {
  const http = /^HTTP (\d{3})/.exec(error);
  if (http) {
    const status = Number(http[1]);
    if (status >= 500) return { retryable: true, serverDown: true };
    return { retryable: status === 408 || status === 409 || status === 429, serverDown: false };
  }
  if (/^(connection failed|reply cut off|No server at|The server at .* failed its health check)/.test(error))
    return { retryable: true, serverDown: true };
  if (/^(no reply within|malformed reply|request aborted|unexpected client error)/.test(error))
    return { retryable: true, serverDown: false };
  // Errors that no other server would answer differently (API key, unknown model).
  return { retryable: false, serverDown: false };
}

class Server {
  readonly client: EndpointClient;
  healthy = true;
  outstanding = 0;
  requests = 0;
  failures = 0;
  samples = 0;
  completionTokens = 0;
  failuresInRow = 0;
  lastError: string | null = null;
  readonly latencies: number[] = [];
  private activeSince = 0;
  private activeMs = 0;
  private checkDelayMs: number;
  private checkTimer: NodeJS.Timeout | null = null;
  private readonly upWaiters = new Set<() => void>();

  constructor(
    readonly baseURL: string,
    options: EndpointOptions,
    private readonly healthRetryMs: number,
  ) {
    this.client = new EndpointClient(options);
    this.checkDelayMs = healthRetryMs;
  }

  begin(): void {
    if (this.outstanding++ === 0) this.activeSince = performance.now();
    this.requests++;
  }

  end(): void {
    if (--this.outstanding === 0) this.activeMs += performance.now() - this.activeSince;
  }

  stats(): EndpointServerStats {
    const activeMs = this.activeMs + (this.outstanding > 0 ? performance.now() - this.activeSince : 0);
    return {
      baseURL: this.baseURL,
      healthy: this.healthy,
      outstanding: this.outstanding,
      requests: this.requests,
      failures: this.failures,
      samples: this.samples,
      completionTokens: this.completionTokens,
      tokensPerSecond: activeMs > 0 ? (this.completionTokens * 1000) / activeMs : 0,
      latencyMsP50: this.latencies.length > 0 ? percentile(this.latencies, 50) : null,
      lastError: this.lastError,
    };
  }

  /** Take the server out and health-check it later, then again with a doubled wait until it answers. */
  takeOut(error: string, onChange: (message: string) => void): void {
    this.lastError = error;
    if (!this.healthy) return;
    this.healthy = false;
    this.checkDelayMs = this.healthRetryMs;
    onChange(
      `${this.baseURL} is taken out of the endpoint list (${error}); checking it again in ${Math.round(this.checkDelayMs / 1000)} s`,
    );
    this.scheduleCheck(onChange);
  }

  private scheduleCheck(onChange: (message: string) => void): void {
    this.checkTimer = setTimeout(() => {
      this.checkTimer = null;
      void this.client.check().then(
        () => {
          this.healthy = true;
          this.failuresInRow = 0;
          onChange(`${this.baseURL} answers again and is back in the endpoint list`);
          for (const wake of this.upWaiters) wake();
          this.upWaiters.clear();
        },
        () => {
          this.checkDelayMs = Math.min(this.checkDelayMs * 2, MAX_HEALTH_RETRY_MS);
          this.scheduleCheck(onChange);
        },
      );
    }, this.checkDelayMs);
    // Health checks never keep a finished run's process alive.
    this.checkTimer.unref();
  }

  /** Resolves when the server is back (or at once when it is healthy). */
  whenUp(): Promise<void> {
    if (this.healthy) return Promise.resolve();
    return new Promise((resolve) => this.upWaiters.add(resolve));
  }

  dispose(): void {
    if (this.checkTimer) clearTimeout(this.checkTimer);
    this.checkTimer = null;
  }
}

/** One request's worth of samples, as the single-server client sends it. */
interface Unit {
  job: GenerationJob;
  firstIndex: number;
  n: number;
  seed: number;
}

/** A ResponseSource over several OpenAI-compatible servers serving the same model. */
export class EndpointPool implements ResponseSource {
  readonly kind = 'llm' as const;
  private readonly servers: Server[];
  private readonly options: EndpointPoolOptions;
  private readonly healthRetryMs: number;
  /** Woken when a server joins (addServer): a pool waiting for any server takes it at once. */
  private readonly joinWaiters = new Set<() => void>();
  private readonly backoff: BackoffOptions;
  private readonly statusListeners = new Set<(status: SourceStatus) => void>();
  /** Every server is out and requests wait for one to come back (the status bar and dashboard say so). */
  private waiting = false;

  constructor(options: EndpointPoolOptions) {
    this.options = options;
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.healthRetryMs = options.healthRetryMs ?? DEFAULT_HEALTH_RETRY_MS;
    this.servers = options.baseURLs.map((baseURL) => this.newServer(baseURL));
  }

  /** `apiKey`: this server's own key (an inference job's run token), else the pool's. */
  private newServer(baseURL: string, apiKey?: string): Server {
    const { baseURLs: _all, healthRetryMs: _retry, ...common } = this.options;
    const key = apiKey === undefined ? {} : { apiKey };
    // Retries are the pool's (across servers), and so is waiting for a server that went away (it is set aside); the cap on requests in flight too.
    return new Server(baseURL, { ...common, ...key, baseURL, maxRetries: 0, maxInFlight: 0, retrySeconds: 0 }, this.healthRetryMs);
  }

  /**
   * A server joins the pool (an inference job that came up): checked first
   * (it must answer /v1/models and serve the pool's model); throws, and the
   * pool is unchanged, when it does not.
   */
  async addServer(baseURL: string, signal?: AbortSignal, apiKey?: string): Promise<void> {
    if (this.servers.some((s) => s.baseURL === baseURL)) return;
    const server = this.newServer(baseURL, apiKey);
    await server.client.check(signal);
    const model = this.model;
    if (model !== null && server.client.model !== model) {
      server.dispose();
      throw new Error(`${baseURL} serves ${server.client.model ?? 'no model'}, not ${model} as the other servers do`);
    }
    this.servers.push(server);
    for (const wake of this.joinWaiters) wake();
    this.joinWaiters.clear();
  }

  /** A server leaves the pool (its job ended); its requests in flight fail over to the others. */
  removeServer(baseURL: string): void {
    const index = this.servers.findIndex((s) => s.baseURL === baseURL);
    if (index === -1) return;
    const [server] = this.servers.splice(index, 1);
    server?.dispose();
  }

  private whenJoined(): Promise<void> {
    return new Promise((resolve) => this.joinWaiters.add(resolve));
  }

  addStatusListener(listener: (status: SourceStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  private setWaiting(waiting: boolean, reason = ''): void {
    if (this.waiting === waiting) return;
    this.waiting = waiting;
    const message = waiting
      ? `waiting for a server of thetaevolve.endpoint: all ${this.servers.length} are out (last: ${reason}); retrying for up to ${this.options.retrySeconds} s (thetaevolve.serverRetrySeconds)`
      : `a server of thetaevolve.endpoint answers again (${this.servers
          .filter((s) => s.healthy)
          .map((s) => s.baseURL)
          .join(', ')})`;
    for (const listener of this.statusListeners) listener({ waiting, message });
  }

  get label(): string {
    const model = this.servers.find((s) => s.client.model !== null)?.client.model ?? (this.options.model || 'the served model');
    return `${model} at ${this.servers.length} server${this.servers.length === 1 ? '' : 's'} (${this.servers.map((s) => s.baseURL).join(', ')})`;
  }

  /** The model requests go to, once check() resolved it. */
  get model(): string | null {
    return this.servers.find((s) => s.client.model !== null)?.client.model ?? null;
  }

  /** Token support as the first healthy server reports it (all serve the same model). */
  get tokenSupport(): TokenSupport {
    return (this.servers.find((s) => s.healthy) ?? (this.servers[0] as Server)).client.tokenSupport;
  }

  serverStats(): EndpointServerStats[] {
    return this.servers.map((s) => s.stats());
  }

  /** The engine event with every server's share (emit it after each step). */
  serversEvent(time = Date.now()): EndpointServersEvent {
    return { type: 'endpoint_servers', time, servers: this.serverStats(), label: this.label };
  }

  /** Every server is checked; failing ones are taken out. Throws only when none answers, or when they serve different models. */
  /**
   * Health check of every server: those that do not answer are taken out.
   * None answering is an error, or with waitForServer (a run starting while
   * its servers load) a wait of thetaevolve.serverRetrySeconds for one to come up.
   */
  async check(signal?: AbortSignal, options: ServerCheckOptions = {}): Promise<void> {
    const results = await Promise.allSettled(this.servers.map((s) => s.client.check(signal)));
    const problems: string[] = [];
    results.forEach((result, i) => {
      const server = this.servers[i] as Server;
      if (result.status === 'rejected') {
        const message = result.reason instanceof Error ? result.reason.message : String(result.reason);
        problems.push(message);
        server.takeOut(message, (m) => this.options.onWarning?.(m));
      }
    });
    if (problems.length === this.servers.length) {
      // Nothing answers at any address: with unreachableFailsFast, said now (see ServerCheckOptions).
      // An address fetch refuses outright (EndpointAddressError) is never waited for.
      const unreachable = results.every(
        (r) =>
          r.status === 'rejected' &&
          (r.reason instanceof EndpointAddressError || (options.unreachableFailsFast && r.reason instanceof ServerUnreachableError)),
      );
      const waitMs = options.waitForServer && !unreachable ? this.options.retrySeconds * 1000 : 0;
      if (!(await this.waitForAnyServer(waitMs, problems[0] ?? 'no server answers', signal))) {
        throw new Error(
          `No server of thetaevolve.endpoint answers${waitMs > 0 ? ` within ${this.options.retrySeconds} s (thetaevolve.serverRetrySeconds)` : ''}: ${problems.join(' | ')}`,
        );
      }
    }
    const models = new Set(this.servers.map((s) => s.client.model).filter((m): m is string => m !== null));
    if (models.size > 1)
      throw new Error(
        `The servers of thetaevolve.endpoint serve different models (${[...models].join(', ')}): set thetaevolve.model to the one they all serve.`,
      );
  }

  /** With every server out: wait up to `ms` for one to answer its health check again (said through the status listeners); whether one did. */
  private async waitForAnyServer(ms: number, reason: string, signal?: AbortSignal, announce = true): Promise<boolean> {
    if (ms <= 0) return false;
    if (announce) this.setWaiting(true, reason);
    // The wait ends when a server is back: its timer must not outlive it (a finished CLI run exits at once).
    const waitDone = new AbortController();
    const stopWaiting = (): void => waitDone.abort();
    signal?.addEventListener('abort', stopWaiting, { once: true });
    try {
      await Promise.race([Promise.race(this.servers.map((s) => s.whenUp())), this.whenJoined(), sleep(ms, waitDone.signal)]);
    } finally {
      waitDone.abort();
      signal?.removeEventListener('abort', stopWaiting);
    }
    const back = this.servers.some((s) => s.healthy);
    if (back) this.setWaiting(false);
    return back && !signal?.aborted;
  }

  async generate(jobs: GenerationJob[], signal: AbortSignal, onSample: (sample: Sample) => void): Promise<EndpointGenerationStats> {
    const started = performance.now();
    const internal = new AbortController();
    setMaxListeners(0, internal.signal);
    const onCallerAbort = (): void => internal.abort();
    if (signal.aborted) internal.abort();
    else signal.addEventListener('abort', onCallerAbort, { once: true });

    const units = this.unitsOf(jobs);
    const capacity = this.options.maxInFlight > 0 ? Math.min(this.options.maxInFlight, units.length) : units.length;
    const semaphore = new Semaphore(Math.max(1, capacity));
    const totals = { requests: 0, retries: 0, failures: 0, promptTokens: 0, completionTokens: 0, latencies: [] as number[] };
    const delivered = new Set<string>();
    let callbackError: unknown = null;
    const deliver = (sample: Sample): void => {
      const id = `${sample.jobKey}\u0000${sample.index}`;
      if (callbackError !== null || delivered.has(id)) return;
      delivered.add(id);
      if (!sample.ok) totals.failures++;
      try {
        onSample(sample);
      } catch (error) {
        callbackError = error;
        internal.abort();
      }
    };

    try {
      await Promise.all(units.map((unit) => this.runUnit(unit, internal.signal, semaphore, totals, deliver)));
      if (internal.signal.aborted && callbackError === null) {
        for (const unit of units) {
          for (let k = 0; k < unit.n; k++) {
            deliver({
              ok: false,
              jobKey: unit.job.key,
              index: unit.firstIndex + k,
              latencyMs: 0,
              retries: 0,
              error: 'aborted: the run was stopped before the endpoint answered',
            });
          }
        }
      }
    } finally {
      signal.removeEventListener('abort', onCallerAbort);
      if (!internal.signal.aborted) internal.abort();
    }
    if (callbackError !== null) throw callbackError;

    const wallMs = performance.now() - started;
    const latencyOr0 = (p: number): number => (totals.latencies.length > 0 ? percentile(totals.latencies, p) : 0);
    return {
      requests: totals.requests,
      retries: totals.retries,
      failures: totals.failures,
      promptTokens: totals.promptTokens,
      completionTokens: totals.completionTokens,
      latencyMsP50: latencyOr0(50),
      latencyMsP95: latencyOr0(95),
      wallMs,
      samples: units.reduce((n, u) => n + u.n, 0),
      tokensPerSecond: wallMs > 0 ? (totals.completionTokens * 1000) / wallMs : 0,
      maxInFlight: semaphore.maxHeld,
      aborted: signal.aborted,
    };
  }

  /** Stop health checks (the run is over). */
  dispose(): void {
    for (const s of this.servers) s.dispose();
  }

  private unitsOf(jobs: GenerationJob[]): Unit[] {
    const units: Unit[] = [];
    for (const job of jobs) {
      if (job.n <= 0) continue;
      if (this.options.useNParameter && job.n > 1) units.push({ job, firstIndex: 0, n: job.n, seed: job.seed });
      else for (let i = 0; i < job.n; i++) units.push({ job, firstIndex: i, n: 1, seed: job.seed + i });
    }
    return units;
  }

  /** The healthy server with the fewest outstanding requests, preferring one this unit has not failed on. */
  private pick(failedOn: ReadonlySet<Server>): Server | null {
    const healthy = this.servers.filter((s) => s.healthy);
    const fresh = healthy.filter((s) => !failedOn.has(s));
    const candidates = fresh.length > 0 ? fresh : healthy;
    let best: Server | null = null;
    for (const s of candidates) if (best === null || s.outstanding < best.outstanding) best = s;
    return best;
  }

  /** One unit to its end on whichever servers can answer; never throws. */
  private async runUnit(
    unit: Unit,
    signal: AbortSignal,
    semaphore: Semaphore,
    totals: { requests: number; retries: number; promptTokens: number; completionTokens: number; latencies: number[] },
    deliver: (sample: Sample) => void,
  ): Promise<void> {
    const failedOn = new Set<Server>();
    /** maxRetries across the servers; its window (thetaevolve.serverRetrySeconds) runs from when this unit first met a server that was down. */
    const budget = new RetryBudget({
      maxRetries: this.options.maxRetries,
      windowMs: this.options.retrySeconds * 1000,
      backoff: this.backoff,
    });
    let lastError: string | null = null;
    let firstStart: number | null = null;
    const subJob: GenerationJob = { ...unit.job, key: unit.job.key, n: unit.n, seed: unit.seed };
    for (;;) {
      let server = this.pick(failedOn);
      if (server === null) {
        // Every server is out: as with one server, wait for one to come back
        // for thetaevolve.serverRetrySeconds (a restart, a reload), and at
        // least for the retry budget's backoffs.
        const waitLeftMs = budget.windowLeftMs();
        const retryLeft = budget.canRetry;
        if (!retryLeft && waitLeftMs <= 0) {
          const last = lastError ?? this.servers.map((s) => s.lastError).find((e) => e !== null) ?? 'no server answers';
          const waited =
            this.options.retrySeconds > 0 ? `; none came back within ${this.options.retrySeconds} s (thetaevolve.serverRetrySeconds)` : '';
          const error = `every server of thetaevolve.endpoint is out (last: ${last})${waited}`;
          for (let k = 0; k < unit.n; k++)
            deliver({ ok: false, jobKey: unit.job.key, index: unit.firstIndex + k, latencyMs: 0, retries: budget.retries, error });
          return;
        }
        if (retryLeft) {
          budget.take();
          totals.retries++;
        }
        const reason = lastError ?? this.servers.map((s) => s.lastError).find((e) => e !== null) ?? 'no server answers';
        // Said as waiting only when it is the thetaevolve.serverRetrySeconds wait, not a retry's short backoff.
        await this.waitForAnyServer(Math.max(retryLeft ? budget.delayMs() : 0, waitLeftMs), reason, signal, waitLeftMs > 0);
        if (signal.aborted) return;
        continue;
      }
      this.setWaiting(false);
      let release: () => void;
      try {
        release = await semaphore.acquire(signal);
      } catch {
        return;
      }
      // The pick may be stale after waiting for a slot.
      server = this.pick(failedOn) ?? server;
      firstStart ??= performance.now();
      const samples: Sample[] = [];
      server.begin();
      totals.requests++;
      let stats: EndpointGenerationStats | null = null;
      try {
        stats = await server.client.generate([subJob], signal, (s) => void samples.push(s));
      } catch (error) {
        samples.length = 0;
        samples.push({
          ok: false,
          jobKey: subJob.key,
          index: 0,
          latencyMs: 0,
          retries: 0,
          error: `unexpected client error: ${(error as Error).message}`,
        });
      } finally {
        server.end();
        release();
      }
      if (signal.aborted) return;
      const latencyMs = performance.now() - firstStart;
      const failure =
        samples.find((s): s is SampleFailure => !s.ok) ??
        (samples.length < unit.n
          ? {
              ok: false as const,
              jobKey: subJob.key,
              index: 0,
              latencyMs: 0,
              retries: 0,
              error: 'unexpected client error: a response was missing',
            }
          : null);
      if (failure === null) {
        server.failuresInRow = 0;
        server.samples += samples.length;
        if (stats) {
          server.latencies.push(stats.latencyMsP50);
          server.completionTokens += stats.completionTokens;
          totals.promptTokens += stats.promptTokens;
          totals.completionTokens += stats.completionTokens;
          totals.latencies.push(stats.latencyMsP50);
        }
        for (const s of samples)
          deliver({ ...s, jobKey: unit.job.key, index: unit.firstIndex + s.index, latencyMs, retries: budget.retries });
        return;
      }
      lastError = failure.error;
      server.failures++;
      server.failuresInRow++;
      failedOn.add(server);
      const kind = classify(failure.error);
      if (kind.serverDown || server.failuresInRow >= FAILURES_BEFORE_OUT) server.takeOut(failure.error, (m) => this.options.onWarning?.(m));
      // A server that is down is waited for (above, when none is left) while thetaevolve.serverRetrySeconds lasts.
      const waitingForServers = kind.serverDown && budget.windowLeftMs() > 0;
      if (!kind.retryable || (!budget.canRetry && !waitingForServers)) {
        const retries = budget.retries;
        const error =
          retries > 0
            ? `${failure.error} (gave up after ${retries} ${retries === 1 ? 'retry' : 'retries'} across ${this.servers.length} servers)`
            : failure.error;
        for (let k = 0; k < unit.n; k++)
          deliver({ ok: false, jobKey: unit.job.key, index: unit.firstIndex + k, latencyMs, retries, error });
        return;
      }
      budget.take();
      totals.retries++;
      // Another healthy server takes the retry at once; the same one only after a backoff.
      const elsewhere = this.servers.some((s) => s.healthy && !failedOn.has(s));
      if (!elsewhere && !(await sleep(budget.delayMs(), signal))) return;
    }
  }
}

/** The response source for `thetaevolve.endpoint`: one client for one base URL, a pool for several. */
export function endpointSource(options: EndpointOptions, extra: { healthRetryMs?: number } = {}): EndpointClient | EndpointPool {
  const urls = parseEndpointList(options.baseURL);
  if (urls.length === 1) return new EndpointClient({ ...options, baseURL: urls[0] as string });
  const { baseURL: _list, ...rest } = options;
  return new EndpointPool({ ...rest, baseURLs: urls, ...extra });
}
